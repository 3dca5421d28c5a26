#pragma once
// MPI operations as scalatrace names them, generated from ops.def.
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace scalatrace {

/// What an operation does, as far as compression, matching and replay care.
enum class OpKind : std::uint8_t {
  Other,                  ///< anything not modelled: counted by name (Field::NameId) and call site
  Lifecycle,              ///< Init, Init_thread, Finalize, Abort
  BlockingSend,           ///< Send, Bsend, Ssend, Rsend
  BlockingRecv,           ///< Recv
  SendRecv,               ///< Sendrecv, Sendrecv_replace
  NonblockingSend,        ///< Isend and friends: create one request
  NonblockingRecv,        ///< Irecv: creates one request
  Probe,                  ///< Probe, Iprobe
  PersistentSend,         ///< Send_init and friends: create one (inactive) request
  PersistentRecv,         ///< Recv_init: creates one (inactive) request
  Start,                  ///< Start, Startall: activate persistent requests
  RequestFree,            ///< Request_free
  Completion,             ///< Wait*, Test*
  Collective,             ///< blocking collectives
  NonblockingCollective,  ///< I-collectives: create one request
  CommCreate,             ///< creates a communicator (Field::NewComm)
  CommFree,               ///< Comm_free
};

enum class Op : std::uint16_t {
#define SCALATRACE_OP(name, kind) name,
#include "scalatrace/model/ops.def"
#undef SCALATRACE_OP
  kCount
};

inline constexpr std::size_t kOpCount = static_cast<std::size_t>(Op::kCount);

/// "Send", "Waitall", ... (without the MPI_ prefix).
std::string_view op_name(Op op);
/// Inverse of op_name; accepts an optional "MPI_" prefix.
std::optional<Op> op_from_name(std::string_view name);
/// Each op's kind, by op (the table every per-event dispatch reads: kept inline).
inline constexpr OpKind kOpKinds[] = {
#define SCALATRACE_OP(name, kind) OpKind::kind,
#include "scalatrace/model/ops.def"
#undef SCALATRACE_OP
};
static_assert(std::size(kOpKinds) == kOpCount);

inline OpKind op_kind(Op op) {
  const auto i = static_cast<std::size_t>(op);
  return i < kOpCount ? kOpKinds[i] : OpKind::Other;
}
/// True for calls that return without waiting for another rank: nonblocking and persistent
/// initiations (point-to-point and collective), Start(all), the Test family, Iprobe,
/// Request_free, Comm_free and functions recorded as Other (Comm_rank, Type_commit, ...).
/// Inline: the simulator asks it of every event.
inline bool op_never_waits(Op op) {
  switch (op_kind(op)) {
    case OpKind::Other:
    case OpKind::NonblockingSend:
    case OpKind::NonblockingRecv:
    case OpKind::PersistentSend:
    case OpKind::PersistentRecv:
    case OpKind::Start:
    case OpKind::RequestFree:
    case OpKind::CommFree:
    case OpKind::NonblockingCollective:
      return true;
    case OpKind::Completion:
      return op == Op::Test || op == Op::Testall || op == Op::Testany || op == Op::Testsome;
    case OpKind::Probe:
      return op == Op::Iprobe;
    default:
      return false;
  }
}
std::string_view op_kind_name(OpKind kind);

/// True for ops whose call creates exactly one request in the handle buffer.
bool op_creates_request(Op op);
bool op_is_collective(Op op);      ///< blocking or nonblocking collective
bool op_is_point_to_point(Op op);  ///< sends, receives, sendrecv, persistent inits
/// MPI_Init or MPI_Init_thread: where a rank's timed part of the run starts (at its end).
inline bool is_mpi_init(Op op) { return op == Op::Init || op == Op::Init_thread; }

}  // namespace scalatrace
