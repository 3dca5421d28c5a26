// Call sites matched by their innermost frames (SCALATRACE_SITE_MATCH, model/site_match.hpp) in
// the intra-rank compressor and the cross-rank merge. Randomized: multi-rank streams whose events
// come from a few call statements, each reached through several call paths (sites sharing their
// innermost frames, chosen per occurrence by iteration, rank, chance or caller), compressed per
// rank and merged across ranks with random matching settings (also different ones for the two
// steps), then expanded per rank: every event comes back with its exact call site. And the
// pattern of NPB MG (one exchange routine called from several places of a timestep loop) folds
// as if the stack had one frame.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>

#include "random_blocks.hpp"
#include "rank_events.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/model/site_match.hpp"

using namespace scalatrace;
using scalatrace::test_support::expect_rank_equal;

namespace {

constexpr int kPaths = 4;

/// The frames of call statement `statement` reached through path `path`: the statement's own
/// return address first, then the path's callers (path 3 is one frame deeper), then main.
std::vector<Frame> site_frames(std::uint32_t app, std::uint32_t lib, int statement, int path) {
  std::vector<Frame> f{Frame{statement % 3 == 2 ? lib : app, 0x100 + 16 * static_cast<std::uint64_t>(statement)},
                       Frame{app, 0x800 + 16 * static_cast<std::uint64_t>(path)}};
  if (path == 3) f.push_back(Frame{app, 0x900});
  f.push_back(Frame{app, 0x2000 + 16 * static_cast<std::uint64_t>(path % 2)});
  f.push_back(Frame{app, 0x40});
  return f;
}

struct Stmt {
  enum Kind { Call, Loop, Branch } kind = Call;
  Op op = Op::Send;
  int statement = 0;
  int path_mode = 0;  // 0 fixed, 1 iteration, 2 chance, 3 rank, 4 the caller's path
  int path = 0;       // fixed path, or the path this block's calls inherit (mode 4)
  int param = 0;      // 0 const, 1 rank-relative, 2 iteration
  int trips = 1;
  int trip_mode = 0;  // 0 const, 1 rank-dependent, 2 random
  int cond = 0;       // 0 rank even, 1 iteration even, 2 chance
  std::vector<Stmt> body, other;
};

struct Gen : test_support::RandomBlocks<Gen, Stmt> {
  int statements = 0;
  Stmt stmt(int depth) {
    Stmt s;
    const int r = pick(10);
    if (depth < 3 && r < 3) {
      s.kind = Stmt::Loop;
      s.trips = 1 + pick(4);
      s.trip_mode = pick(3);
      s.path = pick(kPaths);
      s.body = block(depth + 1, 4);
    } else if (depth < 3 && r < 5) {
      s.kind = Stmt::Branch;
      s.cond = pick(3);
      s.body = block(depth + 1, 3);
      if (pick(2)) s.other = block(depth + 1, 3);
    } else {
      constexpr Op kOps[] = {Op::Isend, Op::Irecv, Op::Waitall, Op::Send, Op::Allreduce};
      s.statement = pick(statements);
      // One statement, one MPI function, except statement 0: a call through a pointer.
      s.op = s.statement == 0 && pick(2) ? Op::Recv : kOps[s.statement % 5];
      s.path_mode = pick(5);
      s.path = pick(kPaths);
      s.param = pick(3);
    }
    return s;
  }
};

struct RankRun {
  std::int64_t rank, nranks;
  std::mt19937_64 rng;
  RankRecording rec;

