// Iteration alignment of the intra-rank compressor (IntraCompressor::Impl, compressor_impl.hpp):
// two iterations of a loop are merged node by node along a longest common subsequence; matched
// nodes merge their elastic values (appending), nodes present in only one iteration get a
// presence vector with 0 for the visits in which they did not occur (dummy events). Pseudo-loops
// let a loop that ran once in one iteration align with the same loop of the other. See
// docs/algorithms.md ("Intra-rank compression") and the overview in compressor.cpp.
#include <algorithm>
#include <type_traits>
#include <utility>

#include "compress/compressor_impl.hpp"

namespace scalatrace {

using namespace compressor_nodes;

std::uint32_t IntraCompressor::Impl::lcs(const std::vector<View>& a, const std::vector<View>& b) {
  const std::size_t m = a.size(), n = b.size();
  dp.assign((m + 1) * (n + 1), 0);
  for (std::size_t i = m; i-- > 0;)
    for (std::size_t j = n; j-- > 0;) {
      std::uint32_t& c = dp[i * (n + 1) + j];
      if (match(a[i], b[j]))
        c = dp[(i + 1) * (n + 1) + j + 1] + 1;
      else
        c = std::max(dp[(i + 1) * (n + 1) + j], dp[i * (n + 1) + j + 1]);
    }
  return dp[0];
}

template <class T>
void IntraCompressor::Impl::body_merge(std::vector<Node>& a, std::uint64_t va, std::vector<T>&& b, std::uint64_t vb) {
  std::vector<View> av, bv;
  av.reserve(a.size());
  bv.reserve(b.size());
  for (const auto& x : a) av.push_back(view_of(x));
  for (const auto& x : b) bv.push_back(view_of(x));
  body_merge(a, av, va, std::move(b), bv, vb);
}

template <class T>
void IntraCompressor::Impl::body_merge(std::vector<Node>& a, const std::vector<View>& av, std::uint64_t va,
                                       std::vector<T>&& b, const std::vector<View>& bv, std::uint64_t vb) {
  if (same_shape(av, bv, *this)) {
    for (std::size_t i = 0; i < a.size(); ++i) merge_node(a[i], std::move(b[i]));
    return;
  }
  lcs(av, bv);
  const std::size_t m = a.size(), n = b.size(), w = n + 1;
  std::vector<Node> out;
  out.reserve(m + n);
  std::size_t i = 0, j = 0;
  while (i < m || j < n) {
    if (i < m && j < n && match(av[i], bv[j]) && dp[i * w + j] == dp[(i + 1) * w + j + 1] + 1) {
      merge_node(a[i], std::move(b[j]));
      out.push_back(std::move(a[i]));
      ++i;
      ++j;
    } else if (i < m && (j == n || dp[(i + 1) * w + j] >= dp[i * w + j + 1])) {
      mark_absent(a[i], vb);
      out.push_back(std::move(a[i]));
      ++i;
    } else {
      out.push_back(absent_before(to_node(std::move(b[j])), va));
      ++j;
    }
  }
  a = std::move(out);
}

bool IntraCompressor::Impl::worth_merging(const std::vector<View>& a, const std::vector<View>& b) {
  if (same_shape(a, b, *this)) return true;
  const std::size_t m = a.size(), n = b.size();
  if (m * n > (std::size_t{1} << 22)) return false;  // keep the LCS bounded
  const std::uint32_t common = lcs(a, b);
  return 2 * static_cast<std::size_t>(common) >= std::max(m, n);
}

// The second iteration is all in the first one before its last node (NPB BT: a timestep ends
// with a sweep's two "Irecv Wait Wait" stages, and the next timestep so far ends with the first
// of them): it has most likely not ended yet, and a loop made now would cut every later
// iteration at the wrong place. Such an iteration is taken in when it turns out to be complete
// (close_partial_iteration, absorb_loop_ends).
bool IntraCompressor::Impl::unfinished_iteration(const std::vector<View>& a, const std::vector<View>& b) const {
  const std::size_t m = a.size(), n = b.size();
  if (n >= m) return false;
  std::size_t k = 0;  // b's nodes found in order in a without its last node
  for (std::size_t x = 0; x + 1 < m && k < n; ++x)
    if (match(a[x], b[k])) ++k;
  return k == n;
}

// ---- pseudo-loops (thesis §5.2.2 rule 2) ----
// A stretch of one iteration that is exactly one iteration of a loop of the other iteration
// (a loop that ran once here) is wrapped into a loop of trip count 1 so that the alignment
// can match the two. Wraps are planned on views first and applied only if the merge is done.
template <class It>
auto IntraCompressor::Impl::loop_patterns(It begin, It end) const -> std::vector<LoopPattern> {
  std::vector<LoopPattern> out;
  for (It it = begin; it != end; ++it) {
    const Node* n = node_ptr(*it);
    if (n == nullptr || !n->loop || n->loop->body.size() > kMaxPseudoBody) continue;
    LoopPattern p{view_of(*n), {}};
    for (const auto& c : n->loop->body) p.body.push_back(view_of(c));
    out.push_back(std::move(p));
  }
  return out;
}

auto IntraCompressor::Impl::plan_wraps(std::vector<View>& views, std::vector<char> wrappable,
                                       const std::vector<LoopPattern>& patterns) const -> std::vector<Wrap> {
  std::vector<Wrap> plan;
  for (const auto& pat : patterns) {
    const std::size_t k = pat.body.size();
    if (k == 0) continue;
    for (std::size_t p = 0; p + k <= views.size(); ++p) {
      if (views[p].loop && match(views[p], pat.loop)) continue;
      bool ok = true;
      for (std::size_t r = 0; r < k && ok; ++r) ok = wrappable[p + r] && match(pat.body[r], views[p + r]);
      if (!ok) continue;
      const View lv{true, views[p].first, views[p + k - 1].last};
      views.erase(views.begin() + static_cast<std::ptrdiff_t>(p + 1),
                  views.begin() + static_cast<std::ptrdiff_t>(p + k));
      wrappable.erase(wrappable.begin() + static_cast<std::ptrdiff_t>(p + 1),
                      wrappable.begin() + static_cast<std::ptrdiff_t>(p + k));
      views[p] = lv;
      plan.push_back(Wrap{p, k});
    }
  }
  return plan;
}

template <class T>
void IntraCompressor::Impl::apply_wraps(std::vector<T>& seq, const std::vector<Wrap>& plan) const {
  for (const auto& w : plan) {
    std::uint64_t v = 1;
    if constexpr (std::is_same_v<T, Node>) v = visits(seq[w.pos]);
    Node loop;
    loop.loop = std::make_unique<LoopNode>();
    single(loop.loop->trips) = ValueSeq::constant(1, v);
    for (std::size_t r = 0; r < w.len; ++r) loop.loop->body.push_back(to_node(std::move(seq[w.pos + r])));
    seq.erase(seq.begin() + static_cast<std::ptrdiff_t>(w.pos + 1),
              seq.begin() + static_cast<std::ptrdiff_t>(w.pos + w.len));
    if constexpr (std::is_same_v<T, Node>) {
      seq[w.pos] = std::move(loop);
    } else {
      Entry e;
      e.raw = false;
      e.node = std::move(loop);
      e.view = view_of(e.node);
      seq[w.pos] = std::move(e);
    }
  }
}

// The sequences the other sections align: bodies (Node) and stretches of the queue (Entry).
template void IntraCompressor::Impl::body_merge<Node>(std::vector<Node>&, std::uint64_t, std::vector<Node>&&,
                                                      std::uint64_t);
template void IntraCompressor::Impl::body_merge<Node>(std::vector<Node>&, const std::vector<View>&, std::uint64_t,
                                                      std::vector<Node>&&, const std::vector<View>&, std::uint64_t);
template void IntraCompressor::Impl::body_merge<Entry>(std::vector<Node>&, const std::vector<View>&, std::uint64_t,
                                                       std::vector<Entry>&&, const std::vector<View>&, std::uint64_t);
template auto IntraCompressor::Impl::loop_patterns(std::vector<Node>::iterator, std::vector<Node>::iterator) const
    -> std::vector<LoopPattern>;
template auto IntraCompressor::Impl::loop_patterns(std::vector<Entry>::iterator, std::vector<Entry>::iterator) const
    -> std::vector<LoopPattern>;
template void IntraCompressor::Impl::apply_wraps<Node>(std::vector<Node>&, const std::vector<Wrap>&) const;
template void IntraCompressor::Impl::apply_wraps<Entry>(std::vector<Entry>&, const std::vector<Wrap>&) const;

}  // namespace scalatrace
