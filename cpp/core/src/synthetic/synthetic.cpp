// In-process synthetic MPI event streams (see synthetic.hpp for the patterns).
#include "scalatrace/synthetic/synthetic.hpp"

#include <algorithm>
#include <array>

#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Small deterministic random stream.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() { return splitmix(state++); }
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n)); }
};

/// Emits events through one reused Event object.
struct Emitter {
  const std::function<void(const Event&)>& sink;
  std::int64_t rank;
  bool jitter;
  Event e;
  std::uint64_t count = 0;

  Event& start(Op op, std::uint32_t site, std::int64_t comm = 0) {
    e.op = op;
    e.site = site;
    e.fields.fill(0);
    for (auto& a : e.arrays) a.clear();
    e[Field::Comm] = comm;
    return e;
  }
  void emit(std::int64_t step) {
    if (!jitter) {
      e.compute_ns = 2000;
      e.duration_ns = 500;
      sink(e);
      return;
    }
    const std::uint64_t h = splitmix(static_cast<std::uint64_t>(rank) * 0x100000001b3ULL ^
                                     (static_cast<std::uint64_t>(step) << 20) ^ count);
    e.compute_ns = 1000 + h % 4000;
    e.duration_ns = 100 + (h >> 32) % 900;
    ++count;
    sink(e);
  }
};

std::vector<std::int64_t> grid_of(const SyntheticSpec& spec, std::size_t ndims) {
  if (spec.dims.empty()) return synthetic_grid(spec.nranks, ndims);
  if (spec.dims.size() != ndims)
    throw UsageError("synthetic pattern " + std::string(synthetic_pattern_name(spec.pattern)) + " needs a " +
                     std::to_string(ndims) + "-dimensional grid, got " + std::to_string(spec.dims.size()) +
                     " dimensions");
  std::int64_t p = 1;
  for (auto d : spec.dims) {
    if (d <= 0) throw UsageError("synthetic grid dimensions must be positive");
    p *= d;
  }
  if (p != spec.nranks)
    throw UsageError("synthetic grid has " + std::to_string(p) + " ranks but nranks is " + std::to_string(spec.nranks));
  return spec.dims;
}

struct Neighbour {
  std::int64_t rel_peer;
  std::int64_t send_tag;
  std::int64_t recv_tag;
};

/// Neighbours of `rank` on the grid for the given direction set (directions listed so that
/// the opposite of direction i is direction n-1-i).
std::vector<Neighbour> neighbours(std::int64_t rank, const std::vector<std::int64_t>& dims,
                                  const std::vector<std::array<std::int64_t, 3>>& dirs, bool wrap) {
  std::array<std::int64_t, 3> c{0, 0, 0};
  std::int64_t r = rank;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    c[d] = r % dims[d];
    r /= dims[d];
  }
  std::vector<Neighbour> out;
  const auto n = static_cast<std::int64_t>(dirs.size());
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t peer = 0, mul = 1;
    bool inside = true;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      std::int64_t x = c[d] + dirs[static_cast<std::size_t>(i)][d];
      if (x < 0 || x >= dims[d]) {
        if (!wrap) inside = false;
        x = ((x % dims[d]) + dims[d]) % dims[d];
      }
      peer += x * mul;
      mul *= dims[d];
    }
    if (inside) out.push_back(Neighbour{peer - rank, i, n - 1 - i});
  }
  return out;
}

std::vector<std::array<std::int64_t, 3>> directions(SyntheticPattern p) {
  std::vector<std::array<std::int64_t, 3>> dirs;
  if (p == SyntheticPattern::Stencil1D) {
    for (std::int64_t dx : {-2, -1, 1, 2}) dirs.push_back({dx, 0, 0});
    return dirs;
  }
  const bool three = p == SyntheticPattern::Stencil3D;
  // Lexicographic over (z, y, x) so that the opposite of i is n-1-i.
  for (std::int64_t dz = three ? -1 : 0; dz <= (three ? 1 : 0); ++dz)
    for (std::int64_t dy = -1; dy <= 1; ++dy)
      for (std::int64_t dx = -1; dx <= 1; ++dx)
        if (dx != 0 || dy != 0 || dz != 0) dirs.push_back({dx, dy, dz});
  return dirs;
}

std::vector<std::uint32_t> intern_sites(CallSiteTable& sites, std::uint64_t base, std::size_t n) {
  const std::uint32_t m = sites.intern_module("synthetic");
  std::vector<std::uint32_t> ids;
  ids.reserve(n);
  for (std::size_t k = 0; k < n; ++k) ids.push_back(sites.intern({Frame{m, base + 0x10 * k}, Frame{m, 0x40}}));
  return ids;
}

