// ValueSeq / ArraySeq: values round-trip, periodic patterns stay constant size, canonical forms.
#include <gtest/gtest.h>

#include <random>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/model/elastic.hpp"
#include "scalatrace/model/value_seq.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/synthetic/synthetic.hpp"
#include "trace_difference.hpp"

using namespace scalatrace;

namespace {

ValueSeq from(const std::vector<std::int64_t>& v) {
  ValueSeq s;
  for (auto x : v) s.append(x);
  return s;
}

std::size_t runs_in(const ValueSeq& s) {
  std::size_t n = 0;
  for (const auto& b : s.blocks()) n += b.runs.size();
  return n;
}

void expect_same(const ValueSeq& s, const std::vector<std::int64_t>& v) {
  ASSERT_EQ(s.size(), v.size());
  EXPECT_EQ(s.to_vector(), v);
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(s.at(i), v[i]) << "index " << i;
  ValueSeq::Reader r(&s);
  for (auto x : v) {
    ASSERT_FALSE(r.done());
    ASSERT_EQ(r.next(), x);
  }
  EXPECT_TRUE(r.done());
}

}  // namespace

TEST(ValueSeq, ConstantAndArithmeticRuns) {
  auto c = ValueSeq::constant(7, 1000);
  expect_same(c, std::vector<std::int64_t>(1000, 7));
  EXPECT_TRUE(c.is_constant());
  std::vector<std::int64_t> v;
  for (int i = 0; i < 500; ++i) v.push_back(3 * i - 10);
  auto s = from(v);
  expect_same(s, v);
  EXPECT_EQ(runs_in(s), 1u);
  EXPECT_FALSE(s.is_constant());
}

TEST(ValueSeq, PeriodicPatternsStayConstantSize) {
  for (std::vector<std::int64_t> period : {std::vector<std::int64_t>{1, 0},
                                           {-2, -1, 1, 2},
                                           {0, 0, 1, 1},
                                           {1, 0, 0},
                                           {-11, -10, -9, -1, 1, 9, 10, 11},
                                           {5, 5, 5, 9}}) {
    std::size_t size_at_10 = 0;
    std::vector<std::int64_t> v;
    ValueSeq s;
    for (int rep = 1; rep <= 2000; ++rep) {
      for (auto x : period) {
        v.push_back(x);
        s.append(x);
      }
      if (rep == 10) size_at_10 = runs_in(s) + s.blocks().size();
    }
    expect_same(s, v);
    EXPECT_EQ(runs_in(s) + s.blocks().size(), size_at_10) << s.to_string();
    EXPECT_LE(s.blocks().size(), 4u) << s.to_string();
  }
}

TEST(ValueSeq, NestedPeriodsStayConstantSize) {
  // Periods that contain a repetition of their own (message sizes and tags of 3D stencil
  // corners: faces, edges and corners in the order of the neighbour loop), at every phase.
  for (std::vector<std::int64_t> period : {std::vector<std::int64_t>{64, 8, 64, 8, 64, 8, 8},
                                           {8, 64, 8, 64, 8, 8, 8},
                                           {3, 3, 5, 3, 3, 5, 7},
                                           {1, 2, 1, 2, 9, 9},
                                           {4, 4, 4, 1, 4, 4, 4, 2},
                                           // stencil3d's default sizes (512 face, 64 edge, 8 corner) on 2x2x2 ranks 0,
                                           // 1 and 7: their inner folding leaves 4 blocks per two timesteps.
                                           {512, 512, 64, 512, 64, 64, 8},
                                           {512, 64, 512, 64, 512, 8, 64},
                                           {8, 64, 64, 512, 64, 512, 512}}) {
    for (std::size_t phase = 0; phase < period.size(); ++phase) {
      std::size_t size_at_20 = 0;
      std::vector<std::int64_t> v;
      ValueSeq s;
      for (std::size_t k = 0; k < phase; ++k) {
        v.push_back(period[k]);
        s.append(period[k]);
      }
      for (int rep = 1; rep <= 1000; ++rep) {
        for (auto x : period) {
          v.push_back(x);
          s.append(x);
        }
        if (rep == 20) size_at_20 = runs_in(s) + s.blocks().size();
      }
      expect_same(s, v);
      EXPECT_EQ(runs_in(s) + s.blocks().size(), size_at_20) << s.to_string();
    }
  }
}

