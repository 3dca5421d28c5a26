// The simulator engine's nonblocking collectives in progress: each schedule posts its next step
// when the current one has completed, on its own clock (asynchronous progress), and completes
// the collective's request after its last step. How they start: engine_collectives.hpp. See
// docs/simulator.md ("Collectives").
#include <algorithm>

#include "simulate/engine.hpp"

namespace scalatrace::sim {

void Engine::post_schedule_step(RankSim& R, CollSchedule& S) {
  const CollStep& st = S.steps[S.pos++];
  const CommInfo& c = R.comms[S.comm];
  const auto tag = static_cast<std::int64_t>(S.tag);
  S.step_reqs[0] = S.step_reqs[1] = kNoRequest;
  if (st.recv_from >= 0) {
    S.step_reqs[0] = new_request(R, Request::Kind::Recv);
    post_recv_at(R, S.clock, world_of(R, c, st.recv_from), c.key, tag, true, S.step_reqs[0]);
  }
  if (st.send_to >= 0) {
    S.step_reqs[1] = new_request(R, Request::Kind::Send);
    post_send_at(R, S.clock, world_of(R, c, st.send_to), c.key, tag, st.send_bytes, Op::Send, true, S.step_reqs[1]);
  }
}

/// Advances every schedule whose current step has completed (its completion times known):
/// the next step is posted when the last request of this one completes (plus the receive
/// overhead); after the last step the collective's request completes.
void Engine::progress_schedules(RankSim& R) {
  for (std::size_t i = 0; i < R.schedules.size();) {
    CollSchedule& S = R.schedules[i];
    bool ended = false;
    for (;;) {
      bool known = true;
      for (const std::int32_t q : S.step_reqs)
        if (q != kNoRequest && !R.reqs[static_cast<std::size_t>(q)].known) known = false;
      if (!known) break;
      for (std::int32_t& q : S.step_reqs) {
        if (q == kNoRequest) continue;
        Request& Q = R.reqs[static_cast<std::size_t>(q)];
        S.clock = std::max(S.clock, Q.done + (Q.kind == Request::Kind::Recv ? Q.o_r : 0.0));
        Q.active = false;
        release(R, q);
        q = kNoRequest;
      }
      if (S.pos < S.steps.size()) {
        post_schedule_step(R, S);
        continue;
      }
      Request& done = R.reqs[static_cast<std::size_t>(S.req)];
      done.known = true;
      done.done = S.clock;
      ended = true;
      break;
    }
    if (ended) {
      R.schedules.erase(R.schedules.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

}  // namespace scalatrace::sim
