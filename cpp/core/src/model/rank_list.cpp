// RankList: unions of multi-dimensional strided descriptors (see docs/algorithms.md, "RankList").
//
// Invariants kept by every constructor and by unite():
//  - every count is >= 2 (a count-1 dimension is dropped; a descriptor without dims is one rank);
//  - a descriptor with two or more dims has positive strides and is "nested": every outer stride
//    exceeds the span of the dims inside it, so a rank decomposes greedily (outermost first) into
//    unique per-dim indices; one-dim descriptors may have any non-zero stride (sequences);
//  - descriptors are in sequence order; for sets they are additionally ascending and their
//    ranges [min, max] do not overlap.
#include "scalatrace/model/rank_list.hpp"

#include <algorithm>
#include <numeric>

namespace scalatrace {
namespace {

using Dims = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::int64_t span_of(const Dims& dims, std::size_t upto) {
  std::int64_t s = 0;
  for (std::size_t d = 0; d < upto; ++d) s += (dims[d].first - 1) * dims[d].second;
  return s;
}

std::int64_t desc_min(const RankDescriptor& d) {
  std::int64_t v = d.start;
  for (auto [c, s] : d.dims) v += std::min<std::int64_t>(0, (c - 1) * s);
  return v;
}

std::int64_t desc_max(const RankDescriptor& d) {
  std::int64_t v = d.start;
  for (auto [c, s] : d.dims) v += std::max<std::int64_t>(0, (c - 1) * s);
  return v;
}

/// True if a multi-dimensional shape decomposes uniquely (positive, nested strides).
bool nested_ok(const Dims& dims) {
  if (dims.size() <= 1) return dims.empty() || dims[0].second != 0;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].second <= 0 || dims[d].first < 2) return false;
    if (d > 0 && dims[d].second <= span_of(dims, d)) return false;
  }
  return true;
}

/// Local index of rank inside d, or -1.
std::int64_t local_index(const RankDescriptor& d, std::int64_t rank) {
  std::int64_t off = rank - d.start;
  if (d.dims.empty()) return off == 0 ? 0 : -1;
  if (d.dims.size() == 1) {
    auto [c, s] = d.dims[0];
    // A run of consecutive ranks (most ranklists: a node all ranks take part in) needs no
    // division: first visits of a cursor test one per stored field.
    if (s == 1) return off >= 0 && off < c ? off : -1;
    if (s == 0) return off == 0 ? 0 : -1;
    if (off % s != 0) return -1;
    std::int64_t i = off / s;
    return (i >= 0 && i < c) ? i : -1;
  }
  if (off < 0) return -1;
  // Outermost dimension first; the index in Horner form (dimension k's digit weighs the
  // product of the counts below it).
  std::int64_t idx = 0;
  for (std::size_t k = d.dims.size(); k-- > 0;) {
    auto [c, s] = d.dims[k];
    if (s <= 0) return -1;  // malformed (rejected by the reader); never divide by zero
    std::int64_t i = off / s;
    if (i >= c) return -1;
    off -= i * s;
    idx = idx * c + i;
  }
  return off == 0 ? idx : -1;
}

std::int64_t rank_at(const RankDescriptor& d, std::int64_t j) {
  std::int64_t r = d.start;
  for (auto [c, s] : d.dims) {
    r += (j % c) * s;
    j /= c;
  }
  return r;
}

/// Tries to express a (followed by b in sequence order) as one descriptor, stored in a.
/// With allow_new_dim false, only rules (i)-(iii) apply (they extend an existing shape).
bool fold(RankDescriptor& a, const RankDescriptor& b, bool allow_new_dim = true) {
  const std::size_t n = a.dims.size(), m = b.dims.size();
  // (i) same shape, outermost dimension continues: <s (c1 t)> + <s+c1*t (c2 t)>.
  if (n == m && n >= 1) {
    bool inner_equal = std::equal(a.dims.begin(), a.dims.end() - 1, b.dims.begin());
    auto [ca, sa] = a.dims.back();
    auto [cb, sb] = b.dims.back();
    if (inner_equal && sa == sb && b.start == a.start + ca * sa) {
      a.dims.back().first = ca + cb;
      return true;
    }
  }
  // (ii) b is one more outer iteration of a.
  if (n >= 1 && m == n - 1 && std::equal(b.dims.begin(), b.dims.end(), a.dims.begin()) &&
      b.start == a.start + a.dims.back().first * a.dims.back().second) {
    a.dims.back().first += 1;
    return true;
  }
  // (iii) a is the iteration just before b's first outer iteration.
  if (m >= 1 && n == m - 1 && std::equal(a.dims.begin(), a.dims.end(), b.dims.begin()) &&
      a.start + b.dims.back().second == b.start) {
    RankDescriptor r = b;
    r.start = a.start;
    r.dims.back().first += 1;
    a = std::move(r);
    return true;
  }
  // (iv) equal shapes side by side: a new outer dimension of count 2.
  if (allow_new_dim && n == m && a.dims == b.dims && b.start != a.start) {
    Dims dims = a.dims;
    dims.emplace_back(2, b.start - a.start);
    if (nested_ok(dims)) {
      a.dims = std::move(dims);
      return true;
    }
  }
  return false;
}

