// The simulator engine's communicators: a rank's communicator looked up (or added) past the
// inline fast path for the one it used last, and world ranks of peers in communicators whose
// ranks are not the world's. The fast paths are in engine.hpp. See docs/simulator.md.
#include <string>

#include "scalatrace/model/rank_math.hpp"
#include "simulate/engine.hpp"

namespace scalatrace::sim {

/// comm_index() past the communicator used last: found among the rank's, or added.
std::size_t Engine::find_comm(RankSim& R, std::int64_t id) {
  for (std::size_t i = 0; i < R.comms.size(); ++i)
    if (R.comms[i].id == id) {
      R.last_comm = i;
      return i;
    }
  CommInfo c;
  c.id = id;
  const auto [me, size] = comm_rank_and_size(trace_.comms, id, R.rank, n_);
  if (me < 0 || size <= 0)
    fail_event(
        R, "rank is not a member of communicator " + std::to_string(id) + " (not in the trace's communicator table)");
  c.me = me;
  c.size = size;
  c.entry = trace_.comms.find(id, R.rank);
  if (c.entry == nullptr) {
    c.identity = id == 0;
    c.key = id == 0 ? 0 : -(R.rank + 1);  // WORLD, or SELF (private to the rank)
  } else {
    // Same members, same communicator (a Comm_dup of a communicator shares its key).
    const auto [it, added] =
        comm_keys_.try_emplace(c.entry->members.to_string(), static_cast<std::int64_t>(comm_keys_.size()) + 1);
    c.key = id == 0 ? 0 : it->second;
    const auto& ds = c.entry->members.descriptors();
    c.identity = ds.size() == 1 && ds[0].start == 0 && ds[0].dims.size() == 1 && ds[0].dims[0].second == 1;
  }
  R.comms.push_back(c);
  return R.comms.size() - 1;
}

/// member_world() in a communicator whose ranks are not the world's (or out of range).
std::int64_t Engine::member_world_mapped(const RankSim& R, const CommInfo& c, std::int64_t comm,
                                         std::int64_t comm_rank) const {
  const std::int64_t w = world_of(R, c, comm_rank);
  if (w < 0)
    fail_event(R, "peer " + std::to_string(comm_rank) + " is outside communicator " + std::to_string(comm) +
                      " of size " + std::to_string(c.size));
  return w;
}

}  // namespace scalatrace::sim
