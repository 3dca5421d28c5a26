#pragma once
// Rank arithmetic shared by every stage above the model: ranklist iteration, closed-form sums
// of value sequences, communicator rank translation. See docs/algorithms.md.
#include <cstdint>
#include <functional>
#include <utility>

#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/rank_list.hpp"
#include "scalatrace/model/value_seq.hpp"

namespace scalatrace {

/// World rank of communicator rank `comm_rank` of communicator `comm_id` as seen by `rank`,
/// or -1 if out of range / unknown. Ids 0 (WORLD) and 1 (SELF) need no table entry.
std::int64_t world_rank_of(const CommTable& comms, std::int64_t comm_id, std::int64_t rank, std::int64_t comm_rank,
                           std::int64_t nranks);
/// Rank of `rank` inside communicator `comm_id` (-1 if not a member), and its size (0 if unknown).
std::pair<std::int64_t, std::int64_t> comm_rank_and_size(const CommTable& comms, std::int64_t comm_id,
                                                         std::int64_t rank, std::int64_t nranks);

/// Visits every rank of a ranklist in sequence order.
void for_each_rank(const RankList& ranks, const std::function<void(std::int64_t)>& f);
/// Sum of all values of a sequence, in closed form per run.
double sum_values(const ValueSeq& seq);

}  // namespace scalatrace
