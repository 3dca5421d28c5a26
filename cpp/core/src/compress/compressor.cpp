// Online intra-rank loop compression. Algorithm (docs/algorithms.md, "Intra-rank
// compression"):
//
// The rank's queue holds top-level entries: fresh events (kept as plain Events until they
// become part of a loop, so the common case allocates nothing) and nodes. After each push the
// tail is examined, scanning back at most `window` entries (never into the frozen prefix):
//   (a) absorb: if entry j is a loop L and the entries after it form one more iteration of L
//       (their first/last nodes match L's first/last body nodes), they are merged into L's body
//       and L's current trip count grows by one. The same test is applied down the "tail
//       chain" of L (L's last body node if it is a loop that ran last, and so on): this extends
//       an inner loop that keeps running after its enclosing loop was folded (the trailing
//       iterations of thesis Fig. 5.2) without any decompression.
//   (b) new loop: if entry j matches the tail, and some entry h <= j matches entry j+1, then
//       [h..j] and [j+1..t] are two iterations (thesis §5.2.2: only first and last events have
//       to match) and become a loop of 2 trips.
// Iterations are merged by a longest-common-subsequence alignment of the two node sequences:
// matched nodes merge their elastic values (appending), nodes present in only one iteration
// get a presence vector with 0 for the visits in which they did not occur (dummy events /
// pseudo-loops). This repeats until nothing folds.
#include "scalatrace/compress/compressor.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "compress/compressor_nodes.hpp"
#include "compress/loop_flatten.hpp"
#include "model/value_canonical.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

using namespace compressor_nodes;

struct IntraCompressor::Impl {
  CompressorConfig cfg;
  const CallSiteTable* sites = nullptr;
  std::vector<Entry> q;
  std::size_t frozen = 0;         ///< entries before this index are no longer searched
  std::size_t frozen_bytes = 0;   ///< memory of the frozen prefix (it no longer changes)
  std::uint64_t pushes_since_check = 0;
  std::uint64_t check_interval = 4096;
  std::size_t peak_bytes = 0;            ///< largest memory_bytes() seen at a check
  std::size_t bytes_per_entry = 1024;    ///< of the unfrozen queue, at the last check
  IntraCompressor::SpillSink spill;      ///< where an over-budget queue goes (optional)
  std::vector<Node> kept;                ///< nodes a failed spill could not hand over
  std::uint64_t spilled_chunks = 0;
  std::vector<std::uint32_t> dp;  ///< LCS table, reused
  /// Alignments that are not the same shape (LCS + pseudo-loop planning) tried per event: a
  /// bound on the work an irregular stream can cause (the simple cases are not counted).
  static constexpr int kMaxAttempts = 2;
  /// Iterations longer than this (in nodes) only merge when they have the same shape.
  static constexpr std::size_t kMaxAlign = 48;
  /// Only loops with bodies up to this size are candidates for pseudo-loop wrapping.
  static constexpr std::size_t kMaxPseudoBody = 16;
  /// Entries ending like the tail examined per fold attempt (nearest first).
  static constexpr int kMaxCandidates = 32;
  int attempts_left = kMaxAttempts;

  explicit Impl(CompressorConfig c) : cfg(c) {
    if (cfg.window < 2) cfg.window = 2;
    Histogram::bin_index(0, cfg.hist_sub_bins);  // validates the setting (UsageError)
  }

  // ---- matching ----
  bool site_match(std::uint32_t a, std::uint32_t b) const {
    if (a == b) return true;
    if (cfg.site_threshold == 0 || sites == nullptr) return false;
    if (a >= sites->sites.size() || b >= sites->sites.size()) return false;
    return frame_distance(sites->sites[a].frames, sites->sites[b].frames) <= cfg.site_threshold;
  }
  bool key_match(const Key& a, const Key& b) const {
    return a.op == b.op && site_match(a.site, b.site);
  }
  bool match(const View& a, const View& b) const {
    return a.loop == b.loop && key_match(a.first, b.first) && key_match(a.last, b.last);
  }

  // ---- building and merging nodes ----
  Node make_event_node(const Event& e) const { return compressor_nodes::make_event_node(e, cfg.hist_sub_bins); }
  Node to_node(Entry&& e) const { return e.raw ? make_event_node(e.ev) : std::move(e.node); }
  static Node to_node(Node&& n) { return std::move(n); }

