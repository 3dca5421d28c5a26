#pragma once
// Online intra-rank loop compression (ScalaTrace RSD/PRSD + ScalaTrace 2 elastic values,
// LCS approximate loop matching, pending iterations). See docs/algorithms.md.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "scalatrace/model/event.hpp"
#include "scalatrace/model/recording.hpp"
#include "scalatrace/model/site_match.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

struct CompressorConfig {
  std::size_t window = 512;  ///< SCALATRACE_WINDOW: max nodes searched back for a loop
  /// SCALATRACE_SITE_MATCH: call sites match when their innermost `site_match` frames are equal
  /// (0: the whole stack). Needs the site table (set_sites); without it sites match by id.
  std::size_t site_match = kDefaultSiteMatchFrames;
  std::size_t site_threshold = 0;  ///< SCALATRACE_SITE_THRESHOLD: differing frames tolerated
  /// SCALATRACE_MEMORY: bound on the queue's estimated bytes. Over it the queue so far is
  /// handed to the spill sink (if set) or frozen (no longer searched).
  std::size_t memory_budget = 256u << 20;
  std::uint32_t hist_sub_bins = 4;  ///< SCALATRACE_HIST_BINS: histogram bins per octave
  /// SCALATRACE_LOSSY: 0 keeps every field exact; else point-to-point fields become value
  /// histograms inside the compressor once their lossless form is long (make_rank_lossy: at
  /// each memory check past twice this many value runs, at the end past this many), so a rank
  /// whose values never repeat keeps bounded memory (docs/lossy.md, "Per-rank memory").
  std::uint64_t lossy_threshold = 0;
};

class IntraCompressor {
 public:
  explicit IntraCompressor(CompressorConfig config = {});
  ~IntraCompressor();
  IntraCompressor(IntraCompressor&&) noexcept;
  IntraCompressor& operator=(IntraCompressor&&) noexcept;

  /// Appends one event (call sites already interned into `sites` by the caller).
  void push(const Event& e);
  /// Closes pending iterations and returns the compressed queue (per-rank: ranks empty).
  std::vector<Node> finish();
  std::size_t node_count() const;
  std::size_t memory_bytes() const;
  /// The largest memory_bytes() measured (the queue is measured every few events).
  std::size_t peak_memory_bytes() const;

  /// Receives the queue so far, as finished nodes of this rank (in order, before everything
  /// finish() will return), when it exceeds the memory budget. Returns false if it could not
  /// take them: the compressor then keeps them, returns them first from finish() and stops
  /// spilling (lossless either way).
  using SpillSink = std::function<bool(std::vector<Node>& nodes)>;
  void set_spill(SpillSink sink);
  /// How many times the queue went to the spill sink.
  std::uint64_t spilled_chunks() const;
  /// The table the sites come from, for matching by innermost frames (site_match) and
  /// approximate matching (site_threshold). Without it sites match by id only. The table may
  /// grow while events are pushed; its existing sites must not change.
  void set_sites(const CallSiteTable* sites);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Convenience: compress a whole recording into a one-rank Trace.
Trace compress_recording(const RankRecording& rec, CompressorConfig config = {});

}  // namespace scalatrace
