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
  if (threshold == 0) throw UsageError("lossy threshold must be at least 1 (1 makes every allowed field a histogram)");
  std::size_t made = 0;
  for_each_event(trace.nodes, [&](EventNode& e) {
    for (std::size_t f = 0; f < kFieldCount; ++f) {
      const auto field = static_cast<Field>(f);
      ElasticValue& value = e.fields[f];
      if (value.empty() || !lossy_field_allowed(e.op, field) || e.lossy_values(field)) continue;
      if (lossless_length(value) < threshold) continue;
      LossyField lossy{field, {}};
      for (const auto& alternative : value.alternatives) lossy.values.add(alternative.first);
      if (lossy.values.empty()) continue;
      e.lossy.push_back(std::move(lossy));
      value = ElasticValue{};
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
