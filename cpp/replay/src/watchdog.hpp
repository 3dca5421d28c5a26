#pragma once
// Watchdog: a thread that notices when the replay cannot proceed (one MPI call blocking longer
// than the timeout, e.g. a receive whose send is not in the trace) and ends the process with a
// message naming the rank and the event it is stuck in. It never calls MPI (so the replay does
// not need MPI_THREAD_MULTIPLE): it only reads atomics the replay thread publishes, writes to
// stderr and calls _exit.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "scalatrace/model/event.hpp"

namespace scalatrace::replay {

inline constexpr int kStuckExitCode = 3;

/// What the replay thread is doing, published for the watchdog.
struct Progress {
  std::atomic<std::int64_t> call_start_ns{0};  ///< steady clock at entry of the current call; 0 = not in a call
  std::atomic<std::int64_t> event_index{-1};   ///< index of the rank's current event
  std::atomic<std::uint16_t> op{0};
  std::atomic<std::uint32_t> site{0};
  std::atomic<std::int64_t> comm{0};
  std::atomic<std::int64_t> peer{0};      ///< relative, as recorded
  std::atomic<std::int64_t> abs_peer{0};  ///< absolute comm rank or MPI wildcard value
  std::atomic<std::int64_t> tag{0};
  std::atomic<bool> finishing{false};  ///< all events done; in report / MPI_Finalize
  /// Completion calls: the request not yet complete, as created by event #origin_index
  /// (-1 = unknown).
  std::atomic<std::int64_t> origin_index{-1};
  std::atomic<std::uint16_t> origin_op{0};
  std::atomic<std::int64_t> origin_abs_peer{0};
  std::atomic<std::int64_t> origin_peer{0};
  std::atomic<std::int64_t> origin_tag{0};
};

class Watchdog {
 public:
  /// describe_site(site) gives a printable call site (reads only immutable data).
  Watchdog(Progress& progress, double timeout_s, int rank, std::function<std::string(std::uint32_t)> describe_site);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void run();
  [[noreturn]] void fire(double blocked_s);

  Progress& progress_;
  double timeout_s_;
  int rank_;
  std::function<std::string(std::uint32_t)> describe_site_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::int64_t steady_now_ns();

}  // namespace scalatrace::replay
