// Lossy mode inside the intra-rank compressor (CompressorConfig::lossy_threshold,
// SCALATRACE_LOSSY; docs/lossy.md, "Per-rank memory"): a rank whose peers and sizes never repeat
// keeps bounded memory however long it runs, losslessly compressible fields stay exact, and the
// cross-rank merge joins histograms with histograms and with exact values, every occurrence
// counted once.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <random>

#include "lossy_totals.hpp"
#include "random_exchange.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;
using test_support::random_exchange;
using test_support::Totals;
using test_support::totals;

namespace {

/// The calls of tests/py/programs/random_exchange.c (without its gather): 2 messages out and 2
/// in every iteration, to and from random shifts, of random sizes.
std::vector<RankRecording> random_shifts(std::int64_t nranks, int iterations) {
  return random_exchange(nranks, iterations, 3, 0, true);
}

struct Compressed {
  std::size_t peak_bytes = 0;   ///< the compressor's own measure (SCALATRACE_MEMORY's)
  std::size_t trace_bytes = 0;  ///< the rank's trace, encoded
  std::vector<Node> nodes;
};

Compressed compress_rank(const RankRecording& rec, std::uint64_t lossy_threshold) {
  CompressorConfig config;
  config.lossy_threshold = lossy_threshold;
  IntraCompressor c(config);
  c.set_sites(&rec.sites);
  for (const auto& e : rec.events) c.push(e);
  Compressed out;
  out.nodes = c.finish();
  out.peak_bytes = c.peak_memory_bytes();
  std::vector<Node> copy;
  for (const auto& n : out.nodes) copy.push_back(n.clone());
  out.trace_bytes =
      encode_trace(make_rank_trace(rec.rank, rec.nranks, std::move(copy), rec.sites, rec.comms, rec.names)).size();
  return out;
}

Trace merged(const std::vector<RankRecording>& recs, std::uint64_t lossy_threshold) {
  std::vector<Trace> per_rank;
  for (const auto& rec : recs)
    per_rank.push_back(make_rank_trace(rec.rank, rec.nranks, compress_rank(rec, lossy_threshold).nodes, rec.sites,
                                       rec.comms, rec.names));
  return merge_tree(std::move(per_rank));
}

/// Occurrences of each lossy field's node over every rank (from the lossless trace's walk) must
/// be the histogram's count: every occurrence counted once.
void expect_histograms_count_every_occurrence(const Trace& lossy, const Trace& exact) {
  const Totals want = totals(exact, std::nullopt);
  std::map<Op, std::uint64_t> held;
  for (const auto& f : lossy_fields(lossy))
    if (f.field == Field::Bytes) held[f.op] += f.values;
  for (const auto& [op, n] : held) EXPECT_EQ(n, want.calls.at(op)) << op_name(op);
}

}  // namespace

TEST(IntraRankLossy, MemoryStaysFlatAsIterationsGrowTenfold) {
  // Rank 1 of a 4-rank random exchange: per iteration 2 messages out and 2 in, random peers and
  // sizes (6 events an iteration).
  const auto small = random_shifts(4, 400), large = random_shifts(4, 4000);
  const Compressed exact_small = compress_rank(small[1], 0), exact_large = compress_rank(large[1], 0);
  const Compressed lossy_small = compress_rank(small[1], 32), lossy_large = compress_rank(large[1], 32);
  // Lossless: the values are stored, the memory and the trace grow with the run.
  EXPECT_GT(exact_large.peak_bytes, 5 * exact_small.peak_bytes);
  EXPECT_GT(exact_large.trace_bytes, 5 * exact_small.trace_bytes);
  // Lossy: histograms of at most 32 bins, whatever the length.
  EXPECT_LT(lossy_large.peak_bytes, 3 * lossy_small.peak_bytes / 2)
      << lossy_small.peak_bytes << " -> " << lossy_large.peak_bytes;
  EXPECT_LT(lossy_large.trace_bytes, 3 * lossy_small.trace_bytes / 2)
      << lossy_small.trace_bytes << " -> " << lossy_large.trace_bytes;
  EXPECT_LT(lossy_large.peak_bytes, exact_large.peak_bytes / 5);
}

