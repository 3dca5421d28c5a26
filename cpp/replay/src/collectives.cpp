// Replay of blocking and nonblocking collectives (Replayer::collective).
#include <memory>
#include <vector>

#include "replayer.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace::replay {
namespace {

// Receive side of a collective: recorded Bytes2 / DtSize2, or the send side where the
// collector left them 0 (ops whose two sides must match anyway).
std::int64_t recv_bytes(const Event& e) { return e[Field::Bytes2] != 0 ? e[Field::Bytes2] : e[Field::Bytes]; }
std::int64_t recv_dtsize(const Event& e) { return e[Field::DtSize2] != 0 ? e[Field::DtSize2] : e[Field::DtSize]; }

// Arrays a nonblocking v/w collective reads until it completes.
struct VectorArgs {
  VectorPayload send, recv;
  std::vector<MPI_Datatype> send_types, recv_types;
};

}  // namespace

void Replayer::collective(const Event& e, MPI_Request* req) {
  const CommInfo& comm = comms_.get(e[Field::Comm]);
  const MPI_Comm c = comm.handle;
  const int size = comm.size;
  const auto n = static_cast<std::size_t>(size);
  const int root = static_cast<int>(e[Field::Root]);
  const bool nb = req != nullptr;
  auto args = std::make_shared<VectorArgs>();  // kept alive with the request (nonblocking)
  if (nb) requests_.at_offset(1)->keep = args;

  switch (e.op) {
    case Op::Barrier:
      MPI_Barrier(c);
      return;
    case Op::Ibarrier:
      MPI_Ibarrier(c, req);
      return;
    case Op::Bcast:
    case Op::Ibcast: {
      Payload p = types_.payload(e[Field::Bytes], e[Field::DtSize], Rounding::Nearest);
      void* buf = recv_pool_.get(p.buffer_bytes);
      nb ? MPI_Ibcast_c(buf, p.count, p.type, root, c, req) : MPI_Bcast_c(buf, p.count, p.type, root, c);
      return;
    }
    case Op::Reduce:
    case Op::Ireduce:
    case Op::Allreduce:
    case Op::Iallreduce:
    case Op::Scan:
    case Op::Iscan:
    case Op::Exscan:
    case Op::Iexscan: {
      Reduction r = types_.reduction(e[Field::Bytes], e[Field::DtSize], e[Field::RedOp]);
      void* s = send_pool_.get(r.payload.buffer_bytes);
      void* d = recv_pool_.get(r.payload.buffer_bytes);
      const MPI_Count k = r.payload.count;
      const MPI_Datatype t = r.payload.type;
      switch (e.op) {
        case Op::Reduce:
          MPI_Reduce_c(s, d, k, t, r.op, root, c);
          break;
        case Op::Ireduce:
          MPI_Ireduce_c(s, d, k, t, r.op, root, c, req);
          break;
        case Op::Allreduce:
          MPI_Allreduce_c(s, d, k, t, r.op, c);
          break;
        case Op::Iallreduce:
          MPI_Iallreduce_c(s, d, k, t, r.op, c, req);
          break;
        case Op::Scan:
          MPI_Scan_c(s, d, k, t, r.op, c);
          break;
        case Op::Iscan:
          MPI_Iscan_c(s, d, k, t, r.op, c, req);
          break;
        case Op::Exscan:
          MPI_Exscan_c(s, d, k, t, r.op, c);
          break;
        default:
          MPI_Iexscan_c(s, d, k, t, r.op, c, req);
          break;
      }
      return;
    }
    case Op::Reduce_scatter_block:
    case Op::Ireduce_scatter_block: {
      // Field::Bytes: the per-rank block (recvcount * datatype size).
      Reduction r = types_.reduction(e[Field::Bytes], e[Field::DtSize], e[Field::RedOp]);
      void* s = send_pool_.get(r.payload.buffer_bytes * n);
      void* d = recv_pool_.get(r.payload.buffer_bytes);
      if (nb)
        MPI_Ireduce_scatter_block_c(s, d, r.payload.count, r.payload.type, r.op, c, req);
      else
        MPI_Reduce_scatter_block_c(s, d, r.payload.count, r.payload.type, r.op, c);
      return;
    }
    case Op::Reduce_scatter:
    case Op::Ireduce_scatter: {
      // Field RecvCounts: bytes each rank receives; the element type comes from the reduction.
      const auto& counts = e[ArrayField::RecvCounts];
      std::int64_t total = 0;
      for (auto b : counts) total += b;
      std::int64_t dtsize = e[Field::DtSize] != 0 ? e[Field::DtSize] : e[Field::DtSize2];
      Reduction r = types_.reduction(total, dtsize, e[Field::RedOp]);
      MPI_Aint lb = 0, extent = 1;
      PMPI_Type_get_extent(r.payload.type, &lb, &extent);
      int elem_size = 1;
      PMPI_Type_size(r.payload.type, &elem_size);
      auto& rc = args->recv.counts;
      MPI_Count sum = 0;
      for (std::size_t i = 0; i < n; ++i) {
        std::int64_t b = i < counts.size() ? types_.scaled(counts[i], Rounding::Nearest) : 0;
        rc.push_back(to_large_count(elem_size > 0 ? b / elem_size : 0, "element count"));
        sum += rc.back();
      }
      void* s = send_pool_.get(static_cast<std::size_t>(sum) * static_cast<std::size_t>(extent));
      void* d = recv_pool_.get(static_cast<std::size_t>(rc[static_cast<std::size_t>(comm.rank)]) *
                               static_cast<std::size_t>(extent));
      if (nb)
        MPI_Ireduce_scatter_c(s, d, rc.data(), r.payload.type, r.op, c, req);
      else
        MPI_Reduce_scatter_c(s, d, rc.data(), r.payload.type, r.op, c);
      return;
    }
    case Op::Gather:
    case Op::Igather:
    case Op::Allgather:
    case Op::Iallgather:
    case Op::Alltoall:
    case Op::Ialltoall:
    case Op::Scatter:
    case Op::Iscatter: {
      // Bytes / Bytes2: per-peer send / receive block.
      Payload sp = types_.payload(e[Field::Bytes], e[Field::DtSize], Rounding::Nearest);
      Payload rp = types_.payload(recv_bytes(e), recv_dtsize(e), Rounding::Nearest);
      const bool send_all =
          e.op == Op::Alltoall || e.op == Op::Ialltoall || e.op == Op::Scatter || e.op == Op::Iscatter;
      const bool recv_all = e.op != Op::Scatter && e.op != Op::Iscatter;
      void* s = send_pool_.get(sp.buffer_bytes * (send_all ? n : 1));
      void* d = recv_pool_.get(rp.buffer_bytes * (recv_all ? n : 1));
      switch (e.op) {
        case Op::Gather:
          MPI_Gather_c(s, sp.count, sp.type, d, rp.count, rp.type, root, c);
          break;
        case Op::Igather:
          MPI_Igather_c(s, sp.count, sp.type, d, rp.count, rp.type, root, c, req);
          break;
        case Op::Allgather:
          MPI_Allgather_c(s, sp.count, sp.type, d, rp.count, rp.type, c);
          break;
        case Op::Iallgather:
          MPI_Iallgather_c(s, sp.count, sp.type, d, rp.count, rp.type, c, req);
          break;
        case Op::Alltoall:
          MPI_Alltoall_c(s, sp.count, sp.type, d, rp.count, rp.type, c);
          break;
        case Op::Ialltoall:
          MPI_Ialltoall_c(s, sp.count, sp.type, d, rp.count, rp.type, c, req);
          break;
        case Op::Scatter:
          MPI_Scatter_c(s, sp.count, sp.type, d, rp.count, rp.type, root, c);
          break;
        default:
          MPI_Iscatter_c(s, sp.count, sp.type, d, rp.count, rp.type, root, c, req);
          break;
      }
      return;
    }
    case Op::Gatherv:
    case Op::Igatherv:
    case Op::Allgatherv:
    case Op::Iallgatherv: {
      Payload sp = types_.payload(e[Field::Bytes], e[Field::DtSize], Rounding::Nearest);
      args->recv = types_.vector_payload(e[ArrayField::RecvCounts], recv_dtsize(e), size);
      auto& rv = args->recv;
      void* s = send_pool_.get(sp.buffer_bytes);
      void* d = recv_pool_.get(rv.buffer_bytes);
      switch (e.op) {
        case Op::Gatherv:
          MPI_Gatherv_c(s, sp.count, sp.type, d, rv.counts.data(), rv.displs.data(), rv.type, root, c);
          break;
        case Op::Igatherv:
          MPI_Igatherv_c(s, sp.count, sp.type, d, rv.counts.data(), rv.displs.data(), rv.type, root, c, req);
          break;
        case Op::Allgatherv:
          MPI_Allgatherv_c(s, sp.count, sp.type, d, rv.counts.data(), rv.displs.data(), rv.type, c);
          break;
        default:
          MPI_Iallgatherv_c(s, sp.count, sp.type, d, rv.counts.data(), rv.displs.data(), rv.type, c, req);
          break;
      }
      return;
    }
    case Op::Scatterv:
    case Op::Iscatterv: {
      args->send = types_.vector_payload(e[ArrayField::SendCounts], e[Field::DtSize], size);
      auto& sv = args->send;
      Payload rp = types_.payload(recv_bytes(e), recv_dtsize(e), Rounding::Nearest);
      void* s = send_pool_.get(sv.buffer_bytes);
      void* d = recv_pool_.get(rp.buffer_bytes);
      if (nb)
        MPI_Iscatterv_c(s, sv.counts.data(), sv.displs.data(), sv.type, d, rp.count, rp.type, root, c, req);
      else
        MPI_Scatterv_c(s, sv.counts.data(), sv.displs.data(), sv.type, d, rp.count, rp.type, root, c);
      return;
    }
    case Op::Alltoallv:
    case Op::Ialltoallv: {
      args->send = types_.vector_payload(e[ArrayField::SendCounts], e[Field::DtSize], size);
      args->recv = types_.vector_payload(e[ArrayField::RecvCounts], recv_dtsize(e), size);
      auto& sv = args->send;
      auto& rv = args->recv;
      void* s = send_pool_.get(sv.buffer_bytes);
      void* d = recv_pool_.get(rv.buffer_bytes);
      if (nb)
        MPI_Ialltoallv_c(s, sv.counts.data(), sv.displs.data(), sv.type, d, rv.counts.data(), rv.displs.data(), rv.type,
                         c, req);
      else
        MPI_Alltoallv_c(s, sv.counts.data(), sv.displs.data(), sv.type, d, rv.counts.data(), rv.displs.data(), rv.type,
                        c);
      return;
    }
    case Op::Alltoallw:
    case Op::Ialltoallw: {
      // Per-peer datatypes are not recorded, only bytes: MPI_BYTE with byte displacements.
      args->send = types_.vector_payload(e[ArrayField::SendCounts], 1, size);
      args->recv = types_.vector_payload(e[ArrayField::RecvCounts], 1, size);
      args->send_types.assign(n, MPI_BYTE);
      args->recv_types.assign(n, MPI_BYTE);
      auto& sv = args->send;
      auto& rv = args->recv;
      void* s = send_pool_.get(sv.buffer_bytes);
      void* d = recv_pool_.get(rv.buffer_bytes);
      if (nb)
        MPI_Ialltoallw_c(s, sv.counts.data(), sv.displs.data(), args->send_types.data(), d, rv.counts.data(),
                         rv.displs.data(), args->recv_types.data(), c, req);
      else
        MPI_Alltoallw_c(s, sv.counts.data(), sv.displs.data(), args->send_types.data(), d, rv.counts.data(),
                        rv.displs.data(), args->recv_types.data(), c);
      return;
    }
    default:
      throw FormatError("not a collective op");
  }
}

}  // namespace scalatrace::replay
