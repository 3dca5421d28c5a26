// Stencil traces keep a constant structure as the rank count grows (ScalaTrace Fig. 9:
// 1D/2D/3D stencils of near-constant size): the same nodes, the same number of elastic
// alternatives and ranklist descriptors at 64, 1024 and 16384 ranks (3D: 64, 1000, 4096);
// bytes differ only by the
// width of the numbers (LEB128 grows with the grid size); the timing histograms take the same
// bytes at every size. 1M ranks: benchmarks/merge_bench.py.
#include <gtest/gtest.h>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/rank_periods.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

using namespace scalatrace;

namespace {

struct Shape {
  /// descriptors: in memory; items: as written (groups of repeated descriptors count once).
  std::size_t nodes = 0, alternatives = 0, descriptors = 0, items = 0, bytes = 0;
  /// Bytes of the timing histograms (the file minus the same file without timing).
  std::size_t timing_bytes = 0;
};

void count(const RankList& rl, Shape& s) {
  s.descriptors += rl.descriptors().size();
  s.items += find_descriptor_periods(rl.descriptors()).size();
}

template <class Seq>
void count(const Elastic<Seq>& e, Shape& s) {
  s.alternatives += e.alternatives.size();
  for (const auto& alt : e.alternatives) count(alt.second, s);
}

void count(const std::vector<Node>& nodes, Shape& s) {
  for (const auto& n : nodes) {
    ++s.nodes;
    count(n.ranks, s);
    count(n.presence, s);
    if (n.loop) {
      count(n.loop->trips, s);
      count(n.loop->body, s);
      continue;
    }
    for (const auto& f : n.event->fields) count(f, s);
    for (const auto& a : n.event->arrays) count(a, s);
    count(n.event->site_ids, s);
  }
}

Trace build(SyntheticPattern pattern, std::int64_t nranks, std::int64_t timesteps) {
  SyntheticSpec spec;
  spec.pattern = pattern;
  spec.nranks = nranks;
  spec.timesteps = timesteps;
  spec.wrap = false;
  // Streaming: the merger holds O(log n) partial traces.
  return synthetic_merged_trace(spec, [](const TreeMerger& merger) { EXPECT_LE(merger.held(), 16u); });
}

Shape shape_of(const Trace& t) {
  Shape s;
  count(t.nodes, s);
  s.bytes = encode_trace(t, false, PayloadCoding::Plain).size();
  Trace untimed = t.clone();
  untimed.clear_timing();
  s.timing_bytes = s.bytes - encode_trace(untimed, false, PayloadCoding::Plain).size();
  return s;
}

}  // namespace

class StencilScale : public ::testing::TestWithParam<SyntheticPattern> {};

TEST_P(StencilScale, ConstantStructureFrom64To16384Ranks) {
  const SyntheticPattern pattern = GetParam();
  Shape base, large;  // 64 ranks; the first larger size
  for (std::int64_t n : {64, 1024, 16384}) {
    if (pattern == SyntheticPattern::Stencil3D && n == 1024) n = 1000;   // 10^3 grid
    if (pattern == SyntheticPattern::Stencil3D && n == 16384) n = 4096;  // 16^3
    Trace t = build(pattern, n, 2);
    Shape s = shape_of(t);
    RecordProperty(std::string(synthetic_pattern_name(pattern)) + "_bytes_" + std::to_string(n),
                   static_cast<int>(s.bytes));
    std::printf(
        "%s %lld ranks: %zu bytes (%zu of timing), %zu nodes, %zu alternatives, %zu descriptors, "
        "%zu items\n",
        std::string(synthetic_pattern_name(pattern)).c_str(), static_cast<long long>(n), s.bytes, s.timing_bytes,
        s.nodes, s.alternatives, s.descriptors, s.items);
    if (n == 64) {
      base = s;
      // Spot-check losslessness at this size (the merge tests cover it thoroughly).
      SyntheticSpec spec;
      spec.pattern = pattern;
      spec.nranks = n;
      spec.timesteps = 2;
      spec.wrap = false;
      for (std::int64_t r : {std::int64_t{0}, n / 2 + 1, n - 1}) {
        RankRecording rec = record_synthetic(spec, r);
        auto got = expand(t, r);
        ASSERT_EQ(got.size(), rec.events.size());
        for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].fields, rec.events[i].fields);
      }
      continue;
    }
    EXPECT_EQ(s.nodes, base.nodes);
    EXPECT_EQ(s.alternatives, base.alternatives);
    // Timing stays the same size: at most 8 bins per histogram, counts of a fixed width (format
    // version 4, Format.BinCountsTakeTwoBytesWhateverTheirSize). The synthetic times are random
    // draws: 64 ranks x 2 steps leave a few bins empty, and a bin's min and max move by a few
    // nanoseconds from size to size, which may change a number's width by a byte.
    if (large.timing_bytes == 0) large = s;
    EXPECT_LE(s.timing_bytes, base.timing_bytes + base.timing_bytes / 20);
    EXPECT_NEAR(static_cast<double>(s.timing_bytes), static_cast<double>(large.timing_bytes), 4.0);
    if (pattern != SyntheticPattern::Stencil3D) {
      EXPECT_EQ(s.descriptors, base.descriptors);
      // Only number widths may grow: a few bytes per stored rank or offset.
      EXPECT_LE(s.bytes, base.bytes + base.bytes / 4);
    } else {
      // In memory, ranklists that unite several 3D boundary classes (e.g. all face ranks,
      // which share a trip count) need O(grid side) descriptors; the file writes them as groups
      // (docs/algorithms.md, "Groups in the file"), so at 16^3 no more items are written than at
      // 4^3. 10^3 is united across plane seams in less regular pieces (a known limit).
      if (n == 4096) {
        EXPECT_LE(s.items, base.items);
      }
      EXPECT_LE(s.bytes, base.bytes + base.bytes / 3);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stencils, StencilScale,
                         ::testing::Values(SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D,
                                           SyntheticPattern::Stencil3D),
                         [](const auto& info) { return std::string(synthetic_pattern_name(info.param)); });
