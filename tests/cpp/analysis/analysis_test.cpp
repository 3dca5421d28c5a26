// Analyses from the compressed structure against brute force: Cursor expansion of the same
// trace, and the original (uncompressed) events the trace was built from.
#include <gtest/gtest.h>

#include "merged_recordings.hpp"

#include <map>
#include <random>

#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

/// Builds one rank's events with request-offset bookkeeping.
class RankProgram {
 public:
  RankProgram(std::int64_t rank, std::int64_t nranks) {
    rec.rank = rank;
    rec.nranks = nranks;
    module_ = rec.sites.intern_module("/bin/synthetic");
  }
  std::uint32_t site(std::uint64_t offset) { return rec.sites.intern({Frame{module_, offset}}); }
  Event& push(Op op, std::uint64_t site_offset) {
    Event e;
    e.op = op;
    e.site = site(site_offset);
    e.compute_ns = 1000 + site_offset;
    e.duration_ns = 500 + site_offset;
    rec.events.push_back(e);
    if (op_creates_request(op)) ++created_;
    return rec.events.back();
  }
  /// Offset of the request created `back` requests ago (1 = most recent).
  std::int64_t slot() const { return static_cast<std::int64_t>(created_); }
  std::int64_t offset_of(std::int64_t slot_number) const { return static_cast<std::int64_t>(created_) - slot_number; }
  RankRecording rec;

 private:
  std::uint32_t module_ = 0;
  std::uint64_t created_ = 0;
};

struct Grid {
  std::int64_t rx, ry;
  std::int64_t size() const { return rx * ry; }
};

