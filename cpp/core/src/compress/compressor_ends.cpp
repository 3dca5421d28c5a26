// Iterations that differ at the ends of a loop, in the intra-rank compressor
// (IntraCompressor::Impl, compressor_impl.hpp). Real codes often run a first iteration that
// lacks a call the others make (LULESH's first timestep skips the MPI_Allreduce of its time
// increment) and a last one that skips a call. Such an iteration only shares some of its events
// with the others, so the fold tests (compressor_fold.cpp) leave it outside the loop, or find
// the loop rotated (starting at the second call, the first iteration's remainder then left
// before or after it), or fold the first iterations into a loop of their own. The passes here
// take such iterations in, losslessly: the differences become presence values (thesis §5.2.2 /
// Alg. 4 "trailing iterations", applied at both ends).
//   absorb_leading    when a loop is made: the entries before it as its first iteration, and a
//                     loop right before it of such iterations (merge_adjacent_loops)
//   absorb_loop_ends  at the end: the same after each top-level loop, then the rotations that
//                     put the loop's start back where the application's iteration starts
// They run once per loop, so they align iterations up to the window's length, not only the
// per-event bound kMaxAlign. See docs/algorithms.md ("Loop ends").
#include <algorithm>
#include <utility>

#include "compress/compressor_impl.hpp"

