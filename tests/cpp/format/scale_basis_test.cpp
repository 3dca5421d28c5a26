// Scaled rank numbers (format version 5): the basis found for grids, the decomposition, lossless
// round trips of any value, and the point of it all: a stencil's trace takes the same bytes at
// every rank count.
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "format/scale_basis.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/synthetic/synthetic.hpp"
#include "synthetic_support.hpp"
#include "trace_difference.hpp"

using namespace scalatrace;
using test_support::synthetic_merged;
using test_support::synthetic_spec;

TEST(ScaleBasis, FindsTheRankCountAndTheGridStrides) {
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(scale_basis::find_basis(synthetic_merged(SyntheticPattern::Stencil1D, 64, 2)), V({64}));
  EXPECT_EQ(scale_basis::find_basis(synthetic_merged(SyntheticPattern::Stencil2D, 1024, 2)), V({1024, 32}));
  // 16 x 8 x 8 (x fastest): rows of 16, planes of 128.
  EXPECT_EQ(scale_basis::find_basis(synthetic_merged(SyntheticPattern::Stencil3D, 1024, 2)), V({1024, 128, 16}));
  // Rows two apart (a descriptor of a few ranks per row) are not a grid stride.
  Trace t;
  t.nranks = 64;
  t.comms.entries.push_back(CommEntry{2, RankList{}, RankList{}});
  t.comms.entries[0].members.descriptors() = {RankDescriptor{1, {{2, 1}, {4, 16}}}};
  EXPECT_EQ(scale_basis::find_basis(t), V({64}));
}

TEST(ScaleBasis, DecomposesGridNumbersIntoSmallCoefficients) {
  const std::array<std::int64_t, 3> basis{4096, 256, 16};
  std::array<std::int64_t, 3> c{};
  // The first rank of the last plane's interior: N - 256 + 16 + 1.
  EXPECT_EQ(scale_basis::decompose(4096 - 256 + 17, basis, c), 1);
  EXPECT_EQ(c, (std::array<std::int64_t, 3>{1, -1, 1}));
  // A diagonal neighbour below and behind: -(256 + 16 + 1).
  EXPECT_EQ(scale_basis::decompose(-273, basis, c), -1);
  EXPECT_EQ(c, (std::array<std::int64_t, 3>{0, -1, -1}));
  // Small numbers stay plain; a half-way number too (the remainder would be no smaller).
  EXPECT_EQ(scale_basis::decompose(5, basis, c), 5);
  EXPECT_EQ(c, (std::array<std::int64_t, 3>{0, 0, 0}));
  EXPECT_EQ(scale_basis::decompose(8, basis, c), 8);
  EXPECT_EQ(c, (std::array<std::int64_t, 3>{0, 0, 0}));
  // Any value: the coefficients and the remainder sum to it.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<std::int64_t>(rng() >> (2 + rng() % 62)) * (rng() % 2 ? 1 : -1);
    const std::int64_t rest = scale_basis::decompose(v, basis, c);
    EXPECT_EQ(rest + c[0] * 4096 + c[1] * 256 + c[2] * 16, v);
    EXPECT_LE(std::llabs(rest), std::llabs(v));
  }
}

TEST(ScaleBasis, CountsAreScaledAgainstTheGridsExtent) {
  const std::array<std::int64_t, 3> basis{4096, 256, 16};
  std::array<std::int64_t, 2> scratch{};
  using V = std::vector<std::int64_t>;
  auto as_vector = [](std::span<const std::int64_t> s) { return V(s.begin(), s.end()); };
  EXPECT_EQ(as_vector(scale_basis::count_basis(1, basis, scratch)), V({4096, 16}));       // along x
  EXPECT_EQ(as_vector(scale_basis::count_basis(16, basis, scratch)), V({256, 16}));       // along y
  EXPECT_EQ(as_vector(scale_basis::count_basis(-256, basis, scratch)), V({16}));          // along z
  EXPECT_EQ(as_vector(scale_basis::count_basis(7, basis, scratch)), V({4096, 256, 16}));  // not a grid stride
}

