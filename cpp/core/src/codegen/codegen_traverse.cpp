// The generator framework's traversal (thesis §4.4.1) and the helpers the back ends share.
#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/codegen_support.hpp"
#include "scalatrace/codegen/codegen.hpp"

namespace scalatrace {
namespace {

void walk(const std::vector<Node>& body, CodegenBackend& backend, int depth) {
  for (const Node& node : body) {
    if (node.loop) {
      backend.enter_loop(node, *node.loop, depth);
      walk(node.loop->body, backend, depth + 1);
      backend.leave_loop(node, *node.loop, depth);
    } else if (node.event) {
      backend.event(node, *node.event, depth);
    }
  }
}

bool wildcard_in(const ElasticValue& value, std::int64_t wildcard = kAnySource) {
  for (const auto& [seq, ranks] : value.alternatives)
    for (const auto& block : seq.blocks())
      for (const auto& run : block.runs)
        if (run.count > 0 &&
            (run.first == wildcard || (run.stride != 0 && run.count > 1 && ((wildcard - run.first) % run.stride == 0) &&
                                       (wildcard - run.first) / run.stride >= 0 &&
                                       static_cast<std::uint64_t>((wildcard - run.first) / run.stride) < run.count)))
          return true;
  return false;
}

/// `peer`: MPI_ANY_SOURCE in a receive's source; else MPI_ANY_TAG in its tag.
bool nodes_have_wildcards(const std::vector<Node>& body, bool peer) {
  const Field first = peer ? Field::Peer : Field::Tag, second = peer ? Field::Peer2 : Field::Tag2;
  const std::int64_t wildcard = peer ? kAnySource : kAnyTag;
  for (const Node& node : body) {
    if (node.loop) {
      if (nodes_have_wildcards(node.loop->body, peer)) return true;
      continue;
    }
    const EventNode& e = *node.event;
    const OpKind kind = op_kind(e.op);
    const bool receives = kind == OpKind::BlockingRecv || kind == OpKind::NonblockingRecv ||
                          kind == OpKind::PersistentRecv || kind == OpKind::Probe;
    if (receives && wildcard_in(e.fields[static_cast<std::size_t>(first)], wildcard)) return true;
    if (kind == OpKind::SendRecv && wildcard_in(e.fields[static_cast<std::size_t>(second)], wildcard)) return true;
  }
  return false;
}

}  // namespace

void traverse(const Trace& trace, CodegenBackend& backend) {
  backend.begin(trace);
  walk(trace.nodes, backend, 0);
}

bool has_wildcards(const Trace& trace) { return nodes_have_wildcards(trace.nodes, true); }

bool has_wildcard_tags(const Trace& trace) { return nodes_have_wildcards(trace.nodes, false); }

namespace codegen_support {

std::optional<std::int64_t> constant_of(const ValueSeq& seq) {
  if (seq.empty() || !seq.is_constant()) return std::nullopt;
  return seq.at(0);
}

std::optional<std::int64_t> uniform_of(const ElasticValue& value) {
  std::optional<std::int64_t> out;
  for (const auto& [seq, ranks] : value.alternatives) {
    if (seq.empty()) continue;
    auto c = constant_of(seq);
    if (!c || (out && *out != *c)) return std::nullopt;
    out = c;
  }
  return out;
}

ElasticValue elastic_of(std::map<std::int64_t, ValueSeq> per_rank) {
  std::vector<std::pair<ValueSeq, std::vector<std::int64_t>>> groups;
  for (auto& [rank, seq] : per_rank) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == seq; });
    if (g == groups.end())
      groups.push_back({std::move(seq), {rank}});
    else
      g->second.push_back(rank);
  }
  ElasticValue out;
  for (auto& [seq, ranks] : groups) out.alternatives.push_back({std::move(seq), RankList::from_sequence(ranks)});
  return out;
}

bool is_everyone(const RankList& ranks, std::int64_t nranks) {
  if (ranks.empty()) return true;
  if (ranks.size() != nranks) return false;
  for (const auto& d : ranks.descriptors())
    if (d.start < 0 || d.start >= nranks) return false;
  return ranks.contains(0) && ranks.contains(nranks - 1);
}

RankList ranks_of(const Node& node, std::int64_t nranks) {
  return node.ranks.empty() ? RankList::range(0, nranks) : node.ranks;
}

std::uint64_t mean_compute_ns(const EventNode& event) {
  return static_cast<std::uint64_t>(std::llround(event.compute.mean()));
}

std::string literal(std::int64_t v) {
  if (v == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807L - 1)";
  return std::to_string(v) + (v > 2147483647 || v < -2147483647 ? "L" : "");
}

}  // namespace codegen_support
}  // namespace scalatrace
