#pragma once
// One MPI call as recorded by the collector: the unit of every scalatrace algorithm.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "scalatrace/model/op.hpp"

namespace scalatrace {

/// Scalar parameters of an event. Which ones an op uses is documented per field; unused
/// fields stay 0. The numeric values are part of the trace formats: append only.
enum class Field : std::uint8_t {
  Comm,     ///< communicator id (0 = MPI_COMM_WORLD, 1 = MPI_COMM_SELF, then creation order)
  Peer,     ///< destination (sends) or source (receives, probes), RELATIVE: peer - my rank in
            ///< Comm; or kAnySource / kProcNull
  Tag,      ///< tag of sends/receives/probes (receive side: may be kAnyTag)
  Bytes,    ///< bytes sent (count * datatype size); collectives: send-side bytes
  DtSize,   ///< size in bytes of the (send) datatype
  Peer2,    ///< Sendrecv*: source, relative like Peer
  Tag2,     ///< Sendrecv*: receive tag
  Bytes2,   ///< Sendrecv*: bytes received; collectives: receive-side bytes
  DtSize2,  ///< size of the receive datatype
  Root,     ///< rooted collectives: root rank in Comm (absolute)
  RedOp,    ///< reduction op (see RedOpCode), collectives that reduce
  NewComm,  ///< CommCreate ops: id of the communicator created (kNoComm if MPI_COMM_NULL)
  Color,    ///< Comm_split: color (kUndefined for MPI_UNDEFINED)
  Key,      ///< Comm_split: key
  Index,    ///< Waitany/Testany: index completed (kUndefined if none)
  Flag,     ///< Test/Testall/Testany/Iprobe: flag returned
  Count,    ///< Waitsome/Testsome: outcount; Cart_create: ndims; Other: unused
  NameId,   ///< Op::Other: index into the function-name table
  kCount
};
inline constexpr std::size_t kFieldCount = static_cast<std::size_t>(Field::kCount);

/// Array parameters of an event.
enum class ArrayField : std::uint8_t {
  Requests,    ///< handle-buffer offsets (see below) of the requests an op refers to:
               ///< completion ops (one per array entry), Start/Startall, Request_free
  SendCounts,  ///< v/w collectives: bytes sent to each comm rank
  RecvCounts,  ///< v/w collectives: bytes received from each comm rank
  Indices,     ///< Waitsome/Testsome: indices completed
  kCount
};
inline constexpr std::size_t kArrayFieldCount = static_cast<std::size_t>(ArrayField::kCount);

// Sentinels: outside any valid relative rank, tag or offset.
inline constexpr std::int64_t kAnySource = -(std::int64_t{1} << 40);
inline constexpr std::int64_t kProcNull = kAnySource - 1;
inline constexpr std::int64_t kAnyTag = -(std::int64_t{1} << 40);
inline constexpr std::int64_t kNullRequest = -(std::int64_t{1} << 40);
inline constexpr std::int64_t kUndefined = -(std::int64_t{1} << 40) - 2;
inline constexpr std::int64_t kNoComm = -(std::int64_t{1} << 40) - 3;

/// Reduction ops as stored in Field::RedOp.
enum class RedOpCode : std::int64_t {
  None = 0,
  Sum,
  Prod,
  Max,
  Min,
  Land,
  Lor,
  Lxor,
  Band,
  Bor,
  Bxor,
  Maxloc,
  Minloc,
  Replace,
  NoOp,
  UserDefined
};

// Request handle buffer (ScalaTrace paper, Fig. 5): every op that creates a request
// (op_creates_request) appends one slot to the rank's handle buffer. An op that refers to a
// request stores offset = (number of slots created so far) - (slot index of that request),
// so 1 is the request created most recently. Offsets do not depend on handle values, so
// MPICH handing out one shared handle for several requests does not confuse pairing.

struct Event {
  Op op = Op::Other;
  std::uint32_t site = 0;  ///< call-site id in the rank's / trace's CallSiteTable
  std::array<std::int64_t, kFieldCount> fields{};
  std::array<std::vector<std::int64_t>, kArrayFieldCount> arrays{};
  std::uint64_t compute_ns = 0;   ///< time since the end of the previous MPI call
  std::uint64_t duration_ns = 0;  ///< time inside this call

  std::int64_t& operator[](Field f) { return fields[static_cast<std::size_t>(f)]; }
  std::int64_t operator[](Field f) const { return fields[static_cast<std::size_t>(f)]; }
  std::vector<std::int64_t>& operator[](ArrayField f) { return arrays[static_cast<std::size_t>(f)]; }
  const std::vector<std::int64_t>& operator[](ArrayField f) const { return arrays[static_cast<std::size_t>(f)]; }

  /// Equality of everything but timing.
  bool same_call(const Event& other) const {
    return op == other.op && site == other.site && fields == other.fields && arrays == other.arrays;
  }
};

/// An event whose arrays are views into storage that outlives it (a trace's value sequences,
/// or an Event): what the simulator reads, without copying arrays per event.
struct EventView {
  Op op = Op::Other;
  std::uint32_t site = 0;
  std::array<std::int64_t, kFieldCount> fields{};
  std::array<std::span<const std::int64_t>, kArrayFieldCount> arrays{};
  std::uint64_t compute_ns = 0;
  std::uint64_t duration_ns = 0;

  std::int64_t operator[](Field f) const { return fields[static_cast<std::size_t>(f)]; }
  std::span<const std::int64_t> operator[](ArrayField f) const { return arrays[static_cast<std::size_t>(f)]; }
  /// A view of `e` (valid while `e` lives and its arrays are not changed).
  static EventView of(const Event& e);
  /// A copy that owns its arrays.
  Event to_event() const;
};

std::string_view field_name(Field f);
std::string_view array_field_name(ArrayField f);
/// One-line human-readable description (for dumps and test failure messages).
std::string describe(const Event& e);
std::string describe(const EventView& e);

}  // namespace scalatrace
