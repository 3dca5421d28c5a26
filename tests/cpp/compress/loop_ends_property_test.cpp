// Randomized: a loop whose first or last iteration lacks events (LULESH's first timestep skips
// an MPI_Allreduce) is one loop over all its iterations, the missing events expressed by
// presence, and expanding the trace gives back the stream exactly. Bodies of 3 to 150 calls
// (beyond the per-event alignment bound of 48), with or without inner loops, random context
// before and after. A failure prints the seed; rerun one with STRESS_SEED=<seed>.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "event_streams.hpp"
#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/read/cursor.hpp"
#include "trace_shape.hpp"

using namespace scalatrace;
using namespace scalatrace::test_support;

namespace {

constexpr Op kOps[] = {Op::Isend, Op::Irecv, Op::Waitall, Op::Allreduce, Op::Wait, Op::Send, Op::Recv, Op::Bcast};

/// One call of the loop body: an event, or (with_inner) an inner loop of a few calls repeated.
struct Call {
  Op op = Op::Send;
  std::uint32_t site = 0;
  int inner_trips = 0;  ///< > 0: this call and the next `inner_len` - 1 repeat this often
  int inner_len = 0;
};

struct Stream {
  std::vector<Event> events;
  std::int64_t iterations = 0;
};

struct Case {
  std::vector<Call> body;                          ///< the iteration as written
  std::vector<std::size_t> first_drop, last_drop;  ///< body calls the first / last iteration skips
  std::int64_t trips = 0;
  std::size_t prefix = 0, suffix = 0;  ///< context calls before / after the loop
  bool with_inner = false;