  std::uint32_t site(int statement, int path) {  // interned on first use: tables differ by rank
    const std::uint32_t app = rec.sites.intern_module("/bin/mg_like");
    const std::uint32_t lib = rec.sites.intern_module("/lib/libhalo.so");
    return rec.sites.intern(site_frames(app, lib, statement, path));
  }
  void run(const std::vector<Stmt>& block, std::int64_t iter, int caller_path) {
    for (const auto& s : block) {
      switch (s.kind) {
        case Stmt::Loop: {
          std::int64_t trips = s.trips;
          if (s.trip_mode == 1) trips += rank % 2;
          if (s.trip_mode == 2) trips += static_cast<std::int64_t>(rng() % 3);
          for (std::int64_t i = 0; i < trips; ++i) run(s.body, i, s.path);
          break;
        }
        case Stmt::Branch: {
          const bool take = s.cond == 0 ? rank % 2 == 0 : s.cond == 1 ? iter % 2 == 0 : rng() % 2 == 0;
          run(take ? s.body : s.other, iter, caller_path);
          break;
        }
        case Stmt::Call: {
          const int path = s.path_mode == 0   ? s.path
                           : s.path_mode == 1 ? static_cast<int>(iter % kPaths)
                           : s.path_mode == 2 ? static_cast<int>(rng() % kPaths)
                           : s.path_mode == 3 ? static_cast<int>(rank % kPaths)
                                              : caller_path;
          Event e;
          e.op = s.op;
          e.site = site(s.statement, path);
          const std::int64_t v = s.param == 0 ? 1 : s.param == 1 ? (rank + 1) % nranks - rank : iter;
          e[Field::Peer] = v;
          e[Field::Tag] = s.statement;
          e[Field::Bytes] = 8 * (v + 10);
          if (s.op == Op::Waitall) e[ArrayField::Requests] = {2, 1};
          e.compute_ns = 100 + rng() % 50;
          e.duration_ns = 10 + rng() % 5;
          rec.events.push_back(e);
          break;
        }
      }
    }
  }
};

Trace rank_trace(const RankRecording& rec, CompressorConfig config) {
  IntraCompressor c(config);
  c.set_sites(&rec.sites);
  for (const auto& e : rec.events) c.push(e);
  return make_rank_trace(rec.rank, rec.nranks, c.finish(), rec.sites, rec.comms, rec.names);
}

void check_seed(std::uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun: SITE_MATCH_SEED=" + std::to_string(seed) + ")");
  Gen gen{{std::mt19937_64(seed)}, 0};
  gen.statements = 2 + gen.pick(5);
  const auto program = gen.block(0, 5);
  const std::int64_t nranks = 1 + gen.pick(6);
  const int outer = 1 + gen.pick(12);
  CompressorConfig config;
  config.site_match = static_cast<std::size_t>(gen.pick(4));  // 0 exact, 1, 2, 3 frames
  if (gen.pick(4) == 0) config.window = 4 + static_cast<std::size_t>(gen.pick(30));
  MergeConfig merge_config{gen.pick(3) == 0 ? static_cast<std::size_t>(gen.pick(4)) : config.site_match};
  SCOPED_TRACE("site_match " + std::to_string(config.site_match) + ", merge " +
               std::to_string(merge_config.site_match));

  std::vector<RankRecording> recs;
  std::vector<Trace> traces, copies;
  for (std::int64_t r = 0; r < nranks; ++r) {
    RankRun run{r, nranks, std::mt19937_64(seed * 7919 + static_cast<std::uint64_t>(r)), {}};
    run.rec.rank = r;
    run.rec.nranks = nranks;
    if (r % 2) run.site(gen.statements - 1, 3);  // a rank-dependent first site: other ids
    for (int i = 0; i < outer && run.rec.events.size() < 1500; ++i) run.run(program, i, 0);
    run.rec.comms.entries.push_back(CommEntry{0, RankList::range(0, nranks), {}});
    recs.push_back(std::move(run.rec));
    traces.push_back(rank_trace(recs.back(), config));
    copies.push_back(traces.back().clone());
  }
  // Each rank alone, then merged (radix tree and a streaming tree), then through the format.
  auto expect_all_equal = [&](const char* what, auto&& trace_of) {
    SCOPED_TRACE(what);
    for (std::size_t r = 0; r < recs.size() && !::testing::Test::HasFatalFailure(); ++r)
      expect_rank_equal(trace_of(r), recs[r]);
  };
  expect_all_equal("per rank", [&](std::size_t r) -> const Trace& { return copies[r]; });
  if (::testing::Test::HasFatalFailure()) return;
  TreeMerger streaming(merge_config);
  for (auto& t : copies) streaming.push(std::move(t));
  const Trace streamed = streaming.finish();
  const Trace merged = merge_tree(std::move(traces), merge_config);
  expect_all_equal("merged", [&](std::size_t) -> const Trace& { return merged; });
  expect_all_equal("streaming merge", [&](std::size_t) -> const Trace& { return streamed; });
  // Through the format on every third seed only: its entropy coder takes most of the time.
  if (seed % 3 != 0) return;
  const Trace back = decode_trace(encode_trace(merged));
  expect_all_equal("written and read", [&](std::size_t) -> const Trace& { return back; });
}

/// One rank of an MG-like code: a timestep loop whose V-cycle calls one exchange routine
/// (Irecv, Irecv, Isend, Isend, Waitall) from four places, the first of them at three levels.
RankRecording mg_like_rank(std::int64_t rank, std::int64_t nranks, bool one_frame) {
  RankRecording rec;
  rec.rank = rank;
  rec.nranks = nranks;
  const std::uint32_t app = rec.sites.intern_module("/bin/mg_like");
  const Op ops[] = {Op::Irecv, Op::Irecv, Op::Isend, Op::Isend, Op::Waitall};
  auto exchange = [&](int caller, std::int64_t level) {
    for (int k = 0; k < 5; ++k) {
      std::vector<Frame> frames{Frame{app, 0x100 + 16 * static_cast<std::uint64_t>(k)}};
      if (!one_frame)
        frames.insert(frames.end(), {Frame{app, 0x800 + 16 * static_cast<std::uint64_t>(caller)}, Frame{app, 0x40}});
      Event e;
      e.op = ops[k];
      e.site = rec.sites.intern(frames);
      e[Field::Peer] = k % 2 ? 1 : -1;
      e[Field::Bytes] = ops[k] == Op::Waitall ? 0 : 8 << level;
      if (ops[k] == Op::Waitall) e[ArrayField::Requests] = {4, 3, 2, 1};
      rec.events.push_back(e);
    }
  };
  for (int step = 0; step < 20; ++step) {
    for (std::int64_t level = 3; level > 0; --level) exchange(0, level);  // restriction
    exchange(1, 0);                                                       // coarsest solve
    for (std::int64_t level = 1; level <= 3; ++level) {
      exchange(2, level);  // interpolation
      exchange(3, level);  // smoothing
    }
    Event norm;
    norm.op = Op::Allreduce;
    norm.site = rec.sites.intern({Frame{app, 0x500}});
    norm[Field::Bytes] = 8;
    rec.events.push_back(norm);
  }
  rec.comms.entries.push_back(CommEntry{0, RankList::range(0, nranks), {}});
  return rec;
}

}  // namespace