  void merge_node(Node& a, Node&& b) {
    const std::uint64_t va = visits(a), vb = visits(b);
    merge_presence(a, va, b.presence, vb);
    if (a.event) {
      merge_event(*a.event, std::move(*b.event));
      return;
    }
    const std::uint64_t bva = visits(a.loop->body.front());
    const std::uint64_t bvb = visits(b.loop->body.front());
    single(a.loop->trips).append(single(b.loop->trips));
    body_merge(a.loop->body, bva, std::move(b.loop->body), bvb);
  }

  void merge_node(Node& a, Entry&& b) {
    if (!b.raw) {
      merge_node(a, std::move(b.node));
      return;
    }
    if (!a.presence.empty()) single(a.presence).append(1);
    append_event(*a.event, b.ev);
  }

  /// LCS table of the two view sequences (suffix form: dp[i][j] = LCS of a[i..], b[j..]).
  std::uint32_t lcs(const std::vector<View>& a, const std::vector<View>& b) {
    const std::size_t m = a.size(), n = b.size();
    dp.assign((m + 1) * (n + 1), 0);
    for (std::size_t i = m; i-- > 0;)
      for (std::size_t j = n; j-- > 0;) {
        std::uint32_t& c = dp[i * (n + 1) + j];
        if (match(a[i], b[j])) c = dp[(i + 1) * (n + 1) + j + 1] + 1;
        else c = std::max(dp[(i + 1) * (n + 1) + j], dp[i * (n + 1) + j + 1]);
      }
    return dp[0];
  }