/// Appends d to out, folding it into its predecessors where possible (each fold may cascade
/// backwards). A two-rank run whose second rank continues the neighbouring run better (e.g. the
/// last rank of one grid row paired with the first rank of the next) is split up.
void push_folded(std::vector<RankDescriptor>& out, RankDescriptor d) {
  while (!out.empty()) {
    RankDescriptor& a = out.back();
    RankDescriptor merged = a;
    if (fold(merged, d)) {
      out.pop_back();
      d = std::move(merged);
      continue;
    }
    if (a.dims.size() == 1 && a.dims[0].first == 2) {
      RankDescriptor second{a.start + a.dims[0].second, {}};
      if (fold(second, d, false)) {
        RankDescriptor first{a.start, {}};
        out.pop_back();
        push_folded(out, std::move(first));
        d = std::move(second);
        continue;
      }
    }
    if (d.dims.size() == 1 && d.dims[0].first == 2) {
      RankDescriptor grown = a;
      if (fold(grown, RankDescriptor{d.start, {}}, false)) {
        RankDescriptor rest{d.start + d.dims[0].second, {}};
        out.pop_back();
        push_folded(out, std::move(grown));
        d = std::move(rest);
        continue;
      }
    }
    break;
  }
  out.push_back(std::move(d));
}

void normalize(std::vector<RankDescriptor>& ds) {
  std::vector<RankDescriptor> out;
  out.reserve(ds.size());
  for (auto& d : ds) push_folded(out, std::move(d));
  ds = std::move(out);
}

/// Splits d into pieces so that its last piece is a one-dimensional run (the seam side).
void peel_end(const RankDescriptor& d, std::vector<RankDescriptor>& out) {
  if (d.dims.size() <= 1) {
    out.push_back(d);
    return;
  }
  auto [c, s] = d.dims.back();
  RankDescriptor rest = d;
  if (c - 1 >= 2) {
    rest.dims.back().first = c - 1;
  } else {
    rest.dims.pop_back();
  }
  out.push_back(std::move(rest));
  RankDescriptor last{d.start + (c - 1) * s, Dims(d.dims.begin(), d.dims.end() - 1)};
  peel_end(last, out);
}

/// Splits d into pieces so that its first piece is a one-dimensional run.
void peel_front(const RankDescriptor& d, std::vector<RankDescriptor>& out) {
  if (d.dims.size() <= 1) {
    out.push_back(d);
    return;
  }
  auto [c, s] = d.dims.back();
  RankDescriptor first{d.start, Dims(d.dims.begin(), d.dims.end() - 1)};
  peel_front(first, out);
  RankDescriptor rest = d;
  rest.start = d.start + s;
  if (c - 1 >= 2) {
    rest.dims.back().first = c - 1;
  } else {
    rest.dims.pop_back();
  }
  out.push_back(std::move(rest));
}

bool all_positive(const std::vector<RankDescriptor>& ds) {
  for (const auto& d : ds)
    for (auto [c, s] : d.dims)
      if (s <= 0 || c < 1) return false;
  return true;
}

}  // namespace

std::int64_t RankDescriptor::size() const {
  std::int64_t s = 1;
  for (auto [c, st] : dims) s *= c;
  return s;
}

RankList RankList::single(std::int64_t rank) {
  RankList r;
  r.descriptors_.push_back(RankDescriptor{rank, {}});
  return r;
}

RankList RankList::range(std::int64_t first, std::int64_t count, std::int64_t stride) {
  RankList r;
  if (count <= 0) return r;
  if (count == 1 || stride == 0) return single(first);
  r.descriptors_.push_back(RankDescriptor{first, {{count, stride}}});
  return r;
}

RankList RankList::from_sequence(const std::vector<std::int64_t>& ranks) {
  RankList r;
  for (auto x : ranks) r.push_back(x);
  normalize(r.descriptors_);
  return r;
}

void RankList::push_back(std::int64_t rank) {
  auto& ds = descriptors_;
  if (!ds.empty()) {
    auto& last = ds.back();
    if (last.dims.empty() && rank != last.start) {
      last.dims.emplace_back(2, rank - last.start);
      return;
    }
    if (last.dims.size() == 1) {
      auto [c, s] = last.dims[0];
      if (rank == last.start + c * s) {
        last.dims[0].first = c + 1;
        return;
      }
      if (c == 2 && rank != last.start + s) {
        // {a, b} followed by c off the stride: keep {a} and start the run {b, c}, which is
        // the better guess for runs such as 0 | 5 6 7.
        std::int64_t second = last.start + s;
        last.dims.clear();
        while (ds.size() >= 2 && fold(ds[ds.size() - 2], ds.back())) ds.pop_back();
        ds.push_back(RankDescriptor{second, {{2, rank - second}}});
        return;
      }
    }
    // The last descriptor is complete: fold it into its predecessors where possible.
    while (ds.size() >= 2 && fold(ds[ds.size() - 2], ds.back())) ds.pop_back();
  }
  ds.push_back(RankDescriptor{rank, {}});
}