/// A 2D stencil with elastic message sizes, collectives on world and row communicators,
/// persistent sends, and ranks that do extra work (diverging behaviour).
std::vector<RankRecording> stencil_program(Grid g, int steps, std::uint64_t seed) {
  std::vector<RankRecording> out;
  const std::int64_t P = g.size();
  for (std::int64_t r = 0; r < P; ++r) {
    std::mt19937_64 rng(seed);  // same random choices on every rank (SPMD), rank-dependent below
    RankProgram p(r, P);
    const std::int64_t x = r % g.rx, y = r / g.rx;
    // Communicators: world (0), self (1), row communicator (2).
    CommEntry world{0, RankList::range(0, P), {}};
    CommEntry row{2, RankList::range(y * g.rx, g.rx), {}};
    p.rec.comms.entries = {world, row};
    p.push(Op::Init, 1);
    {
      Event& e = p.push(Op::Comm_split, 2);
      e[Field::Comm] = 0;
      e[Field::NewComm] = 2;
      e[Field::Color] = y;
      e[Field::Key] = x;
    }
    // Persistent send to the right neighbour (if any).
    std::int64_t persistent_slot = -1;
    if (x + 1 < g.rx) {
      Event& e = p.push(Op::Send_init, 3);
      e[Field::Comm] = 0;
      e[Field::Peer] = 1;
      e[Field::Tag] = 7;
      e[Field::Bytes] = 64;
      e[Field::DtSize] = 8;
      persistent_slot = p.slot() - 1;
    }
    const int extra = static_cast<int>(rng() % 3) + 1;
    for (int t = 0; t < steps; ++t) {
      const std::int64_t bytes = 8 * (t % 4 + 1) * (1 + (r % 2));  // elastic per step and rank
      std::vector<std::int64_t> slots;
      const std::int64_t nbr[4][2] = {{-1, 0}, {1, 0}, {0, -1}, {0, 1}};
      for (int d = 0; d < 4; ++d) {
        const std::int64_t nx = x + nbr[d][0], ny = y + nbr[d][1];
        if (nx < 0 || nx >= g.rx || ny < 0 || ny >= g.ry) continue;
        Event& e = p.push(Op::Irecv, 10 + d);
        e[Field::Comm] = 0;
        e[Field::Peer] = (ny * g.rx + nx) - r;
        e[Field::Tag] = d;
        e[Field::Bytes] = bytes;
        slots.push_back(p.slot() - 1);
      }
      for (int d = 0; d < 4; ++d) {
        const std::int64_t nx = x + nbr[d][0], ny = y + nbr[d][1];
        if (nx < 0 || nx >= g.rx || ny < 0 || ny >= g.ry) continue;
        Event& e = p.push(Op::Isend, 20 + d);
        e[Field::Comm] = 0;
        e[Field::Peer] = (ny * g.rx + nx) - r;
        e[Field::Tag] = d;
        e[Field::Bytes] = bytes;
        slots.push_back(p.slot() - 1);
      }
      {
        Event& e = p.push(Op::Waitall, 30);
        for (auto s : slots) e[ArrayField::Requests].push_back(p.offset_of(s));
      }
      if (persistent_slot >= 0) {
        Event& e = p.push(Op::Start, 31);
        e[ArrayField::Requests] = {p.offset_of(persistent_slot)};
      }
      if (x > 0) {
        Event& e = p.push(Op::Recv, 32);
        e[Field::Comm] = 0;
        e[Field::Peer] = -1;
        e[Field::Tag] = 7;
        e[Field::Bytes] = 64;
      }
      if (persistent_slot >= 0) {
        Event& e = p.push(Op::Wait, 33);
        e[ArrayField::Requests] = {p.offset_of(persistent_slot)};
      }
      // Inner loop whose trip count varies per step (elastic trips).
      for (int k = 0; k < (t % 3) + 1; ++k) {
        Event& e = p.push(Op::Allreduce, 40);
        e[Field::Comm] = 0;
        e[Field::Bytes] = 8;
        e[Field::Bytes2] = 8;
        e[Field::RedOp] = static_cast<std::int64_t>(RedOpCode::Sum);
      }
      {
        Event& e = p.push(Op::Bcast, 41);
        e[Field::Comm] = 2;
        e[Field::Root] = t % g.rx;
        e[Field::Bytes] = 16;
      }
      if (r % 3 == 0) {  // some ranks only: diverging behaviour
        for (int k = 0; k < extra; ++k) {
          Event& e = p.push(Op::Sendrecv, 42);
          e[Field::Comm] = 2;
          e[Field::Peer] = (x + 1 < g.rx) ? 1 : -x;
          e[Field::Bytes] = 24 + k;
          e[Field::Peer2] = (x > 0) ? -1 : g.rx - 1;
          e[Field::Bytes2] = 24 + k;
        }
      }
    }
    {
      Event& e = p.push(Op::Gatherv, 50);
      e[Field::Comm] = 0;
      e[Field::Root] = 0;
      e[Field::Bytes] = 4 * (r + 1);
      if (r == 0)
        for (std::int64_t i = 0; i < P; ++i) e[ArrayField::RecvCounts].push_back(4 * (i + 1));
    }
    {
      Event& e = p.push(Op::Alltoallv, 51);
      e[Field::Comm] = 0;
      for (std::int64_t i = 0; i < P; ++i) {
        e[ArrayField::SendCounts].push_back((r + i) % 5);
        e[ArrayField::RecvCounts].push_back((r + i) % 5);
      }
    }
    {
      Event& e = p.push(Op::Scan, 52);
      e[Field::Comm] = 0;
      e[Field::Bytes] = 12;
    }
    p.push(Op::Finalize, 60);
    out.push_back(std::move(p.rec));
  }
  return out;
}

Trace merged(const std::vector<RankRecording>& recs) { return test_support::merged_trace(recs); }

void expect_equal(const CommTriplets& a, const CommTriplets& b, const std::string& what) {
  ASSERT_EQ(a.nranks, b.nranks) << what;
  ASSERT_EQ(a.src.size(), b.src.size()) << what;
  for (std::size_t i = 0; i < a.src.size(); ++i) {
    EXPECT_EQ(a.src[i], b.src[i]) << what << " entry " << i;
    EXPECT_EQ(a.dst[i], b.dst[i]) << what << " entry " << i;
    EXPECT_DOUBLE_EQ(a.value[i], b.value[i]) << what << " (" << a.src[i] << " -> " << a.dst[i] << ")";
  }
}

const Metric kMetrics[] = {Metric::Bytes, Metric::Messages};
const CommKind kKinds[] = {CommKind::PointToPoint, CommKind::Collective, CommKind::All};

}  // namespace

TEST(Analysis, ForEachRankVisitsDescriptorsInOrder) {
  RankList r = RankList::range(3, 4, 2).unite(RankList::single(20));
  std::vector<std::int64_t> seen;
  for_each_rank(r, [&](std::int64_t x) { seen.push_back(x); });
  EXPECT_EQ(seen, r.to_vector());
}