TEST(ValueSeq, RandomSequencesRoundTrip) {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 300; ++iter) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    std::vector<std::int64_t> v;
    const int n = static_cast<int>(rng() % 300);
    const int alphabet = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      if (rng() % 4 == 0 && !v.empty())
        v.push_back(v.back() + 1);
      else
        v.push_back(static_cast<std::int64_t>(rng() % alphabet) - 2);
    }
    expect_same(from(v), v);
  }
}

TEST(ValueSeq, SealFoldsTheLastPeriodIntoItsBlock) {
  // The relative peers of a wrap-around 3D stencil corner, per timestep: the last timestep's
  // runs stay an open block until a value after them arrives; sealing folds them.
  const std::vector<std::int64_t> period{4095, 4080, 4081, -145, 3840, 3841, 3871, 3856, -14, 1};
  std::vector<std::int64_t> v;
  for (int rep = 0; rep < 100; ++rep) v.insert(v.end(), period.begin(), period.end());
  ValueSeq s = from(v);
  ASSERT_FALSE(s.sealed()) << s.to_string();
  const ValueSeq open = s;
  s.seal();
  EXPECT_TRUE(s.sealed());
  expect_same(s, v);
  ASSERT_EQ(s.blocks().size(), 1u) << s.to_string();
  EXPECT_EQ(s.blocks()[0].repeat, 100u);
  EXPECT_LT(runs_in(s), runs_in(open));
  // Equal sealed or not, both ways; a different sequence stays different.
  EXPECT_TRUE(s == open);
  EXPECT_TRUE(open == s);
  std::vector<std::int64_t> w = v;
  w.back() += 1;
  ValueSeq other = from(w);
  other.seal();
  EXPECT_FALSE(other == open);
  EXPECT_FALSE(open == other);
  // Appending goes on after a seal, values intact.
  for (auto x : period) {
    v.push_back(x);
    s.append(x);
  }
  expect_same(s, v);
}

TEST(ValueSeq, SealKeepsEveryValue) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 500; ++iter) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    std::vector<std::int64_t> period(1 + rng() % 6);
    for (auto& x : period) x = static_cast<std::int64_t>(rng() % 4) - 1;
    std::vector<std::int64_t> v;
    const int reps = 1 + static_cast<int>(rng() % 40);
    for (int r = 0; r < reps; ++r) v.insert(v.end(), period.begin(), period.end());
    for (std::size_t k = rng() % 3; k > 0; --k) v.push_back(static_cast<std::int64_t>(rng() % 4));
    const ValueSeq open = from(v);
    ValueSeq s = open;
    s.seal();
    expect_same(s, v);
    EXPECT_TRUE(s == open);
    ValueSeq twice = s;
    twice.seal();
    EXPECT_EQ(twice.blocks(), s.blocks());  // idempotent
  }
}

TEST(ValueSeq, AppendSequenceAndSetBack) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    ValueSeq s;
    std::vector<std::int64_t> v;
    for (int k = 0; k < 20; ++k) {
      std::vector<std::int64_t> part;
      const int n = 1 + static_cast<int>(rng() % 12);
      for (int i = 0; i < n; ++i) part.push_back(static_cast<std::int64_t>(rng() % 3));
      const int reps = 1 + static_cast<int>(rng() % 4);
      ValueSeq p;
      for (int r = 0; r < reps; ++r)
        for (auto x : part) p.append(x);
      s.append(p);
      for (int r = 0; r < reps; ++r) v.insert(v.end(), part.begin(), part.end());
      if (rng() % 4 == 0) {
        const std::int64_t x = static_cast<std::int64_t>(rng() % 3);
        const std::uint64_t n = rng() % 5;
        s.append_repeat(x, n);
        v.insert(v.end(), n, x);
      }
      if (rng() % 3 == 0) {
        const std::int64_t nv = s.back() + 1;
        s.set_back(nv);
        v.back() = nv;
      }
      ASSERT_EQ(s.back(), v.back());
    }
    expect_same(s, v);
  }
}

