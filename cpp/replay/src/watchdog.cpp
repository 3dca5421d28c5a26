#include "watchdog.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "scalatrace/model/op.hpp"

namespace scalatrace::replay {

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Watchdog::Watchdog(Progress& progress, double timeout_s, int rank,
                   std::function<std::string(std::uint32_t)> describe_site)
    : progress_(progress), timeout_s_(timeout_s), rank_(rank), describe_site_(std::move(describe_site)) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::run() {
  const auto limit_ns = static_cast<std::int64_t>(timeout_s_ * 1e9);
  const auto poll = std::chrono::milliseconds(timeout_s_ < 2 ? 20 : 100);
  while (!stop_) {
    std::this_thread::sleep_for(poll);
    std::int64_t start = progress_.call_start_ns.load();
    if (start == 0) continue;
    std::int64_t blocked = steady_now_ns() - start;
    // A rank that has replayed all its events waits for the others, which may still be
    // computing: only a much longer wait there means trouble (a stuck rank reports itself).
    std::int64_t limit = progress_.finishing ? 10 * limit_ns : limit_ns;
    if (blocked > limit) fire(static_cast<double>(blocked) * 1e-9);
  }
}

namespace {
std::string peer_text(std::int64_t rel, std::int64_t abs) {
  if (rel == kAnySource) return "MPI_ANY_SOURCE";
  if (rel == kProcNull) return "MPI_PROC_NULL";
  return std::to_string(abs) + " (relative " + (rel >= 0 ? "+" : "") + std::to_string(rel) + ")";
}
std::string tag_text(std::int64_t tag) { return tag == kAnyTag ? std::string("MPI_ANY_TAG") : std::to_string(tag); }
}  // namespace

void Watchdog::fire(double blocked_s) {
  char head[160];
  std::snprintf(head, sizeof head, "scalatrace-replay: rank %d: no progress for %.1f s (timeout %.1f s): ", rank_,
                blocked_s, timeout_s_);
  std::string msg = head;
  if (progress_.finishing) {
    msg +=
        "all of this rank's events were replayed; it is waiting for other ranks at the end of "
        "the replay (see their messages)\n";
  } else {
    auto op = static_cast<Op>(progress_.op.load());
    auto kind = op_kind(op);
    msg += "stuck in event #" + std::to_string(progress_.event_index.load()) + " MPI_" + std::string(op_name(op)) +
           " comm " + std::to_string(progress_.comm.load());
    bool p2p = op_is_point_to_point(op) || kind == OpKind::Probe;
    if (p2p) {
      msg += " peer " + peer_text(progress_.peer.load(), progress_.abs_peer.load()) + " tag " +
             tag_text(progress_.tag.load());
    }
    msg += " at call site " + describe_site_(progress_.site.load());
    if (kind == OpKind::BlockingRecv || kind == OpKind::Probe)
      msg += " (the matching send is probably missing from the trace)";
    else if (kind == OpKind::Completion) {
      std::int64_t origin = progress_.origin_index.load();
      if (origin >= 0) {
        auto oop = static_cast<Op>(progress_.origin_op.load());
        msg += " waiting for the request of event #" + std::to_string(origin) + " MPI_" + std::string(op_name(oop));
        if (op_is_point_to_point(oop))
          msg += " peer " + peer_text(progress_.origin_peer.load(), progress_.origin_abs_peer.load()) + " tag " +
                 tag_text(progress_.origin_tag.load());
      }
      msg += " (its matching operation is probably missing from the trace)";
    } else if (op_is_collective(op))
      msg += " (some rank of the communicator did not reach this collective)";
    msg += "\n";
  }
  ssize_t ignored = ::write(2, msg.data(), msg.size());
  (void)ignored;
  ::_exit(kStuckExitCode);
}

}  // namespace scalatrace::replay