TEST(SiteMatch, ClassesAreTheInnermostFrames) {
  CallSiteTable t;
  const std::uint32_t m = t.intern_module("/bin/a");
  const std::uint32_t a = t.intern({Frame{m, 1}, Frame{m, 10}, Frame{m, 100}});
  const std::uint32_t b = t.intern({Frame{m, 1}, Frame{m, 20}, Frame{m, 100}});
  const std::uint32_t c = t.intern({Frame{m, 2}, Frame{m, 10}, Frame{m, 100}});
  SiteClasses one(&t, 1), two(&t, 2), exact(&t, 0), no_table(nullptr, 1);
  EXPECT_TRUE(one.same(a, b));
  EXPECT_FALSE(one.same(a, c));
  EXPECT_FALSE(two.same(a, b));
  EXPECT_FALSE(exact.same(a, b));
  EXPECT_FALSE(no_table.same(a, b));
  // The table grows while a compressor records: later sites are classified when asked about;
  // a class is named by its smallest id.
  const std::uint32_t d = t.intern({Frame{m, 1}, Frame{m, 20}});
  const std::uint32_t short_site = t.intern({Frame{m, 1}});
  EXPECT_EQ(one.of(d), a);
  EXPECT_TRUE(two.same(b, d));
  EXPECT_FALSE(two.same(d, short_site));  // fewer frames than compared: the whole list
  EXPECT_TRUE(one.same(short_site, a));
  EXPECT_EQ(one.of(1000), 1000u);  // outside the table: its own class
}

TEST(SiteMatch, RandomStreamsFromSharedInnermostFramesRoundTrip) {
  if (const char* one = std::getenv("SITE_MATCH_SEED")) {
    check_seed(std::strtoull(one, nullptr, 10));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    check_seed(seed);
    if (HasFatalFailure()) return;
    // Bounded runtime on slow (sanitizer, loaded) machines; never fewer than 100 seeds.
    if (seed >= 100 && std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) break;
  }
}

TEST(SiteMatch, RoutineReachedThroughSeveralPathsFoldsAsWithOneFrame) {
  constexpr std::int64_t kRanks = 4;
  auto merged_of = [&](bool one_frame, std::size_t site_match, std::vector<RankRecording>& recs) {
    CompressorConfig config;
    config.site_match = site_match;
    std::vector<Trace> traces;
    for (std::int64_t r = 0; r < kRanks; ++r) {
      recs.push_back(mg_like_rank(r, kRanks, one_frame));
      traces.push_back(rank_trace(recs.back(), config));
    }
    return merge_tree(std::move(traces), MergeConfig{site_match});
  };
  std::vector<RankRecording> recs_one, recs_exact, recs_innermost;
  const Trace one_frame = merged_of(true, 1, recs_one);
  const Trace exact = merged_of(false, 0, recs_exact);
  const Trace innermost = merged_of(false, 1, recs_innermost);
  for (const auto& rec : recs_innermost) expect_rank_equal(innermost, rec);
  for (const auto& rec : recs_exact) expect_rank_equal(exact, rec);
  // The same tree as with one frame per site (the exchange's five calls and the Allreduce in
  // a loop whose varying sizes and sites are values), far fewer nodes than exact matching.
  EXPECT_EQ(innermost.node_count(), one_frame.node_count());
  EXPECT_LE(innermost.node_count(), 12u);
  EXPECT_GE(exact.node_count(), 2 * innermost.node_count());
  // The sites stay per occurrence: the first Irecv node has the four callers' sites.
  std::size_t nodes_with_sites = 0;
  std::vector<const Node*> stack;
  for (const auto& n : innermost.nodes) stack.push_back(&n);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n->loop)
      for (const auto& c : n->loop->body) stack.push_back(&c);
    else if (n->event && n->event->op != Op::Allreduce) {
      EXPECT_EQ(occurrence_sites(*n->event, innermost.sites.size()).size(), 4u);
      ++nodes_with_sites;
    }
  }
  EXPECT_EQ(nodes_with_sites, 5u);
  EXPECT_LE(structure_bytes(innermost), structure_bytes(exact));
}
