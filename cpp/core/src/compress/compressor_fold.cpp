// Tail folding of the intra-rank compressor (IntraCompressor::Impl, compressor_impl.hpp): the
// general path of an event. After each push the tail of the queue is examined (absorb into a
// loop, or a new loop of two iterations; the overview at the top of compressor.cpp). A loop just
// made takes in the iterations that differ at its start (compressor_ends.cpp). Two iterations
// are merged by the alignment of compressor_align.cpp. See docs/algorithms.md ("Intra-rank
// compression").
#include <algorithm>
#include <utility>

#include "compress/compressor_impl.hpp"

namespace scalatrace {

using namespace compressor_nodes;

void IntraCompressor::Impl::normal_push(const Event& e) {
  flush_field_cache();
  close_partial_iteration(e);
  Entry& en = q.emplace_back();
  en.ev = e;
  en.view = view_of(en);
  attempts_left = kMaxAttempts;
  while (fold_once()) {
  }
}

bool IntraCompressor::Impl::fold_once() {
  if (q.size() < 2) return false;
  const std::size_t t = q.size() - 1;
  std::size_t lo = t > cfg.window ? t - cfg.window : 0;
  lo = std::max(lo, frozen);
  if (t <= lo) return false;
  const View tail = q[t].view;
  int candidates = kMaxCandidates;
  for (std::size_t j = t; j-- > lo;) {
    if (!key_match(q[j].view.last, tail.last)) continue;
    if (!q[j].raw && q[j].node.loop && try_absorb(j)) return true;
    if (try_new_loop(j, lo)) return true;
    if (--candidates == 0) break;
  }
  return false;
}

// ---- loop detection on the queue tail ----
auto IntraCompressor::Impl::views(std::size_t from, std::size_t to) const -> std::vector<View> {
  std::vector<View> v;
  v.reserve(to - from);
  for (std::size_t k = from; k < to; ++k) v.push_back(q[k].view);
  return v;
}

auto IntraCompressor::Impl::take(std::size_t from) -> std::vector<Entry> {
  std::vector<Entry> out;
  out.reserve(q.size() - from);
  for (std::size_t k = from; k < q.size(); ++k) out.push_back(std::move(q[k]));
  q.resize(from);
  return out;
}

bool IntraCompressor::Impl::fast_same_shape(const std::vector<Node>& a, std::size_t from) const {
  if (a.size() != q.size() - from) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!match(view_of(a[k]), q[from + k].view)) return false;
  return true;
}

bool IntraCompressor::Impl::try_absorb(std::size_t j) {
  const std::size_t t = q.size() - 1;
  const Key bfirst = q[j + 1].view.first;
  const Key blast = q[t].view.last;
  // Every loop of the tail chain ends with the same event as q[j] itself.
  if (!key_match(q[j].view.last, blast)) return false;
  Node* c = &q[j].node;
  while (c->loop) {
    auto& body = c->loop->body;
    if (key_match(first_key(body.front()), bfirst) && key_match(last_key(body.back()), blast)) {
      const std::uint64_t bva = visits(body.front());
      bool merged = false;
      if (fast_same_shape(body, j + 1)) {
        for (std::size_t k = 0; k < body.size(); ++k) merge_node(body[k], std::move(q[j + 1 + k]));
        q.resize(j + 1);
        merged = true;
      } else if (attempts_left > 0 && body.size() <= kMaxAlign && t - j <= kMaxAlign) {
        --attempts_left;
        std::vector<View> av;
        std::vector<char> aw;
        av.reserve(body.size());
        for (const auto& x : body) {
          av.push_back(view_of(x));
          aw.push_back(x.presence.empty());
        }
        std::vector<View> bv = views(j + 1, t + 1);
        const auto b_patterns = loop_patterns(q.begin() + static_cast<std::ptrdiff_t>(j + 1), q.end());
        const auto wb = plan_wraps(bv, std::vector<char>(bv.size(), 1), loop_patterns(body.begin(), body.end()));
        const auto wa = plan_wraps(av, std::move(aw), b_patterns);
        if (!unfinished_iteration(av, bv) && worth_merging(av, bv)) {
          std::vector<Entry> b = take(j + 1);
          apply_wraps(b, wb);
          apply_wraps(body, wa);
          body_merge(body, av, bva, std::move(b), bv, 1);
          merged = true;
        }
      }
      if (merged) {
        ValueSeq& trips = single(c->loop->trips);
        trips.set_back(trips.back() + 1);
        q[j].view = view_of(q[j].node);
        return true;
      }
    }
    Node& last = body.back();
    if (!last.loop) break;
    if (!last.presence.empty() && last.presence.alternatives.front().first.back() == 0) break;
    c = &last;
  }
  return false;
}