TEST(ScaleBasis, AnyRankValueRoundTrips) {
  // Peers, roots and split keys of every size, against a grid basis: written scaled where they
  // fit, plain where they do not, read back exactly.
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    Trace t;
    const std::int64_t nx = 2 + static_cast<std::int64_t>(rng() % 40), ny = 2 + static_cast<std::int64_t>(rng() % 40);
    const std::int64_t nz = 1 + static_cast<std::int64_t>(rng() % 8);
    t.nranks = nx * ny * nz;
    const std::uint32_t module = t.sites.intern_module("/bin/grid");
    Node ev;
    ev.ranks = RankList::range(0, t.nranks);
    ev.event = std::make_unique<EventNode>();
    ev.event->op = Op::Sendrecv;
    ev.event->site = t.sites.intern({Frame{module, 0x40}});
    if (nx > 3 && ny > 3) {  // a grid walk, so that the basis has the grid's strides
      RankList interior;
      interior.descriptors() = {RankDescriptor{nx + 1, {{nx - 2, 1}, {ny - 2, nx}}}};
      t.comms.entries.push_back(CommEntry{2, interior, interior});
    }
    for (const Field f : {Field::Peer, Field::Peer2, Field::Root, Field::Key, Field::Tag}) {
      ValueSeq seq;
      const int n = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < n; ++i) {
        std::int64_t v = 0;
        switch (rng() % 5) {
          case 0:
            v = static_cast<std::int64_t>(rng() % 7) - 3;
            break;
          case 1:
            v = (static_cast<std::int64_t>(rng() % 5) - 2) * nx + static_cast<std::int64_t>(rng() % 3) - 1;
            break;
          case 2:
            v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(t.nranks)) - t.nranks / 2;
            break;
          // Beyond scaled numbers (2^56): the sequence is written plain. (Values stay within
          // +-2^61 so that a run's stride, a difference of two values, fits 64 bits.)
          case 3:
            v = static_cast<std::int64_t>(rng() >> 3) - (std::int64_t{1} << 60);
            break;
          default:
            v = (rng() % 2 ? 1 : -1) * ((std::int64_t{1} << 56) + static_cast<std::int64_t>(rng() % 3) - 1);
        }
        seq.append(v);
      }
      ev.event->fields[static_cast<std::size_t>(f)].alternatives = {{seq, RankList::range(0, t.nranks)}};
    }
    t.nodes.push_back(std::move(ev));
    const Trace back = decode_trace(encode_trace(t));
    EXPECT_EQ(test_support::trace_difference(t, back), "") << "round " << round;
    EXPECT_EQ(encode_trace(back), encode_trace(t));
  }
}

TEST(ScaleBasis, StencilTracesTakeTheSameBytesAtEveryRankCount) {
  // The proof at test scale: the harness's 1D and 2D stencils from 64 to 4,096 ranks
  // and its 3D stencil from 1,024 to 4,096 (16x8x8 and 16x16x16; a 4x4x4 grid has too few
  // planes for the same structure) write the same structure bytes, and read back lossless.
  struct Case {
    SyntheticPattern pattern;
    std::vector<std::int64_t> ranks;
  };
  for (const Case& c :
       {Case{SyntheticPattern::Stencil1D, {64, 1024, 4096}}, Case{SyntheticPattern::Stencil2D, {64, 1024, 4096}},
        Case{SyntheticPattern::Stencil3D, {1024, 4096}}}) {
    std::size_t first = 0;
    for (const std::int64_t n : c.ranks) {
      const SyntheticSpec spec = synthetic_spec(c.pattern, n, 3);
      const Trace t = synthetic_merged_trace(spec);
      const std::size_t bytes = structure_bytes(t);
      if (first == 0) first = bytes;
      EXPECT_EQ(bytes, first) << "pattern " << static_cast<int>(c.pattern) << ", " << n << " ranks";
      const Trace back = decode_trace(encode_trace(t));
      EXPECT_EQ(test_support::trace_difference(t, back), "");
      for (const std::int64_t r : {std::int64_t{0}, n / 2 + 1, n - 1}) {
        const RankRecording rec = record_synthetic(spec, r);
        const auto got = expand(back, r);
        ASSERT_EQ(got.size(), rec.events.size()) << n << " ranks, rank " << r;
        for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].fields, rec.events[i].fields);
      }
    }
  }
}
