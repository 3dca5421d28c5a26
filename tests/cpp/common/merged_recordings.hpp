#pragma once
// Test support: the merged trace of per-rank recordings, as the collector makes it (each rank's
// events compressed, then merged over the radix tree).
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/model/recording.hpp"

namespace scalatrace::test_support {

/// The merged trace of recordings (each compressed, then merged).
inline Trace merged_trace(const std::vector<RankRecording>& recs) {
  std::vector<Trace> per_rank;
  for (const auto& rec : recs) {
    IntraCompressor c;
    for (const auto& e : rec.events) c.push(e);
    per_rank.push_back(make_rank_trace(rec.rank, rec.nranks, c.finish(), rec.sites, rec.comms, rec.names));
  }
  return merge_tree(std::move(per_rank));
}

}  // namespace scalatrace::test_support
