#pragma once
// What to record of each traced op: small helpers the generated wrappers call (chosen per op by
// the RECORD table in gen_wrappers.py). They run under the recorder's lock, after the PMPI call
// returned MPI_SUCCESS (except save_requests / comm in "pre", before the call). They only read
// arguments that MPI defines as significant for the calling rank (e.g. Gather's receive side
// only at the root), so no invalid handle is ever passed to PMPI_Type_size.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "scalatrace/model/event.hpp"
#include "state/recorder.hpp"

namespace scalatrace::pmpi {

/// One call being recorded.
struct Rec {
  Recorder* recorder = nullptr;
  Event e;
  bool ok = false;
  std::vector<MPI_Request> saved;        ///< request handles before the call
  MPI_Comm comm_handle = MPI_COMM_NULL;  ///< set by rec::comm
  const CommInfo* comm_info = nullptr;
};

namespace rec {

inline std::int64_t type_size(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return 0;
  MPI_Count size = 0;
  if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS || size < 0) return 0;
  return static_cast<std::int64_t>(size);
}

inline std::int64_t relative(const CommInfo& c, int peer) {
  if (peer == MPI_ANY_SOURCE) return kAnySource;
  if (peer == MPI_PROC_NULL) return kProcNull;
  return static_cast<std::int64_t>(peer) - c.rank;
}

inline std::int64_t tag_value(int tag) { return tag == MPI_ANY_TAG ? kAnyTag : tag; }

inline std::int64_t undefined_or(int v) { return v == MPI_UNDEFINED ? kUndefined : v; }

inline std::int64_t redop_code(MPI_Op op) {
  if (op == MPI_OP_NULL) return static_cast<std::int64_t>(RedOpCode::None);
  const std::pair<MPI_Op, RedOpCode> known[] = {
      {MPI_SUM, RedOpCode::Sum},         {MPI_PROD, RedOpCode::Prod},     {MPI_MAX, RedOpCode::Max},
      {MPI_MIN, RedOpCode::Min},         {MPI_LAND, RedOpCode::Land},     {MPI_LOR, RedOpCode::Lor},
      {MPI_LXOR, RedOpCode::Lxor},       {MPI_BAND, RedOpCode::Band},     {MPI_BOR, RedOpCode::Bor},
      {MPI_BXOR, RedOpCode::Bxor},       {MPI_MAXLOC, RedOpCode::Maxloc}, {MPI_MINLOC, RedOpCode::Minloc},
      {MPI_REPLACE, RedOpCode::Replace}, {MPI_NO_OP, RedOpCode::NoOp}};
  for (const auto& [handle, code] : known)
    if (op == handle) return static_cast<std::int64_t>(code);
  return static_cast<std::int64_t>(RedOpCode::UserDefined);
}

inline void set(Rec& r, Field f, std::int64_t v) { r.e[f] = v; }

/// Records the communicator (Field::Comm) and returns what is known of it.
inline const CommInfo& comm(Rec& r, MPI_Comm c) {
  static const CommInfo kNull{kNoComm, 0, 0, 0};
  r.comm_handle = c;
  r.comm_info = c == MPI_COMM_NULL ? &kNull : &r.recorder->comms.lookup(c);
  r.e[Field::Comm] = r.comm_info->id;
  return *r.comm_info;
}

inline bool is_inter(const CommInfo& c) { return c.array_size != c.size; }

/// One side of a point-to-point call: relative peer, tag, bytes and datatype size, stored in
/// the given fields (Peer/Tag/Bytes/DtSize, or Peer2/... for the receive side of Sendrecv*).
template <class Count>
void p2p_side(Rec& r, Field peer, Field tag_field, Field bytes, Field dtsize, Count count, MPI_Datatype t, int who,
              int tag, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  const std::int64_t size = type_size(t);
  r.e[peer] = relative(info, who);
  r.e[tag_field] = tag_value(tag);
  r.e[bytes] = static_cast<std::int64_t>(count) * size;
  r.e[dtsize] = size;
}

template <class Count>
void send(Rec& r, Count count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  p2p_side(r, Field::Peer, Field::Tag, Field::Bytes, Field::DtSize, count, t, dest, tag, c);
}

template <class Count>
void recv(Rec& r, Count count, MPI_Datatype t, int source, int tag, MPI_Comm c) {
  p2p_side(r, Field::Peer, Field::Tag, Field::Bytes, Field::DtSize, count, t, source, tag, c);
}

/// Receive side of Sendrecv*.
template <class Count>
void recv2(Rec& r, Count count, MPI_Datatype t, int source, int tag, MPI_Comm c) {
  p2p_side(r, Field::Peer2, Field::Tag2, Field::Bytes2, Field::DtSize2, count, t, source, tag, c);
}

inline void probe(Rec& r, int source, int tag, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  r.e[Field::Peer] = relative(info, source);
  r.e[Field::Tag] = tag_value(tag);
}

inline void flag(Rec& r, const int* flag) { r.e[Field::Flag] = *flag; }

inline void new_request(Rec& r, const MPI_Request* request, bool persistent) {
  r.recorder->requests.created(*request, persistent);
}

inline void save_requests(Rec& r, int n, const MPI_Request* requests) {
  if (n > 0 && requests) r.saved.assign(requests, requests + n);
}

inline void resolve_saved(Rec& r) {
  r.recorder->requests.resolve(r.saved.data(), static_cast<int>(r.saved.size()), r.e[ArrayField::Requests]);
}

inline void start(Rec& r, int n, const MPI_Request* requests) {
  save_requests(r, n, requests);
  resolve_saved(r);
  r.recorder->requests.commit();
}

inline void request_free(Rec& r) {
  resolve_saved(r);
  r.recorder->requests.freed(0);
  r.recorder->requests.commit();
}

/// Wait, Waitall: every request completed.
inline void completed_all(Rec& r) {
  resolve_saved(r);
  for (int i = 0; i < static_cast<int>(r.saved.size()); ++i) r.recorder->requests.completed(i);
  r.recorder->requests.commit();
}

/// Test, Testall: every request completed if *flag.
inline void completed_if(Rec& r, const int* flag) {
  r.e[Field::Flag] = *flag;
  resolve_saved(r);
  if (*flag)
    for (int i = 0; i < static_cast<int>(r.saved.size()); ++i) r.recorder->requests.completed(i);
  r.recorder->requests.commit();
}

/// Waitany (flag 1) / Testany: request *index completed if flag and index != MPI_UNDEFINED.
inline void completed_any(Rec& r, int flag, const int* index) {
  r.e[Field::Index] = undefined_or(*index);
  resolve_saved(r);
  if (flag && *index != MPI_UNDEFINED) r.recorder->requests.completed(*index);
  r.recorder->requests.commit();
}
inline void completed_any(Rec& r, const int* flag, const int* index) {
  r.e[Field::Flag] = *flag;
  completed_any(r, *flag, index);
}

/// Waitsome / Testsome.
inline void completed_some(Rec& r, const int* outcount, const int* indices) {
  r.e[Field::Count] = undefined_or(*outcount);
  resolve_saved(r);
  if (*outcount != MPI_UNDEFINED)
    for (int k = 0; k < *outcount; ++k) {
      r.e[ArrayField::Indices].push_back(indices[k]);
      r.recorder->requests.completed(indices[k]);
    }
  r.recorder->requests.commit();
}

// ---- collectives ----

inline std::int64_t root_value(int root) {
  if (root == MPI_PROC_NULL) return kProcNull;
  return root;  // absolute rank in the communicator (MPI_ROOT stays as is)
}
/// Does the calling rank act as the root (intracommunicator: root == my rank; inter: MPI_ROOT)?
inline bool at_root(const CommInfo& c, int root) { return is_inter(c) ? root == MPI_ROOT : root == c.rank; }
/// Does the calling rank contribute as a non-root member (always for intra; for inter only
/// in the group opposite the root)?
inline bool at_leaf(const CommInfo& c, int root) { return is_inter(c) ? root >= 0 : true; }

template <class Count>
void side(Rec& r, Field bytes, Field dtsize, Count count, MPI_Datatype t) {
  const std::int64_t size = type_size(t);
  r.e[bytes] = static_cast<std::int64_t>(count) * size;
  r.e[dtsize] = size;
}

template <class Count>
void bcast(Rec& r, Count count, MPI_Datatype t, int root, MPI_Comm c) {
  comm(r, c);
  r.e[Field::Root] = root_value(root);
  if (root != MPI_PROC_NULL) side(r, Field::Bytes, Field::DtSize, count, t);
}

template <class Count>
void reduce(Rec& r, Count count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  bcast(r, count, t, root, c);
  r.e[Field::RedOp] = redop_code(op);
}

template <class Count>
void allreduce(Rec& r, Count count, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  comm(r, c);
  side(r, Field::Bytes, Field::DtSize, count, t);
  r.e[Field::RedOp] = redop_code(op);
}

/// Gather: send side at every contributing rank (root with MPI_IN_PLACE: its own block, taken
/// from the receive side); receive side (bytes per rank) at the root only.
template <class Count>
void gather(Rec& r, const void* sendbuf, Count sendcount, MPI_Datatype sendtype, Count recvcount, MPI_Datatype recvtype,
            int root, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  r.e[Field::Root] = root_value(root);
  const bool is_root = at_root(info, root);
  if (sendbuf == MPI_IN_PLACE) {
    if (is_root) side(r, Field::Bytes, Field::DtSize, recvcount, recvtype);
  } else if (at_leaf(info, root) && !(is_inter(info) && is_root)) {
    side(r, Field::Bytes, Field::DtSize, sendcount, sendtype);
  }
  if (is_root) side(r, Field::Bytes2, Field::DtSize2, recvcount, recvtype);
}

/// Scatter: send side (bytes per rank) at the root; receive side at every receiving rank.
template <class Count>
void scatter(Rec& r, Count sendcount, MPI_Datatype sendtype, const void* recvbuf, Count recvcount,
             MPI_Datatype recvtype, int root, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  r.e[Field::Root] = root_value(root);
  const bool is_root = at_root(info, root);
  if (is_root) side(r, Field::Bytes, Field::DtSize, sendcount, sendtype);
  if (recvbuf == MPI_IN_PLACE) {
    if (is_root) side(r, Field::Bytes2, Field::DtSize2, sendcount, sendtype);
  } else if (at_leaf(info, root) && !(is_inter(info) && is_root)) {
    side(r, Field::Bytes2, Field::DtSize2, recvcount, recvtype);
  }
}

/// Allgather / Alltoall: bytes per peer on each side (MPI_IN_PLACE: send side = receive side).
template <class Count>
void allgather(Rec& r, const void* sendbuf, Count sendcount, MPI_Datatype sendtype, Count recvcount,
               MPI_Datatype recvtype, MPI_Comm c) {
  comm(r, c);
  if (sendbuf == MPI_IN_PLACE)
    side(r, Field::Bytes, Field::DtSize, recvcount, recvtype);
  else
    side(r, Field::Bytes, Field::DtSize, sendcount, sendtype);
  side(r, Field::Bytes2, Field::DtSize2, recvcount, recvtype);
}

/// Per-rank byte counts of a v-collective; returns their sum.
template <class Count>
std::int64_t counts(Rec& r, ArrayField f, const Count* n, int len, std::int64_t size) {
  std::int64_t total = 0;
  auto& out = r.e[f];
  out.clear();
  for (int i = 0; i < len; ++i) {
    out.push_back(static_cast<std::int64_t>(n[i]) * size);
    total += out.back();
  }
  return total;
}

template <class Count, class CountArray>
void gatherv(Rec& r, const void* sendbuf, Count sendcount, MPI_Datatype sendtype, const CountArray* recvcounts,
             MPI_Datatype recvtype, int root, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  r.e[Field::Root] = root_value(root);
  const bool is_root = at_root(info, root);
  const std::int64_t rsize = is_root ? type_size(recvtype) : 0;
  if (sendbuf == MPI_IN_PLACE) {
    if (is_root) {
      r.e[Field::Bytes] = static_cast<std::int64_t>(recvcounts[info.rank]) * rsize;
      r.e[Field::DtSize] = rsize;
    }
  } else if (at_leaf(info, root) && !(is_inter(info) && is_root)) {
    side(r, Field::Bytes, Field::DtSize, sendcount, sendtype);
  }
  if (is_root) {
    r.e[Field::Bytes2] = counts(r, ArrayField::RecvCounts, recvcounts, info.array_size, rsize);
    r.e[Field::DtSize2] = rsize;
  }
}

template <class CountArray, class Count>
void scatterv(Rec& r, const CountArray* sendcounts, MPI_Datatype sendtype, const void* recvbuf, Count recvcount,
              MPI_Datatype recvtype, int root, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  r.e[Field::Root] = root_value(root);
  const bool is_root = at_root(info, root);
  const std::int64_t ssize = is_root ? type_size(sendtype) : 0;
  if (is_root) {
    r.e[Field::Bytes] = counts(r, ArrayField::SendCounts, sendcounts, info.array_size, ssize);
    r.e[Field::DtSize] = ssize;
  }
  if (recvbuf == MPI_IN_PLACE) {
    if (is_root) {
      r.e[Field::Bytes2] = static_cast<std::int64_t>(sendcounts[info.rank]) * ssize;
      r.e[Field::DtSize2] = ssize;
    }
  } else if (at_leaf(info, root) && !(is_inter(info) && is_root)) {
    side(r, Field::Bytes2, Field::DtSize2, recvcount, recvtype);
  }
}

template <class Count, class CountArray>
void allgatherv(Rec& r, const void* sendbuf, Count sendcount, MPI_Datatype sendtype, const CountArray* recvcounts,
                MPI_Datatype recvtype, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  const std::int64_t rsize = type_size(recvtype);
  r.e[Field::Bytes2] = counts(r, ArrayField::RecvCounts, recvcounts, info.array_size, rsize);
  r.e[Field::DtSize2] = rsize;
  if (sendbuf == MPI_IN_PLACE) {
    r.e[Field::Bytes] = static_cast<std::int64_t>(recvcounts[info.rank]) * rsize;
    r.e[Field::DtSize] = rsize;
  } else {
    side(r, Field::Bytes, Field::DtSize, sendcount, sendtype);
  }
}

template <class CountArray>
void alltoallv(Rec& r, const void* sendbuf, const CountArray* sendcounts, MPI_Datatype sendtype,
               const CountArray* recvcounts, MPI_Datatype recvtype, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  const std::int64_t rsize = type_size(recvtype);
  r.e[Field::Bytes2] = counts(r, ArrayField::RecvCounts, recvcounts, info.array_size, rsize);
  r.e[Field::DtSize2] = rsize;
  if (sendbuf == MPI_IN_PLACE) {
    r.e[ArrayField::SendCounts] = r.e[ArrayField::RecvCounts];
    r.e[Field::Bytes] = r.e[Field::Bytes2];
    r.e[Field::DtSize] = rsize;
  } else {
    const std::int64_t ssize = type_size(sendtype);
    r.e[Field::Bytes] = counts(r, ArrayField::SendCounts, sendcounts, info.array_size, ssize);
    r.e[Field::DtSize] = ssize;
  }
}

/// Alltoallw: per-peer datatypes, so DtSize/DtSize2 stay 0 and the arrays carry bytes.
template <class CountArray>
void alltoallw(Rec& r, const void* sendbuf, const CountArray* sendcounts, const MPI_Datatype* sendtypes,
               const CountArray* recvcounts, const MPI_Datatype* recvtypes, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  auto fill = [&](ArrayField f, const CountArray* n, const MPI_Datatype* t) {
    std::int64_t total = 0;
    auto& out = r.e[f];
    out.clear();
    for (int i = 0; i < info.array_size; ++i) {
      out.push_back(static_cast<std::int64_t>(n[i]) * type_size(t[i]));
      total += out.back();
    }
    return total;
  };
  r.e[Field::Bytes2] = fill(ArrayField::RecvCounts, recvcounts, recvtypes);
  if (sendbuf == MPI_IN_PLACE) {
    r.e[ArrayField::SendCounts] = r.e[ArrayField::RecvCounts];
    r.e[Field::Bytes] = r.e[Field::Bytes2];
  } else {
    r.e[Field::Bytes] = fill(ArrayField::SendCounts, sendcounts, sendtypes);
  }
}

/// Reduce_scatter: RecvCounts = bytes each rank receives; Bytes = all input, Bytes2 = mine.
template <class CountArray>
void reduce_scatter(Rec& r, const CountArray* recvcounts, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  const CommInfo& info = comm(r, c);
  const std::int64_t size = type_size(t);
  r.e[Field::Bytes] = counts(r, ArrayField::RecvCounts, recvcounts, info.size, size);
  r.e[Field::DtSize] = size;
  r.e[Field::Bytes2] = static_cast<std::int64_t>(recvcounts[info.rank]) * size;
  r.e[Field::DtSize2] = size;
  r.e[Field::RedOp] = redop_code(op);
}

/// Reduce_scatter_block: Bytes = Bytes2 = the block (recvcount x type size) each rank gets.
template <class Count>
void reduce_scatter_block(Rec& r, Count recvcount, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  comm(r, c);
  const std::int64_t size = type_size(t);
  r.e[Field::Bytes] = static_cast<std::int64_t>(recvcount) * size;
  r.e[Field::DtSize] = size;
  r.e[Field::Bytes2] = static_cast<std::int64_t>(recvcount) * size;
  r.e[Field::DtSize2] = size;
  r.e[Field::RedOp] = redop_code(op);
}

// ---- communicators ----

inline void new_comm(Rec& r, MPI_Comm created) { r.e[Field::NewComm] = r.recorder->comms.created(created); }

inline void split(Rec& r, int color, int key) {
  r.e[Field::Color] = undefined_or(color);
  r.e[Field::Key] = key;
}

inline void comm_freed(Rec& r) { r.recorder->comms.freed(r.comm_handle); }

}  // namespace rec
}  // namespace scalatrace::pmpi
