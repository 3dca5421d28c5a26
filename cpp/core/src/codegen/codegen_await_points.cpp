// Points where every outstanding request of a rank is complete in the traced run (see the
// header). One walk per rank over its events, following its requests through the handle
// buffer offsets the collector records (docs/collector.md: 1 = the newest request).
#include "codegen/codegen_await_points.hpp"

#include <vector>

#include "codegen/codegen_support.hpp"
#include "scalatrace/read/cursor.hpp"

namespace scalatrace::codegen_await {
namespace {

enum class Slot : std::uint8_t { Inactive, Outstanding, Persistent, PersistentOutstanding };

/// One rank's requests in creation order and how many are outstanding.
class Requests {
 public:
  void create(const Event& e) {
    const OpKind kind = op_kind(e.op);
    const bool posted = kind == OpKind::NonblockingSend || kind == OpKind::NonblockingRecv;
    if (kind == OpKind::PersistentSend || kind == OpKind::PersistentRecv) {
      slots_.push_back(in_program(e) ? Slot::Persistent : Slot::Inactive);
    } else if (posted && in_program(e)) {
      slots_.push_back(Slot::Outstanding);
      ++outstanding_;
    } else {
      slots_.push_back(Slot::Inactive);  // left out, or a collective the program makes blocking
    }
  }

  void start(std::int64_t offset) {
    if (Slot* s = at(offset); s && *s == Slot::Persistent) {
      *s = Slot::PersistentOutstanding;
      ++outstanding_;
    }
  }

  void complete(std::int64_t offset) {
    Slot* s = at(offset);
    if (s == nullptr) return;
    if (*s == Slot::Outstanding) {
      *s = Slot::Inactive;
      --outstanding_;
    } else if (*s == Slot::PersistentOutstanding) {
      *s = Slot::Persistent;
      --outstanding_;
    }
  }

  void free(std::int64_t offset) {
    complete(offset);
    if (Slot* s = at(offset)) *s = Slot::Inactive;
  }

  std::int64_t outstanding() const { return outstanding_; }

 private:
  static bool in_program(const Event& e) { return e[Field::Peer] != kProcNull && e[Field::Peer] != kAnySource; }

  Slot* at(std::int64_t offset) {
    if (offset < 1 || offset > static_cast<std::int64_t>(slots_.size())) return nullptr;  // MPI_REQUEST_NULL
    return &slots_[slots_.size() - static_cast<std::size_t>(offset)];
  }

  std::vector<Slot> slots_;
  std::int64_t outstanding_ = 0;
};

/// Completes what a Wait* / Test* call completed.
void complete(Requests& reqs, const Event& e) {
  const auto offsets = e[ArrayField::Requests];
  auto complete_index = [&](std::int64_t i) {
    if (i >= 0 && i < static_cast<std::int64_t>(offsets.size())) reqs.complete(offsets[static_cast<std::size_t>(i)]);
  };
  switch (e.op) {
    case Op::Wait:
    case Op::Waitall:
      for (auto off : offsets) reqs.complete(off);
      return;
    case Op::Test:
    case Op::Testall:
      if (e[Field::Flag] != 0)
        for (auto off : offsets) reqs.complete(off);
      return;
    case Op::Waitany:
      complete_index(e[Field::Index]);
      return;
    case Op::Testany:
      if (e[Field::Flag] != 0) complete_index(e[Field::Index]);
      return;
    default:  // Waitsome, Testsome
      for (auto i : e[ArrayField::Indices]) complete_index(i);
      return;
  }
}

}  // namespace

std::map<const Node*, ElasticValue> await_points(const Trace& trace) {
  std::map<const Node*, std::map<std::int64_t, ValueSeq>> per_node;  // node -> rank -> flags
  for (std::int64_t r = 0; r < trace.nranks; ++r) {
    Cursor cursor(trace, r, TimingMode::None);
    Requests reqs;
    Event e;
    while (cursor.next(e)) {
      const OpKind kind = op_kind(e.op);
      if (op_creates_request(e.op)) {
        reqs.create(e);
      } else if (kind == OpKind::Start) {
        for (auto off : e[ArrayField::Requests]) reqs.start(off);
      } else if (kind == OpKind::RequestFree) {
        for (auto off : e[ArrayField::Requests]) reqs.free(off);
      } else if (kind == OpKind::Completion) {
        const bool some_before = reqs.outstanding() > 0;
        complete(reqs, e);
        per_node[cursor.last_node()][r].append(some_before && reqs.outstanding() == 0 ? 1 : 0);
      } else if (kind == OpKind::SendRecv) {
        per_node[cursor.last_node()][r].append(reqs.outstanding() == 0 ? 1 : 0);
      }
    }
  }
  std::map<const Node*, ElasticValue> out;
  for (auto& [node, by_rank] : per_node) {
    for (auto& [rank, flags] : by_rank) flags = flags.canonical();
    out[node] = codegen_support::elastic_of(std::move(by_rank));
  }
  return out;
}

}  // namespace scalatrace::codegen_await
