#pragma once
// Test support: an in-memory data-dependent program (the random graph exchange of
// tests/py/programs/random_exchange.c): per iteration every rank sends 1 or 2 messages of random
// size to random ranks (Isend), receives its incoming ones (Irecv from the source), Waitall, then
// an Allreduce. Its peers and sizes do not compress losslessly: the lossy traces' test program.
// `max_shift` > 0 keeps the peers within that many ranks on either side (a random exchange among
// neighbours); 0: any other rank. `common_shifts`: the calls of tests/py/programs/random_exchange.c
// instead (without its gather): every iteration two random shifts common to all ranks, so each
// rank sends 2 messages and receives 2 (its structure is the same every iteration, only peers
// and sizes vary).
#include <cstdint>
#include <random>
#include <vector>

#include "merged_recordings.hpp"
#include "scalatrace/model/recording.hpp"

namespace scalatrace::test_support {

/// One empty recording per rank of an `nranks`-rank run of `program`, each with the same
/// `sites` call sites (ids 0 .. sites-1, one frame each in module `program`).
inline std::vector<RankRecording> blank_recordings(std::int64_t nranks, const char* program, std::uint32_t sites) {
  std::vector<RankRecording> recs(static_cast<std::size_t>(nranks));
  for (std::int64_t r = 0; r < nranks; ++r) {
    auto& rec = recs[static_cast<std::size_t>(r)];
    rec.rank = r;
    rec.nranks = nranks;
    const auto mod = rec.sites.intern_module(program);
    for (std::uint32_t s = 0; s < sites; ++s) rec.sites.intern({Frame{mod, 0x100 + s}});
  }
  return recs;
}

inline std::vector<RankRecording> random_exchange(std::int64_t nranks, int iterations, std::uint64_t seed = 7,
                                                  std::int64_t max_shift = 0, bool common_shifts = false) {
  std::vector<RankRecording> recs = blank_recordings(nranks, "random_exchange", 5);
  std::mt19937_64 rng(seed);
  for (int it = 0; it < iterations; ++it) {
    struct Msg {
      std::int64_t src, dst, bytes;
    };
    std::vector<Msg> msgs;
    if (common_shifts) {
      const std::int64_t shifts[2] = {1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(nranks - 1)),
                                      1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(nranks - 1))};
      for (std::int64_t r = 0; r < nranks; ++r)
        for (const std::int64_t shift : shifts)
          msgs.push_back({r, (r + shift) % nranks, 8 * (1 + static_cast<std::int64_t>(rng() % 200))});
    }
    for (std::int64_t r = 0; r < nranks && !common_shifts; ++r) {
      const int degree = 1 + static_cast<int>(rng() % 2);
      for (int k = 0; k < degree; ++k) {
        std::int64_t shift = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(nranks - 1));
        if (max_shift > 0) {
          const auto step = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(max_shift));
          shift = rng() % 2 == 0 ? step : nranks - step;
        }
        msgs.push_back({r, (r + shift) % nranks, 8 * (1 + static_cast<std::int64_t>(rng() % 200))});
      }
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
      auto message = [&](Op op, std::uint32_t site, std::int64_t peer, std::int64_t bytes) {
        Event& e = add(op, site);
        e[Field::Peer] = peer - r;
        e[Field::Bytes] = bytes;
        e[Field::DtSize] = 1;
        e[Field::Tag] = it;
        ++requests;
      };
      for (const Msg& m : msgs)
        if (m.dst == r) message(Op::Irecv, 0, m.src, m.bytes);
      for (const Msg& m : msgs)
        if (m.src == r) message(Op::Isend, 1, m.dst, m.bytes);
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

}  // namespace scalatrace::test_support
