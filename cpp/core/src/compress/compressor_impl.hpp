#pragma once
// Internal to the compressor: the state of one rank's IntraCompressor (IntraCompressor::Impl)
// and its steps. The algorithm is described at the top of compressor.cpp and in
// docs/algorithms.md ("Intra-rank compression"). One file per section:
//   compressor.cpp               the public API, the memory budget (spill / freeze), finish()
//   compressor_speculation.cpp   push(): speculation, the fast path for the next iteration of
//                                the last top-level loop, with its deferred field values
//   compressor_fold.cpp          tail folding: the general path (normal_push), loop detection on
//                                the queue tail
//   compressor_ends.cpp          iterations that differ at the ends of a loop (a first iteration
//                                that lacks a call, a last one that skips one), loop rotation
//   compressor_align.cpp         iteration alignment: merging two iterations' nodes (LCS),
//                                pseudo-loops
// The per-node steps every section uses (matching, building and merging one node) are defined
// here so that each file inlines them; a per-event path never calls into another file except
// from speculation into the general path.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compress/compressor_nodes.hpp"
#include "scalatrace/compress/compressor.hpp"

namespace scalatrace {

struct IntraCompressor::Impl {
  using Key = compressor_nodes::Key;
  using View = compressor_nodes::View;
  using Entry = compressor_nodes::Entry;

  CompressorConfig cfg;
  /// Lazy: event nodes store only the fields that were ever non-zero (compressor_nodes.hpp);
  /// Every with lossy fields.
  compressor_nodes::FieldStorage storage = compressor_nodes::FieldStorage::Lazy;
  const CallSiteTable* sites = nullptr;
  /// Classes of `sites` under cfg.site_match (classified as sites are first matched).
  mutable SiteClasses site_classes;
  std::vector<Entry> q;
  std::size_t frozen = 0;        ///< entries before this index are no longer searched
  std::size_t frozen_bytes = 0;  ///< memory of the frozen prefix (it no longer changes)
  std::uint64_t pushes_since_check = 0;
  std::uint64_t check_interval = 4096;
  std::size_t peak_bytes = 0;          ///< largest memory_bytes() seen at a check
  std::size_t bytes_per_entry = 1024;  ///< of the unfrozen queue, at the last check
  IntraCompressor::SpillSink spill;    ///< where an over-budget queue goes (optional)
  std::vector<Node> kept;              ///< nodes a failed spill could not hand over
  std::uint64_t spilled_chunks = 0;
  std::vector<std::uint32_t> dp;  ///< LCS table, reused
  /// Alignments that are not the same shape (LCS + pseudo-loop planning) tried per event: a
  /// bound on the work an irregular stream can cause (the simple cases are not counted).
  static constexpr int kMaxAttempts = 2;
  /// Iterations longer than this (in nodes) only merge when they have the same shape (the
  /// per-event fold path). The iterations at a loop's ends (absorb_leading, absorb_trailing,
  /// once per loop) align up to the window instead.
  static constexpr std::size_t kMaxAlign = 48;
  /// Only loops with bodies up to this size are candidates for pseudo-loop wrapping.
  static constexpr std::size_t kMaxPseudoBody = 16;
  /// Entries ending like the tail examined per fold attempt (nearest first).
  static constexpr int kMaxCandidates = 32;
  int attempts_left = kMaxAttempts;

  explicit Impl(CompressorConfig c);