TEST(IntraRankLossy, CompressibleFieldsStayExact) {
  // One rank: an exchange whose peers repeat with a period of 40 values (20 value runs, the
  // runs of two values that random values form: below the threshold, and a prefix cut in
  // mid-period below twice it) and constant sizes, beside a send of random size and tag to a
  // fixed peer.
  RankRecording rec;
  rec.rank = 0;
  rec.nranks = 64;
  const auto mod = rec.sites.intern_module("halo");
  for (std::uint32_t s = 0; s < 3; ++s) rec.sites.intern({Frame{mod, 0x10 + s}});
  std::mt19937_64 rng(5);
  std::vector<std::int64_t> period;
  for (int i = 0; i < 40; ++i) period.push_back(1 + static_cast<std::int64_t>(rng() % 60));
  for (int it = 0; it < 3000; ++it) {
    Event halo;
    halo.op = Op::Isend;
    halo.site = 0;
    halo[Field::Peer] = period[static_cast<std::size_t>(it % 40)];
    halo[Field::Bytes] = 4096;
    halo[Field::Tag] = 7;
    halo[Field::DtSize] = 8;
    rec.events.push_back(halo);
    Event random = halo;
    random.site = 1;
    random[Field::Peer] = 2;
    random[Field::Bytes] = 8 * static_cast<std::int64_t>(1 + rng() % 500);
    random[Field::Tag] = static_cast<std::int64_t>(rng() % 1000);
    rec.events.push_back(random);
    Event wait;
    wait.op = Op::Waitall;
    wait.site = 2;
    wait[ArrayField::Requests] = {2, 1};
    rec.events.push_back(wait);
  }
  Compressed lossy = compress_rank(rec, 32), exact = compress_rank(rec, 0);
  Trace lossy_trace = make_rank_trace(0, 64, std::move(lossy.nodes), rec.sites, {}, {});
  Trace exact_trace = make_rank_trace(0, 64, std::move(exact.nodes), rec.sites, {}, {});
  std::map<std::pair<std::uint32_t, Field>, std::uint64_t> made;
  for (const auto& f : lossy_fields(lossy_trace)) made[{f.site, f.field}] = f.values;
  const std::map<std::pair<std::uint32_t, Field>, std::uint64_t> want{{{1, Field::Bytes}, 3000},
                                                                      {{1, Field::Tag}, 3000}};
  EXPECT_EQ(made, want);
  // The same fields as making the lossless trace lossy afterwards.
  Trace offline = exact_trace.clone();
  make_lossy(offline, 32);
  std::map<std::pair<std::uint32_t, Field>, std::uint64_t> offline_made;
  for (const auto& f : lossy_fields(offline)) offline_made[{f.site, f.field}] = f.values;
  EXPECT_EQ(offline_made, want);
  // The exact fields hold the run's values: every rank's events but the lossy fields are the
  // recorded ones.
  Cursor c(lossy_trace, 0, TimingMode::None);
  c.draw_lossy_values(0);
  Event e;
  std::size_t i = 0;
  while (c.next(e)) {
    const Event& want_event = rec.events.at(i++);
    EXPECT_EQ(e.op, want_event.op);
    if (e.site == 1) continue;
    EXPECT_TRUE(e.same_call(want_event)) << describe(e) << " vs " << describe(want_event);
  }
  EXPECT_EQ(i, rec.events.size());
}

