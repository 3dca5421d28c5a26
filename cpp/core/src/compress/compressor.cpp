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
//
// The implementation (IntraCompressor::Impl, compress/compressor_impl.hpp) is split along these
// steps: speculation and push() in compressor_speculation.cpp, tail folding (a), (b) in
// compressor_fold.cpp, the iterations that differ at a loop's ends in compressor_ends.cpp, the
// alignment of two iterations in compressor_align.cpp. This file: the public API, the memory budget, finish().
#include "scalatrace/compress/compressor.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "compress/compressor_impl.hpp"
#include "compress/loop_flatten.hpp"
#include "model/value_canonical.hpp"
#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

using namespace compressor_nodes;

IntraCompressor::Impl::Impl(CompressorConfig c) : cfg(c) {
  if (cfg.window < 2) cfg.window = 2;
  if (cfg.lossy_threshold > kMaxLossyThreshold)
    throw UsageError("lossy threshold " + std::to_string(cfg.lossy_threshold) + " is over the largest, " +
                     std::to_string(kMaxLossyThreshold));
  if (cfg.lossy_threshold > 0) {
    check_interval = kLossyCheckInterval;
    storage = compressor_nodes::FieldStorage::Every;
  }
  Histogram::bin_index(0, cfg.hist_sub_bins);  // validates the setting (UsageError)
}

// ---- memory budget ----
std::size_t IntraCompressor::Impl::memory_bytes() const {
  std::size_t b = frozen_bytes + (q.capacity() - q.size()) * sizeof(Entry);
  for (std::size_t k = frozen; k < q.size(); ++k) b += entry_bytes(q[k], cfg.hist_sub_bins);
  return b;
}

/// Over the budget: with a spill sink, the whole queue so far becomes nodes that leave
/// memory through the sink (docs/algorithms.md, "Memory budget"); without one (or once the
/// sink failed) it is frozen instead: still output, never searched or merged into again, so
/// work and growth only concern what comes next. Lossless either way.
void IntraCompressor::Impl::check_memory() {
  pushes_since_check = 0;
  flush_field_cache();
  if (cfg.lossy_threshold > 0) {
    // The queue's largest size is now, before the values gathered since the last check join
    // their histograms.
    peak_bytes = std::max(peak_bytes, memory_bytes());
    make_queue_lossy();
  }
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

/// SCALATRACE_LOSSY: the searched part of the queue's long point-to-point fields become value
/// histograms, and those that are already fold the values appended since (docs/lossy.md,
/// "Per-rank memory"). The frozen prefix no longer changes: it was converted when it froze.
void IntraCompressor::Impl::make_queue_lossy() {
  for (std::size_t k = frozen; k < q.size(); ++k)
    if (!q[k].raw) make_rank_lossy(q[k].node, cfg.lossy_threshold, RankLossyStage::Checkpoint);
}

/// Pushes until the next check. The check walks the unfrozen queue, so large queues are
/// checked less often (in lossy mode at least every kLossyCheckInterval pushes: what a rank keeps
/// exact between two checks is what its memory grows by). With a spill sink the next check comes before the queue can
/// outgrow the budget by much (about a quarter of the budget's worth of entries at the measured bytes per entry);
/// without one, over the budget means freezing, which must not cut the stream into pieces every few events.
std::uint64_t IntraCompressor::Impl::next_check_interval(std::size_t live) const {
  const std::uint64_t usual = std::max<std::uint64_t>(cfg.lossy_threshold > 0 ? kLossyCheckInterval : 4096, live / 64);
  if (!spill) return usual;
  return std::clamp<std::uint64_t>(cfg.memory_budget / 4 / bytes_per_entry, 4, usual);
}

/// Hands the queue (as finished nodes) to the spill sink. False if the sink refused them;
/// they are then kept and output by finish(), and spilling stops.
bool IntraCompressor::Impl::spill_queue() {
  std::vector<Node> nodes;
  nodes.reserve(q.size());
  for (auto& e : q) nodes.push_back(to_node(std::move(e)));
  if (storage == compressor_nodes::FieldStorage::Lazy)
    for (auto& n : nodes) compressor_nodes::store_every_field(n);
  q.clear();
  q.shrink_to_fit();
  frozen = 0;
  frozen_bytes = 0;
  loop_flatten::unpeel_leading_iterations(nodes);
  loop_flatten::inline_single_trip_loops(nodes);
  loop_flatten::flatten_nested_loops(nodes);
  canonicalize_values(nodes);
  if (cfg.lossy_threshold > 0) make_rank_lossy(nodes, cfg.lossy_threshold, RankLossyStage::Final);
  if (spill(nodes)) {
    ++spilled_chunks;
    return true;
  }
  spill = nullptr;
  for (auto& n : nodes) kept.push_back(std::move(n));
  return false;
}

std::vector<Node> IntraCompressor::Impl::finish() {
  spec_flush();
  flush_field_cache();
  peak_bytes = std::max(peak_bytes, memory_bytes());  // a short run may have had no check
  // The loops in their final form first (unpeeled first iterations, no pseudo-loops that never
  // repeated), so that the iterations at their ends align with their bodies.
  for (std::size_t k = frozen; k < q.size(); ++k) {
    if (q[k].raw || !q[k].node.loop) continue;
    loop_flatten::unpeel_leading_iterations(q[k].node);
    loop_flatten::inline_single_trip_loops(q[k].node.loop->body);
    q[k].view = view_of(q[k].node);
  }
  absorb_loop_ends();
  std::vector<Node> out;
  out.reserve(q.size());
  for (auto& e : q) out.push_back(to_node(std::move(e)));
  if (storage == compressor_nodes::FieldStorage::Lazy)
    for (auto& n : out) compressor_nodes::store_every_field(n);
  loop_flatten::unpeel_leading_iterations(out);
  loop_flatten::inline_single_trip_loops(out);
  loop_flatten::flatten_nested_loops(out);
  canonicalize_values(out);
  if (cfg.lossy_threshold > 0) make_rank_lossy(out, cfg.lossy_threshold, RankLossyStage::Final);
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

IntraCompressor::IntraCompressor(CompressorConfig config) : impl_(std::make_unique<Impl>(config)) {}
IntraCompressor::~IntraCompressor() = default;
IntraCompressor::IntraCompressor(IntraCompressor&&) noexcept = default;
IntraCompressor& IntraCompressor::operator=(IntraCompressor&&) noexcept = default;

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
std::size_t IntraCompressor::peak_memory_bytes() const { return std::max(impl_->peak_bytes, impl_->memory_bytes()); }
void IntraCompressor::set_spill(SpillSink sink) {
  impl_->spill = std::move(sink);
  impl_->check_interval = impl_->next_check_interval(0);
}
std::uint64_t IntraCompressor::spilled_chunks() const { return impl_->spilled_chunks; }
void IntraCompressor::set_sites(const CallSiteTable* sites) {
  impl_->sites = sites;
  impl_->site_classes = SiteClasses(sites, impl_->cfg.site_match);
}

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