RankList RankList::unite(const RankList& other) const {
  if (other.empty()) return *this;
  if (empty()) return other;
  if (all_positive(descriptors_) && all_positive(other.descriptors_)) {
    // Fast path (the radix-tree merge): descriptors whose ranges do not overlap are ordered by
    // their first rank; where a descriptor of one operand meets one of the other (a seam), both
    // are peeled down to one-dimensional runs, because a shape folded without knowing its
    // neighbours (e.g. the tail of one grid row and the head of the next) may continue across
    // the seam. Then neighbours fold again. No rank is ever enumerated.
    std::vector<std::pair<const RankDescriptor*, int>> all;
    all.reserve(descriptors_.size() + other.descriptors_.size());
    for (const auto& d : descriptors_) all.emplace_back(&d, 0);
    for (const auto& d : other.descriptors_) all.emplace_back(&d, 1);
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.first->start < b.first->start; });
    bool disjoint = true;
    for (std::size_t i = 1; i < all.size() && disjoint; ++i)
      disjoint = desc_max(*all[i - 1].first) < desc_min(*all[i].first);
    if (disjoint) {
      std::vector<RankDescriptor> out;
      out.reserve(all.size() + 8);
      for (std::size_t i = 0; i < all.size(); ++i) {
        bool seam_before = i > 0 && all[i - 1].second != all[i].second;
        bool seam_after = i + 1 < all.size() && all[i + 1].second != all[i].second;
        if (!seam_before && !seam_after) {
          // Unfold one level: a shape folded from pieces of two different rows / planes (a
          // block boundary of the radix tree cutting through the grid) refolds correctly once
          // its neighbours are complete. Costs the outer count, not the descriptor's size.
          const RankDescriptor& d = *all[i].first;
          if (d.dims.size() < 2) {
            out.push_back(d);
            continue;
          }
          auto [c, st] = d.dims.back();
          Dims inner(d.dims.begin(), d.dims.end() - 1);
          for (std::int64_t k = 0; k < c; ++k) out.push_back(RankDescriptor{d.start + k * st, inner});
          continue;
        }
        std::vector<RankDescriptor> pieces;
        if (seam_before) {
          peel_front(*all[i].first, pieces);
        } else {
          pieces.push_back(*all[i].first);
        }
        if (seam_after) {
          RankDescriptor last = std::move(pieces.back());
          pieces.pop_back();
          peel_end(last, pieces);
        }
        for (auto& p : pieces) out.push_back(std::move(p));
      }
      RankList r;
      r.descriptors_ = std::move(out);
      normalize(r.descriptors_);
      return r;
    }
  }
  // Interleaved or overlapping sets: enumerate, sort, deduplicate, recompress.
  std::vector<std::int64_t> v = to_vector();
  std::vector<std::int64_t> w = other.to_vector();
  v.insert(v.end(), w.begin(), w.end());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return from_sequence(v);
}

bool RankList::contains(std::int64_t rank) const {
  for (const auto& d : descriptors_)
    if (local_index(d, rank) >= 0) return true;
  return false;
}

std::int64_t RankList::size() const {
  std::int64_t n = 0;
  for (const auto& d : descriptors_) n += d.size();
  return n;
}

std::int64_t RankList::at(std::int64_t i) const {
  for (const auto& d : descriptors_) {
    std::int64_t n = d.size();
    if (i < n) return rank_at(d, i);
    i -= n;
  }
  return -1;
}

std::int64_t RankList::index_of(std::int64_t rank) const {
  std::int64_t base = 0;
  for (const auto& d : descriptors_) {
    std::int64_t j = local_index(d, rank);
    if (j >= 0) return base + j;
    base += d.size();
  }
  return -1;
}

std::vector<std::int64_t> RankList::to_vector() const {
  std::vector<std::int64_t> v;
  v.reserve(static_cast<std::size_t>(size()));
  for (const auto& d : descriptors_) {
    std::int64_t n = d.size();
    for (std::int64_t j = 0; j < n; ++j) v.push_back(rank_at(d, j));
  }
  return v;
}

std::string RankList::to_string() const {
  // Thesis notation: <dim start (count stride)...>, outermost dimension first.
  std::string s;
  for (const auto& d : descriptors_) {
    if (!s.empty()) s += ' ';
    s += '<' + std::to_string(d.dims.size()) + ' ' + std::to_string(d.start);
    for (auto it = d.dims.rbegin(); it != d.dims.rend(); ++it)
      s += ' ' + std::to_string(it->first) + ' ' + std::to_string(it->second);
    s += '>';
  }
  return s.empty() ? "<>" : s;
}

}  // namespace scalatrace
