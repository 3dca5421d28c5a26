// Constant size for regular codes: the compressed queue of each stencil pattern (and the
// collective-only and row/column codes) has the same node count and the same size at 10, 100,
// 10,000 and 1,000,000 timesteps.
//
// Size: a deterministic byte count of the node tree with fixed-width numbers (node headers,
// elastic alternatives, runs and blocks of value sequences, array runs, histogram bins) must
// be identical. The .sct encoding (encode_trace) writes numbers as LEB128, so there trip
// counts, repeat counts and histogram counts/sums grow by a byte per 7 bits of value: its size
// may only grow by that (asserted: < 25 % from 10 to 1,000,000 steps; measured 715 -> 778
// bytes for stencil1d from 10 to 10,000 steps).
//
// 1,000,000 timesteps: run on a boundary rank without wrap-around (fewest neighbours, so the
// test stays within seconds: 6 to 16 events per step); 10 .. 10,000: interior ranks, with and
// without wrap-around.
#include <gtest/gtest.h>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

using namespace scalatrace;

namespace {

std::size_t seq_bytes(const ValueSeq& s) {
  std::size_t n = 8;
  for (const auto& b : s.blocks()) n += 8 + 24 * b.runs.size();
  return n;
}
std::size_t ranks_bytes(const RankList& r) {
  std::size_t n = 8;
  for (const auto& d : r.descriptors()) n += 8 + 16 * d.dims.size();
  return n;
}
std::size_t elastic_bytes(const ElasticValue& e) {
  std::size_t n = 8;
  for (const auto& [s, r] : e.alternatives) n += seq_bytes(s) + ranks_bytes(r);
  return n;
}
std::size_t array_bytes(const ElasticArray& e) {
  std::size_t n = 8;
  for (const auto& [s, r] : e.alternatives) {
    n += ranks_bytes(r) + 8;
    for (const auto& run : s.runs()) n += 16 + 8 * run.values.size();
  }
  return n;
}
std::size_t hist_bytes(const Histogram& h) { return 40 + 32 * h.bins().size(); }

std::size_t tree_bytes(const std::vector<Node>& nodes) {
  std::size_t n = 8;
  for (const auto& node : nodes) {
    n += 8 + ranks_bytes(node.ranks) + elastic_bytes(node.presence);
    if (node.event) {
      const auto& e = *node.event;
      n += 8 + elastic_bytes(e.site_ids) + hist_bytes(e.compute) + hist_bytes(e.duration);
      for (const auto& f : e.fields) n += elastic_bytes(f);
      for (const auto& a : e.arrays) n += array_bytes(a);
    }
    if (node.loop) n += elastic_bytes(node.loop->trips) + tree_bytes(node.loop->body);
  }
  return n;
}

struct Size {
  std::size_t nodes = 0, bytes = 0;
  std::size_t encoded = 0;  ///< encode_trace size (LEB128 numbers: counts grow by a byte per 7 bits)
};

Size compressed_size(SyntheticSpec spec, std::int64_t rank, std::int64_t steps, std::uint64_t* events = nullptr) {
  spec.timesteps = steps;
  IntraCompressor c;
  CallSiteTable sites;
  CommTable comms;
  std::uint64_t n = 0;
  generate(
      spec, rank,
      [&](const Event& e) {
        c.push(e);
        ++n;
      },
      sites, comms);
  Trace t;
  t.nranks = spec.nranks;
  t.nodes = c.finish();
  t.sites = std::move(sites);
  t.comms = std::move(comms);
  if (events) *events = n;
  return Size{t.node_count(), tree_bytes(t.nodes), encode_trace(t).size()};
}

SyntheticSpec spec_for(SyntheticPattern p, bool wrap) {
  SyntheticSpec s;
  s.pattern = p;
  s.wrap = wrap;
  s.timing_jitter = false;
  switch (p) {
    case SyntheticPattern::Stencil1D:
      s.nranks = 32;
      break;
    case SyntheticPattern::Stencil2D:
      s.nranks = 36;
      s.dims = {6, 6};
      break;
    case SyntheticPattern::Stencil3D:
      s.nranks = 64;
      s.dims = {4, 4, 4};
      break;
    default:
      s.nranks = 24;
      s.dims = {6, 4};
      break;
  }
  if (p == SyntheticPattern::Collectives) s.dims.clear();
  return s;
}

std::int64_t interior_rank(SyntheticPattern p) {
  switch (p) {
    case SyntheticPattern::Stencil1D:
      return 9;
    case SyntheticPattern::Stencil2D:
      return 2 * 6 + 3;  // (3, 2)
    case SyntheticPattern::Stencil3D:
      return 1 + 4 * (2 + 4 * 1);  // (1, 2, 1)
    default:
      return 7;
  }
}

}  // namespace

class TimestepConstant : public ::testing::TestWithParam<SyntheticPattern> {};

TEST_P(TimestepConstant, SameNodeCountAndSizeFrom10To10000Steps) {
  for (bool wrap : {true, false}) {
    const auto spec = spec_for(GetParam(), wrap);
    const auto rank = interior_rank(GetParam());
    SCOPED_TRACE(std::string(synthetic_pattern_name(GetParam())) + " wrap=" + std::to_string(wrap));
    const Size at10 = compressed_size(spec, rank, 10);
    for (std::int64_t steps : {100, 10'000}) {
      const Size s = compressed_size(spec, rank, steps);
      EXPECT_EQ(s.nodes, at10.nodes) << steps << " steps";
      EXPECT_EQ(s.bytes, at10.bytes) << steps << " steps";
      // encode_trace writes counts as LEB128: only their byte widths may grow.
      EXPECT_LE(s.encoded, at10.encoded + at10.encoded / 4) << steps << " steps";
    }
    EXPECT_LE(at10.nodes, 12u);
  }
}

TEST_P(TimestepConstant, SameNodeCountAndSizeAtAMillionSteps) {
  if (GetParam() == SyntheticPattern::Collectives || GetParam() == SyntheticPattern::RowColumn)
    GTEST_SKIP() << "a million steps are checked for the stencils only (runtime)";
  const auto spec = spec_for(GetParam(), false);
  const std::int64_t rank = 0;  // corner: fewest neighbours
  const Size at10 = compressed_size(spec, rank, 10);
  std::uint64_t events = 0;
  const Size at1m = compressed_size(spec, rank, 1'000'000, &events);
  EXPECT_GE(events, 6'000'000u);
  EXPECT_EQ(at1m.nodes, at10.nodes);
  EXPECT_EQ(at1m.bytes, at10.bytes);
  EXPECT_LE(at1m.encoded, at10.encoded + at10.encoded / 4);
}

INSTANTIATE_TEST_SUITE_P(Patterns, TimestepConstant,
                         ::testing::Values(SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D,
                                           SyntheticPattern::Stencil3D, SyntheticPattern::Collectives,
                                           SyntheticPattern::RowColumn),
                         [](const auto& info) { return std::string(synthetic_pattern_name(info.param)); });
