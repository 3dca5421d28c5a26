#pragma once
// The simulator engine's waiting: completing the requests a completion call waits for (in
// order of completion, idle time counted as late sender or late receiver) and blocking probes.
// Inline, included only by simulator_engine.cpp: its run loop calls these on every resumption.
// See docs/simulator.md ("Event engine").
#include <algorithm>
#include <cstdint>

#include "simulate/engine.hpp"

namespace scalatrace::sim {

/// Completes every request in R.waits if all completion times are known: the rank idles
/// until each one is done (in order of completion) and pays o_r per receive.
inline bool Engine::complete_waits(RankSim& R) {
  // A request's completion time, once known, stays known: resume where the last check stopped.
  for (; R.waits_known < R.waits.size(); ++R.waits_known)
    if (!R.reqs[static_cast<std::size_t>(R.waits[R.waits_known])].known) return false;
  double t = R.clock;
  // Sends already complete when the rank starts waiting (eager sends, mostly) change neither
  // the clock nor the idle times wherever they come in the order: done first, and only the
  // rest is sorted.
  std::size_t kept = 0;
  for (const std::int32_t q : R.waits) {
    Request& Q = R.reqs[static_cast<std::size_t>(q)];
    if (Q.kind != Request::Kind::Recv && Q.done <= t) {
      Q.active = false;
      Q.waited = false;
      if (!Q.persistent) release(R, q);
    } else {
      R.waits[kept++] = q;
    }
  }
  R.waits.truncate(kept);
  sort_by_completion(R);
  for (const std::int32_t q : R.waits) {
    Request& Q = R.reqs[static_cast<std::size_t>(q)];
    wait_until_done(R.times, Q, t);
    Q.active = false;
    Q.waited = false;
    if (!Q.persistent) release(R, q);
  }
  R.clock = t;
  R.waits.clear();
  R.waits_known = 0;
  return true;
}

/// Orders R.waits by completion time, stably: requests completing at the same time keep the
/// call's order, which decides whether an idle wait counts as late sender or late receiver.
/// Up to 16 requests (a Waitall of a stencil, a collective step) by an insertion sort on the
/// times copied beside the requests; longer lists by std::stable_sort.
inline void Engine::sort_by_completion(RankSim& R) {
  const std::size_t n = R.waits.size();
  if (n > 16) {
    std::stable_sort(R.waits.begin(), R.waits.end(), [&](std::int32_t a, std::int32_t b) {
      return R.reqs[static_cast<std::size_t>(a)].done < R.reqs[static_cast<std::size_t>(b)].done;
    });
    return;
  }
  double done[16];
  std::int32_t* q = R.waits.begin();
  for (std::size_t i = 0; i < n; ++i) {
    const double d = R.reqs[static_cast<std::size_t>(q[i])].done;
    const std::int32_t qi = q[i];
    std::size_t j = i;
    for (; j > 0 && d < done[j - 1]; --j) {
      done[j] = done[j - 1];
      q[j] = q[j - 1];
    }
    done[j] = d;
    q[j] = qi;
  }
}

inline bool Engine::try_probe(RankSim& R) {
  const Message* found = nullptr;
  for (const Message& m : R.unexpected) {
    if (!matches(R.probe, m)) continue;
    if (R.probe.src != kAnyWorld) {
      found = &m;
      break;
    }
    if (found == nullptr || m.arrival < found->arrival) found = &m;
  }
  if (found == nullptr) return false;
  if (found->arrival > R.clock) {
    R.times.wait += found->arrival - R.clock;
    R.times.late_sender += found->arrival - R.clock;
    R.clock = found->arrival;
  }
  R.clock += net_.link(found->src, R.rank).o_r;
  return true;
}

}  // namespace scalatrace::sim