TEST(ValueSeq, SetBackOnASingleValueKeepsTheCanonicalForm) {
  // A loop's trip count grows by set_back on a one-value sequence (the collector's hot path):
  // the result must equal the sequence built directly, and later appends continue runs.
  ValueSeq s;
  s.append(1);
  for (std::int64_t v = 2; v <= 50; ++v) s.set_back(v);
  EXPECT_EQ(s, ValueSeq::constant(50));
  s.append(51);
  s.append(52);
  ValueSeq direct;
  for (std::int64_t v : {50, 51, 52}) direct.append(v);
  EXPECT_EQ(s, direct);
  expect_same(s, {50, 51, 52});
}

TEST(ValueSeq, AppendRepeatExtendsRuns) {
  ValueSeq s;
  s.append(4);
  s.append_repeat(4, 1'000'000);
  s.append_repeat(5, 0);
  EXPECT_EQ(s.size(), 1'000'001u);
  EXPECT_EQ(s.blocks().size(), 1u);
  EXPECT_EQ(s.at(999'999), 4);
  s.append_repeat(6, 3);
  expect_same(s, [] {
    std::vector<std::int64_t> v(1'000'001, 4);
    v.insert(v.end(), 3, 6);
    return v;
  }());
}

TEST(ValueSeq, ExtremeValuesDoNotOverflow) {
  std::vector<std::int64_t> v{INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 0, INT64_MIN, -1};
  expect_same(from(v), v);
}

TEST(ValueSeq, FromBlocksValidates) {
  auto s = ValueSeq::from_blocks({ValueBlock{{ValueRun{1, 0, 1}, ValueRun{0, 0, 1}}, 3}});
  expect_same(s, {1, 0, 1, 0, 1, 0});
  EXPECT_THROW(ValueSeq::from_blocks({ValueBlock{{ValueRun{1, 0, 0}}, 1}}), FormatError);
  EXPECT_THROW(ValueSeq::from_blocks({ValueBlock{{ValueRun{1, 0, 1}}, 0}}), FormatError);
  EXPECT_THROW(ValueSeq::from_blocks({ValueBlock{{}, 2}}), FormatError);
  EXPECT_THROW(ValueSeq::from_blocks({ValueBlock{{ValueRun{1, 0, UINT64_MAX}}, 2}}), FormatError);
  EXPECT_THROW(s.at(6), UsageError);
}

// The reader steps from run to run inside a block and from one repetition of a block to the
// next without searching (Reader::advance): random blocks of 1-4 runs of 1-3 values, repeated
// 1-4 times, read back value by value and compared with the values the blocks spell out.
TEST(ValueSeq, ReaderWalksRandomBlocksValueByValue) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<ValueBlock> blocks(1 + rng() % 4);
    std::vector<std::int64_t> expected;
    for (auto& b : blocks) {
      b.runs.resize(1 + rng() % 4);
      for (auto& r : b.runs)
        r = ValueRun{static_cast<std::int64_t>(rng() % 100) - 50, static_cast<std::int64_t>(rng() % 7) - 3,
                     1 + rng() % 3};
      b.repeat = 1 + rng() % 4;
      for (std::uint64_t rep = 0; rep < b.repeat; ++rep)
        for (const auto& r : b.runs)
          for (std::uint64_t i = 0; i < r.count; ++i)
            expected.push_back(r.first + static_cast<std::int64_t>(i) * r.stride);
    }
    expect_same(ValueSeq::from_blocks(blocks), expected);
  }
}

