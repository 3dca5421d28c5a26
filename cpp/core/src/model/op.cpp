#include "scalatrace/model/op.hpp"

#include <array>

namespace scalatrace {
namespace {

/// Each op's name, by op (kinds: kOpKinds in op.hpp).
constexpr std::array<std::string_view, kOpCount> kOpNames = {{
#define SCALATRACE_OP(name, kind) #name,
#include "scalatrace/model/ops.def"
#undef SCALATRACE_OP
}};

}  // namespace

std::string_view op_name(Op op) {
  auto i = static_cast<std::size_t>(op);
  return i < kOpCount ? kOpNames[i] : std::string_view{"<invalid op>"};
}

std::optional<Op> op_from_name(std::string_view name) {
  if (name.starts_with("MPI_")) name.remove_prefix(4);
  for (std::size_t i = 0; i < kOpCount; ++i)
    if (kOpNames[i] == name) return static_cast<Op>(i);
  return std::nullopt;
}

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Other:
      return "other";
    case OpKind::Lifecycle:
      return "lifecycle";
    case OpKind::BlockingSend:
      return "blocking-send";
    case OpKind::BlockingRecv:
      return "blocking-recv";
    case OpKind::SendRecv:
      return "sendrecv";
    case OpKind::NonblockingSend:
      return "nonblocking-send";
    case OpKind::NonblockingRecv:
      return "nonblocking-recv";
    case OpKind::Probe:
      return "probe";
    case OpKind::PersistentSend:
      return "persistent-send";
    case OpKind::PersistentRecv:
      return "persistent-recv";
    case OpKind::Start:
      return "start";
    case OpKind::RequestFree:
      return "request-free";
    case OpKind::Completion:
      return "completion";
    case OpKind::Collective:
      return "collective";
    case OpKind::NonblockingCollective:
      return "nonblocking-collective";
    case OpKind::CommCreate:
      return "comm-create";
    case OpKind::CommFree:
      return "comm-free";
  }
  return "unknown";
}

bool op_creates_request(Op op) {
  switch (op_kind(op)) {
    case OpKind::NonblockingSend:
    case OpKind::NonblockingRecv:
    case OpKind::PersistentSend:
    case OpKind::PersistentRecv:
    case OpKind::NonblockingCollective:
      return true;
    default:
      return false;
  }
}

bool op_is_collective(Op op) {
  auto k = op_kind(op);
  return k == OpKind::Collective || k == OpKind::NonblockingCollective;
}

bool op_is_point_to_point(Op op) {
  switch (op_kind(op)) {
    case OpKind::BlockingSend:
    case OpKind::BlockingRecv:
    case OpKind::SendRecv:
    case OpKind::NonblockingSend:
    case OpKind::NonblockingRecv:
    case OpKind::PersistentSend:
    case OpKind::PersistentRecv:
      return true;
    default:
      return false;
  }
}

}  // namespace scalatrace
