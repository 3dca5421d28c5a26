// Lossy traces (docs/lossy.md): value histograms stay bounded and follow their values, a
// threshold makes only long point-to-point fields lossy, exact events of a lossy trace are an
// error while seeded draws are reproducible and follow the recorded totals, and the format
// (version 9) keeps the histograms.
#include "scalatrace/compress/lossy.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "lossy_totals.hpp"
#include "random_exchange.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;
using test_support::merged_trace;
using test_support::random_exchange;
using test_support::Totals;
using test_support::totals;

TEST(ValueHistogram, CountsValuesAndStaysBounded) {
  ValueHistogram h;
  for (int i = 0; i < 1000; ++i) h.add(8 * (i % 97));
  h.add(kProcNull, 5);
  EXPECT_EQ(h.count(), 1005u);
  EXPECT_LE(h.bins().size(), ValueHistogram::kMaxBins);
  EXPECT_EQ(h.bins().front().lo, kProcNull);  // a sentinel keeps a bin of its own
  EXPECT_EQ(h.bins().front().hi, kProcNull);
  EXPECT_EQ(h.value_at(0.0), kProcNull);
  for (double u = 0.01; u < 1; u += 0.01) {
    const std::int64_t v = h.value_at(u);
    EXPECT_TRUE(v >= 0 && v <= 8 * 96) << v;
  }
}

TEST(ValueHistogram, RunsAddedWholeAndRoundTrip) {
  ValueSeq seq;
  for (int i = 0; i < 1'000'000; ++i) seq.append(i);  // one run: one range bin
  ValueHistogram h;
  h.add(seq);
  ASSERT_EQ(h.bins().size(), 1u);
  EXPECT_EQ(h.bins()[0].lo, 0);
  EXPECT_EQ(h.bins()[0].hi, 999'999);
  EXPECT_EQ(h.count(), 1'000'000u);
  EXPECT_NEAR(h.mean(), 499'999.5, 1e-6);
  EXPECT_EQ(ValueHistogram::from_bins(h.bins()), h);
  EXPECT_THROW(ValueHistogram::from_bins({}), FormatError);
  EXPECT_THROW(ValueHistogram::from_bins({{5, 4, 1}}), FormatError);
  EXPECT_THROW(ValueHistogram::from_bins({{5, 5, 0}}), FormatError);
  EXPECT_THROW(ValueHistogram::from_bins({{5, 5, 1}, {1, 1, 1}}), FormatError);
}

TEST(Lossy, ThresholdOneForcesEveryPointToPointField) {
  Trace t = merged_trace(random_exchange(4, 10));
  const Trace exact = t.clone();
  EXPECT_FALSE(is_lossy(t));
  EXPECT_EQ(make_lossy(t, 1) > 0, true);
  EXPECT_TRUE(is_lossy(t));
  for (const auto& f : lossy_fields(t)) {
    EXPECT_TRUE(lossy_field_allowed(f.op, f.field)) << describe_lossy_field(f);
    EXPECT_TRUE(f.op == Op::Isend || f.op == Op::Irecv) << describe_lossy_field(f);
  }
  EXPECT_EQ(t.metadata.at(kLossyThresholdKey), "1");
  EXPECT_NE(t.metadata.at(kLossyFieldsKey).find("Isend@site"), std::string::npos);
  // Exact events are not in the trace any more: a clear error, not made-up values.
  Cursor exact_walk(t, 0);
  try {
    while (exact_walk.next()) {
    }
    FAIL() << "no LossyTraceError";
  } catch (const LossyTraceError& e) {
    EXPECT_NE(std::string(e.what()).find("lossy trace"), std::string::npos) << e.what();
  }
  // Seeded draws: the same structure (every op's calls exact), bytes within 5 %, reproducible.
  const Totals want = totals(exact, std::nullopt), got = totals(t, 3), again = totals(t, 3);
  EXPECT_EQ(got.calls, want.calls);
  EXPECT_EQ(got.bytes, again.bytes);
  for (const Op op : {Op::Isend, Op::Irecv}) {
    const double w = want.bytes.at(op), g = got.bytes.at(op);
    EXPECT_LT(std::abs(g - w) / w, 0.05) << op_name(op) << ": " << g << " drawn vs " << w;
  }
  // Numbered contiguously over the ranks, the draws are the recorded values reassigned: with
  // at most 32 distinct sizes per node (no range bins), the totals are exact.
  Trace small = merged_trace(random_exchange(2, 4));
  const Totals small_want = totals(small, std::nullopt);
  make_lossy(small, 1);
  EXPECT_EQ(totals(small, 9).bytes.at(Op::Isend), small_want.bytes.at(Op::Isend));
}

TEST(Lossy, OnlyLongFieldsBecomeHistograms) {
  Trace t = merged_trace(random_exchange(3, 12));
  make_lossy(t, 8);
  // The random peers and sizes are long; the Allreduce and the constant DtSize stay exact.
  bool peer = false;
  for (const auto& f : lossy_fields(t)) {
    EXPECT_NE(f.field, Field::DtSize);
    peer = peer || f.field == Field::Peer;
  }
  EXPECT_TRUE(peer);
  const Totals exact = totals(merged_trace(random_exchange(3, 12)), std::nullopt);
  const Totals drawn = totals(t, 0);
  EXPECT_EQ(drawn.bytes.at(Op::Allreduce), exact.bytes.at(Op::Allreduce));
  EXPECT_THROW(make_lossy(t, 0), UsageError);
}

TEST(Lossy, FileKeepsHistograms) {
  Trace t = merged_trace(random_exchange(5, 8));
  make_lossy(t, 1);
  const std::string bytes = encode_trace(t);
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), kTraceFormatVersion);  // lossy fields since version 9
  const Trace back = decode_trace_checked(bytes);
  const auto a = lossy_fields(t), b = lossy_fields(back);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].field, b[i].field);
    EXPECT_EQ(a[i].values, b[i].values);
    EXPECT_EQ(a[i].bins, b[i].bins);
  }
  EXPECT_EQ(totals(back, 11).bytes, totals(t, 11).bytes);
  // A lossy trace is smaller than its lossless form.
  EXPECT_LT(bytes.size(), encode_trace(merged_trace(random_exchange(5, 8))).size());
}