inline bool IntraCompressor::Impl::try_new_loop(std::size_t j, std::size_t lo) {
  const std::size_t t = q.size() - 1;
  const std::size_t n = t - j;
  const Key second_first = q[j + 1].view.first;
  // Nearest first: the shortest first iteration that starts like the second one.
  if (attempts_left > 0 && n <= kMaxAlign) {
    const std::size_t stop = std::max(lo, j + 1 > kMaxAlign ? j + 1 - kMaxAlign : std::size_t{0});
    for (std::size_t h = j + 1; h-- > stop;) {
      if (!key_match(q[h].view.first, second_first)) continue;
      --attempts_left;
      return make_loop(h, j);
    }
    return false;
  }
  // Long iterations (or too much work already): only two identical ones.
  if (j + 1 < n || j + 1 - n < lo) return false;
  const std::size_t h = j + 1 - n;
  for (std::size_t k = 0; k < n; ++k)
    if (!match(q[h + k].view, q[j + 1 + k].view)) return false;
  return make_loop(h, j);
}

/// q[h..j] and q[j+1..] are two iterations: fold them into a loop if worth it.
bool IntraCompressor::Impl::make_loop(std::size_t h, std::size_t j) {
  const std::size_t t = q.size() - 1;
  const std::size_t m = j + 1 - h, n = t - j;
  // Without loops on either side nothing can be wrapped: at most min(m, n) nodes match.
  bool loops = false;
  for (std::size_t k = h; k <= t && !loops; ++k) loops = q[k].view.loop;
  if (!loops && 2 * std::min(m, n) < std::max(m, n)) return false;
  std::vector<View> av = views(h, j + 1), bv = views(j + 1, t + 1);
  const auto qb = q.begin();
  const auto a_patterns = loop_patterns(qb + static_cast<std::ptrdiff_t>(h), qb + static_cast<std::ptrdiff_t>(j + 1));
  const auto b_patterns = loop_patterns(qb + static_cast<std::ptrdiff_t>(j + 1), q.end());
  const auto wb = plan_wraps(bv, std::vector<char>(bv.size(), 1), a_patterns);
  const auto wa = plan_wraps(av, std::vector<char>(av.size(), 1), b_patterns);
  if (unfinished_iteration(av, bv) || !worth_merging(av, bv)) return false;
  std::vector<Entry> b = take(j + 1);
  std::vector<Entry> a = take(h);
  apply_wraps(b, wb);
  apply_wraps(a, wa);
  std::vector<Node> body;
  body.reserve(a.size());
  for (auto& e : a) body.push_back(to_node(std::move(e)));
  body_merge(body, av, 1, std::move(b), bv, 1);
  Entry loop;
  loop.raw = false;
  loop.node.loop = std::make_unique<LoopNode>();
  loop.node.loop->body = std::move(body);
  single(loop.node.loop->trips).append(2);
  loop.view = view_of(loop.node);
  q.push_back(std::move(loop));
  absorb_leading();
  return true;
}

}  // namespace scalatrace
