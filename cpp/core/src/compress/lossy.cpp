// Lossy traces: long point-to-point parameters as value histograms (docs/lossy.md).
#include "scalatrace/compress/lossy.hpp"

#include <string>

#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

template <class Visit>
void for_each_event(std::vector<Node>& nodes, const Visit& visit) {
  for (auto& n : nodes) {
    if (n.loop) for_each_event(n.loop->body, visit);
    if (n.event) visit(*n.event);
  }
}

template <class Visit>
void for_each_event(const std::vector<Node>& nodes, const Visit& visit) {
  for (const auto& n : nodes) {
    if (n.loop) for_each_event(n.loop->body, visit);
    if (n.event) visit(*n.event);
  }
}

/// The histogram of field `f` of `e`, created (empty, in Field order) if `f` is not lossy yet.
ValueHistogram& lossy_histogram(EventNode& e, Field f) {
  auto it = e.lossy.begin();
  while (it != e.lossy.end() && it->field < f) ++it;
  if (it == e.lossy.end() || it->field != f) it = e.lossy.insert(it, LossyField{f, {}});
  return it->values;
}

void require_threshold(std::uint64_t threshold) {
  if (threshold == 0) throw UsageError("lossy threshold must be at least 1 (1 makes every allowed field a histogram)");
}

/// Moves every exact value of `value` into `h` and empties it: each sequence once per rank of
/// its ranklist (per-rank values, with an empty ranklist: once), so that the histogram holds
/// every occurrence on every rank (docs/lossy.md, "Draws").
void fold_exact(ElasticValue& value, ValueHistogram& h) {
  for (const auto& [seq, ranks] : value.alternatives) {
    const std::int64_t times = ranks.empty() ? 1 : ranks.size();
    if (times == 1) {
      h.add(seq);
      continue;
    }
    ValueHistogram once;
    once.add(seq);
    std::vector<ValueBin> bins = once.bins();
    for (auto& bin : bins) bin.count *= static_cast<std::uint64_t>(times);
    h.merge(ValueHistogram::from_bins(std::move(bins)));
  }
  value = ElasticValue{};
}

}  // namespace

bool lossy_field_allowed(Op op, Field field) {
  if (!op_is_point_to_point(op)) return false;
  switch (field) {
    case Field::Peer:
    case Field::Tag:
    case Field::Bytes:
      return true;
    case Field::Peer2:  // the receive half of Sendrecv
    case Field::Tag2:
    case Field::Bytes2:
      return op_kind(op) == OpKind::SendRecv;
    default:
      return false;
  }
}

std::uint64_t lossless_length(const ElasticValue& value) {
  std::uint64_t runs = 0;
  for (const auto& [seq, ranks] : value.alternatives)
    for (const auto& block : seq.blocks()) runs += block.runs.size();
  return runs;
}

std::size_t make_lossy(Trace& trace, std::uint64_t threshold) {
  require_threshold(threshold);
  std::size_t made = 0;
  for_each_event(trace.nodes, [&](EventNode& e) {
    for (std::size_t f = 0; f < kFieldCount; ++f) {
      const auto field = static_cast<Field>(f);
      ElasticValue& value = e.fields[f];
      if (value.empty() || !lossy_field_allowed(e.op, field) || e.lossy_values(field)) continue;
      if (lossless_length(value) < threshold) continue;
      fold_exact(value, lossy_histogram(e, field));
      ++made;
    }
  });
  trace.metadata[kLossyThresholdKey] = std::to_string(threshold);
  std::string lines;
  for (const auto& info : lossy_fields(trace)) {
    if (!lines.empty()) lines += '\n';
    lines += std::string(op_name(info.op)) + "@site " + std::to_string(info.site) + '\t' +
             std::string(field_name(info.field)) + '\t' + std::to_string(info.bins);
  }
  trace.metadata[kLossyFieldsKey] = lines;
  return made;
}

namespace {

std::size_t make_event_lossy(EventNode& e, std::uint64_t threshold, RankLossyStage stage) {
  if (!op_is_point_to_point(e.op)) return 0;
  const std::uint64_t bound = stage == RankLossyStage::Checkpoint ? 2 * threshold : threshold;
  std::size_t made = 0;
  for (std::size_t f = 0; f < kFieldCount; ++f) {
    const auto field = static_cast<Field>(f);
    if (!lossy_field_allowed(e.op, field)) continue;
    ElasticValue& value = e.fields[f];
    if (e.lossy_values(field) != nullptr) {  // lossy already: the values appended since join it
      if (!value.empty()) fold_exact(value, lossy_histogram(e, field));
      continue;
    }
    if (value.empty() || lossless_length(value) < bound) continue;
    if (stage == RankLossyStage::Checkpoint) {
      // The compressor's online form may hold more runs than the values need (a period it has
      // not folded yet): only the canonical form counts.
      for (auto& alternative : value.alternatives) alternative.first = alternative.first.canonical();
      if (lossless_length(value) < bound) continue;
    }
    fold_exact(value, lossy_histogram(e, field));
    ++made;
  }
  return made;
}

}  // namespace

std::size_t make_rank_lossy(std::vector<Node>& nodes, std::uint64_t threshold, RankLossyStage stage) {
  require_threshold(threshold);
  std::size_t made = 0;
  for_each_event(nodes, [&](EventNode& e) { made += make_event_lossy(e, threshold, stage); });
  return made;
}

std::size_t make_rank_lossy(Node& node, std::uint64_t threshold, RankLossyStage stage) {
  require_threshold(threshold);
  if (node.event) return make_event_lossy(*node.event, threshold, stage);
  std::size_t made = 0;
  if (node.loop) for_each_event(node.loop->body, [&](EventNode& e) { made += make_event_lossy(e, threshold, stage); });
  return made;
}

void merge_lossy_fields(EventNode& a, EventNode& b, std::uint64_t occurrences_a, std::uint64_t occurrences_b) {
  if (a.lossy.empty() && b.lossy.empty()) return;
  for (std::size_t f = 0; f < kFieldCount; ++f) {
    const auto field = static_cast<Field>(f);
    const ValueHistogram* from_a = a.lossy_values(field);
    const ValueHistogram* from_b = b.lossy_values(field);
    if (from_a == nullptr && from_b == nullptr) continue;
    const bool a_stored = from_a != nullptr || !a.fields[f].empty();
    const bool b_stored = from_b != nullptr || !b.fields[f].empty();
    ValueHistogram& h = lossy_histogram(a, field);
    fold_exact(a.fields[f], h);
    if (!a_stored) h.add(0, occurrences_a);
    if (from_b != nullptr) h.merge(*from_b);
    fold_exact(b.fields[f], h);
    if (!b_stored) h.add(0, occurrences_b);
  }
  b.lossy.clear();
}

std::vector<LossyFieldInfo> lossy_fields(const Trace& trace) {
  std::vector<LossyFieldInfo> out;
  for_each_event(trace.nodes, [&](const EventNode& e) {
    for (const auto& l : e.lossy) out.push_back({e.op, e.site, l.field, l.values.count(), l.values.bins().size()});
  });
  return out;
}

bool is_lossy(const Trace& trace) {
  bool lossy = false;
  for_each_event(trace.nodes, [&](const EventNode& e) { lossy = lossy || !e.lossy.empty(); });
  return lossy;
}

std::string describe_lossy_field(const LossyFieldInfo& info) {
  return std::string(op_name(info.op)) + "@site " + std::to_string(info.site) + " " +
         std::string(field_name(info.field));
}

}  // namespace scalatrace