  /// The stream, with (skips) or without the skipped calls.
  std::vector<Event> events(bool skips) const {
    std::vector<Event> out{ev(Op::Init, 1)};
    for (std::size_t k = 0; k < prefix; ++k) out.push_back(ev(Op::Bcast, static_cast<std::uint32_t>(2 + k), 0, 8));
    for (std::int64_t it = 0; it < trips; ++it) {
      const std::vector<std::size_t>* drop = !skips                                  ? nullptr
                                             : it == 0 && !first_drop.empty()        ? &first_drop
                                             : it == trips - 1 && !last_drop.empty() ? &last_drop
                                                                                     : nullptr;
      for (std::size_t c = 0; c < body.size();) {
        const Call& call = body[c];
        const std::size_t len = call.inner_trips > 0 ? static_cast<std::size_t>(call.inner_len) : 1;
        const int reps = call.inner_trips > 0 ? call.inner_trips : 1;
        for (int r = 0; r < reps; ++r)
          for (std::size_t k = c; k < c + len; ++k) {
            if (drop != nullptr && std::find(drop->begin(), drop->end(), k) != drop->end()) continue;
            out.push_back(ev(body[k].op, body[k].site, static_cast<std::int64_t>(1 + (it + r) % 3), 64 * (1 + r)));
          }
        c += len;
      }
    }
    for (std::size_t k = 0; k < suffix; ++k) out.push_back(ev(Op::Reduce, static_cast<std::uint32_t>(900 + k), 0, 8));
    out.push_back(ev(Op::Finalize, 999));
    return out;
  }
};

Case make_case(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  Case c;
  const std::size_t m = 3 + pick(pick(4) == 0 ? 148 : 40);
  c.with_inner = pick(3) == 0;
  for (std::size_t k = 0; k < m; ++k)
    c.body.push_back(Call{kOps[pick(std::size(kOps))], static_cast<std::uint32_t>(100 + k), 0, 0});
  if (c.with_inner) {  // a few inner loops over disjoint stretches of 1-3 calls
    for (std::size_t k = 0; k + 3 < m; k += 3 + pick(5))
      if (pick(2) == 0) {
        c.body[k].inner_trips = 2 + static_cast<int>(pick(4));
        c.body[k].inner_len = 1 + static_cast<int>(pick(3));
      }
  }
  c.trips = 3 + static_cast<std::int64_t>(pick(25));
  c.prefix = pick(4);
  c.suffix = pick(3);
  // Which iterations skip calls, and which: a few calls anywhere, or the first / last ones.
  const int ends = static_cast<int>(pick(3));  // 0 first, 1 last, 2 both
  auto drops = [&]() {
    std::vector<std::size_t> d;
    const std::size_t count = 1 + pick(std::max<std::size_t>(1, m / 4));
    const int where = static_cast<int>(pick(3));  // 0 anywhere, 1 leading calls, 2 trailing calls
    for (std::size_t k = 0; k < count; ++k) d.push_back(where == 0 ? pick(m) : where == 1 ? k : m - 1 - k);
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    return d;
  };
  if (ends != 1) c.first_drop = drops();
  if (ends != 0) c.last_drop = drops();
  return c;
}

std::string describe(const Case& c) {
  std::string s = "body " + std::to_string(c.body.size()) + " calls" + (c.with_inner ? " with inner loops" : "") +
                  ", " + std::to_string(c.trips) + " iterations; first skips";
  for (auto k : c.first_drop) s += " " + std::to_string(k);
  s += "; last skips";
  for (auto k : c.last_drop) s += " " + std::to_string(k);
  return s;
}

/// Counts over the streams checked.
struct Tally {
  int exact = 0;    ///< one skipped call: the size checked exactly
  int several = 0;  ///< several skipped calls
  int copies = 0;   ///< ... of which the trace keeps a copy of an iteration's worth of nodes
};

void check_seed(std::uint64_t seed, Tally& tally) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun: STRESS_SEED=" + std::to_string(seed) + ")");
  const Case c = make_case(seed);
  SCOPED_TRACE(describe(c));
  const std::vector<Event> stream = c.events(true);
  const Trace t = compress(stream);
  SCOPED_TRACE("trace " + shape(t.nodes));
  const auto back = expand(t, 0);
  ASSERT_EQ(back.size(), stream.size());
  for (std::size_t i = 0; i < back.size(); ++i)
    ASSERT_TRUE(back[i].same_call(stream[i])) << "event " << i << " of " << back.size();

  // The size: the skipped calls cost presence values, not a copy of the iteration. One skipped
  // call at one end of a body of distinct calls: the same event nodes as without the skip (+1
  // when a two-call remainder of a rotated loop cannot be told from a previous iteration's
  // tail), and one loop of all the iterations. (At 3 iterations of which the first lacks its
  // last call, the first two iterations' common part folds first and the third stays outside:
  // not asserted.)
  const Trace plain = compress(c.events(false));
  const bool one_skip = c.first_drop.size() + c.last_drop.size() == 1;
  if (!c.with_inner && one_skip && c.trips >= 4) {
    EXPECT_LE(event_nodes(t.nodes), event_nodes(plain.nodes) + 1);
    const auto steps = timestep_loops(t);
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_EQ(steps[0].max_iterations, c.trips);
    ++tally.exact;
  } else {
    ++tally.several;
    if (event_nodes(t.nodes) >= event_nodes(plain.nodes) + c.body.size() / 2 + 2) ++tally.copies;
  }
}

}  // namespace

TEST(LoopEndsProperty, IterationsLackingCallsAtTheEndsFoldLosslessly) {
  Tally tally;
  if (const char* one = std::getenv("STRESS_SEED")) {
    check_seed(std::strtoull(one, nullptr, 10), tally);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  int done = 0;
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    check_seed(seed, tally);
    if (HasFatalFailure()) return;
    ++done;
    // Bounded runtime on slow (sanitizer) builds; never fewer than 200 streams.
    if (done >= 200 && std::chrono::steady_clock::now() - start > std::chrono::seconds(15)) break;
  }
  EXPECT_GT(tally.exact, done / 10);
  // Several calls skipped at both ends (the first iteration lacking its first calls and the
  // last its first few, say) can leave the last iterations' remainders folded into a loop of
  // their own that no longer aligns with the body: lossless, but a copy. Measured on seeds
  // 1-2000: 38 of 1,771 (2.1%); the compressor before issue 30's loop-end passes kept a copy in
  // 729 of them (41%), and 18 of the 229 one-skip streams were not one loop.
  EXPECT_LE(tally.copies * 20, tally.several) << tally.copies << " of " << tally.several;
  std::cerr << done << " streams round-tripped; " << tally.exact << " with one skipped call, the size checked; "
            << tally.copies << " of " << tally.several << " with several keep a copy of an iteration\n";
}
