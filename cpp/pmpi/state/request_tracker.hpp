#pragma once
// The rank's request handle buffer (see event.hpp): every request-creating op takes one slot;
// ops referring to requests record offsets (slots created so far - slot index; 1 = newest).
//
// Handles are NOT unique (MPICH returns one shared handle for sends that completed at once), so
// the tracker keeps its own list of live requests (slot, handle, persistent, creating thread)
// and resolves a handle to the OLDEST live request with that value that is not already claimed
// by an earlier entry of the same call. Under MPI_THREAD_MULTIPLE the shared handle is live in
// several threads at once: a request created by the calling thread is preferred, so a thread's
// Waitall is paired with its own requests; one created by another thread is taken only if the
// calling thread has none with that handle (requests handed between threads). Handles never seen (requests made by
// functions scalatrace does not model, e.g. MPI_File_iread) resolve to kUndefined; MPI_REQUEST_NULL to kNullRequest.
#include <mpi.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace scalatrace::pmpi {

class RequestTracker {
 public:
  /// A request-creating op returned in thread `thread`; `handle` may be MPI_REQUEST_NULL
  /// (failed call): the slot is taken anyway so offsets stay aligned across ranks.
  void created(MPI_Request handle, bool persistent, std::thread::id thread = std::this_thread::get_id());
  /// Resolves handles (values before the call, made in thread `thread`) to offsets; remembers
  /// which live entry each array position claimed, for completed() / freed().
  void resolve(const MPI_Request* handles, int n, std::vector<std::int64_t>& offsets,
               std::thread::id thread = std::this_thread::get_id());
  /// Position i of the last resolve() completed: non-persistent requests leave the live list.
  void completed(int i);
  /// Position i of the last resolve() was freed (MPI_Request_free): leaves the live list.
  void freed(int i);
  /// Applies the removals of completed()/freed() (call once per op).
  void commit();
  std::uint64_t slots() const { return slots_; }
  std::size_t live() const { return live_.size(); }

 private:
  struct Live {
    std::uint64_t slot;
    MPI_Request handle;
    bool persistent;
    std::thread::id thread;
    bool remove = false;
  };
  std::vector<Live> live_;     // in creation order
  std::vector<long> claimed_;  // per position of the last resolve: index in live_ or -1
  std::uint64_t slots_ = 0;
};

}  // namespace scalatrace::pmpi