TEST(IntraRankLossy, MergedTraceCountsEveryOccurrenceAndDrawsFaithfully) {
  // Both programs: the random exchange of 1 or 2 messages (its structure data dependent too) and
  // the random shifts; 1,250 to 1,500 events a rank: checks in mid-run.
  for (const auto& recs : {random_exchange(5, 250), random_shifts(5, 250)}) {
    const Trace exact = test_support::merged_trace(recs);
    for (const std::uint64_t threshold : {1u, 32u}) {
      Trace lossy = merged(recs, threshold);
      make_lossy(lossy, threshold);  // what rank 0 does after the merge (fields exact on every rank)
      ASSERT_TRUE(is_lossy(lossy));
      // Every node's histogram, with threshold 1 every send's and receive's.
      if (threshold == 1) expect_histograms_count_every_occurrence(lossy, exact);
      const Totals want = totals(exact, std::nullopt), got = totals(lossy, 4), again = totals(lossy, 4);
      EXPECT_EQ(got.calls, want.calls) << threshold;
      EXPECT_EQ(got.bytes, again.bytes);
      for (const Op op : {Op::Isend, Op::Irecv}) {
        const double w = want.bytes.at(op), g = got.bytes.at(op);
        EXPECT_LT(std::abs(g - w) / w, 0.05) << op_name(op) << ": " << g << " drawn vs " << w;
      }
      EXPECT_EQ(got.bytes.at(Op::Allreduce), want.bytes.at(Op::Allreduce));
      // The file keeps it, and it is smaller than the lossless one.
      const std::string bytes = encode_trace(lossy);
      EXPECT_EQ(totals(decode_trace_checked(bytes), 4).bytes, got.bytes);
      EXPECT_LT(bytes.size(), encode_trace(exact).size() / 2);
    }
  }
}

TEST(IntraRankLossy, MergeJoinsHistogramsAndExactValues) {
  auto node = [](std::vector<std::int64_t> peers) {
    EventNode e;
    e.op = Op::Isend;
    ValueSeq comm, peer;
    for (const auto p : peers) {
      comm.append(0);
      peer.append(p);
    }
    e.fields[static_cast<std::size_t>(Field::Comm)].alternatives.emplace_back(comm, RankList{});
    e.fields[static_cast<std::size_t>(Field::Peer)].alternatives.emplace_back(peer, RankList{});
    return e;
  };
  EventNode a = node({1, 2, 3}), b = node({4, 4}), c = node({5});
  // histogram + exact values
  a.lossy.push_back(LossyField{Field::Peer, {}});
  for (const auto& [seq, ranks] : a.fields[1].alternatives) a.lossy.back().values.add(seq);
  a.fields[1] = ElasticValue{};
  merge_lossy_fields(a, b, 3, 2);
  ASSERT_NE(a.lossy_values(Field::Peer), nullptr);
  EXPECT_EQ(a.lossy_values(Field::Peer)->count(), 5u);
  EXPECT_TRUE(a.fields[1].empty());
  EXPECT_TRUE(b.fields[1].empty());
  // exact values + histogram: the histogram moves to the exact side
  merge_lossy_fields(c, a, 1, 5);
  ASSERT_NE(c.lossy_values(Field::Peer), nullptr);
  EXPECT_EQ(c.lossy_values(Field::Peer)->count(), 6u);
  EXPECT_EQ(c.lossy_values(Field::Peer)->max(), 5);
  EXPECT_TRUE(a.lossy.empty());
  // histogram + histogram; and a side that stores the field nowhere had 0 in each occurrence
  EventNode d = node({9, 9}), unused;
  unused.op = Op::Isend;
  d.lossy.push_back(LossyField{Field::Peer, {}});
  d.lossy.back().values.add(9, 2);
  d.fields[1] = ElasticValue{};
  merge_lossy_fields(c, d, 6, 2);
  EXPECT_EQ(c.lossy_values(Field::Peer)->count(), 8u);
  merge_lossy_fields(c, unused, 8, 4);
  EXPECT_EQ(c.lossy_values(Field::Peer)->count(), 12u);
  EXPECT_EQ(c.lossy_values(Field::Peer)->bins().front(), (ValueBin{0, 0, 4}));
  Node empty;
  EXPECT_THROW(make_rank_lossy(empty, 0, RankLossyStage::Final), UsageError);
  CompressorConfig too_large;
  too_large.lossy_threshold = std::uint64_t{1} << 41;
  EXPECT_THROW(IntraCompressor{too_large}, UsageError);
}