TEST(ArraySeq, RunLengthRoundTrip) {
  ArraySeq a;
  std::vector<std::vector<std::int64_t>> v;
  for (int i = 0; i < 100; ++i) {
    std::vector<std::int64_t> x = (i % 10 < 7) ? std::vector<std::int64_t>{8, 7, 6} : std::vector<std::int64_t>{i};
    a.append(x);
    v.push_back(x);
  }
  ASSERT_EQ(a.size(), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(a.at(i), v[i]);
  ArraySeq b;
  b.append(a);
  b.append(a);
  EXPECT_EQ(b.size(), 200u);
  EXPECT_EQ(b.at(150), v[50]);
  EXPECT_EQ(ArraySeq::from_runs(a.runs()), a);
  EXPECT_THROW(ArraySeq::from_runs({ArraySeq::Run{{1}, 0}}), FormatError);
}

namespace {

/// The same values built the way loop folding builds them: chunks of random length appended
/// as whole sequences, runs of equal values appended with append_repeat.
ValueSeq appended_in_chunks(const std::vector<std::int64_t>& v, std::mt19937_64& rng) {
  ValueSeq s;
  std::size_t i = 0;
  while (i < v.size()) {
    std::size_t j = i + 1;
    while (j < v.size() && v[j] == v[i]) ++j;
    if (j - i > 1 && rng() % 2) {
      s.append_repeat(v[i], j - i);
      i = j;
      continue;
    }
    const std::size_t len = std::min<std::size_t>(v.size() - i, 1 + rng() % 9);
    ValueSeq chunk;
    for (std::size_t k = i; k < i + len; ++k) chunk.append(v[k]);
    s.append(chunk);
    i += len;
  }
  return s;
}

/// Periodic values with an irregular head and tail, or random values, or a progression.
std::vector<std::int64_t> random_values(std::mt19937_64& rng) {
  std::vector<std::int64_t> v;
  auto small = [&] { return static_cast<std::int64_t>(rng() % 5) - 2; };
  switch (rng() % 4) {
    case 0: {  // arithmetic
      const std::int64_t first = small(), stride = small();
      for (std::size_t k = 1 + rng() % 50; k > 0; --k)
        v.push_back(first + stride * static_cast<std::int64_t>(v.size()));
      break;
    }
    case 1:  // random
      for (std::size_t k = 1 + rng() % 60; k > 0; --k) v.push_back(small());
      break;
    default: {  // head, periods, tail
      for (std::size_t k = rng() % 4; k > 0; --k) v.push_back(small());
      std::vector<std::int64_t> period(1 + rng() % 8);
      for (auto& x : period) x = small() * 100 + small();
      for (std::size_t r = 2 + rng() % 40; r > 0; --r) v.insert(v.end(), period.begin(), period.end());
      for (std::size_t k = rng() % 5; k > 0; --k) v.push_back(small());
    }
  }
  return v;
}

}  // namespace

// ValueSeq::canonical: the same values, in a form that depends on the values only.

TEST(Canonical, KeepsEveryValueAndIsAFixedPoint) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 2000; ++iter) {
    const auto v = random_values(rng);
    SCOPED_TRACE("iteration " + std::to_string(iter));
    const ValueSeq c = from(v).canonical();
    EXPECT_EQ(c.to_vector(), v);
    ValueSeq sealed = c;
    sealed.seal();
    EXPECT_EQ(sealed.blocks(), c.blocks()) << c.to_string();  // what the writer stores
    EXPECT_EQ(c.canonical().blocks(), c.blocks()) << c.to_string();
  }
}

TEST(Canonical, DependsOnTheValuesOnly) {
  std::mt19937_64 rng(12);
  for (int iter = 0; iter < 2000; ++iter) {
    const auto v = random_values(rng);
    SCOPED_TRACE("iteration " + std::to_string(iter));
    const ValueSeq a = from(v), b = appended_in_chunks(v, rng);
    ASSERT_EQ(b.to_vector(), v);
    EXPECT_EQ(a.canonical().blocks(), b.canonical().blocks()) << a.to_string() << " / " << b.to_string();
  }
}