constexpr auto kSum = static_cast<std::int64_t>(RedOpCode::Sum);

}  // namespace

std::string_view synthetic_pattern_name(SyntheticPattern p) {
  switch (p) {
    case SyntheticPattern::Stencil1D:
      return "stencil1d";
    case SyntheticPattern::Stencil2D:
      return "stencil2d";
    case SyntheticPattern::Stencil3D:
      return "stencil3d";
    case SyntheticPattern::Collectives:
      return "collectives";
    case SyntheticPattern::RowColumn:
      return "rowcolumn";
    case SyntheticPattern::Irregular:
      return "irregular";
  }
  return "?";
}

SyntheticPattern synthetic_pattern_from_name(std::string_view name) {
  for (auto p : {SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D, SyntheticPattern::Stencil3D,
                 SyntheticPattern::Collectives, SyntheticPattern::RowColumn, SyntheticPattern::Irregular})
    if (synthetic_pattern_name(p) == name) return p;
  throw UsageError("unknown synthetic pattern '" + std::string(name) +
                   "' (stencil1d, stencil2d, stencil3d, collectives, rowcolumn, irregular)");
}

std::vector<std::int64_t> synthetic_grid(std::int64_t n, std::size_t ndims) {
  if (n <= 0 || ndims == 0) throw UsageError("synthetic_grid needs n > 0 and ndims > 0");
  // MPI_Dims_create's grid: of the factorizations of n into `ndims` factors, largest first, the
  // one whose largest and smallest factors differ least; among equals, the one with the largest
  // first factor, then second... (the first met when every factor is tried from large to
  // small). MPICH 4.0 gives exactly this for every n <= 5000 in 2 and 3 dimensions (checked
  // with a program calling MPI_Dims_create). A greedy placement of prime factors does not:
  // 72 ranks would become 12x6 where MPICH makes 9x8.
  std::vector<std::int64_t> divisors;
  for (std::int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      divisors.push_back(d);
      if (d != n / d) divisors.push_back(n / d);
    }
  std::sort(divisors.rbegin(), divisors.rend());
  std::vector<std::int64_t> best, current;
  std::int64_t best_spread = n;  // any factorization has spread <= n - 1
  // Factors are chosen from large to small, each at most the previous one: `rest` is what the
  // remaining `left` factors multiply to.
  const auto search = [&](auto&& self, std::int64_t rest, std::size_t left, std::int64_t cap) -> void {
    if (left == 1) {
      if (rest > cap) return;
      const std::int64_t spread = current.front() - rest;
      if (spread < best_spread) {
        best_spread = spread;
        best = current;
        best.push_back(rest);
      }
      return;
    }
    for (const auto d : divisors) {
      if (d > cap || rest % d != 0) continue;
      // The remaining factors are at most d, so d^left >= rest, or no completion exists; and
      // the spread is at least the first factor minus d: stop once it cannot improve.
      if (!current.empty() && current.front() - d >= best_spread) break;
      std::int64_t power = 1;
      bool enough = false;
      for (std::size_t i = 0; i < left; ++i) {
        if (power >= (rest + d - 1) / d) {
          enough = true;
          break;
        }
        power *= d;
      }
      if (!enough && power < rest) break;  // smaller d only make it worse
      current.push_back(d);
      self(self, rest / d, left - 1, d);
      current.pop_back();
    }
  };
  if (ndims == 1) return {n};
  search(search, n, ndims, n);
  return best;
}

