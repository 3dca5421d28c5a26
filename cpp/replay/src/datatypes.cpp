#include "datatypes.hpp"

#include <climits>
#include <cmath>
#include <string>

#include "scalatrace/model/event.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace::replay {
namespace {

std::size_t extent_of(MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  return static_cast<std::size_t>(extent);
}

void noop_reduce(void*, void*, int*, MPI_Datatype*) {}

// A predefined type of exactly `size` bytes that `op` accepts, or MPI_DATATYPE_NULL.
MPI_Datatype reduction_type(std::int64_t size, RedOpCode op) {
  if (op == RedOpCode::Maxloc || op == RedOpCode::Minloc) {
    switch (size) {
      case 8:
        return MPI_2INT;
      case 12:
        return MPI_DOUBLE_INT;
      case 6:
        return MPI_SHORT_INT;
      default:
        return MPI_DATATYPE_NULL;
    }
  }
  switch (size) {
    case 1:
      return MPI_UINT8_T;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    case 8:
      return MPI_UINT64_T;
    default:
      return MPI_DATATYPE_NULL;
  }
}

MPI_Op predefined_op(RedOpCode op) {
  switch (op) {
    case RedOpCode::Sum:
      return MPI_SUM;
    case RedOpCode::Prod:
      return MPI_PROD;
    case RedOpCode::Max:
      return MPI_MAX;
    case RedOpCode::Min:
      return MPI_MIN;
    case RedOpCode::Land:
      return MPI_LAND;
    case RedOpCode::Lor:
      return MPI_LOR;
    case RedOpCode::Lxor:
      return MPI_LXOR;
    case RedOpCode::Band:
      return MPI_BAND;
    case RedOpCode::Bor:
      return MPI_BOR;
    case RedOpCode::Bxor:
      return MPI_BXOR;
    case RedOpCode::Maxloc:
      return MPI_MAXLOC;
    case RedOpCode::Minloc:
      return MPI_MINLOC;
    default:
      return MPI_OP_NULL;
  }
}

}  // namespace

int to_count(std::int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX)
    throw UsageError(std::string(what) + " " + std::to_string(value) + " is outside the range of an MPI int count");
  return static_cast<int>(value);
}

MPI_Count to_large_count(std::int64_t value, const char* what) {
  if (value < 0) throw UsageError(std::string(what) + " " + std::to_string(value) + " is negative");
  return static_cast<MPI_Count>(value);
}

std::int64_t Datatypes::scaled(std::int64_t bytes, Rounding rounding) const {
  if (bytes <= 0) return 0;
  if (scale_ == 1.0) return bytes;
  double v = static_cast<double>(bytes) * scale_;
  switch (rounding) {
    case Rounding::Down:
      return static_cast<std::int64_t>(std::floor(v));
    case Rounding::Up:
      return static_cast<std::int64_t>(std::ceil(v));
    case Rounding::Nearest:
      break;
  }
  return std::llround(v);
}

MPI_Datatype Datatypes::contiguous(std::int64_t dtsize) {
  if (dtsize <= 1) return MPI_BYTE;
  auto it = contiguous_.find(dtsize);
  if (it != contiguous_.end()) return it->second;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  PMPI_Type_contiguous(to_count(dtsize, "datatype size"), MPI_BYTE, &type);
  PMPI_Type_commit(&type);
  contiguous_.emplace(dtsize, type);
  return type;
}

MPI_Op Datatypes::noop_op() {
  if (noop_ == MPI_OP_NULL) PMPI_Op_create(&noop_reduce, 1, &noop_);
  return noop_;
}

Payload Datatypes::payload(std::int64_t bytes, std::int64_t dtsize, Rounding rounding) {
  Payload p;
  if (bytes < 0) bytes = 0;
  if (scale_ == 1.0 && dtsize > 1 && bytes % dtsize == 0) {
    p.type = contiguous(dtsize);
    p.count = to_large_count(bytes / dtsize, "element count");
    p.buffer_bytes = static_cast<std::size_t>(bytes);
  } else {
    std::int64_t b = scaled(bytes, rounding);
    p.type = MPI_BYTE;
    p.count = to_large_count(b, "message size");
    p.buffer_bytes = static_cast<std::size_t>(b);
  }
  return p;
}

VectorPayload Datatypes::vector_payload(const std::vector<std::int64_t>& bytes, std::int64_t dtsize, int peers) {
  VectorPayload v;
  std::vector<std::int64_t> b = bytes;
  b.resize(static_cast<std::size_t>(peers), 0);
  bool exact = scale_ == 1.0 && dtsize > 1;
  for (auto x : b) exact = exact && x >= 0 && x % dtsize == 0;
  v.type = exact ? contiguous(dtsize) : MPI_BYTE;
  std::int64_t offset = 0;
  for (auto x : b) {
    std::int64_t n = exact ? x / dtsize : scaled(x, Rounding::Nearest);
    v.counts.push_back(to_large_count(n, "element count"));
    v.displs.push_back(static_cast<MPI_Aint>(offset));
    offset += n;
  }
  v.buffer_bytes = static_cast<std::size_t>(offset) * (exact ? static_cast<std::size_t>(dtsize) : 1);
  return v;
}

Reduction Datatypes::reduction(std::int64_t bytes, std::int64_t dtsize, std::int64_t redop) {
  Reduction r;
  auto code = static_cast<RedOpCode>(redop);
  MPI_Op op = predefined_op(code);
  MPI_Datatype type = dtsize > 0 ? reduction_type(dtsize, code) : MPI_DATATYPE_NULL;
  std::int64_t b = scaled(bytes, Rounding::Nearest);
  if (op != MPI_OP_NULL && type != MPI_DATATYPE_NULL) {
    r.op = op;
    r.payload.type = type;
    r.payload.count = to_large_count(b / dtsize, "element count");
    r.payload.buffer_bytes = static_cast<std::size_t>(r.payload.count) * extent_of(type);
    return r;
  }
  // Unknown / user-defined op or an element size no predefined type has: a no-op user op
  // (the collector records it as a user-defined reduction).
  r.op = noop_op();
  r.payload = payload(bytes, dtsize, Rounding::Nearest);
  return r;
}

void Datatypes::release() {
  for (auto& [size, type] : contiguous_) PMPI_Type_free(&type);
  contiguous_.clear();
  if (noop_ != MPI_OP_NULL) PMPI_Op_free(&noop_);
}

}  // namespace scalatrace::replay
