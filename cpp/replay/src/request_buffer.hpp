#pragma once
// The replay side of the request handle buffer (ScalaTrace Fig. 5, event.hpp): every
// request-creating event appends a slot; completion, Start and Request_free events name
// requests by offset back from the end (1 = newest). Slots remember which event created them
// so a stuck completion can say what it waits for.
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "scalatrace/model/event.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace::replay {

struct RequestSlot {
  MPI_Request handle = MPI_REQUEST_NULL;
  std::int64_t event = -1;  ///< index of the creating event
  Op op = Op::Other;
  std::int64_t peer = 0;  ///< relative, as recorded
  std::int64_t abs_peer = 0;
  std::int64_t tag = 0;
  std::shared_ptr<void> keep;  ///< arrays a nonblocking collective reads until completion
};

class RequestBuffer {
 public:
  RequestSlot& append(std::int64_t event, Op op) {
    slots_.emplace_back();
    slots_.back().event = event;
    slots_.back().op = op;
    return slots_.back();
  }
  /// Slot named by a recorded offset; nullptr for kNullRequest. Throws FormatError if the
  /// offset points before the first request.
  RequestSlot* at_offset(std::int64_t offset) {
    if (offset == kNullRequest) return nullptr;
    if (offset < 1 || static_cast<std::uint64_t>(offset) > slots_.size())
      throw FormatError("request offset " + std::to_string(offset) + " but only " + std::to_string(slots_.size()) +
                        " requests were created so far");
    return &slots_[slots_.size() - static_cast<std::size_t>(offset)];
  }
  std::size_t size() const { return slots_.size(); }

 private:
  std::deque<RequestSlot> slots_;  // deque: slot references stay valid as it grows
};

}  // namespace scalatrace::replay