TEST(Analysis, SumValuesMatchesExpansion) {
  ValueSeq s;
  for (int i = 0; i < 50; ++i) s.append((i % 7) * 3 + (i / 10));
  double expected = 0;
  for (auto v : s.to_vector()) expected += static_cast<double>(v);
  EXPECT_DOUBLE_EQ(sum_values(s), expected);
}

TEST(Analysis, RingMatrixFromStructureEqualsExpectedTraffic) {
  const std::int64_t P = 6;
  const int steps = 25;
  std::vector<RankRecording> recs;
  for (std::int64_t r = 0; r < P; ++r) {
    RankProgram p(r, P);
    for (int t = 0; t < steps; ++t) {
      Event& e = p.push(Op::Send, 1);
      e[Field::Comm] = 0;
      e[Field::Peer] = (r + 1) % P - r;
      e[Field::Bytes] = 100 + t;  // elastic per occurrence
      Event& rcv = p.push(Op::Recv, 2);
      rcv[Field::Comm] = 0;
      rcv[Field::Peer] = kAnySource;
    }
    recs.push_back(std::move(p.rec));
  }
  Trace t = merged(recs);
  auto m = comm_matrix(t, Metric::Bytes, CommKind::PointToPoint);
  auto n = comm_matrix(t, Metric::Messages, CommKind::PointToPoint);
  const double per_pair = steps * 100.0 + steps * (steps - 1) / 2.0;
  for (std::int64_t s = 0; s < P; ++s)
    for (std::int64_t d = 0; d < P; ++d) {
      const bool edge = d == (s + 1) % P;
      EXPECT_DOUBLE_EQ(m[static_cast<std::size_t>(s * P + d)], edge ? per_pair : 0.0);
      EXPECT_DOUBLE_EQ(n[static_cast<std::size_t>(s * P + d)], edge ? steps : 0.0);
    }
}

TEST(Analysis, StencilMatrixEqualsBruteForce) {
  for (Grid g : {Grid{3, 3}, Grid{4, 2}, Grid{5, 4}}) {
    auto recs = stencil_program(g, 13, 42);
    Trace t = merged(recs);
    for (Metric m : kMetrics)
      for (CommKind k : kKinds) {
        const std::string what = std::to_string(g.rx) + "x" + std::to_string(g.ry) + " metric " +
                                 std::to_string(static_cast<int>(m)) + " kind " + std::to_string(static_cast<int>(k));
        auto structural = comm_matrix_sparse(t, m, k);
        expect_equal(structural, comm_matrix_by_expansion(t, m, k), what + " vs cursor");
        expect_equal(structural, comm_matrix_of_recordings(recs, m, k), what + " vs events");
      }
  }
}

TEST(Analysis, PersistentSendsCountAtStartNotInit) {
  auto recs = stencil_program(Grid{3, 1}, 5, 1);
  Trace t = merged(recs);
  // Rank 0 -> 1: 5 Starts of a 64-byte persistent send, plus the stencil Isends and Sendrecvs.
  auto m = comm_matrix_sparse(t, Metric::Messages, CommKind::PointToPoint);
  auto raw = comm_matrix_of_recordings(recs, Metric::Messages, CommKind::PointToPoint);
  expect_equal(m, raw, "persistent");
  double zero_to_one = 0;
  for (std::size_t i = 0; i < m.src.size(); ++i)
    if (m.src[i] == 0 && m.dst[i] == 1) zero_to_one = m.value[i];
  std::int64_t isends = 0, starts = 0;
  for (const auto& e : recs[0].events) {
    // 3 x 1 grid: the row communicator is the world, so peer 1 is rank 1 for both.
    if ((e.op == Op::Isend || e.op == Op::Sendrecv) && e[Field::Peer] == 1) ++isends;
    if (e.op == Op::Start) ++starts;
  }
  EXPECT_EQ(zero_to_one, static_cast<double>(isends + starts));
  EXPECT_GT(starts, 0);
}