  // ---- matching ----
  bool site_match(std::uint32_t a, std::uint32_t b) const {
    if (a == b) return true;
    if (site_classes.same(a, b)) return true;
    if (cfg.site_threshold == 0 || sites == nullptr) return false;
    if (a >= sites->sites.size() || b >= sites->sites.size()) return false;
    return frame_distance(sites->sites[a].frames, sites->sites[b].frames) <= cfg.site_threshold;
  }
  bool key_match(const Key& a, const Key& b) const { return a.op == b.op && site_match(a.site, b.site); }
  bool match(const View& a, const View& b) const {
    return a.loop == b.loop && key_match(a.first, b.first) && key_match(a.last, b.last);
  }
  static bool same_shape(const std::vector<View>& a, const std::vector<View>& b, const Impl& self) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!self.match(a[i], b[i])) return false;
    return true;
  }

  // ---- building and merging nodes ----
  Node make_event_node(const Event& e) const {
    return compressor_nodes::make_event_node(e, cfg.hist_sub_bins, storage);
  }
  Node to_node(Entry&& e) const { return e.raw ? make_event_node(e.ev) : std::move(e.node); }
  static Node to_node(Node&& n) { return std::move(n); }

  void merge_node(Node& a, Node&& b) {
    using namespace compressor_nodes;
    const std::uint64_t va = visits(a), vb = visits(b);
    merge_presence(a, va, b.presence, vb);
    if (a.event) {
      merge_event(*a.event, std::move(*b.event), storage);
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
    if (!a.presence.empty()) compressor_nodes::single(a.presence).append(1);
    compressor_nodes::append_event(*a.event, b.ev, storage);
  }

  // ---- iteration alignment (compressor_align.cpp) ----
  /// LCS table of the two view sequences (suffix form: dp[i][j] = LCS of a[i..], b[j..]).
  std::uint32_t lcs(const std::vector<View>& a, const std::vector<View>& b);
  /// Merges the body visits `b` (vb of them) into body `a` (va visits so far). T: Node or Entry.
  template <class T>
  void body_merge(std::vector<Node>& a, std::uint64_t va, std::vector<T>&& b, std::uint64_t vb);
  /// The same with the views of both sequences already at hand.
  template <class T>
  void body_merge(std::vector<Node>& a, const std::vector<View>& av, std::uint64_t va, std::vector<T>&& b,
                  const std::vector<View>& bv, std::uint64_t vb);
  /// Is aligning these two iterations worth a loop? First and last already match.
  bool worth_merging(const std::vector<View>& a, const std::vector<View>& b);
  /// Is `b` all in `a` before a's last node (an iteration that has most likely not ended)?
  bool unfinished_iteration(const std::vector<View>& a, const std::vector<View>& b) const;

  // Pseudo-loops (thesis §5.2.2 rule 2): a stretch of one iteration that is exactly one
  // iteration of a loop of the other iteration is wrapped into a loop of trip count 1.
  struct LoopPattern {
    View loop;
    std::vector<View> body;
  };
  struct Wrap {
    std::size_t pos, len;
  };
  /// The loops among [begin, end) small enough to be wrapping patterns. It: iterator over
  /// Entry or Node.
  template <class It>
  std::vector<LoopPattern> loop_patterns(It begin, It end) const;
  static const Node* node_ptr(const Entry& e) { return e.raw ? nullptr : &e.node; }
  static const Node* node_ptr(const Node& n) { return &n; }
  /// Plans wraps on `views` (updated to the wrapped sequence). wrappable[i]: element i has no
  /// presence vector of its own (so it may go into a pseudo-loop).
  std::vector<Wrap> plan_wraps(std::vector<View>& views, std::vector<char> wrappable,
                               const std::vector<LoopPattern>& patterns) const;
  /// Applies planned wraps to the sequence itself. T: Node or Entry.
  template <class T>
  void apply_wraps(std::vector<T>& seq, const std::vector<Wrap>& plan) const;

  // ---- tail folding (compressor_fold.cpp) ----
  /// The general path for one event: append it to the queue and fold the tail until nothing
  /// folds.
  void normal_push(const Event& e);
  bool fold_once();
  bool try_absorb(std::size_t j);
  /// Inline, defined in compressor_fold.cpp (its only user): fold_once runs it for every
  /// candidate, and the compiler keeps it in fold_once's loop as it did before the split.
  inline bool try_new_loop(std::size_t j, std::size_t lo);
  bool make_loop(std::size_t h, std::size_t j);
  std::vector<View> views(std::size_t from, std::size_t to) const;  ///< of q[from, to)
  std::vector<Entry> take(std::size_t from);                        ///< removes q[from..]
  bool fast_same_shape(const std::vector<Node>& a, std::size_t from) const;
  // ---- iterations that differ at the ends of a loop (compressor_ends.cpp) ----
  static std::vector<View> body_views(const std::vector<Node>& body);
  /// A stretch of entries next to a loop that is best taken in as one more iteration: its
  /// length (0: none) and how many of its nodes align with the body.
  struct EndIteration {
    std::size_t len = 0, common = 0;
  };
  /// `outward`: the entries next to the loop, nearest first (after the loop: in order; before
  /// it: backwards). Every stretch of the first len = 1, 2, ... of them is scored against
  /// `body` by one incremental LCS (O(body x outward) for all of them).
  EndIteration best_end_iteration(const std::vector<View>& body, const std::vector<View>& outward, bool leading);
  /// Entries next to a loop examined for an end iteration, for a body of `body_size` nodes: an
  /// accepted stretch has at most 4/3 of the body's nodes (close_counts), and at most `window`.
  std::size_t end_reach(std::size_t body_size) const { return std::min(cfg.window, body_size + body_size / 3 + 1); }
  /// When a loop is made (q.back()): what precedes it that is its first iteration(s).
  void absorb_leading();
  /// Before `e` joins the queue: the entries after the last top-level loop are an iteration
  /// of it that lacks calls and `e` cannot continue: it becomes one more iteration.
  void close_partial_iteration(const Event& e);
  bool ends_partial_iteration(const std::vector<Node>& body, std::size_t from, Key next) const;
  /// q[i] and q[i + 1] are loops run once each whose bodies are close or partial iterations of
  /// one another: one loop of both's iterations (q[i + 1] removed). False if they are not.
  bool merge_adjacent_loops(std::size_t i);
  // At the end (finish): every top-level loop's last iteration and rotation.
  void absorb_loop_ends();
  bool absorb_trailing_iteration(std::size_t j);
  bool rotate_into_following(std::size_t j);
  bool rotate_into_preceding(std::size_t& j);

  // ---- speculation (compressor_speculation.cpp) ----
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
  std::vector<SpecFrame> spec_stack;
  std::vector<Action> spec_actions;
  std::vector<Event> spec_events;
  std::size_t spec_count = 0;
  enum class Step { Ok, Fail, End };

  /// Appends one event: speculation first, the general path (normal_push) otherwise.
  void push(const Event& e);
  void flush_fields(EventNode& a, FieldCache& c) const;
  void flush_arrays(EventNode& a, FieldCache& c) const;
  /// Appends n deferred copies of field i's `value`, after `occurrences_before` others.
  void append_deferred(EventNode& a, std::size_t i, std::int64_t value, std::uint64_t n,
                       std::uint64_t occurrences_before) const;
  /// Appends every deferred value (before the general path touches a node). Defined here: the
  /// general path calls it for every event, and the cache is mostly empty then.
  void flush_field_cache() {
    if (field_cache.empty()) return;
    for (auto& c : field_cache) flush_fields(*c.node, c);
    field_cache.clear();
    field_cache_index.clear();
    field_cache_next = 0;
  }
  FieldCache* find_field_cache(EventNode* a);
  void cached_append(EventNode& a, const Event& e);
  void deferred_append_fields(EventNode& a, FieldCache& c, const Event& e) const;
  Step spec_step(const Event& e);
  bool spec_all_at_end() const;
  void spec_commit();
  void spec_reset();
  void spec_flush();
  bool extends_one_event_loop(Node& loop, const Event& e);

  // ---- memory budget and end (compressor.cpp) ----
  std::size_t memory_bytes() const;
  void check_memory();
  void make_queue_lossy();
  /// cfg.lossy_threshold's bound (the checkpoints double it).
  static constexpr std::uint64_t kMaxLossyThreshold = std::uint64_t{1} << 40;
  /// Pushes between memory checks in lossy mode (else 4096): the values a field gathers
  /// between two checks are all a lossy field keeps exact.
  static constexpr std::uint64_t kLossyCheckInterval = 1024;
  std::uint64_t next_check_interval(std::size_t live) const;
  bool spill_queue();
  std::vector<Node> finish();
};

}  // namespace scalatrace
