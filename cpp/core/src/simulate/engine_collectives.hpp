#pragma once
// The simulator engine's collectives, per event: a blocking collective runs as point-to-point
// steps (simulator_collectives.cpp chooses them), posted one after another, each completed
// before the next; a nonblocking one posts its first step and goes on on its own clock
// (engine_collectives.cpp). Inline, included only by simulator_engine.cpp: its run loop and
// dispatch call these for every collective event and step. See docs/simulator.md
// ("Collectives").
#include <cstdint>

#include "simulate/engine.hpp"

namespace scalatrace::sim {

inline void Engine::start_collective(RankSim& R, std::int64_t comm) {
  const std::size_t ci = comm_index(R, comm);
  CommInfo& c = R.comms[ci];
  sim::collective_steps(ev_, c.me, c.size, opt_.size_scale, R.steps);
  R.coll_comm = ci;
  R.coll_tag = c.collective_seq++;
  R.step_pos = 0;
  if (prefetch_more_) {
    prefetch_step_receiver(R, 0);
    prefetch_step_receiver(R, 1);
  }
  if (R.steps.empty()) {
    end_event(R);
    return;
  }
  R.stage = Stage::Collective;
}

inline void Engine::post_step(RankSim& R) {
  // A rank that arrives late finds its partners' messages waiting and runs several steps in
  // one go: start loading the receiver of the step after next now.
  if (prefetch_more_) prefetch_step_receiver(R, R.step_pos + 2);
  const CollStep& s = R.steps[R.step_pos++];
  const CommInfo& c = R.comms[R.coll_comm];
  const auto tag = static_cast<std::int64_t>(R.coll_tag);
  R.step_recv = s.recv_from >= 0;
  R.step_send = s.send_to >= 0;
  if (R.step_recv) {
    R.step_reqs[0] = Request{};
    post_recv(R, world_of(R, c, s.recv_from), c.key, tag, true, kStepRecv);
  }
  if (R.step_send) {
    R.step_reqs[1] = Request{};
    post_send(R, world_of(R, c, s.send_to), c.key, tag, s.send_bytes, Op::Send, true, kStepSend);
  }
}

/// complete_waits() for the current step of R's collective, whose requests are its receive
/// and then its send: the same times, in the same order of operations, without the request
/// pool and the wait list.
inline bool Engine::complete_step(RankSim& R) {
  Request& recv = R.step_reqs[0];
  Request& send = R.step_reqs[1];
  if ((R.step_recv && !recv.known) || (R.step_send && !send.known)) return false;
  double t = R.clock;
  finish_step(R.times, R.step_recv ? &recv : nullptr, R.step_send ? &send : nullptr, t);
  R.clock = t;
  R.step_recv = R.step_send = false;
  return true;
}

/// The call posts the collective's first step (its overheads are the call's cost) and
/// returns; later steps run on the schedule's own clock (progress_schedules).
inline void Engine::start_nonblocking_collective(RankSim& R, std::int64_t comm) {
  const std::int32_t q = new_request(R, Request::Kind::Done);
  Request& Q = R.reqs[static_cast<std::size_t>(q)];
  add_slot(R, q);
  const std::size_t ci = comm_index(R, comm);
  CommInfo& c = R.comms[ci];
  CollSchedule S;
  S.req = q;
  sim::collective_steps(ev_, c.me, c.size, opt_.size_scale, S.steps);
  S.comm = ci;
  S.tag = c.collective_seq++;
  S.clock = R.clock;
  if (S.steps.empty()) {
    Q.known = true;
    Q.done = R.clock;
    Q.active = true;
    return;
  }
  Q.known = false;
  Q.active = true;
  Q.schedule = true;
  post_schedule_step(R, S);
  R.clock = S.clock;  // the first step's send overheads
  R.schedules.push_back(std::move(S));
  progress_schedules(R);
}

}  // namespace scalatrace::sim
