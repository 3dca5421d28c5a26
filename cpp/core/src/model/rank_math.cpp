// Rank arithmetic shared by the analyses: ranklist iteration, closed-form sums of value
// sequences, communicator rank translation.
#include <functional>

#include "scalatrace/model/rank_math.hpp"

namespace scalatrace {

// ---------------------------------------------------------------------------------------------
// Small helpers

namespace {

void for_each_in_descriptor(const RankDescriptor& d, std::size_t dim, std::int64_t base,
                            const std::function<void(std::int64_t)>& f) {
  if (dim == 0) {
    f(base);
    return;
  }
  const auto& [count, stride] = d.dims[dim - 1];
  for (std::int64_t i = 0; i < count; ++i) for_each_in_descriptor(d, dim - 1, base + i * stride, f);
}

double run_sum(const ValueRun& r) {
  const double n = static_cast<double>(r.count);
  return n * static_cast<double>(r.first) + static_cast<double>(r.stride) * n * (n - 1.0) / 2.0;
}

}  // namespace

void for_each_rank(const RankList& ranks, const std::function<void(std::int64_t)>& f) {
  for (const auto& d : ranks.descriptors()) for_each_in_descriptor(d, d.dims.size(), d.start, f);
}

double sum_values(const ValueSeq& seq) {
  double total = 0;
  for (const auto& b : seq.blocks()) {
    double block = 0;
    for (const auto& r : b.runs) block += run_sum(r);
    total += block * static_cast<double>(b.repeat);
  }
  return total;
}

std::pair<std::int64_t, std::int64_t> comm_rank_and_size(const CommTable& comms, std::int64_t comm_id,
                                                         std::int64_t rank, std::int64_t nranks) {
  if (const CommEntry* e = comms.find(comm_id, rank)) return {e->members.index_of(rank), e->members.size()};
  if (comm_id == 0) return {rank, nranks};
  if (comm_id == 1) return {0, 1};
  return {-1, 0};
}

std::int64_t world_rank_of(const CommTable& comms, std::int64_t comm_id, std::int64_t rank, std::int64_t comm_rank,
                           std::int64_t nranks) {
  if (const CommEntry* e = comms.find(comm_id, rank)) {
    if (comm_rank < 0 || comm_rank >= e->members.size()) return -1;
    return e->members.at(comm_rank);
  }
  if (comm_id == 0) return (comm_rank >= 0 && comm_rank < nranks) ? comm_rank : -1;
  if (comm_id == 1) return comm_rank == 0 ? rank : -1;
  return -1;
}

}  // namespace scalatrace