void generate(const SyntheticSpec& spec, std::int64_t rank, const std::function<void(const Event&)>& sink,
              CallSiteTable& sites, CommTable& comms) {
  if (spec.nranks <= 0) throw UsageError("synthetic spec needs nranks > 0");
  if (rank < 0 || rank >= spec.nranks)
    throw UsageError("rank " + std::to_string(rank) + " out of range for " + std::to_string(spec.nranks) + " ranks");
  if (spec.timesteps < 0) throw UsageError("synthetic spec needs timesteps >= 0");
  comms.entries.push_back(CommEntry{0, RankList::range(0, spec.nranks), RankList{}});

  Emitter em{sink, rank, spec.timing_jitter, Event{}};
  const auto base = 0x1000 * (static_cast<std::uint64_t>(spec.pattern) + 1);
  const auto s = intern_sites(sites, base, 12);  // fixed order: same ids on every rank
  const std::uint32_t kInit = s[0], kFinalize = s[1];

  em.start(Op::Init, kInit);
  em.emit(-1);

  switch (spec.pattern) {
    case SyntheticPattern::Stencil1D:
    case SyntheticPattern::Stencil2D:
    case SyntheticPattern::Stencil3D: {
      const std::size_t nd = spec.pattern == SyntheticPattern::Stencil1D   ? 1
                             : spec.pattern == SyntheticPattern::Stencil2D ? 2
                                                                           : 3;
      const auto dims = grid_of(spec, nd);
      const auto nb = neighbours(rank, dims, directions(spec.pattern), spec.wrap);
      const auto k = static_cast<std::int64_t>(nb.size());
      for (std::int64_t step = 0; step < spec.timesteps; ++step) {
        for (const auto& n : nb) {
          Event& e = em.start(Op::Irecv, s[2]);
          e[Field::Peer] = n.rel_peer;
          e[Field::Tag] = n.recv_tag;
          e[Field::Bytes] = spec.bytes;
          e[Field::DtSize] = 8;
          em.emit(step);
        }
        for (const auto& n : nb) {
          Event& e = em.start(Op::Isend, s[3]);
          e[Field::Peer] = n.rel_peer;
          e[Field::Tag] = n.send_tag;
          e[Field::Bytes] = spec.bytes;
          e[Field::DtSize] = 8;
          em.emit(step);
        }
        if (k > 0) {
          Event& e = em.start(Op::Waitall, s[4]);
          auto& req = e[ArrayField::Requests];
          for (std::int64_t i = 2 * k; i >= 1; --i) req.push_back(i);
          em.emit(step);
        }
        Event& e = em.start(Op::Allreduce, s[5]);
        e[Field::Bytes] = e[Field::Bytes2] = 8;
        e[Field::DtSize] = e[Field::DtSize2] = 8;
        e[Field::RedOp] = kSum;
        em.emit(step);
      }
      break;
    }
    case SyntheticPattern::Collectives: {
      for (std::int64_t step = 0; step < spec.timesteps; ++step) {
        Event* e = &em.start(Op::Bcast, s[2]);
        (*e)[Field::Bytes] = spec.bytes;
        (*e)[Field::DtSize] = 8;
        em.emit(step);
        e = &em.start(Op::Allreduce, s[3]);
        (*e)[Field::Bytes] = (*e)[Field::Bytes2] = 8;
        (*e)[Field::DtSize] = (*e)[Field::DtSize2] = 8;
        (*e)[Field::RedOp] = kSum;
        em.emit(step);
        em.start(Op::Barrier, s[4]);
        em.emit(step);
        e = &em.start(Op::Reduce, s[5]);
        (*e)[Field::Bytes] = (*e)[Field::Bytes2] = 64;
        (*e)[Field::DtSize] = (*e)[Field::DtSize2] = 8;
        (*e)[Field::RedOp] = kSum;
        em.emit(step);
        e = &em.start(Op::Alltoall, s[6]);
        (*e)[Field::Bytes] = (*e)[Field::Bytes2] = spec.bytes;
        (*e)[Field::DtSize] = (*e)[Field::DtSize2] = 8;
        em.emit(step);
      }
      break;
    }
    case SyntheticPattern::RowColumn: {
      const auto dims = grid_of(spec, 2);
      const std::int64_t px = dims[0], py = dims[1];
      const std::int64_t x = rank % px, y = rank / px;
      Event* e = &em.start(Op::Comm_split, s[2]);
      (*e)[Field::Color] = y;
      (*e)[Field::Key] = x;
      (*e)[Field::NewComm] = 2;
      em.emit(-1);
      e = &em.start(Op::Comm_split, s[3]);
      (*e)[Field::Color] = x;
      (*e)[Field::Key] = y;
      (*e)[Field::NewComm] = 3;
      em.emit(-1);
      comms.entries.push_back(CommEntry{2, RankList::range(y * px, px, 1), RankList{}});
      comms.entries.push_back(CommEntry{3, RankList::range(x, py, px), RankList{}});
      for (std::int64_t step = 0; step < spec.timesteps; ++step) {
        e = &em.start(Op::Allreduce, s[4], 2);
        (*e)[Field::Bytes] = (*e)[Field::Bytes2] = spec.bytes;
        (*e)[Field::DtSize] = (*e)[Field::DtSize2] = 8;
        (*e)[Field::RedOp] = kSum;
        em.emit(step);
        e = &em.start(Op::Bcast, s[5], 3);
        (*e)[Field::Bytes] = spec.bytes;
        (*e)[Field::DtSize] = 8;
        em.emit(step);
        e = &em.start(Op::Allreduce, s[6], 0);
        (*e)[Field::Bytes] = (*e)[Field::Bytes2] = 8;
        (*e)[Field::DtSize] = (*e)[Field::DtSize2] = 8;
        (*e)[Field::RedOp] = kSum;
        em.emit(step);
      }
      break;
    }
    case SyntheticPattern::Irregular: {
      Rng rng{spec.seed * 0x9e3779b97f4a7c15ULL ^ splitmix(static_cast<std::uint64_t>(rank))};
      auto rel_peer = [&] { return rng.below(spec.nranks) - rank; };
      for (std::int64_t step = 0; step < spec.timesteps; ++step) {
        switch (rng.below(4)) {
          case 0: {
            const std::int64_t pairs = 1 + rng.below(3);
            for (std::int64_t p = 0; p < pairs; ++p) {
              Event& e = em.start(Op::Send, s[2]);
              e[Field::Peer] = rel_peer();
              e[Field::Tag] = rng.below(4);
              e[Field::Bytes] = 8 << rng.below(13);
              e[Field::DtSize] = 8;
              em.emit(step);
              Event& r = em.start(Op::Recv, s[3]);
              r[Field::Peer] = rng.below(5) == 0 ? kAnySource : rel_peer();
              r[Field::Tag] = rng.below(5) == 0 ? kAnyTag : rng.below(4);
              r[Field::Bytes] = 8 << rng.below(13);
              r[Field::DtSize] = 8;
              em.emit(step);
            }
            break;
          }
          case 1: {
            const std::int64_t m = 1 + rng.below(5);
            for (std::int64_t i = 0; i < m; ++i) {
              Event& e = em.start(Op::Isend, s[4]);
              e[Field::Peer] = rel_peer();
              e[Field::Tag] = i;
              e[Field::Bytes] = spec.bytes;
              e[Field::DtSize] = 8;
              em.emit(step);
              em.start(Op::Wait, s[5])[ArrayField::Requests].push_back(1);
              em.emit(step);
            }
            break;
          }
          case 2: {
            Event& e = em.start(Op::Allreduce, s[6]);
            e[Field::Bytes] = e[Field::Bytes2] = 8 << rng.below(6);
            e[Field::DtSize] = e[Field::DtSize2] = 8;
            e[Field::RedOp] = kSum;
            em.emit(step);
            if (rng.below(3) == 0) {
              em.start(Op::Barrier, s[7]);
              em.emit(step);
            }
            break;
          }
          default: {
            const std::int64_t flag = rng.below(2);
            Event& e = em.start(Op::Iprobe, s[8]);
            e[Field::Peer] = kAnySource;
            e[Field::Tag] = kAnyTag;
            e[Field::Flag] = flag;
            em.emit(step);
            if (flag) {
              Event& r = em.start(Op::Recv, s[9]);
              r[Field::Peer] = rel_peer();
              r[Field::Tag] = rng.below(4);
              r[Field::Bytes] = 8 * (1 + rng.below(1000));
              r[Field::DtSize] = 8;
              em.emit(step);
            }
          }
        }
        if (rng.below(7) == 0) {
          Event& e = em.start(Op::Bcast, s[10]);
          e[Field::Bytes] = 8 << rng.below(8);
          e[Field::Root] = 0;
          e[Field::DtSize] = 8;
          em.emit(step);
        }
      }
      break;
    }
  }
  em.start(Op::Finalize, kFinalize);
  em.emit(spec.timesteps);
}

