// SCALATRACE_MEMORY spilling, in process: the compressor hands an over-budget queue to a spill
// sink; the collector encodes those stretches as rank segments after the merged trace; a reader
// puts them back in front. Every rank's events must come back exactly, and every malformed
// segment must give a FormatError naming it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

constexpr std::int64_t kRanks = 3;
constexpr std::size_t kBudget = 64 * 1024;

/// An irregular stretch (random sites and tags: nothing repeats), then a regular loop.
std::vector<Event> rank_stream(std::int64_t rank) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(rank) + 11);
  std::vector<Event> s;
  for (int i = 0; i < 3000; ++i) {
    Event e;
    e.op = Op::Iprobe;
    e.site = static_cast<std::uint32_t>(rng() % 16);
    e[Field::Tag] = static_cast<std::int64_t>(rng() % 30000);
    e[Field::Peer] = -1;
    e.compute_ns = 100 + rng() % 50;
    e.duration_ns = 20;
    s.push_back(e);
  }
  for (int i = 0; i < 200; ++i) {
    Event send;
    send.op = Op::Send;
    send.site = 20;
    send[Field::Peer] = (rank + 1) % kRanks;
    send[Field::Bytes] = 64;
    Event recv;
    recv.op = Op::Recv;
    recv.site = 21;
    recv[Field::Peer] = (rank + kRanks - 1) % kRanks;
    recv[Field::Bytes] = 64;
    s.push_back(send);
    s.push_back(recv);
  }
  return s;
}

/// Call sites 0..21 (the stream's sites), as every rank's table.
CallSiteTable site_table() {
  CallSiteTable t;
  const std::uint32_t module = t.intern_module("/bin/app");
  for (std::uint64_t i = 0; i < 22; ++i) t.intern({Frame{module, 0x1000 + 16 * i}});
  return t;
}

struct SpilledRank {
  std::vector<std::string> segments;  ///< encode_rank_segment bytes, in order
  Trace rest;                         ///< make_rank_trace of what finish() returned
  std::size_t peak = 0;
};

SpilledRank compress_with_spill(std::int64_t rank, const std::vector<Event>& stream) {
  CompressorConfig cfg;
  cfg.memory_budget = kBudget;
  IntraCompressor c(cfg);
  SpilledRank out;
  c.set_spill([&](std::vector<Node>& nodes) {
    Trace seg = make_rank_trace(rank, kRanks, std::move(nodes), site_table(), {}, {});
    out.segments.push_back(encode_rank_segment(rank, seg));
    return true;
  });
  for (const auto& e : stream) c.push(e);
  out.rest = make_rank_trace(rank, kRanks, c.finish(), site_table(), {}, {});
  out.peak = c.peak_memory_bytes();
  EXPECT_EQ(c.spilled_chunks(), out.segments.size());
  return out;
}

void expect_events(const Trace& t, std::int64_t rank, const std::vector<Event>& want) {
  const auto got = expand(t, rank);
  ASSERT_EQ(got.size(), want.size()) << "rank " << rank;
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_TRUE(got[i].same_call(want[i])) << "rank " << rank << " event " << i;
}

/// The collector's file: merged rests, then every rank's segments in rank order.
std::string spilled_file(std::vector<std::vector<Event>>& streams, std::vector<std::size_t>* peaks = nullptr,
                         std::size_t* nsegments = nullptr) {
  std::vector<SpilledRank> ranks;
  std::vector<Trace> rests;
  for (std::int64_t r = 0; r < kRanks; ++r) {
    streams.push_back(rank_stream(r));
    ranks.push_back(compress_with_spill(r, streams.back()));
    rests.push_back(std::move(ranks.back().rest));
    if (peaks) peaks->push_back(ranks.back().peak);
  }
  std::string bytes = encode_trace(merge_tree(std::move(rests)), true);
  std::size_t count = 0;
  for (const auto& r : ranks)
    for (const auto& s : r.segments) {
      bytes += s;
      ++count;
    }
  if (nsegments) *nsegments = count;
  return bytes;
}

