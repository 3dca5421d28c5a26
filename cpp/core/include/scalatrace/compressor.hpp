#pragma once
// Online intra-rank loop compression (ScalaTrace RSD/PRSD + ScalaTrace 2 elastic values,
// LCS approximate loop matching, pending iterations). See docs/algorithms.md.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "scalatrace/event.hpp"
#include "scalatrace/raw.hpp"
#include "scalatrace/trace.hpp"

namespace scalatrace {

struct CompressorConfig {
  std::size_t window = 512;            ///< SCALATRACE_WINDOW: max nodes searched back for a loop
  std::size_t site_threshold = 0;      ///< SCALATRACE_SITE_THRESHOLD: differing frames tolerated
  std::size_t memory_budget = 256u << 20;  ///< SCALATRACE_MEMORY: bytes before degrading
  std::uint32_t hist_sub_bins = 4;     ///< SCALATRACE_HIST_BINS: histogram bins per octave
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
  /// For approximate call-site matching: the table the sites come from (optional).
  void set_sites(const CallSiteTable* sites);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Convenience: compress a whole recording into a one-rank Trace.
Trace compress_recording(const RankRecording& rec, CompressorConfig config = {});

}  // namespace scalatrace