RankRecording record_synthetic(const SyntheticSpec& spec, std::int64_t rank) {
  RankRecording rec;
  rec.rank = rank;
  rec.nranks = spec.nranks;
  rec.metadata["program"] = "synthetic:" + std::string(synthetic_pattern_name(spec.pattern));
  generate(
      spec, rank, [&](const Event& e) { rec.events.push_back(e); }, rec.sites, rec.comms);
  return rec;
}

Trace synthetic_rank_trace(const SyntheticSpec& spec, std::int64_t rank, const CompressorConfig& config,
                           std::uint64_t* events) {
  CallSiteTable sites;
  CommTable comms;
  IntraCompressor compressor(config);
  compressor.set_sites(&sites);
  generate(
      spec, rank,
      [&](const Event& e) {
        compressor.push(e);
        if (events) ++*events;
      },
      sites, comms);
  return make_rank_trace(rank, spec.nranks, compressor.finish(), std::move(sites), std::move(comms), {});
}

Trace synthetic_merged_trace(const SyntheticSpec& spec, const std::function<void(const TreeMerger&)>& after_push) {
  TreeMerger merger;
  for (std::int64_t r = 0; r < spec.nranks; ++r) {
    merger.push(synthetic_rank_trace(spec, r));
    if (after_push) after_push(merger);
  }
  return merger.finish();
}

}  // namespace scalatrace
