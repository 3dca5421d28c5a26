#include "format/scale_basis.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace scalatrace::scale_basis {
namespace {

/// Counts the grid-stride candidates of every descriptor of `rl`: where the innermost stride
/// is 1, each outer stride that the ranks inside it span at least a third of (a row of a grid
/// walked across most of its length, a plane across most of its rows; not the stride between
/// rows that a descriptor of a few ranks per row happens to have).
void count_candidates(const RankList& rl, std::int64_t nranks, std::map<std::int64_t, std::uint64_t>& seen) {
  for (const RankDescriptor& d : rl.descriptors()) {
    // dims are innermost first.
    if (d.dims.size() < 2 || d.dims.front().second != 1) continue;
    std::int64_t covered = d.dims.front().first;  // ranks from the first to the last, inside
    for (std::size_t k = 1; k < d.dims.size(); ++k) {
      const auto [count, stride] = d.dims[k];
      if (stride >= 2 && stride < nranks && nranks % stride == 0 && 3 * covered >= stride) ++seen[stride];
      covered += (count - 1) * stride;
    }
  }
}

template <class Seq>
void count_elastic(const Elastic<Seq>& e, std::int64_t nranks, std::map<std::int64_t, std::uint64_t>& seen) {
  for (const auto& alternative : e.alternatives) count_candidates(alternative.second, nranks, seen);
}

void count_nodes(const std::vector<Node>& nodes, std::int64_t nranks, std::map<std::int64_t, std::uint64_t>& seen) {
  for (const Node& n : nodes) {
    count_candidates(n.ranks, nranks, seen);
    count_elastic(n.presence, nranks, seen);
    if (n.loop) {
      count_elastic(n.loop->trips, nranks, seen);
      count_nodes(n.loop->body, nranks, seen);
    }
    if (!n.event) continue;
    const EventNode& e = *n.event;
    count_elastic(e.site_ids, nranks, seen);
    for (const auto& f : e.fields) count_elastic(f, nranks, seen);
    for (const auto& a : e.arrays) count_elastic(a, nranks, seen);
    for (const auto& g : e.timing_groups) count_candidates(g.ranks, nranks, seen);
  }
}

/// `value / divisor` rounded to nearest, halves away from zero (divisor >= 2, |value| < 2^62).
std::int64_t rounded_quotient(std::int64_t value, std::int64_t divisor) {
  const std::int64_t magnitude = (2 * std::llabs(value) + divisor) / (2 * divisor);
  return value < 0 ? -magnitude : magnitude;
}

}  // namespace

std::vector<std::int64_t> find_basis(const Trace& trace) {
  std::vector<std::int64_t> basis{trace.nranks};
  if (trace.nranks < 4) return basis;
  std::map<std::int64_t, std::uint64_t> seen;
  for (const auto& e : trace.comms.entries) {
    count_candidates(e.members, trace.nranks, seen);
    count_candidates(e.holders, trace.nranks, seen);
  }
  for (const auto& c : trace.clusters) count_candidates(c.members, trace.nranks, seen);
  count_nodes(trace.nodes, trace.nranks, seen);
  std::vector<std::pair<std::int64_t, std::uint64_t>> candidates(seen.begin(), seen.end());
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  for (const auto& [stride, count] : candidates) {
    if (basis.size() == kMaxBasis) break;
    // Grid strides divide each other, and a grid is at least 3 wide in every direction
    // (2 rows apart is a walk over every other row, not a grid stride).
    const bool nests = std::all_of(basis.begin() + 1, basis.end(), [&](std::int64_t b) {
      return (b % stride == 0 && b / stride >= 3) || (stride % b == 0 && stride / b >= 3);
    });
    if (nests) basis.push_back(stride);
  }
  std::sort(basis.begin() + 1, basis.end(), std::greater<>());
  return basis;
}

std::int64_t decompose(std::int64_t value, std::span<const std::int64_t> basis, std::span<std::int64_t> coeffs) {
  std::int64_t rest = value;
  for (std::size_t i = 0; i < basis.size(); ++i) {
    coeffs[i] = 0;
    const std::int64_t b = basis[i];
    if (b < 2 || rest == 0) continue;
    const std::int64_t q = rounded_quotient(rest, b);
    if (q == 0) continue;
    const std::int64_t left = rest - q * b;
    if (std::llabs(left) >= std::llabs(rest)) continue;
    coeffs[i] = q;
    rest = left;
  }
  return rest;
}

std::span<const std::int64_t> count_basis(std::int64_t stride, std::span<const std::int64_t> basis,
                                          std::array<std::int64_t, 2>& scratch) {
  if (basis.empty() || basis.front() < 2) return basis;
  const std::int64_t s = stride < 0 ? -stride : stride;
  // The grid stride just above s (the smallest basis number for stride 1).
  std::int64_t above = 0;
  if (s == 1) above = basis.back();
  for (std::size_t i = 1; i < basis.size(); ++i)
    if (basis[i] == s) above = basis[i - 1];
  if (above == 0) return basis;
  scratch[0] = basis.front() / s;  // ranks per step of s in the whole run
  scratch[1] = above / s;          // steps of s across the grid's extent in that direction
  return {scratch.data(), scratch[0] == scratch[1] ? std::size_t{1} : std::size_t{2}};
}

}  // namespace scalatrace::scale_basis