TEST(Canonical, APeriodIsOneBlockWhateverPhaseTheRunsWereBuiltIn) {
  // A 2D stencil corner's peers per timestep, 1 3 4: appended one by one, the run "4 1" takes
  // the start of the next period and the sequence doubles its period; canonical: one block.
  std::vector<std::int64_t> v;
  for (int t = 0; t < 100; ++t) v.insert(v.end(), {1, 3, 4});
  const ValueSeq c = from(v).canonical();
  const std::vector<ValueBlock> expected{ValueBlock{{ValueRun{1, 2, 2}, ValueRun{4, 0, 1}}, 100}};
  EXPECT_EQ(c.blocks(), expected) << c.to_string();
  // A first timestep that differs, then the period: the head stays in front of the block.
  std::vector<std::int64_t> w{7};
  w.insert(w.end(), v.begin(), v.end());
  const ValueSeq d = from(w).canonical();
  ASSERT_EQ(d.blocks().size(), 2u) << d.to_string();
  EXPECT_EQ(d.blocks()[1], expected[0]) << d.to_string();
  EXPECT_EQ(d.to_vector(), w);
}

TEST(Canonical, LongSequencesTakeTheFormOfShortOnes) {
  // Beyond 2^18 values the period comes from the first 2^18 values and is checked on the rest:
  // the same block as a short sequence of the same period, with its own repeat and tail.
  const std::vector<std::int64_t> period{64, 8, 64, 8, 64, 8, 8};
  ValueSeq one;
  for (auto x : period) one.append(x);
  for (std::uint64_t reps : {30u, 70'000u}) {
    SCOPED_TRACE("periods " + std::to_string(reps));
    ValueSeq s;
    for (std::uint64_t r = 0; r < reps; ++r) s.append(one);
    s.append(64);
    s.append(8);
    const ValueSeq c = s.canonical();
    ASSERT_EQ(c.size(), s.size());
    ASSERT_EQ(c.blocks().size(), 2u) << c.to_string();
    EXPECT_EQ(c.blocks()[0].repeat, reps);
    EXPECT_EQ(c.blocks()[0].runs.size(), 4u) << c.to_string();  // 64:-56:2 x3, 8
    ValueSeq::Reader a(&c), b(&s);
    while (!b.done()) ASSERT_EQ(a.next(), b.next());
  }
  // A long progression is one run; a long sequence that is not periodic keeps its values.
  ValueSeq progression;
  for (std::int64_t i = 0; i < 300'000; ++i) progression.append(i % 2 ? 3 * i : 3 * i);
  EXPECT_EQ(progression.canonical().blocks().size(), 1u);
  EXPECT_EQ(progression.canonical().blocks()[0].runs.size(), 1u);
  ValueSeq irregular;
  std::mt19937_64 rng(5);
  std::vector<std::int64_t> values(300'000);
  for (auto& x : values) x = static_cast<std::int64_t>(rng() % 3);
  for (auto x : values) irregular.append(x);
  EXPECT_EQ(irregular.canonical().to_vector(), values);
}

TEST(Canonical, CompressedRanksHoldCanonicalSequences) {
  // Every sequence a rank's compression leaves is its own canonical form, so ranks whose
  // values agree hold equal sequences and merge.
  for (auto pattern : {SyntheticPattern::Stencil2D, SyntheticPattern::Stencil3D}) {
    SyntheticSpec spec;
    spec.pattern = pattern;
    spec.nranks = 64;
    spec.timesteps = 40;
    spec.wrap = false;
    for (std::int64_t rank : {0, 5, 21, 63}) {
      const Trace t = compress_recording(record_synthetic(spec, rank));
      test_support::for_each_elastic(t.nodes, [&](const ElasticValue& e) {
        for (const auto& alternative : e.alternatives)
          EXPECT_EQ(alternative.first.canonical().blocks(), alternative.first.blocks())
              << "rank " << rank << ": " << alternative.first.to_string();
      });
    }
  }
}
