// Even all-to-all counts (see even_counts.hpp and docs/extrapolation.md, "Data-dependent counts").
#include "scalatrace/extrapolate/even_counts.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

std::int64_t ranks_of(const RankList& ranks) { return ranks.empty() ? 1 : ranks.size(); }

/// The node's datatype size for `field` when it is one value everywhere, else 1 (counts are
/// then split in bytes).
std::int64_t uniform_size(const ElasticValue& value) {
  std::int64_t size = 0;
  for (const auto& [seq, ranks] : value.alternatives)
    for (std::uint64_t k = 0; k < seq.size(); ++k) {
      const std::int64_t v = seq.at(k);
      if (size == 0) size = v;
      if (v != size) return 1;
    }
  return size > 0 ? size : 1;
}

std::int64_t sum_of(const std::vector<std::int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), std::int64_t{0});
}

/// Even per-peer count of each occurrence: the mean over the ranks of the occurrence's total,
/// split over the communicator's ranks and rounded to whole elements of `element` bytes.
std::vector<std::int64_t> even_counts_per_occurrence(const ElasticArray& counts, std::int64_t element) {
  std::vector<double> totals;
  std::vector<std::int64_t> holders, lengths;
  for (const auto& [seq, ranks] : counts.alternatives) {
    const std::int64_t n = ranks_of(ranks);
    if (seq.size() > totals.size()) {
      totals.resize(seq.size(), 0.0);
      holders.resize(seq.size(), 0);
      lengths.resize(seq.size(), 0);
    }
    for (std::uint64_t k = 0; k < seq.size(); ++k) {
      const auto& values = seq.at(k);
      totals[k] += static_cast<double>(n) * static_cast<double>(sum_of(values));
      holders[k] += n;
      lengths[k] = std::max<std::int64_t>(lengths[k], static_cast<std::int64_t>(values.size()));
    }
  }
  std::vector<std::int64_t> even(totals.size(), 0);
  for (std::size_t k = 0; k < totals.size(); ++k) {
    if (holders[k] == 0 || lengths[k] == 0) continue;
    const double per_peer = totals[k] / static_cast<double>(holders[k]) / static_cast<double>(lengths[k]);
    even[k] = std::llround(per_peer / static_cast<double>(element)) * element;
  }
  return even;
}

double relative(std::int64_t value, std::int64_t reference) {
  if (reference == 0) return value == 0 ? 0.0 : 1.0;
  return std::abs(static_cast<double>(value - reference)) / static_cast<double>(reference);
}

/// Rewrites one count array and its total field; accumulates the report.
void even_side(EventNode& ev, ArrayField array, Field total, Field element_size, EvenCountsReport& report) {
  auto& counts = ev.arrays[static_cast<std::size_t>(array)];
  if (counts.empty()) return;
  const auto even = even_counts_per_occurrence(counts, uniform_size(ev.fields[static_cast<std::size_t>(element_size)]));
  ElasticValue totals;
  for (auto& [seq, ranks] : counts.alternatives) {
    const std::int64_t n = ranks_of(ranks);
    ArraySeq rewritten;
    ValueSeq sums;
    for (std::uint64_t k = 0; k < seq.size(); ++k) {
      const auto& values = seq.at(k);
      const std::vector<std::int64_t> flat(values.size(), even[k]);
      const std::int64_t even_total = even[k] * static_cast<std::int64_t>(values.size());
      double element_dev = 0;
      for (auto v : values) element_dev = std::max(element_dev, relative(v, even[k]));
      report.max_element_deviation = std::max(report.max_element_deviation, element_dev);
      report.max_total_deviation = std::max(report.max_total_deviation, relative(sum_of(values), even_total));
      if (values != flat) report.changed_arrays += static_cast<std::uint64_t>(n);
      if (array == ArrayField::SendCounts) report.calls += static_cast<std::uint64_t>(n);
      rewritten.append(flat);
      sums.append(even_total);
    }
    seq = std::move(rewritten);
    totals.alternatives.emplace_back(std::move(sums), ranks);
  }
  ev.fields[static_cast<std::size_t>(total)] = std::move(totals);
}

void even_nodes(std::vector<Node>& nodes, EvenCountsReport& report) {
  for (auto& node : nodes) {
    if (node.loop) {
      even_nodes(node.loop->body, report);
      continue;
    }
    if (!node.event || (node.event->op != Op::Alltoallv && node.event->op != Op::Ialltoallv)) continue;
    ++report.nodes;
    even_side(*node.event, ArrayField::SendCounts, Field::Bytes, Field::DtSize, report);
    even_side(*node.event, ArrayField::RecvCounts, Field::Bytes2, Field::DtSize2, report);
  }
}

}  // namespace

Trace even_alltoall_counts(const Trace& trace, EvenCountsReport* report) {
  if (!trace.clusters.empty())
    throw UsageError("even all-to-all counts need every rank's own events; this trace is clustered");
  Trace out = trace.clone();
  EvenCountsReport local;
  even_nodes(out.nodes, local);
  if (report) *report = local;
  return out;
}

}  // namespace scalatrace