std::string error_of(std::string_view bytes) {
  try {
    decode_trace(bytes);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(RankSegments, SpilledRanksComeBackExactly) {
  std::vector<std::vector<Event>> streams;
  std::vector<std::size_t> peaks;
  std::size_t nsegments = 0;
  const std::string bytes = spilled_file(streams, &peaks, &nsegments);
  EXPECT_GE(nsegments, 3u * kRanks) << "the irregular stretch must have spilled several times";
  for (std::size_t p : peaks) EXPECT_LE(p, kBudget + kBudget / 2) << "the budget bounds the queue";
  const Trace t = decode_trace_checked(bytes);
  for (std::int64_t r = 0; r < kRanks; ++r) expect_events(t, r, streams[static_cast<std::size_t>(r)]);
  // The regular part after the last spill still merged across ranks into one loop.
  std::size_t loops_of_all = 0;
  for (const auto& n : t.nodes) loops_of_all += n.is_loop() && n.ranks.size() == kRanks;
  EXPECT_EQ(loops_of_all, 1u);
}

TEST(RankSegments, RefusedSpillKeepsEverythingInOrder) {
  const auto stream = rank_stream(0);
  CompressorConfig cfg;
  cfg.memory_budget = kBudget;
  IntraCompressor c(cfg);
  int offered = 0;
  c.set_spill([&](std::vector<Node>&) {
    ++offered;
    return false;  // e.g. the spill directory is full
  });
  for (const auto& e : stream) c.push(e);
  Trace t;
  t.nranks = 1;
  t.nodes = c.finish();
  EXPECT_EQ(offered, 1) << "a refused sink is not asked again";
  EXPECT_EQ(c.spilled_chunks(), 0u);
  expect_events(t, 0, stream);
}

TEST(RankSegments, MalformedSegmentsAreNamed) {
  std::vector<std::vector<Event>> streams;
  const std::string good = spilled_file(streams);
  const Trace main_only = decode_trace(good.substr(0, good.find("SCTSEGMT")));
  EXPECT_EQ(main_only.nodes.size() < decode_trace(good).nodes.size(), true);
  const std::size_t first = good.find("SCTSEGMT");
  ASSERT_NE(first, std::string::npos);

  EXPECT_NE(error_of(good.substr(0, first + 10)).find("truncated: rank segment 0"), std::string::npos);
  EXPECT_NE(error_of(good.substr(0, good.size() - 1)).find("truncated: rank segment"), std::string::npos);
  std::string bad_magic = good;
  bad_magic[first + 3] = 'x';
  EXPECT_NE(error_of(bad_magic).find("bad magic at rank segment 0"), std::string::npos);
  std::string bad_rank = good;
  bad_rank[first + 8] = static_cast<char>(kRanks);
  EXPECT_NE(error_of(bad_rank).find("rank 3 outside the trace's 3 ranks"), std::string::npos);
  std::string bad_crc = good;
  bad_crc[first + 40] ^= 0x55;
  EXPECT_NE(error_of(bad_crc).find("checksum mismatch in rank segment 0"), std::string::npos);
  std::string wrong_owner = good;  // segment 0 belongs to rank 0; say it is rank 1's
  wrong_owner[first + 8] = 1;
  EXPECT_NE(error_of(wrong_owner).find("holds nodes of ranks other than its rank 1"), std::string::npos);
  std::string nested = good;  // the segment's own header claims segments follow
  nested[first + 28 + 12] = 1;
  const std::string nested_error = error_of(nested);
  EXPECT_TRUE(nested_error.find("checksum mismatch") != std::string::npos ||
              nested_error.find("do not nest") != std::string::npos)
      << nested_error;
  // Without the header flag, bytes after the payload are still "trailing bytes".
  std::string unflagged = good;
  unflagged[12] = 0;
  EXPECT_NE(error_of(unflagged).find("trailing bytes"), std::string::npos);
}

TEST(RankSegments, EncodeRefusesARankOutsideTheTrace) {
  Trace t;
  t.nranks = 2;
  EXPECT_THROW(encode_rank_segment(2, t), Error);
}
