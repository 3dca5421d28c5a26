// Loop(a){Loop(c){B}} -> Loop(a*c){B}: the compressor may fold a loop's iterations in two
// steps (first pairs, then pairs of pairs) where the program has one loop; the flat form is
// smaller and is the loop as written (timestep_loops reports it with its real trip count).
#include "compress/loop_flatten.hpp"

#include <iterator>

namespace scalatrace::loop_flatten {
namespace {

/// The single value sequence of a per-rank elastic value, or nullptr.
const ValueSeq* only_seq(const ElasticValue& e) {
  return e.alternatives.size() == 1 ? &e.alternatives.front().first : nullptr;
}

bool flatten_one(Node& outer) {
  LoopNode& lo = *outer.loop;
  if (lo.body.size() != 1) return false;
  Node& inner = lo.body.front();
  if (!inner.loop || !inner.presence.empty()) return false;
  const ValueSeq* outer_trips = only_seq(lo.trips);
  const ValueSeq* inner_trips = only_seq(inner.loop->trips);
  if (!outer_trips || !inner_trips || inner_trips->empty() || !inner_trips->is_constant()) return false;
  const std::int64_t c = inner_trips->at(0);
  if (c <= 0) return false;
  ValueSeq trips;
  ValueSeq::Reader rd(outer_trips);
  while (!rd.done()) trips.append(rd.next() * c);
  RankList ranks = lo.trips.alternatives.front().second;
  std::vector<Node> body = std::move(inner.loop->body);
  lo.body = std::move(body);
  lo.trips.alternatives.clear();
  lo.trips.alternatives.emplace_back(std::move(trips), std::move(ranks));
  return true;
}

/// Value sequence of a per-rank elastic value, created if missing.
ValueSeq& own_seq(ElasticValue& e) {
  if (e.alternatives.empty()) e.alternatives.emplace_back(ValueSeq{}, RankList{});
  return e.alternatives.front().first;
}

bool unpeel_one(Node& outer) {
  LoopNode& lo = *outer.loop;
  const ValueSeq* outer_trips = only_seq(lo.trips);
  if (!outer_trips || outer_trips->size() != 1 || lo.body.size() < 2) return false;
  Node& inner = lo.body.front();
  if (!inner.loop || !inner.presence.empty()) return false;
  const ValueSeq* inner_trips = only_seq(inner.loop->trips);
  const std::int64_t n = outer_trips->at(0);
  if (!inner_trips || n < 2 || inner_trips->size() != static_cast<std::uint64_t>(n)) return false;
  ValueSeq::Reader rd(inner_trips);
  const std::int64_t first = rd.next();
  const std::int64_t k = rd.next();
  // The first iteration ran the inner loop m times its usual trips: m - 1 leading iterations
  // lacked the calls after it (a call that begins in iteration m). Up to kMaxLeading of them;
  // a first iteration much longer than the others is more likely a warm-up loop as written.
  constexpr std::int64_t kMaxLeading = 3;
  if (k <= 0 || first % k != 0 || first / k < 2 || first / k - 1 > kMaxLeading) return false;
  const std::int64_t leading = first / k - 1;
  while (!rd.done())
    if (rd.next() != k) return false;
  for (std::size_t i = 1; i < lo.body.size(); ++i) {
    Node& node = lo.body[i];
    ValueSeq presence = ValueSeq::constant(0, static_cast<std::uint64_t>(leading));
    if (node.presence.empty())
      presence.append(ValueSeq::constant(1, static_cast<std::uint64_t>(n)));
    else
      presence.append(*only_seq(node.presence));
    node.presence.alternatives.clear();
    node.presence.alternatives.emplace_back(std::move(presence), RankList{});
  }
  own_seq(inner.loop->trips) = ValueSeq::constant(k, static_cast<std::uint64_t>(n + leading));
  own_seq(lo.trips).set_back(n + leading);
  return true;  // with k = 1 the inner loop is now a pseudo-loop (inline_single_trip_loops)
}

}  // namespace

void unpeel_leading_iterations(Node& node) {
  if (!node.loop) return;
  unpeel_one(node);
  unpeel_leading_iterations(node.loop->body);
}

void unpeel_leading_iterations(std::vector<Node>& nodes) {
  for (auto& n : nodes) unpeel_leading_iterations(n);
}

void inline_single_trip_loops(std::vector<Node>& nodes) {
  for (std::size_t i = 0; i < nodes.size();) {
    Node& n = nodes[i];
    if (!n.loop) {
      ++i;
      continue;
    }
    inline_single_trip_loops(n.loop->body);
    const ValueSeq* trips = only_seq(n.loop->trips);
    const bool single_trips = trips != nullptr && !trips->empty() && trips->is_constant() && trips->at(0) == 1;
    if (!single_trips || !n.presence.empty() || n.loop->body.empty()) {
      ++i;
      continue;
    }
    std::vector<Node> body = std::move(n.loop->body);
    const std::size_t count = body.size();
    nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i));
    nodes.insert(nodes.begin() + static_cast<std::ptrdiff_t>(i), std::make_move_iterator(body.begin()),
                 std::make_move_iterator(body.end()));
    i += count;
  }
}

void flatten_nested_loops(std::vector<Node>& nodes) {
  for (auto& n : nodes) {
    if (!n.loop) continue;
    while (flatten_one(n)) {
    }
    flatten_nested_loops(n.loop->body);
  }
}

}  // namespace scalatrace::loop_flatten