  static bool same_shape(const std::vector<View>& a, const std::vector<View>& b,
                         const Impl& self) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!self.match(a[i], b[i])) return false;
    return true;
  }

  /// Merges the body visits `b` (vb of them) into body `a` (va visits so far).
  template <class T>
  void body_merge(std::vector<Node>& a, std::uint64_t va, std::vector<T>&& b, std::uint64_t vb) {
    std::vector<View> av, bv;
    av.reserve(a.size());
    bv.reserve(b.size());
    for (const auto& x : a) av.push_back(view_of(x));
    for (const auto& x : b) bv.push_back(view_of(x));
    body_merge(a, av, va, std::move(b), bv, vb);
  }

  template <class T>
  void body_merge(std::vector<Node>& a, const std::vector<View>& av, std::uint64_t va,
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

  /// Is aligning these two iterations worth a loop? First and last already match.
  bool worth_merging(const std::vector<View>& a, const std::vector<View>& b) {
    if (same_shape(a, b, *this)) return true;
    const std::size_t m = a.size(), n = b.size();
    if (m * n > (std::size_t{1} << 22)) return false;  // keep the LCS bounded
    const std::uint32_t common = lcs(a, b);
    return 2 * static_cast<std::size_t>(common) >= std::max(m, n);
  }

  // ---- pseudo-loops (thesis §5.2.2 rule 2) ----
  // A stretch of one iteration that is exactly one iteration of a loop of the other iteration
  // (a loop that ran once here) is wrapped into a loop of trip count 1 so that the alignment
  // can match the two. Wraps are planned on views first and applied only if the merge is done.
  struct LoopPattern {
    View loop;
    std::vector<View> body;
  };
  struct Wrap {
    std::size_t pos, len;
  };
  template <class It>
  std::vector<LoopPattern> loop_patterns(It begin, It end) const {
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
  static const Node* node_ptr(const Entry& e) { return e.raw ? nullptr : &e.node; }
  static const Node* node_ptr(const Node& n) { return &n; }

  /// Plans wraps on `views` (updated to the wrapped sequence). wrappable[i]: element i has no
  /// presence vector of its own (so it may go into a pseudo-loop).
  std::vector<Wrap> plan_wraps(std::vector<View>& views, std::vector<char> wrappable,
                               const std::vector<LoopPattern>& patterns) const {
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
  void apply_wraps(std::vector<T>& seq, const std::vector<Wrap>& plan) const {
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

  // ---- loop detection on the queue tail ----
  std::vector<View> views(std::size_t from, std::size_t to) const {  // [from, to)
    std::vector<View> v;
    v.reserve(to - from);
    for (std::size_t k = from; k < to; ++k) v.push_back(q[k].view);
    return v;
  }

  std::vector<Entry> take(std::size_t from) {  // removes q[from..]
    std::vector<Entry> out;
    out.reserve(q.size() - from);
    for (std::size_t k = from; k < q.size(); ++k) out.push_back(std::move(q[k]));
    q.resize(from);
    return out;
  }

  bool fast_same_shape(const std::vector<Node>& a, std::size_t from) const {
    if (a.size() != q.size() - from) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (!match(view_of(a[k]), q[from + k].view)) return false;
    return true;
  }

  bool try_absorb(std::size_t j) {
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
          if (worth_merging(av, bv)) {
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

  bool try_new_loop(std::size_t j, std::size_t lo) {
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
  bool make_loop(std::size_t h, std::size_t j) {
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
    if (!worth_merging(av, bv)) return false;
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

  // ---- iterations that differ at the ends of a loop ----
  // Real codes often run a first iteration that lacks a call the others make (a call that
  // begins in the second timestep) and a last one that skips a call. Such an iteration only
  // shares its first event with the others, so the fold tests above leave it outside the loop.
  // These passes take it in when it aligns with the body closely (all but a quarter of its
  // nodes, or all but one of at least three, match): lossless, the differences become
  // presence values (thesis §5.2.2 / Alg. 4 "trailing iterations", applied at both ends).
  bool close_enough(const std::vector<View>& a, const std::vector<View>& b) {
    if (same_shape(a, b, *this)) return true;
    const std::size_t m = a.size(), n = b.size(), longest = std::max(m, n);
    // Two-node spans differing in one node are too weak a hint (a previous iteration's tail).
    if (m > kMaxAlign || n > kMaxAlign || longest < 3) return false;
    const std::size_t common = lcs(a, b);
    return common + 1 >= longest || 4 * common >= 3 * longest;
  }
  static std::vector<View> body_views(const std::vector<Node>& body) {
    std::vector<View> v;
    v.reserve(body.size());
    for (const auto& n : body) v.push_back(view_of(n));
    return v;
  }

  /// The top-level loop just made (q.back(), one visit) takes the entries before it as its
  /// first iteration if they start like the body and align with it.
  void absorb_leading() {
    const std::size_t at = q.size() - 1;
    LoopNode& loop = *q[at].node.loop;
    if (at == 0 || at <= frozen || loop.body.size() > kMaxAlign) return;
    const Key first = first_key(loop.body.front());
    const std::vector<View> bv = body_views(loop.body);
    const std::size_t stop = std::max(frozen, at > kMaxAlign ? at - kMaxAlign : std::size_t{0});
    for (std::size_t h = at; h-- > stop;) {
      if (!key_match(q[h].view.first, first)) continue;
      const std::vector<View> av = views(h, at);
      if (!close_enough(av, bv)) return;  // nearest start only: do not reach further back
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
      return;
    }
  }

  /// A stretch that is one iteration of a body with some of its nodes absent: in body order,
  /// at least two nodes and at least half the body (a last iteration that stops early or skips
  /// calls, or the end of a loop found rotated, e.g. C D A B ... C D for a body A B C D whose
  /// first iteration lacked A B).
  bool partial_iteration(const std::vector<View>& body, const std::vector<View>& part) {
    if (part.size() < 2 || part.size() >= body.size() || 2 * part.size() < body.size()) return false;
    return lcs(body, part) == part.size();
  }

  /// At the end: a top-level loop followed by entries that start like its body and align with
  /// it, or that are a partial iteration of it, takes them as one more (last) iteration.
  void absorb_trailing() {
    for (std::size_t j = q.size(); j-- > frozen;) {
      if (q[j].raw || !q[j].node.loop || j + 1 >= q.size()) continue;
      LoopNode& loop = *q[j].node.loop;
      if (loop.body.size() > kMaxAlign || single(loop.trips).size() != 1) continue;
      const bool starts_like_body = key_match(first_key(loop.body.front()), q[j + 1].view.first);
      const std::vector<View> bv = body_views(loop.body);
      const std::size_t last = std::min(q.size() - 1, j + kMaxAlign);
      // The candidate sharing the most nodes with the body, the shortest among equals (so
      // that what follows the last iteration, e.g. MPI_Finalize, stays outside).
      std::size_t best_k = 0, best_common = 0;
      for (std::size_t k = j + 1; k <= last; ++k) {
        const std::vector<View> av = views(j + 1, k + 1);
        std::size_t common = 0;
        if (starts_like_body && close_enough(bv, av))
          common = same_shape(bv, av, *this) ? av.size() : lcs(bv, av);
        else if (partial_iteration(bv, av))
          common = av.size();
        else
          continue;
        if (common > best_common) {
          best_common = common;
          best_k = k;
        }
      }
      if (best_common > 0) {
        const std::size_t k = best_k;
        const std::vector<View> av = views(j + 1, k + 1);
        std::vector<Entry> rest = take(k + 1);
        std::vector<Entry> tail = take(j + 1);
        LoopNode& l = *q[j].node.loop;
        const std::uint64_t va = visits(l.body.front());
        body_merge(l.body, bv, va, std::move(tail), av, 1);
        ValueSeq& trips = single(l.trips);
        trips.set_back(trips.back() + 1);
        q[j].view = view_of(q[j].node);
        for (auto& e : rest) q.push_back(std::move(e));
      }
    }
  }

  bool fold_once() {
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

  void normal_push(const Event& e) {
    flush_field_cache();
    Entry& en = q.emplace_back();
    en.ev = e;
    en.view = view_of(en);
    attempts_left = kMaxAttempts;
    while (fold_once()) {
    }
  }

  // ---- speculation: the fast path for the next iteration of the last top-level loop ----
  // When the queue ends with a loop O, incoming events are matched against O's body as the
  // next iteration (greedy walk: inner loops repeat while the event matches their first node,
  // nodes with a presence vector may be skipped). Nothing is changed until the walk reaches
  // the end of O's body; then the buffered values are appended to the nodes they matched
  // (no allocation in the steady state). A mismatch replays the buffered events through the
  // general path, so speculation never changes what is recorded, only how fast.
  struct SpecFrame {
    Node* loop;
    std::size_t idx;
    std::uint64_t iters;
  };
  enum class ActionKind : std::uint8_t { Event, Presence, Trips };
  struct Action {
    Node* node;
    ActionKind kind;
    std::int64_t value;  ///< presence / trips value, or index into spec_events
  };
  /// Field values appended by speculation are deferred while they repeat: `pending[i]` copies
  /// of `last[i]` still to be appended to the node's field i. Flushed (and cleared) before the
  /// general path touches any node, so only speculation ever sees deferred values.
  struct FieldCache {
    EventNode* node = nullptr;
    std::array<std::int64_t, kFieldCount> last{};
    std::array<std::uint64_t, kFieldCount> pending{};
    /// Pushes in which every field repeated its `last` value: counted once here instead of
    /// per field (each field's deferred count is pending[i] + repeats).
    std::uint64_t repeats = 0;
    /// Pushes with every array empty, not yet appended to the node's array sequences.
    std::uint64_t empty_arrays = 0;
  };
  /// Nodes with deferred values, in the order they were first deferred. A loop's iterations
  /// visit their nodes in the same order every time, so the entry after the last one used is
  /// tried first (`field_cache_next`); the index finds the others.
  std::vector<FieldCache> field_cache;
  std::unordered_map<EventNode*, std::size_t> field_cache_index;
  std::size_t field_cache_next = 0;

  static void flush_fields(EventNode& a, FieldCache& c) {
    for (std::size_t i = 0; i < kFieldCount; ++i)
      if (const std::uint64_t n = c.pending[i] + c.repeats; n != 0) {
        single(a.fields[i]).append_repeat(c.last[i], n);
        c.pending[i] = 0;
      }
    c.repeats = 0;
    flush_arrays(a, c);
  }
  static void flush_arrays(EventNode& a, FieldCache& c) {
    if (c.empty_arrays == 0) return;
    const ArraySeq empties = ArraySeq::from_runs({ArraySeq::Run{{}, c.empty_arrays}});
    for (auto& array : a.arrays) single(array).append(empties);
    c.empty_arrays = 0;
  }
  void flush_field_cache() {
    if (field_cache.empty()) return;
    for (auto& c : field_cache) flush_fields(*c.node, c);
    field_cache.clear();
    field_cache_index.clear();
    field_cache_next = 0;
  }
  /// The deferred values of node `a`, or nullptr.
  FieldCache* find_field_cache(EventNode* a) {
    if (field_cache_next >= field_cache.size()) field_cache_next = 0;
    if (field_cache_next < field_cache.size() && field_cache[field_cache_next].node == a)
      return &field_cache[field_cache_next++];
    const auto it = field_cache_index.find(a);
    if (it == field_cache_index.end()) return nullptr;
    field_cache_next = it->second + 1;
    return &field_cache[it->second];
  }
  void cached_append(EventNode& a, const Event& e) {
    if (e.site != a.site || !a.site_ids.empty()) {
      // Call-site bookkeeping counts occurrences from the field sequences: no deferral.
      if (FieldCache* c = find_field_cache(&a)) flush_fields(a, *c);
      append_event(a, e);
      return;
    }
    FieldCache* found = find_field_cache(&a);
    if (found == nullptr) {
      field_cache_index.emplace(&a, field_cache.size());
      found = &field_cache.emplace_back();
      found->node = &a;
      field_cache_next = field_cache.size();
    }
    FieldCache& c = *found;
    std::int64_t differs = 0;  // branch-free comparison of all fields
    for (std::size_t i = 0; i < kFieldCount; ++i) differs |= e.fields[i] ^ c.last[i];
    if (differs == 0) {
      ++c.repeats;  // every field repeats (the steady state)
    } else {
      deferred_append_fields(a, c, e);
    }
    bool arrays_empty = true;
    for (const auto& array : e.arrays) arrays_empty = arrays_empty && array.empty();
    if (arrays_empty) {
      ++c.empty_arrays;
    } else {
      flush_arrays(a, c);
      for (std::size_t i = 0; i < kArrayFieldCount; ++i) single(a.arrays[i]).append(e.arrays[i]);
    }
    a.compute.add(e.compute_ns);
    a.duration.add(e.duration_ns);
  }
  static void deferred_append_fields(EventNode& a, FieldCache& c, const Event& e) {
    for (std::size_t i = 0; i < kFieldCount; ++i) c.pending[i] += c.repeats;
    c.repeats = 0;
    for (std::size_t i = 0; i < kFieldCount; ++i) {
      const std::int64_t v = e.fields[i];
      if (c.pending[i] != 0 && v == c.last[i]) {
        ++c.pending[i];
        continue;
      }
      if (c.pending[i] != 0) single(a.fields[i]).append_repeat(c.last[i], c.pending[i]);
      c.last[i] = v;
      c.pending[i] = 1;
    }
  }

  std::vector<SpecFrame> spec_stack;
  std::vector<Action> spec_actions;
  std::vector<Event> spec_events;
  std::size_t spec_count = 0;

  enum class Step { Ok, Fail, End };
  Step spec_step(const Event& e) {
    const Key k{e.op, e.site};
    while (true) {
      SpecFrame& f = spec_stack.back();
      auto& body = f.loop->loop->body;
      if (f.idx == body.size()) {
        if (spec_stack.size() == 1) return Step::End;  // only optional nodes were left
        if (key_match(first_key(body.front()), k)) {
          ++f.iters;
          f.idx = 0;
          continue;
        }
        spec_actions.push_back(Action{f.loop, ActionKind::Trips, static_cast<std::int64_t>(f.iters)});
        spec_stack.pop_back();
        continue;
      }
      Node& n = body[f.idx];
      const bool optional = !n.presence.empty();
      const bool fits = n.event ? key_match(Key{n.event->op, n.event->site}, k) : key_match(first_key(n), k);
      if (!fits) {
        if (!optional) return Step::Fail;
        spec_actions.push_back(Action{&n, ActionKind::Presence, 0});
        ++f.idx;
        continue;
      }
      if (optional) spec_actions.push_back(Action{&n, ActionKind::Presence, 1});
      ++f.idx;
      if (n.loop) {
        spec_stack.push_back(SpecFrame{&n, 0, 1});
        continue;
      }
      if (spec_count == spec_events.size()) spec_events.push_back(e);
      else spec_events[spec_count] = e;
      spec_actions.push_back(Action{&n, ActionKind::Event, static_cast<std::int64_t>(spec_count)});
      ++spec_count;
      return Step::Ok;
    }
  }

  bool spec_all_at_end() const {
    for (const auto& f : spec_stack)
      if (f.idx != f.loop->loop->body.size()) return false;
    return true;
  }

  void spec_commit() {
    for (std::size_t i = spec_stack.size(); i-- > 1;)
      spec_actions.push_back(Action{spec_stack[i].loop, ActionKind::Trips,
                                    static_cast<std::int64_t>(spec_stack[i].iters)});
    for (const auto& a : spec_actions) {
      switch (a.kind) {
        case ActionKind::Event: cached_append(*a.node->event, spec_events[static_cast<std::size_t>(a.value)]); break;
        case ActionKind::Presence: single(a.node->presence).append(a.value); break;
        case ActionKind::Trips: single(a.node->loop->trips).append(a.value); break;
      }
    }
    ValueSeq& trips = single(spec_stack.front().loop->loop->trips);
    trips.set_back(trips.back() + 1);
    spec_reset();
  }

  void spec_reset() {
    spec_stack.clear();
    spec_actions.clear();
    spec_count = 0;
  }

  /// Gives up speculation: the buffered events take the general path.
  void spec_flush() {
    const std::size_t n = spec_count;
    spec_reset();
    for (std::size_t i = 0; i < n; ++i) normal_push(spec_events[i]);
  }

  /// Fast path of speculation for a loop whose body is one event (a polling loop): the
  /// iteration is complete with this event, so it is appended at once (what spec_step and
  /// spec_commit would do, without buffering).
  bool extends_one_event_loop(Node& loop, const Event& e) {
    auto& body = loop.loop->body;
    if (body.size() != 1 || !body.front().event || !body.front().presence.empty()) return false;
    EventNode& only = *body.front().event;
    if (!key_match(Key{only.op, only.site}, Key{e.op, e.site})) return false;
    cached_append(only, e);
    ValueSeq& trips = single(loop.loop->trips);
    trips.set_back(trips.back() + 1);
    return true;
  }

  void push(const Event& e) {
    if (++pushes_since_check >= check_interval) check_memory();
    if (spec_stack.empty() && !q.empty() && q.size() - 1 >= frozen && !q.back().raw &&
        q.back().node.loop) {
      if (extends_one_event_loop(q.back().node, e)) return;
      spec_stack.push_back(SpecFrame{&q.back().node, 0, 1});
    }
    if (!spec_stack.empty()) {
      Step st = spec_step(e);
      if (st == Step::End) {
        // The iteration ended with skipped optional nodes: commit it, then e may start the
        // next one.
        spec_commit();
        spec_stack.push_back(SpecFrame{&q.back().node, 0, 1});
        st = spec_step(e);
      }
      if (st == Step::Ok) {
        if (spec_all_at_end()) spec_commit();
        return;
      }
      spec_flush();
    }
    normal_push(e);
  }

  // ---- memory budget ----
  std::size_t memory_bytes() const {
    std::size_t b = frozen_bytes + (q.capacity() - q.size()) * sizeof(Entry);
    for (std::size_t k = frozen; k < q.size(); ++k) b += entry_bytes(q[k], cfg.hist_sub_bins);
    return b;
  }
  /// Over the budget: with a spill sink, the whole queue so far becomes nodes that leave
  /// memory through the sink (docs/algorithms.md, "Memory budget"); without one (or once the
  /// sink failed) it is frozen instead: still output, never searched or merged into again, so
  /// work and growth only concern what comes next. Lossless either way.
  void check_memory() {
    pushes_since_check = 0;
    flush_field_cache();
    std::size_t bytes = memory_bytes();
    peak_bytes = std::max(peak_bytes, bytes);
    if (bytes > cfg.memory_budget && frozen < q.size()) {
      spec_flush();
      if (spill && spill_queue()) {
        bytes = memory_bytes();
      } else {
        for (std::size_t k = frozen; k < q.size(); ++k) frozen_bytes += entry_bytes(q[k], cfg.hist_sub_bins);
        frozen = q.size();
      }
    }
    const std::size_t live = bytes - std::min(bytes, frozen_bytes);
    if (q.size() > frozen) bytes_per_entry = std::max<std::size_t>(64, live / (q.size() - frozen));
    check_interval = next_check_interval(live);
  }
  /// Pushes until the next check. The check walks the unfrozen queue, so large queues are
  /// checked less often. With a spill sink the next check comes before the queue can outgrow
  /// the budget by much (about a quarter of the budget's worth of entries at the measured
  /// bytes per entry); without one, over the budget means freezing, which must not cut the
  /// stream into pieces every few events.
  std::uint64_t next_check_interval(std::size_t live) const {
    const std::uint64_t usual = std::max<std::uint64_t>(4096, live / 64);
    if (!spill) return usual;
    return std::clamp<std::uint64_t>(cfg.memory_budget / 4 / bytes_per_entry, 4, usual);
  }
  /// Hands the queue (as finished nodes) to the spill sink. False if the sink refused them;
  /// they are then kept and output by finish(), and spilling stops.
  bool spill_queue() {
    std::vector<Node> nodes;
    nodes.reserve(q.size());
    for (auto& e : q) nodes.push_back(to_node(std::move(e)));
    q.clear();
    q.shrink_to_fit();
    frozen = 0;
    frozen_bytes = 0;
    loop_flatten::unpeel_leading_iterations(nodes);
    loop_flatten::flatten_nested_loops(nodes);
    canonicalize_values(nodes);
    if (spill(nodes)) {
      ++spilled_chunks;
      return true;
    }
    spill = nullptr;
    for (auto& n : nodes) kept.push_back(std::move(n));
    return false;
  }

  std::vector<Node> finish() {
    spec_flush();
    flush_field_cache();
    absorb_trailing();
    std::vector<Node> out;
    out.reserve(q.size());
    for (auto& e : q) out.push_back(to_node(std::move(e)));
    loop_flatten::unpeel_leading_iterations(out);
    loop_flatten::flatten_nested_loops(out);
    canonicalize_values(out);
    if (!kept.empty()) {  // a refused spill: its nodes come first
      for (auto& n : out) kept.push_back(std::move(n));
      out = std::move(kept);
      kept.clear();
    }
    q.clear();
    frozen = 0;
    frozen_bytes = 0;
    return out;
  }
};

IntraCompressor::IntraCompressor(CompressorConfig config) : impl_(std::make_unique<Impl>(config)) {}
IntraCompressor::~IntraCompressor() = default;
IntraCompressor::IntraCompressor(IntraCompressor&&) noexcept = default;
IntraCompressor& IntraCompressor::operator=(IntraCompressor&&) noexcept = default;

void IntraCompressor::push(const Event& e) { impl_->push(e); }
std::vector<Node> IntraCompressor::finish() { return impl_->finish(); }

std::size_t IntraCompressor::node_count() const {
  std::size_t n = 0;
  std::vector<const Node*> stack;
  for (const auto& e : impl_->q) {
    ++n;
    if (!e.raw && e.node.loop) stack.push_back(&e.node);
  }
  while (!stack.empty()) {
    const Node* p = stack.back();
    stack.pop_back();
    for (const auto& c : p->loop->body) {
      ++n;
      if (c.loop) stack.push_back(&c);
    }
  }
  return n;
}

std::size_t IntraCompressor::memory_bytes() const { return impl_->memory_bytes(); }
std::size_t IntraCompressor::peak_memory_bytes() const {
  return std::max(impl_->peak_bytes, impl_->memory_bytes());
}
void IntraCompressor::set_spill(SpillSink sink) {
  impl_->spill = std::move(sink);
  impl_->check_interval = impl_->next_check_interval(0);
}
std::uint64_t IntraCompressor::spilled_chunks() const { return impl_->spilled_chunks; }
void IntraCompressor::set_sites(const CallSiteTable* sites) { impl_->sites = sites; }

Trace compress_recording(const RankRecording& rec, CompressorConfig config) {
  IntraCompressor c(config);
  c.set_sites(&rec.sites);
  for (const auto& e : rec.events) c.push(e);
  Trace t;
  t.metadata = rec.metadata;
  t.nranks = rec.nranks > rec.rank ? rec.nranks : rec.rank + 1;
  t.sites = rec.sites;
  t.comms = rec.comms;
  t.names = rec.names;
  t.nodes = c.finish();
  return t;
}

}  // namespace scalatrace