TEST(Analysis, RandomProgramsMatchBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 8; ++trial) {
    const std::int64_t P = 2 + static_cast<std::int64_t>(rng() % 9);
    const int steps = 1 + static_cast<int>(rng() % 20);
    std::vector<RankRecording> recs;
    const std::uint64_t seed = rng();
    for (std::int64_t r = 0; r < P; ++r) {
      std::mt19937_64 local(seed + static_cast<std::uint64_t>(r % 3));  // three rank classes
      RankProgram p(r, P);
      CommEntry world{0, RankList::range(0, P), {}};
      p.rec.comms.entries = {world};
      for (int t = 0; t < steps; ++t) {
        const int n = 1 + static_cast<int>(local() % 4);
        for (int i = 0; i < n; ++i) {
          const int choice = static_cast<int>(local() % 6);
          Event* e = nullptr;
          switch (choice) {
            case 0:
              e = &p.push(Op::Send, 100 + static_cast<std::uint64_t>(i));
              break;
            case 1:
              e = &p.push(Op::Isend, 200 + static_cast<std::uint64_t>(i));
              break;
            case 2:
              e = &p.push(Op::Bcast, 300);
              (*e)[Field::Root] = static_cast<std::int64_t>(local() % P);
              break;
            case 3:
              e = &p.push(Op::Reduce, 301);
              (*e)[Field::Root] = 0;
              break;
            case 4:
              e = &p.push(Op::Allgather, 302);
              break;
            default:
              e = &p.push(Op::Barrier, 303);
              break;
          }
          (*e)[Field::Comm] = 0;
          (*e)[Field::Bytes] = static_cast<std::int64_t>(8 * (1 + local() % 3));
          if (choice <= 1) {
            (*e)[Field::Peer] = static_cast<std::int64_t>(local() % P) - r;
            if ((*e)[Field::Peer] == 0) (*e)[Field::Peer] = kProcNull;
          }
        }
      }
      recs.push_back(std::move(p.rec));
    }
    Trace t = merged(recs);
    for (Metric m : kMetrics)
      for (CommKind k : kKinds) {
        auto structural = comm_matrix_sparse(t, m, k);
        expect_equal(structural, comm_matrix_of_recordings(recs, m, k), "trial " + std::to_string(trial));
      }
  }
}

TEST(Analysis, SummaryCountsMatchEvents) {
  auto recs = stencil_program(Grid{3, 3}, 9, 3);
  Trace t = merged(recs);
  Summary s = summary(t);
  std::map<Op, std::uint64_t> calls;
  std::map<Op, double> bytes;
  std::map<Op, std::uint64_t> ranks;
  for (const auto& rec : recs) {
    std::map<Op, bool> seen;
    for (const auto& e : rec.events) {
      ++calls[e.op];
      bytes[e.op] += static_cast<double>(e[Field::Bytes]);
      seen[e.op] = true;
    }
    for (auto& [op, _] : seen) ++ranks[op];
  }
  ASSERT_EQ(s.by_op.size(), calls.size());
  std::uint64_t total = 0;
  for (const auto& row : s.by_op) {
    EXPECT_EQ(row.calls, calls[row.op]) << op_name(row.op);
    EXPECT_DOUBLE_EQ(row.bytes, bytes[row.op]) << op_name(row.op);
    EXPECT_EQ(row.ranks, ranks[row.op]) << op_name(row.op);
    total += row.calls;
  }
  EXPECT_EQ(s.total_calls, total);
  std::uint64_t site_calls = 0;
  for (const auto& row : s.by_site) site_calls += row.calls;
  EXPECT_EQ(site_calls, total);
}

TEST(Analysis, TimestepLoopIsTheOuterLoop) {
  const int steps = 17;
  auto recs = stencil_program(Grid{3, 3}, steps, 5);
  Trace t = merged(recs);
  auto loops = timestep_loops(t);
  ASSERT_FALSE(loops.empty());
  // Every rank runs the time-step body `steps` times; the loop found is outermost.
  std::int64_t best = 0;
  for (const auto& l : loops) best = std::max(best, l.max_iterations);
  EXPECT_EQ(best, steps);
  for (const auto& l : loops) {
    EXPECT_GT(l.max_iterations, 1);
    EXPECT_FALSE(l.sites.empty());
  }
}

TEST(Analysis, DenseMatrixRefusesImpossibleSizes) {
  Trace t;
  t.nranks = 1 << 20;
  EXPECT_THROW(comm_matrix(t, Metric::Bytes, CommKind::PointToPoint), UsageError);
}
