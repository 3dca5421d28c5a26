// Collectives as point-to-point steps, following MPICH's default algorithms and its size
// thresholds (MPICH 4 CH4 "auto" selection, simplified). See docs/simulator.md ("Collectives").
#include <algorithm>
#include <cmath>
#include <functional>
#include <span>

#include "simulate/simulator_collectives.hpp"

namespace scalatrace::sim {
namespace {

// MPICH default cut-offs (bytes).
constexpr double kBcastShortMsg = 12288;
constexpr std::int64_t kBcastMinProcs = 8;
constexpr double kAllreduceShortMsg = 2048;
constexpr double kAllgatherLongMsg = 81920;
constexpr double kAllgatherMediumMsg = 524288;

std::int64_t largest_pow2_le(std::int64_t n) {
  std::int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
bool is_pow2(std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

double array_at(const EventView& e, ArrayField f, std::int64_t i, double fallback) {
  const std::span<const std::int64_t> a = e[f];
  if (i >= 0 && static_cast<std::size_t>(i) < a.size()) return static_cast<double>(a[static_cast<std::size_t>(i)]);
  return fallback;
}

class StepBuilder {
 public:
  StepBuilder(std::int64_t me, std::int64_t n, double scale, CollSteps& out)
      : me_(me), n_(n), scale_(scale), out_(out) {}

  void exchange(std::int64_t recv_from, std::int64_t send_to, double bytes) {
    out_.push_back(CollStep{recv_from, send_to, std::max(0.0, bytes) * scale_});
  }
  void send(std::int64_t to, double bytes) { exchange(-1, to, bytes); }
  void recv(std::int64_t from) { exchange(from, -1, 0); }

  std::int64_t abs(std::int64_t relative, std::int64_t root) const { return (relative + root) % n_; }

  // Binomial tree from root downwards (MPICH MPIR_Bcast_intra_binomial and the binomial
  // scatter): receive from the parent, then send to each child the bytes of its subtree.
  void binomial_down(std::int64_t root, const std::function<double(std::int64_t)>& subtree_bytes) {
    const std::int64_t rr = (me_ - root + n_) % n_;
    std::int64_t mask = 1;
    while (mask < n_) {
      if (rr & mask) {
        recv(abs(rr - mask, root));
        break;
      }
      mask <<= 1;
    }
    mask >>= 1;
    while (mask > 0) {
      if (rr + mask < n_) send(abs(rr + mask, root), subtree_bytes(std::min(mask, n_ - rr - mask)));
      mask >>= 1;
    }
  }
  void binomial_bcast(std::int64_t root, double bytes) {
    binomial_down(root, [&](std::int64_t) { return bytes; });
  }
  void binomial_scatter(std::int64_t root, double block) {
    binomial_down(root, [&](std::int64_t ranks) { return block * static_cast<double>(ranks); });
  }

  // Binomial tree towards root (MPICH MPIR_Reduce_intra_binomial and ..._Gather_intra_binomial):
  // receive from each child, then send to the parent the bytes of my subtree.
  void binomial_up(std::int64_t root, const std::function<double(std::int64_t)>& subtree_bytes) {
    const std::int64_t rr = (me_ - root + n_) % n_;
    for (std::int64_t mask = 1; mask < n_; mask <<= 1) {
      if (rr & mask) {
        send(abs(rr - mask, root), subtree_bytes(std::min(mask, n_ - rr)));
        break;
      }
      if (rr + mask < n_) recv(abs(rr + mask, root));
    }
  }
  void binomial_reduce(std::int64_t root, double bytes) {
    binomial_up(root, [&](std::int64_t) { return bytes; });
  }
  void binomial_gather(std::int64_t root, double block) {
    binomial_up(root, [&](std::int64_t ranks) { return block * static_cast<double>(ranks); });
  }

  // Ring allgather of per-rank blocks (MPICH MPIR_Allgather(v)_intra_ring).
  void ring_allgather(const std::function<double(std::int64_t)>& block_of) {
    const std::int64_t right = (me_ + 1) % n_, left = (me_ - 1 + n_) % n_;
    for (std::int64_t k = 0; k < n_ - 1; ++k) exchange(left, right, block_of((me_ - k + n_) % n_));
  }

  // Recursive doubling allgather, power-of-two sizes (MPICH ..._recursive_doubling).
  void recursive_doubling_allgather(double block) {
    for (std::int64_t mask = 1; mask < n_; mask <<= 1) {
      const std::int64_t partner = me_ ^ mask;
      exchange(partner, partner, block * static_cast<double>(mask));
    }
  }

  // Allreduce: recursive doubling (short) or reduce-scatter + allgather (Rabenseifner, long),
  // both with MPICH's fold of the ranks above the largest power of two.
  void allreduce(double bytes, bool long_message) {
    const std::int64_t pof2 = largest_pow2_le(n_);
    const std::int64_t rem = n_ - pof2;
    std::int64_t newrank;
    if (me_ < 2 * rem) {
      if (me_ % 2 == 0) {
        send(me_ + 1, bytes);
        newrank = -1;
      } else {
        recv(me_ - 1);
        newrank = me_ / 2;
      }
    } else {
      newrank = me_ - rem;
    }
    auto real = [&](std::int64_t nr) { return nr < rem ? nr * 2 + 1 : nr + rem; };
    if (newrank >= 0) {
      if (!long_message || pof2 == 1) {
        for (std::int64_t mask = 1; mask < pof2; mask <<= 1) {
          const std::int64_t partner = real(newrank ^ mask);
          exchange(partner, partner, bytes);
        }
      } else {
        double piece = bytes;
        for (std::int64_t mask = 1; mask < pof2; mask <<= 1) {  // reduce-scatter, halving
          piece /= 2;
          const std::int64_t partner = real(newrank ^ mask);
          exchange(partner, partner, piece);
        }
        for (std::int64_t mask = pof2 >> 1; mask > 0; mask >>= 1) {  // allgather, doubling
          const std::int64_t partner = real(newrank ^ mask);
          exchange(partner, partner, piece);
          piece *= 2;
        }
      }
    }
    if (me_ < 2 * rem) {
      if (me_ % 2 == 1)
        send(me_ - 1, bytes);
      else
        recv(me_ + 1);
    }
  }

  // Bruck allgather (MPICH, short messages on other sizes): round k gets k blocks from me + k.
  void bruck_allgather(double block) {
    for (std::int64_t k = 1; k < n_; k <<= 1)
      exchange((me_ + k) % n_, (me_ - k + n_) % n_, block * static_cast<double>(std::min(k, n_ - k)));
  }

  // Dissemination barrier (MPICH MPIR_Barrier_intra_dissemination).
  void barrier() {
    for (std::int64_t k = 1; k < n_; k <<= 1) exchange((me_ - k + n_) % n_, (me_ + k) % n_, 0);
  }

  // Pairwise exchange (alltoall(v/w), reduce_scatter): step i sends to me+i, receives from me-i.
  void pairwise(const std::function<double(std::int64_t)>& bytes_to) {
    for (std::int64_t i = 1; i < n_; ++i) {
      const std::int64_t dst = (me_ + i) % n_;
      exchange((me_ - i + n_) % n_, dst, bytes_to(dst));
    }
  }

  // Linear v-variants (MPICH's gatherv/scatterv are linear).
  void linear_gather(std::int64_t root, double bytes) {
    if (me_ != root) {
      send(root, bytes);
      return;
    }
    for (std::int64_t i = 0; i < n_; ++i)
      if (i != root) recv(i);
  }
  void linear_scatter(std::int64_t root, const std::function<double(std::int64_t)>& bytes_to) {
    if (me_ != root) {
      recv(root);
      return;
    }
    for (std::int64_t i = 0; i < n_; ++i)
      if (i != root) send(i, bytes_to(i));
  }

  // Scan / Exscan: recursive doubling (MPICH MPIR_Scan_intra_recursive_doubling).
  void scan(double bytes) {
    for (std::int64_t mask = 1; mask < n_; mask <<= 1) {
      const std::int64_t partner = me_ ^ mask;
      if (partner < n_) exchange(partner, partner, bytes);
    }
  }

 private:
  std::int64_t me_, n_;
  double scale_;
  CollSteps& out_;
};

}  // namespace

void collective_steps(const EventView& e, std::int64_t me, std::int64_t n, double size_scale, CollSteps& out) {
  out.clear();
  if (n <= 1) return;
  StepBuilder b(me, n, size_scale, out);
  const double bytes = static_cast<double>(e[Field::Bytes]);
  const double bytes2 = static_cast<double>(e[Field::Bytes2]);
  std::int64_t root = e[Field::Root];
  if (root < 0 || root >= n) root = 0;
  switch (e.op) {
    case Op::Barrier:
    case Op::Ibarrier:
      b.barrier();
      break;
    case Op::Bcast:
    case Op::Ibcast: {
      const double scaled = bytes * size_scale;
      if (scaled < kBcastShortMsg || n < kBcastMinProcs) {
        b.binomial_bcast(root, bytes);
      } else {  // scatter + ring allgather (MPICH MPIR_Bcast_intra_scatter_ring_allgather)
        const double block = std::ceil(bytes / static_cast<double>(n));
        b.binomial_scatter(root, block);
        b.ring_allgather([&](std::int64_t) { return block; });
      }
      break;
    }
    case Op::Reduce:
    case Op::Ireduce:
      b.binomial_reduce(root, bytes);
      break;
    case Op::Allreduce:
    case Op::Iallreduce:
      b.allreduce(bytes, bytes * size_scale > kAllreduceShortMsg);
      break;
    case Op::Gather:
    case Op::Igather:
      b.binomial_gather(root, me == root ? bytes2 : bytes);
      break;
    case Op::Gatherv:
    case Op::Igatherv:
      b.linear_gather(root, bytes);
      break;
    case Op::Scatter:
    case Op::Iscatter:
      b.binomial_scatter(root, me == root ? bytes : bytes2);
      break;
    case Op::Scatterv:
    case Op::Iscatterv:
      b.linear_scatter(root, [&](std::int64_t i) { return array_at(e, ArrayField::SendCounts, i, bytes); });
      break;
    case Op::Allgather:
    case Op::Iallgather:
      if (is_pow2(n) && bytes * size_scale * static_cast<double>(n) < kAllgatherLongMsg)
        b.recursive_doubling_allgather(bytes);
      else if (bytes * size_scale * static_cast<double>(n) < kAllgatherMediumMsg)
        b.bruck_allgather(bytes);
      else
        b.ring_allgather([&](std::int64_t) { return bytes; });
      break;
    case Op::Allgatherv:
    case Op::Iallgatherv:
      b.ring_allgather([&](std::int64_t i) { return array_at(e, ArrayField::RecvCounts, i, bytes); });
      break;
    case Op::Alltoall:
    case Op::Ialltoall:
      b.pairwise([&](std::int64_t) { return bytes; });
      break;
    case Op::Alltoallv:
    case Op::Ialltoallv:
    case Op::Alltoallw:
    case Op::Ialltoallw:
      b.pairwise([&](std::int64_t i) { return array_at(e, ArrayField::SendCounts, i, bytes); });
      break;
    case Op::Reduce_scatter:
    case Op::Ireduce_scatter:
      b.pairwise([&](std::int64_t i) { return array_at(e, ArrayField::RecvCounts, i, bytes2); });
      break;
    case Op::Reduce_scatter_block:
    case Op::Ireduce_scatter_block: {
      const double block = bytes2 > 0 ? bytes2 : bytes / static_cast<double>(n);
      b.pairwise([&](std::int64_t) { return block; });
      break;
    }
    case Op::Scan:
    case Op::Iscan:
    case Op::Exscan:
    case Op::Iexscan:
      b.scan(bytes);
      break;
    default:
      // Communicator creation: MPICH gathers every member's (color, key) or context id.
      b.bruck_allgather(8.0);
      break;
  }
}

std::optional<CollectiveInputs> collective_inputs(const EventView& e) {
  switch (e.op) {  // the cases of collective_steps that read an array
    case Op::Scatterv:
    case Op::Iscatterv:
    case Op::Allgatherv:
    case Op::Iallgatherv:
    case Op::Alltoallv:
    case Op::Ialltoallv:
    case Op::Alltoallw:
    case Op::Ialltoallw:
    case Op::Reduce_scatter:
    case Op::Ireduce_scatter:
      return std::nullopt;
    default:
      return CollectiveInputs{e.op, e[Field::Bytes], e[Field::Bytes2], e[Field::Root]};
  }
}

}  // namespace scalatrace::sim