namespace scalatrace {

using namespace compressor_nodes;

namespace {

/// A stretch of `len` nodes of which `common` align with a body of `m` nodes is close to an
/// iteration of it: all but a quarter of the nodes, or all but one of at least three, match.
bool close_counts(std::size_t common, std::size_t m, std::size_t len) {
  if (common == m && common == len) return true;  // the same shape
  const std::size_t longest = std::max(m, len);
  // Two-node spans differing in one node are too weak a hint (a previous iteration's tail).
  if (longest < 3) return false;
  return common + 1 >= longest || 4 * common >= 3 * longest;
}

/// ... is one iteration of the body with some of its nodes absent: in body order, at least two
/// nodes and at least half the body (a last iteration that stops early or skips calls, or the
/// end of a loop found rotated, e.g. C D A B ... C D for a body A B C D whose first iteration
/// lacked A B). Below half, the presence values every other body node would need cost more
/// than the nodes left outside.
bool partial_counts(std::size_t common, std::size_t m, std::size_t len) {
  return len >= 2 && len < m && 2 * len >= m && common == len;
}

/// A body node whose presence has one value per iteration of its loop's `n` (N's nodes all
/// have presence vectors).
bool presence_per_iteration(const Node& node, std::uint64_t n) {
  return !node.presence.empty() && node.presence.alternatives.front().first.size() == n;
}

/// Moves a body node's presence one iteration earlier (`added` its last value, the first
/// dropped) or later (`added` its first value, the last dropped), read and written as
/// sequences (a long loop's presence is never expanded); no vector when present throughout.
void shift_presence(Node& node, bool earlier, std::int64_t added) {
  const ValueSeq old = std::move(node.presence.alternatives.front().first);
  node.presence.alternatives.clear();
  ValueSeq p;
  bool all_present = added == 1;
  if (!earlier) p.append(added);
  ValueSeq::Reader rd(&old);
  for (std::uint64_t i = 0; i < old.size(); ++i) {
    const std::int64_t v = rd.next();
    if ((earlier && i == 0) || (!earlier && i + 1 == old.size())) continue;
    all_present = all_present && v == 1;
    p.append(v);
  }
  if (earlier) p.append(added);
  if (!all_present) node.presence.alternatives.emplace_back(std::move(p), RankList{});
}

/// A body node that is absent in the loop's first (`at_start`) or last iteration.
bool absent_at(const Node& node, bool at_start) {
  if (node.presence.empty()) return false;
  const ValueSeq& p = node.presence.alternatives.front().first;
  return !p.empty() && (at_start ? p.at(0) : p.back()) == 0;
}

}  // namespace

auto IntraCompressor::Impl::body_views(const std::vector<Node>& body) -> std::vector<View> {
  std::vector<View> v;
  v.reserve(body.size());
  for (const auto& n : body) v.push_back(view_of(n));
  return v;
}

/// One LCS row per outward entry: row[i] = LCS of the body's first i nodes (leading: its last
/// i, the stretch being read backwards too) and the stretch so far. The candidate sharing the
/// most nodes with the body wins, the shortest among equals (so that what follows the last
/// iteration, e.g. MPI_Finalize, or precedes the first one stays outside).
auto IntraCompressor::Impl::best_end_iteration(const std::vector<View>& body, const std::vector<View>& outward,
                                               bool leading) -> EndIteration {
  const std::size_t m = body.size();
  EndIteration best;
  if (m == 0 || outward.empty()) return best;
  const Key first = body.front().first;
  std::vector<std::uint32_t> row(m + 1, 0), next(m + 1, 0);
  for (std::size_t len = 1; len <= outward.size(); ++len) {
    const View& x = outward[len - 1];
    for (std::size_t i = 1; i <= m; ++i) {
      const View& b = leading ? body[m - i] : body[i - 1];
      next[i] = match(b, x) ? row[i - 1] + 1 : std::max(row[i], next[i - 1]);
    }
    std::swap(row, next);
    const std::size_t common = row[m];
    // The stretch's first entry: after the loop the nearest one, before it the farthest. A
    // stretch right after the loop need not start like it: the last iteration may skip the
    // first call (every stretch is anchored at the loop, nothing can come between).
    const bool starts_like_body = leading ? key_match(x.first, first) : true;
    if (!(starts_like_body && close_counts(common, m, len)) && !partial_counts(common, m, len)) continue;
    if (common > best.common) best = EndIteration{len, common};
  }
  return best;
}

/// The top-level loop just made (q.back(), one visit) takes a loop right before it whose
/// iterations are like its own as its first iterations, then the entries before it as its
/// first iteration if they start like the body and align with it, or are a partial iteration.
void IntraCompressor::Impl::absorb_leading() {
  if (q.size() >= 2 && q.size() - 2 >= frozen) merge_adjacent_loops(q.size() - 2);
  const std::size_t at = q.size() - 1;
  if (at == 0 || at <= frozen) return;
  const std::vector<View> bv = body_views(q[at].node.loop->body);
  const std::size_t reach = std::min(end_reach(bv.size()), at - frozen);
  std::vector<View> outward;
  outward.reserve(reach);
  for (std::size_t k = 1; k <= reach; ++k) outward.push_back(q[at - k].view);
  const EndIteration best = best_end_iteration(bv, outward, true);
  if (best.len == 0) return;
  const std::size_t h = at - best.len;
  const std::vector<View> av = views(h, at);
  Entry loop_entry = std::move(q[at]);
  q.pop_back();
  std::vector<Entry> lead = take(h);
  std::vector<Node> body;
  body.reserve(lead.size());
  for (auto& e : lead) body.push_back(to_node(std::move(e)));
  LoopNode& l = *loop_entry.node.loop;
  const std::uint64_t vb = visits(l.body.front());
  body_merge(body, av, 1, std::move(l.body), bv, vb);
  l.body = std::move(body);
  ValueSeq& trips = single(l.trips);
  trips.set_back(trips.back() + 1);
  loop_entry.view = view_of(loop_entry.node);
  q.push_back(std::move(loop_entry));
}

/// A pipelined sweep's last stage receives but does not send on (NPB BT's x_solve: stages
/// R W W S, the last one R W W): the loop of the full stages is followed by a partial iteration,
/// and whatever comes next cannot continue it. Taken in then, in every visit of the loop (not
/// only at the end of the stream), the loop runs as many iterations as the application's, the
/// same in every visit, and the enclosing loop's iterations align: L[3]{R W W S?[1 1 0]}
/// instead of L[2]{R W W S} R W W. The entries after the last top-level loop must be a partial
/// iteration (partial_counts, in body order) of it or of a loop down its tail chain (the
/// sweep's loop ends the enclosing timestep loop, which was folded before the sweep finished),
/// and `e` must continue neither that iteration (match a body node after them) nor the last
/// entry (a loop, or a loop ending a loop, that `e` would give one more iteration).
void IntraCompressor::Impl::close_partial_iteration(const Event& e) {
  const std::size_t t = q.size();
  if (t < 3 || t - 3 < frozen) return;
  // The nearest top-level loop, at most kMaxAlign + 1 entries back.
  const std::size_t stop = std::max(frozen, t > kMaxAlign + 1 ? t - kMaxAlign - 1 : std::size_t{0});
  std::size_t j = t;
  for (std::size_t k = t; k-- > stop;)
    if (!q[k].raw && q[k].node.loop) {
      j = k;
      break;
    }
  if (j == t || t - 1 - j < 2) return;  // a partial iteration has two entries or more
  const Key next{e.op, e.site};
  for (const Node* c = q[t - 1].raw ? nullptr : &q[t - 1].node; c != nullptr && c->loop; c = &c->loop->body.back())
    if (key_match(first_key(c->loop->body.front()), next)) return;
  for (Node* c = &q[j].node; c->loop;) {
    LoopNode& loop = *c->loop;
    if (ends_partial_iteration(loop.body, j + 1, next)) {
      const std::vector<View> av = views(j + 1, t);
      const std::uint64_t va = visits(loop.body.front());
      body_merge(loop.body, body_views(loop.body), va, take(j + 1), av, 1);
      ValueSeq& trips = single(loop.trips);
      trips.set_back(trips.back() + 1);
      q[j].view = view_of(q[j].node);
      return;
    }
    Node& last = loop.body.back();  // down the tail chain: a loop that ran last
    if (!last.loop || (!last.presence.empty() && last.presence.alternatives.front().first.back() == 0)) return;
    c = &last;
  }
}

/// The queue's entries from `from` on are a partial iteration of `body` that an event `next`
/// cannot continue.
bool IntraCompressor::Impl::ends_partial_iteration(const std::vector<Node>& body, std::size_t from, Key next) const {
  const std::size_t m = body.size(), len = q.size() - from;
  if (!partial_counts(len, m, len)) return false;
  std::size_t pos = 0;  // the body nodes the entries matched, greedily in order
  for (std::size_t x = from; x < q.size(); ++x) {
    while (pos < m && !match(view_of(body[pos]), q[x].view)) ++pos;
    if (pos == m) return false;
    ++pos;
  }
  for (std::size_t p = pos; p < m; ++p)
    if (key_match(first_key(body[p]), next)) return false;  // `next` may continue the iteration
  return true;
}

/// When both loops' iterations are alike, one loop ran the iterations that lacked calls and
/// the other the rest, e.g. L[2]{A B} L[18]{C A B} for 20 iterations of A B C whose first
/// lacked C (the first two A B folded before C came). Their iterations follow one another, so
/// the merged loop runs both's in order, each node absent (presence 0) in the other's.
bool IntraCompressor::Impl::merge_adjacent_loops(std::size_t i) {
  if (i + 1 >= q.size() || i < frozen) return false;
  Entry& before = q[i];
  Entry& after = q[i + 1];
  if (before.raw || after.raw || !before.node.loop || !after.node.loop) return false;
  LoopNode& a = *before.node.loop;
  LoopNode& b = *after.node.loop;
  if (single(a.trips).size() != 1 || single(b.trips).size() != 1) return false;
  const std::size_t longer = std::max(a.body.size(), b.body.size());
  const std::size_t shorter = std::min(a.body.size(), b.body.size());
  if (longer > cfg.window || longer > end_reach(shorter)) return false;
  const std::vector<View> av = body_views(a.body), bv = body_views(b.body);
  const std::size_t common = lcs(av, bv);
  const bool starts_alike = key_match(av.front().first, bv.front().first);
  if (!(starts_alike && close_counts(common, longer, shorter)) && !partial_counts(common, longer, shorter))
    return false;
  const std::uint64_t va = visits(a.body.front()), vb = visits(b.body.front());
  body_merge(a.body, av, va, std::move(b.body), bv, vb);
  ValueSeq& trips = single(a.trips);
  trips.set_back(trips.back() + single(b.trips).back());
  before.view = view_of(before.node);
  q.erase(q.begin() + static_cast<std::ptrdiff_t>(i + 1));
  return true;
}

/// A stretch after the loop q[j] that starts like the body and aligns with it, or is a partial
/// iteration of it, becomes one more (last) iteration.
bool IntraCompressor::Impl::absorb_trailing_iteration(std::size_t j) {
  LoopNode& loop = *q[j].node.loop;
  const std::vector<View> bv = body_views(loop.body);
  const std::size_t reach = std::min(end_reach(bv.size()), q.size() - 1 - j);
  std::vector<View> av = views(j + 1, j + 1 + reach);
  const EndIteration best = best_end_iteration(bv, av, false);
  if (best.len == 0) return false;
  av.resize(best.len);
  std::vector<Entry> rest = take(j + 1 + best.len);
  std::vector<Entry> tail = take(j + 1);
  const std::uint64_t va = visits(loop.body.front());
  body_merge(loop.body, bv, va, std::move(tail), av, 1);
  ValueSeq& trips = single(loop.trips);
  trips.set_back(trips.back() + 1);
  q[j].view = view_of(q[j].node);
  for (auto& e : rest) q.push_back(std::move(e));
  return true;
}

/// The loop q[j] was found one call late: its body starts with nodes N absent in its first
/// iteration (L[20]{C?[0 0 1 ...] A B} C for 20 iterations of A B C whose first lacked C), and
/// the entries after it are some of N, in order. Then every iteration's N are the previous
/// iteration's end: the body becomes R N (L[20]{A B C?[0 1 ...]}), each node of N taking the
/// entry that matched it as its last occurrence. Lossless: the events keep their order, N's
/// presence moves one iteration earlier.
bool IntraCompressor::Impl::rotate_into_following(std::size_t j) {
  LoopNode& loop = *q[j].node.loop;
  std::vector<Node>& body = loop.body;
  const auto n = static_cast<std::uint64_t>(single(loop.trips).back());
  std::size_t k = 0;  // N = body[0, k)
  while (k < body.size() && absent_at(body[k], true)) ++k;
  if (k == 0 || k == body.size()) return false;
  // Greedy, in order: the longest run of entries after the loop that are nodes of N.
  std::vector<std::size_t> matched_entry(k, SIZE_MAX);
  std::size_t e = j + 1;
  for (std::size_t i = 0; i < k && e < q.size(); ++i)
    if ((q[e].raw || q[e].node.presence.empty()) && match(view_of(body[i]), q[e].view)) matched_entry[i] = e++;
  const std::size_t len = e - (j + 1);
  if (len == 0) return false;
  for (std::size_t i = 0; i < k; ++i)
    if (!presence_per_iteration(body[i], n)) return false;  // leave the loop as it is
  std::vector<Entry> rest = take(j + 1 + len);
  std::vector<Entry> following = take(j + 1);
  for (std::size_t i = 0; i < k; ++i) {
    const bool matched = matched_entry[i] != SIZE_MAX;
    ElasticValue presence = std::move(body[i].presence);
    body[i].presence.alternatives.clear();
    if (matched) merge_node(body[i], std::move(following[matched_entry[i] - (j + 1)]));
    body[i].presence = std::move(presence);
    shift_presence(body[i], true, matched ? 1 : 0);
  }
  std::rotate(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(k), body.end());
  q[j].view = view_of(q[j].node);
  for (auto& r : rest) q.push_back(std::move(r));
  return true;
}

/// The mirror image: the loop q[j] ends with nodes N absent in its last iteration and the
/// entries right before it are some of N, in order (a first iteration that lacked calls, whose
/// loop was found starting after them). The body becomes N R, each node of N taking the entry
/// that matched it as its first occurrence. `j` follows the loop (entries before it leave).
bool IntraCompressor::Impl::rotate_into_preceding(std::size_t& j) {
  LoopNode& loop = *q[j].node.loop;
  std::vector<Node>& body = loop.body;
  const std::size_t m = body.size();
  const auto n = static_cast<std::uint64_t>(single(loop.trips).back());
  std::size_t k = 0;  // N = body[m - k, m)
  while (k < m && absent_at(body[m - 1 - k], false)) ++k;
  if (k == 0 || k == m) return false;
  std::vector<std::size_t> matched_entry(k, SIZE_MAX);  // by position in N
  std::size_t e = j;                                    // entries [e, j) matched
  for (std::size_t i = k; i-- > 0 && e > frozen;) {
    const Entry& x = q[e - 1];
    if ((x.raw || x.node.presence.empty()) && match(view_of(body[m - k + i]), x.view)) matched_entry[i] = --e;
  }
  const std::size_t len = j - e;
  if (len == 0) return false;
  for (std::size_t i = 0; i < k; ++i)
    if (!presence_per_iteration(body[m - k + i], n)) return false;
  std::vector<Entry> preceding;
  preceding.reserve(len);
  for (std::size_t x = e; x < j; ++x) preceding.push_back(std::move(q[x]));
  q.erase(q.begin() + static_cast<std::ptrdiff_t>(e), q.begin() + static_cast<std::ptrdiff_t>(j));
  j = e;
  for (std::size_t i = 0; i < k; ++i) {
    Node& node = body[m - k + i];
    const bool matched = matched_entry[i] != SIZE_MAX;
    ElasticValue presence = std::move(node.presence);
    node.presence.alternatives.clear();
    if (matched) {
      Node first = to_node(std::move(preceding[matched_entry[i] - e]));
      merge_node(first, std::move(node));  // the entry's occurrence first
      node = std::move(first);
    }
    node.presence = std::move(presence);
    shift_presence(node, false, matched ? 1 : 0);
  }
  std::rotate(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(m - k), body.end());
  q[j].view = view_of(q[j].node);
  return true;
}

/// At the end, for every top-level loop (run once): the loops right after it of iterations
/// like its own, a stretch after it that is one more iteration, then the rotations that take
/// in a first iteration's remainder found after or before it.
void IntraCompressor::Impl::absorb_loop_ends() {
  for (std::size_t j = q.size(); j-- > frozen;) {
    if (q[j].raw || !q[j].node.loop || single(q[j].node.loop->trips).size() != 1) continue;
    while (merge_adjacent_loops(j)) {
    }
    // More than one: a loop found rotated by the first iteration's missing calls leaves the
    // rest of the last full iteration, then the last iteration, which may lack calls too.
    while (j + 1 < q.size() && absorb_trailing_iteration(j)) {
    }
    if (j + 1 < q.size()) rotate_into_following(j);
    if (j > frozen) rotate_into_preceding(j);
  }
}

}  // namespace scalatrace
