// Randomized: expand(compress(s)) == s (everything but timing) on thousands of streams made by
// random programs with nested loops, iteration-specific branches, varying trip counts and
// parameters, trailing iterations and recursion. A failure prints the seed (SCOPED_TRACE);
// rerun one seed with STRESS_SEED=<seed>.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>

#include "random_blocks.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/read/cursor.hpp"

using namespace scalatrace;

namespace {

constexpr Op kOps[] = {Op::Send,    Op::Recv,      Op::Isend, Op::Irecv, Op::Waitall,
                       Op::Barrier, Op::Allreduce, Op::Bcast, Op::Wait};

/// A random program: statements are events, loops, branches and recursive calls.
struct Stmt {
  enum Kind { Event, Loop, Branch, Recurse } kind = Event;
  Op op = Op::Send;
  std::uint32_t site = 0;
  int param_mode = 0;  // 0 const, 1 = iteration, 2 = random, 3 = periodic, 4 = late (0 at first)
  int trip_mode = 0;   // loops: 0 const, 1 varying with outer iteration, 2 random
  int trips = 1;
  int branch_mode = 0;      // 0 parity, 1 first iteration only, 2 random
  std::vector<Stmt> body;   // loop / branch body (branch: "then")
  std::vector<Stmt> other;  // branch "else"
};

struct Gen : test_support::RandomBlocks<Gen, Stmt> {
  std::uint32_t sites = 0;
  Stmt stmt(int depth) {
    Stmt s;
    const int r = pick(10);
    if (depth < 3 && r < 3) {
      s.kind = Stmt::Loop;
      s.trip_mode = pick(3);
      s.trips = 1 + pick(5);
      s.body = block(depth + 1, 4);
    } else if (depth < 3 && r < 5) {
      s.kind = Stmt::Branch;
      s.branch_mode = pick(3);
      s.body = block(depth + 1, 3);
      if (pick(2)) s.other = block(depth + 1, 3);
    } else if (depth < 2 && r == 5) {
      s.kind = Stmt::Recurse;
      s.trips = 1 + pick(4);  // max depth
      s.body = block(depth + 1, 2);
      s.other = block(depth + 1, 2);
    } else {
      s.kind = Stmt::Event;
      s.op = kOps[pick(static_cast<int>(std::size(kOps)))];
      s.site = static_cast<std::uint32_t>(pick(static_cast<int>(sites)));
      s.param_mode = pick(5);
    }
    return s;
  }
};

struct Runner {
  std::mt19937_64 rng;
  std::vector<Event> out;
  std::size_t limit;
  void run(const std::vector<Stmt>& b, std::int64_t iter) {
    for (const auto& s : b) {
      if (out.size() >= limit) return;
      run(s, iter);
    }
  }
  void run(const Stmt& s, std::int64_t iter) {
    switch (s.kind) {
      case Stmt::Event: {
        Event e;
        e.op = s.op;
        e.site = s.site;
        const std::int64_t v = s.param_mode == 0   ? 7
                               : s.param_mode == 1 ? iter
                               : s.param_mode == 2 ? static_cast<std::int64_t>(rng() % 5)
                               : s.param_mode == 3 ? iter % 3 - 1
                                                   : (iter < 2 ? 0 : iter);
        e[Field::Peer] = v;
        e[Field::Tag] = s.param_mode == 2 ? static_cast<std::int64_t>(rng() % 2) : 3;
        e[Field::Bytes] = 8 * (v + 1);
        // Fields 0 for a while, then not (the compressor stores a field from its first
        // non-zero value on): a root from the fourth iteration, every other one.
        if (s.param_mode == 4 && iter >= 3) e[Field::Root] = iter % 2;
        if (s.op == Op::Waitall)
          e[ArrayField::Requests] =
              s.param_mode == 4 && iter < 2 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>(1 + iter % 3, 1);
        e.compute_ns = rng() % 1000;
        e.duration_ns = rng() % 100;
        out.push_back(std::move(e));
        return;
      }
      case Stmt::Loop: {
        const std::int64_t n = s.trip_mode == 0   ? s.trips
                               : s.trip_mode == 1 ? 1 + (iter + s.trips) % 4
                                                  : 1 + static_cast<std::int64_t>(rng() % 5);
        for (std::int64_t i = 0; i < n && out.size() < limit; ++i) run(s.body, i);
        return;
      }
      case Stmt::Branch: {
        const bool take = s.branch_mode == 0 ? iter % 2 == 0 : s.branch_mode == 1 ? iter == 0 : rng() % 2 == 0;
        run(take ? s.body : s.other, iter);
        return;
      }
      case Stmt::Recurse: {
        const std::int64_t depth = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(s.trips));
        for (std::int64_t d = 0; d < depth; ++d) run(s.body, d);
        for (std::int64_t d = depth; d-- > 0;) run(s.other, d);
        return;
      }
    }
  }
};

void check_seed(std::uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun: STRESS_SEED=" + std::to_string(seed) + ")");
  Gen g{{std::mt19937_64(seed)}, 0};
  g.sites = 2 + static_cast<std::uint32_t>(g.pick(8));
  const auto program = g.block(0, 5);
  Runner r{std::mt19937_64(seed * 31 + 1), {}, static_cast<std::size_t>(50 + g.pick(1500))};
  const int outer = 1 + g.pick(40);
  for (int i = 0; i < outer && r.out.size() < r.limit; ++i) r.run(program, i);

  CompressorConfig cfg;
  cfg.window = g.pick(4) == 0 ? 4 + static_cast<std::size_t>(g.pick(30)) : 512;
  cfg.hist_sub_bins = 1u << g.pick(5);
  if (g.pick(5) == 0) cfg.memory_budget = 1024 * (1 + static_cast<std::size_t>(g.pick(64)));
  CallSiteTable sites;
  const auto m = sites.intern_module("prog");
  for (std::uint32_t k = 0; k < g.sites; ++k) sites.intern({Frame{m, 10}, Frame{m, 100 + k % 3}, Frame{m, 1000 + k}});
  if (g.pick(4) == 0) cfg.site_threshold = 1 + static_cast<std::size_t>(g.pick(2));

  IntraCompressor c(cfg);
  c.set_sites(&sites);
  for (const auto& e : r.out) c.push(e);
  Trace t;
  t.nranks = 1;
  t.nodes = c.finish();
  const auto back = expand(t, 0);
  ASSERT_EQ(back.size(), r.out.size());
  for (std::size_t i = 0; i < back.size(); ++i)
    ASSERT_TRUE(back[i].same_call(r.out[i])) << "event " << i << " of " << back.size();
}

}  // namespace

TEST(CompressorProperty, RandomProgramsRoundTrip) {
  if (const char* one = std::getenv("STRESS_SEED")) {
    check_seed(std::strtoull(one, nullptr, 10));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  int done = 0;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    check_seed(seed);
    if (HasFatalFailure()) return;
    ++done;
    // Bounded runtime on slow (sanitizer) builds; never fewer than 300 streams.
    if (done >= 300 && std::chrono::steady_clock::now() - start > std::chrono::seconds(15)) break;
  }
  RecordProperty("streams", done);
  std::cerr << done << " random streams round-tripped\n";
}
