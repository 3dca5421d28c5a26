#pragma once
// Test support: an in-memory data-dependent program (the random graph exchange of
// tests/py/programs/random_exchange.c): per iteration every rank sends 1 or 2 messages of random
// size to random ranks (Isend), receives its incoming ones (Irecv from the source), Waitall, then
// an Allreduce. Its peers and sizes do not compress losslessly: the lossy traces' test program.
#include <cstdint>
#include <random>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/model/recording.hpp"

namespace scalatrace::test_support {

inline std::vector<RankRecording> random_exchange(std::int64_t nranks, int iterations, std::uint64_t seed = 7) {
  std::vector<RankRecording> recs(static_cast<std::size_t>(nranks));
  for (std::int64_t r = 0; r < nranks; ++r) {
    auto& rec = recs[static_cast<std::size_t>(r)];
    rec.rank = r;
    rec.nranks = nranks;
    const auto mod = rec.sites.intern_module("random_exchange");
    for (std::uint32_t s = 0; s < 5; ++s) rec.sites.intern({Frame{mod, 0x100 + s}});
  }
  std::mt19937_64 rng(seed);
  for (int it = 0; it < iterations; ++it) {
    struct Msg {
      std::int64_t src, dst, bytes;
    };
    std::vector<Msg> msgs;
    for (std::int64_t r = 0; r < nranks; ++r) {
      const int degree = 1 + static_cast<int>(rng() % 2);
      for (int k = 0; k < degree; ++k)
        msgs.push_back({r, (r + 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(nranks - 1))) % nranks,
                        8 * (1 + static_cast<std::int64_t>(rng() % 200))});
    }
    for (std::int64_t r = 0; r < nranks; ++r) {
      auto& events = recs[static_cast<std::size_t>(r)].events;
      std::int64_t requests = 0;
      auto add = [&](Op op, std::uint32_t site) -> Event& {
        Event e;
        e.op = op;
        e.site = site;
        e.compute_ns = 1000 + static_cast<std::uint64_t>(rng() % 100);
        e.duration_ns = 200;
        events.push_back(e);
        return events.back();
      };
      for (const Msg& m : msgs)
        if (m.dst == r) {
          Event& e = add(Op::Irecv, 0);
          e[Field::Peer] = m.src - r;
          e[Field::Bytes] = m.bytes;
          e[Field::DtSize] = 1;
          e[Field::Tag] = it;
          ++requests;
        }
      for (const Msg& m : msgs)
        if (m.src == r) {
          Event& e = add(Op::Isend, 1);
          e[Field::Peer] = m.dst - r;
          e[Field::Bytes] = m.bytes;
          e[Field::DtSize] = 1;
          e[Field::Tag] = it;
          ++requests;
        }
      Event& w = add(Op::Waitall, 2);
      for (std::int64_t q = requests; q >= 1; --q) w[ArrayField::Requests].push_back(q);
      Event& a = add(Op::Allreduce, 3);
      a[Field::Bytes] = 8;
      a[Field::Bytes2] = 8;
      a[Field::DtSize] = 8;
      a[Field::RedOp] = static_cast<std::int64_t>(RedOpCode::Sum);
    }
  }
  for (auto& rec : recs) {
    Event f;
    f.op = Op::Finalize;
    f.site = 4;
    rec.events.push_back(f);
  }
  return recs;
}

/// The merged trace of recordings (each compressed, then merged).
inline Trace merged_trace(const std::vector<RankRecording>& recs) {
  std::vector<Trace> per_rank;
  for (const auto& rec : recs) {
    IntraCompressor c;
    for (const auto& e : rec.events) c.push(e);
    per_rank.push_back(make_rank_trace(rec.rank, rec.nranks, c.finish(), rec.sites, rec.comms, rec.names));
  }
  return merge_tree(std::move(per_rank));
}

}  // namespace scalatrace::test_support
