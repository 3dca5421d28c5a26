#include "state/request_tracker.hpp"

#include <algorithm>

#include "scalatrace/model/event.hpp"

namespace scalatrace::pmpi {

void RequestTracker::created(MPI_Request handle, bool persistent, std::thread::id thread) {
  const std::uint64_t slot = slots_++;
  if (handle != MPI_REQUEST_NULL) live_.push_back(Live{slot, handle, persistent, thread});
}

void RequestTracker::resolve(const MPI_Request* handles, int n, std::vector<std::int64_t>& offsets,
                             std::thread::id thread) {
  offsets.clear();
  claimed_.assign(static_cast<std::size_t>(std::max(n, 0)), -1);
  for (auto& l : live_) l.remove = false;
  std::vector<bool> taken;
  for (int i = 0; i < n; ++i) {
    const MPI_Request h = handles[i];
    if (h == MPI_REQUEST_NULL) {
      offsets.push_back(kNullRequest);
      continue;
    }
    if (taken.empty()) taken.assign(live_.size(), false);
    long found = -1, other_thread = -1;
    for (std::size_t k = 0; k < live_.size() && found < 0; ++k)
      if (live_[k].handle == h && !taken[k]) {
        if (live_[k].thread == thread)
          found = static_cast<long>(k);
        else if (other_thread < 0)
          other_thread = static_cast<long>(k);
      }
    if (found < 0) found = other_thread;
    if (found < 0) {
      offsets.push_back(kUndefined);
      continue;
    }
    taken[static_cast<std::size_t>(found)] = true;
    claimed_[static_cast<std::size_t>(i)] = found;
    offsets.push_back(static_cast<std::int64_t>(slots_ - live_[static_cast<std::size_t>(found)].slot));
  }
}

void RequestTracker::completed(int i) {
  if (i < 0 || static_cast<std::size_t>(i) >= claimed_.size() || claimed_[static_cast<std::size_t>(i)] < 0) return;
  Live& l = live_[static_cast<std::size_t>(claimed_[static_cast<std::size_t>(i)])];
  if (!l.persistent) l.remove = true;
}

void RequestTracker::freed(int i) {
  if (i < 0 || static_cast<std::size_t>(i) >= claimed_.size() || claimed_[static_cast<std::size_t>(i)] < 0) return;
  live_[static_cast<std::size_t>(claimed_[static_cast<std::size_t>(i)])].remove = true;
}

void RequestTracker::commit() {
  live_.erase(std::remove_if(live_.begin(), live_.end(), [](const Live& l) { return l.remove; }), live_.end());
  claimed_.clear();
}

}  // namespace scalatrace::pmpi
