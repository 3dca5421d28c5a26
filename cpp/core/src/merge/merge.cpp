// Cross-rank merge (ScalaTrace §3, ScalaTrace 2 §5.2.4). See docs/algorithms.md,
// "Cross-rank merge".
//
// Two traces of disjoint rank sets merge level by level of the node tree:
//  1. each node sequence is put into a canonical order: nodes whose ranklists are disjoint
//     carry no causal order between them (no rank sees both), so a priority topological sort of
//     the rank-dependence graph reorders them by a program-order key (what the dependence graph
//     and yank lists of the paper achieve: disjoint sequences of different ranks do not
//     serialize in an arbitrary order that later merges cannot match);
//  2. a weighted longest common subsequence aligns the two sequences: events match when op and
//     call-site class match (SiteClasses: the same innermost frames, MergeConfig::site_match);
//     loops match when their bodies match well enough, whatever their trip
//     counts (trip counts are elastic); an event matches a loop whose body it matches by being
//     wrapped in a one-trip pseudo-loop;
//  3. matched nodes unite ranklists and merge their elastic values ((value sequence, ranklist)
//     pairs; identical sequences share one pair), presence sequences and histograms; matched
//     loops merge their bodies recursively; unmatched nodes keep their own ranklists.
// Every rank's subsequence at every level is exactly its own sequence, so the merge is
// lossless per rank whatever the alignment chooses.
#include "scalatrace/merge/merge.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <unordered_map>

#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/merge/timing_groups.hpp"
#include "scalatrace/model/site_match.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

// ---------------------------------------------------------------- per-rank traces

template <class Seq>
void own(Elastic<Seq>& e, const RankList& me) {
  for (auto& alt : e.alternatives)
    if (alt.second.empty()) alt.second = me;
}

void own_nodes(std::vector<Node>& nodes, const RankList& me) {
  for (auto& n : nodes) {
    if (n.ranks.empty()) n.ranks = me;
    own(n.presence, me);
    if (n.loop) {
      own(n.loop->trips, me);
      own_nodes(n.loop->body, me);
    } else if (n.event) {
      for (auto& f : n.event->fields) own(f, me);
      for (auto& a : n.event->arrays) own(a, me);
      own(n.event->site_ids, me);
    }
  }
}

// ---------------------------------------------------------------- id remapping

/// Maps every value of a sequence through f (value sequences of ids: sites, names).
ValueSeq map_values(const ValueSeq& seq, const std::function<std::int64_t(std::int64_t)>& f) {
  bool constant_runs = true;
  for (const auto& b : seq.blocks())
    for (const auto& r : b.runs) constant_runs = constant_runs && (r.stride == 0 || r.count == 1);
  if (constant_runs) {
    std::vector<ValueBlock> blocks = seq.blocks();
    for (auto& b : blocks)
      for (auto& r : b.runs) r.first = f(r.first);
    return ValueSeq::from_blocks(std::move(blocks));
  }
  ValueSeq out;
  ValueSeq::Reader rd(&seq);
  while (!rd.done()) out.append(f(rd.next()));
  return out;
}

struct Remap {
  std::vector<std::uint32_t> sites;
  std::vector<std::int64_t> names;
  bool sites_identity = true, names_identity = true;

  std::int64_t site(std::int64_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= sites.size())
      throw FormatError("call-site id " + std::to_string(id) + " out of range during merge");
    return sites[static_cast<std::size_t>(id)];
  }
  std::int64_t name(std::int64_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= names.size())
      throw FormatError("function-name id " + std::to_string(id) + " out of range during merge");
    return names[static_cast<std::size_t>(id)];
  }

  void apply(std::vector<Node>& nodes) const {
    for (auto& n : nodes) {
      if (n.loop) {
        apply(n.loop->body);
        continue;
      }
      if (!n.event) continue;
      EventNode& e = *n.event;
      if (!sites_identity) {
        e.site = static_cast<std::uint32_t>(site(e.site));
        for (auto& alt : e.site_ids.alternatives)
          alt.first = map_values(alt.first, [this](std::int64_t v) { return site(v); });
      }
      if (!names_identity && e.op == Op::Other) {
        for (auto& alt : e.fields[static_cast<std::size_t>(Field::NameId)].alternatives)
          alt.first = map_values(alt.first, [this](std::int64_t v) { return name(v); });
      }
    }
  }
};

// ---------------------------------------------------------------- elastic values

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

/// Hash of the sealed form (ValueSeq::seal): a sequence decoded from a child's transfer is
/// sealed, the same sequence built in memory may not be, and they are equal (operator==).
std::uint64_t seq_hash(const ValueSeq& seq) {
  ValueSeq scratch;
  const ValueSeq& s = seq.sealed_form(scratch);
  std::uint64_t h = s.size();
  for (const auto& b : s.blocks()) {
    h = mix(h, b.repeat);
    for (const auto& r : b.runs) {
      h = mix(h, static_cast<std::uint64_t>(r.first));
      h = mix(h, static_cast<std::uint64_t>(r.stride));
      h = mix(h, r.count);
    }
  }
  return h;
}

std::uint64_t seq_hash(const ArraySeq& s) {
  std::uint64_t h = s.size();
  for (const auto& r : s.runs()) {
    h = mix(h, r.count);
    for (auto v : r.values) h = mix(h, static_cast<std::uint64_t>(v));
  }
  return h;
}

/// Unions repeat within one merge (all fields of a node usually carry the node's ranklist):
/// a small cache of recent (a, b) -> a ∪ b, active during merge_into.
struct UniteCache {
  struct Entry {
    RankList a, b, result;
  };
  std::vector<Entry> entries;
  std::size_t next = 0;
  RankList unite(const RankList& a, const RankList& b) {
    for (const auto& e : entries)
      if (e.a == a && e.b == b) return e.result;
    RankList r = a.unite(b);
    if (entries.size() < 32) {
      entries.push_back(Entry{a, b, r});
    } else {
      entries[next] = Entry{a, b, r};
      next = (next + 1) % entries.size();
    }
    return r;
  }
};
thread_local UniteCache* g_unite_cache = nullptr;

RankList unite(const RankList& a, const RankList& b) { return g_unite_cache ? g_unite_cache->unite(a, b) : a.unite(b); }

/// a absorbs b: equal value sequences share one pair with united ranklists.
template <class Seq>
void merge_elastic(Elastic<Seq>& a, Elastic<Seq>&& b) {
  if (b.alternatives.empty()) return;
  if (a.alternatives.empty()) {
    a = std::move(b);
    return;
  }
  if (a.alternatives.size() * b.alternatives.size() <= 64) {
    for (auto& [seq, ranks] : b.alternatives) {
      bool found = false;
      for (auto& alt : a.alternatives)
        if (alt.first == seq) {
          alt.second = unite(alt.second, ranks);
          found = true;
          break;
        }
      if (!found) a.alternatives.emplace_back(std::move(seq), std::move(ranks));
    }
    return;
  }
  std::unordered_multimap<std::uint64_t, std::size_t> index;
  index.reserve(a.alternatives.size() + b.alternatives.size());
  for (std::size_t i = 0; i < a.alternatives.size(); ++i) index.emplace(seq_hash(a.alternatives[i].first), i);
  for (auto& [seq, ranks] : b.alternatives) {
    std::uint64_t h = seq_hash(seq);
    auto [lo, hi] = index.equal_range(h);
    bool found = false;
    for (auto it = lo; it != hi; ++it) {
      auto& alt = a.alternatives[it->second];
      if (alt.first == seq) {
        alt.second = unite(alt.second, ranks);
        found = true;
        break;
      }
    }
    if (!found) {
      index.emplace(h, a.alternatives.size());
      a.alternatives.emplace_back(std::move(seq), std::move(ranks));
    }
  }
}

/// Per (rank group) number of occurrences of an event node: the lengths of its first stored
/// field's sequences. Empty if the node stores no field.
const ElasticValue* occurrence_source(const EventNode& e) {
  for (const auto& f : e.fields)
    if (!f.empty()) return &f;
  return nullptr;
}

ElasticValue constant_like(const ElasticValue& shape, std::int64_t value) {
  ElasticValue out;
  for (const auto& [seq, ranks] : shape.alternatives)
    out.alternatives.emplace_back(ValueSeq::constant(value, seq.size()), ranks);
  return out;
}

/// An event node's occurrence counts per rank group (occurrence_source as constant sequences),
/// taken before its fields merge with another node's: after that, its first field also holds
/// the other side's ranks. Empty if the node stores no field.
ElasticValue occurrence_shape(const EventNode& e) {
  const ElasticValue* source = occurrence_source(e);
  return source != nullptr ? constant_like(*source, 0) : ElasticValue{};
}

/// Occurrences over every rank of a node (the sum of its occurrence_shape's lengths).
std::uint64_t total_occurrences(const ElasticValue& shape) {
  std::uint64_t n = 0;
  for (const auto& [seq, ranks] : shape.alternatives) n += seq.size() * static_cast<std::uint64_t>(ranks.size());
  return n;
}

/// Merges an elastic value stored on one side only: the other side's ranks get `fill`
/// (the value the cursor would have produced for them: 0 for unused fields, the node's own
/// site for site_ids), shaped by that side's occurrence counts (occurrence_shape).
void merge_one_sided(ElasticValue& a, ElasticValue&& b, const ElasticValue& shape_a, const ElasticValue& shape_b,
                     std::int64_t fill_a, std::int64_t fill_b, const char* what) {
  if (a.empty() == b.empty()) {
    merge_elastic(a, std::move(b));
    return;
  }
  const ElasticValue& shape = a.empty() ? shape_a : shape_b;
  if (shape.empty()) throw FormatError(std::string("cannot merge ") + what + ": no occurrence counts");
  (a.empty() ? a : b) = constant_like(shape, a.empty() ? fill_a : fill_b);
  merge_elastic(a, std::move(b));
}

// ---------------------------------------------------------------- call-site matching

/// What matching needs during one merge_into: the call-site classes of the master's table
/// (the slave's ids are remapped into it first).
struct MergeContext {
  SiteClasses classes;
  TimingScope timing;  ///< the merged trace's ranks and a rank's recorded time (timing groups)

  /// True if two event nodes are the same call: the same op and call-site class. Sites that
  /// differ within a class merge into per-occurrence site ids, which needs both sides'
  /// occurrence counts.
  bool same_call(const EventNode& x, const EventNode& y) {
    if (x.op != y.op) return false;
    if (x.site == y.site) return true;
    return classes.same(x.site, y.site) && occurrence_source(x) != nullptr && occurrence_source(y) != nullptr;
  }
};

// ---------------------------------------------------------------- ranklist dependence

std::int64_t first_rank(const RankList& rl) {
  std::int64_t lo = INT64_MAX;
  for (const auto& d : rl.descriptors()) {
    std::int64_t v = d.start;
    for (auto [c, s] : d.dims) v += std::min<std::int64_t>(0, (c - 1) * s);
    lo = std::min(lo, v);
  }
  return lo;
}

std::int64_t last_rank(const RankList& rl) {
  std::int64_t hi = INT64_MIN;
  for (const auto& d : rl.descriptors()) {
    std::int64_t v = d.start;
    for (auto [c, s] : d.dims) v += std::max<std::int64_t>(0, (c - 1) * s);
    hi = std::max(hi, v);
  }
  return hi;
}

/// True if the ranklists may share a rank (exact for small lists, conservative otherwise).
bool may_intersect(const RankList& a, const RankList& b) {
  if (a.empty() || b.empty()) return true;  // per-rank queues: same rank
  if (last_rank(a) < first_rank(b) || last_rank(b) < first_rank(a)) return false;
  const RankList& small = a.size() <= b.size() ? a : b;
  const RankList& big = a.size() <= b.size() ? b : a;
  if (small.size() > 4096) return true;
  for (std::int64_t r : small.to_vector())
    if (big.contains(r)) return true;
  return false;
}

// ---------------------------------------------------------------- alignment

/// Program-order key of a node: its first event's call-site class (the class's smallest site id)
/// and op (loops: of their first event), so that nodes that match sort alike.
std::uint64_t order_key(const Node& n, MergeContext& ctx) {
  const Node* p = &n;
  while (p->loop) {
    if (p->loop->body.empty()) return UINT64_MAX;
    p = &p->loop->body.front();
  }
  if (!p->event) return UINT64_MAX;
  return (std::uint64_t{ctx.classes.of(p->event->site)} << 16) | static_cast<std::uint64_t>(p->event->op);
}

/// The same order as canonicalize's graph walk, for sequences with few distinct ranklists
/// (the common case; a merge of long non-repeating stretches has tens of thousands of nodes and
/// a handful of ranklists): nodes with one ranklist form a chain, so only the first unplaced
/// node of each ranklist can be ready, and it is ready when no ranklist it may share a rank
/// with still has an earlier node unplaced. O(n k^2) for k ranklists instead of O(n^2) time
/// and memory. False (nothing changed) if there are too many ranklists.
bool canonicalize_by_groups(std::vector<Node>& seq, MergeContext& ctx) {
  constexpr std::size_t kMaxGroups = 64;
  const std::size_t n = seq.size();
  std::vector<const RankList*> lists;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t g = 0;
    while (g < lists.size() && !(*lists[g] == seq[i].ranks)) ++g;
    if (g == lists.size()) {
      if (lists.size() == kMaxGroups) return false;
      lists.push_back(&seq[i].ranks);
      members.emplace_back();
    }
    members[g].push_back(i);
  }
  const std::size_t k = lists.size();
  std::vector<std::vector<std::size_t>> conflicts(k);
  for (std::size_t g = 0; g < k; ++g) {
    if (!may_intersect(*lists[g], *lists[g])) return false;  // not a chain: the general walk
    for (std::size_t h = 0; h < k; ++h)
      if (h != g && may_intersect(*lists[g], *lists[h])) conflicts[g].push_back(h);
  }
  std::vector<std::uint64_t> key(n);
  for (std::size_t i = 0; i < n; ++i) key[i] = order_key(seq[i], ctx);
  std::vector<std::size_t> next(k, 0);
  auto head = [&](std::size_t g) { return next[g] < members[g].size() ? members[g][next[g]] : SIZE_MAX; };
  std::vector<Node> out;
  out.reserve(n);
  for (std::size_t placed = 0; placed < n; ++placed) {
    std::size_t best = SIZE_MAX, best_group = 0;
    for (std::size_t g = 0; g < k; ++g) {
      const std::size_t i = head(g);
      if (i == SIZE_MAX) continue;
      bool ready = true;
      for (std::size_t h : conflicts[g]) ready = ready && head(h) > i;
      if (ready && (best == SIZE_MAX || key[i] < key[best] || (key[i] == key[best] && i < best))) {
        best = i;
        best_group = g;
      }
    }
    out.push_back(std::move(seq[best]));
    ++next[best_group];
  }
  seq = std::move(out);
  return true;
}

/// Canonical order: priority topological sort of the rank-dependence graph (a node must stay
/// after every earlier node that may share a rank with it).
void canonicalize(std::vector<Node>& seq, MergeContext& ctx) {
  if (seq.size() < 2) return;
  bool uniform = true;
  for (std::size_t i = 1; i < seq.size() && uniform; ++i) uniform = seq[i].ranks == seq[0].ranks;
  if (uniform) return;
  if (canonicalize_by_groups(seq, ctx)) return;
  const std::size_t n = seq.size();
  std::vector<std::vector<std::size_t>> succ(n);
  std::vector<std::size_t> preds(n, 0);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < j; ++i)
      if (may_intersect(seq[i].ranks, seq[j].ranks)) {
        succ[i].push_back(j);
        ++preds[j];
      }
  std::vector<std::uint64_t> key(n);
  for (std::size_t i = 0; i < n; ++i) key[i] = order_key(seq[i], ctx);
  std::vector<std::size_t> ready, order;
  for (std::size_t i = 0; i < n; ++i)
    if (preds[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    auto best = std::min_element(ready.begin(), ready.end(), [&](std::size_t x, std::size_t y) {
      return key[x] != key[y] ? key[x] < key[y] : x < y;
    });
    std::size_t i = *best;
    ready.erase(best);
    order.push_back(i);
    for (std::size_t j : succ[i])
      if (--preds[j] == 0) ready.push_back(j);
  }
  std::vector<Node> out;
  out.reserve(n);
  for (std::size_t i : order) out.push_back(std::move(seq[i]));
  seq = std::move(out);
}

struct Aligner {
  MergeContext& ctx;

  /// Score of matching a with b (0: no match). Every pair of a table is scored once, and the
  /// nested scores of two loops belong to that pair only, so nothing is cached.
  long score(const Node& a, const Node& b) {
    if (a.event && b.event) return ctx.same_call(*a.event, *b.event) ? 1 : 0;
    if (a.loop && b.loop) {
      // Loop-agnostic (thesis §5.2.4): two loops match when their bodies share any event;
      // the alignment maximizes the total score, so a loop matches a weakly similar one only
      // when nothing better competes for it. (Requiring half the body to match left the
      // corner rank of a 3x3x3 halo exchange, whose 7 directions share one with its first
      // merge partner's 11, in a main loop of its own.)
      long w = lcs_score(a.loop->body, b.loop->body);
      return w > 0 ? 1 + w : 0;
    }
    // Event against loop: the event as a one-trip pseudo-loop (its body is the event alone).
    const Node& ev = a.event ? a : b;
    const Node& lp = a.event ? b : a;
    if (!ev.event || !lp.loop || !occurrence_source(*ev.event)) return 0;
    for (const auto& c : lp.loop->body)
      if (score(ev, c) > 0) return 2;
    return 0;
  }

  long lcs_score(const std::vector<Node>& x, const std::vector<Node>& y) {
    const std::size_t n = x.size(), m = y.size();
    constexpr std::size_t kInline = 32;  // short bodies (the common case) need no allocation
    std::array<long, 2 * (kInline + 1)> inline_rows{};
    std::vector<long> heap_rows;
    long* prev = inline_rows.data();
    if (m + 1 > kInline + 1) {
      heap_rows.assign(2 * (m + 1), 0);
      prev = heap_rows.data();
    }
    long* cur = prev + (m + 1);
    for (std::size_t i = 1; i <= n; ++i) {
      cur[0] = 0;
      for (std::size_t j = 1; j <= m; ++j) {
        long s = score(x[i - 1], y[j - 1]);
        cur[j] = std::max({prev[j], cur[j - 1], s > 0 ? prev[j - 1] + s : 0L});
      }
      std::swap(prev, cur);
    }
    return prev[m];
  }

  /// Matched index pairs of a maximal-score alignment, in order.
  std::vector<std::pair<std::size_t, std::size_t>> align(const std::vector<Node>& x, const std::vector<Node>& y) {
    const std::size_t n = x.size(), m = y.size();
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    // Common prefix and suffix of matching nodes need no table (the SPMD common case).
    std::size_t lo = 0;
    while (lo < n && lo < m && score(x[lo], y[lo]) > 0) {
      pairs.emplace_back(lo, lo);
      ++lo;
    }
    std::size_t hx = n, hy = m;
    std::vector<std::pair<std::size_t, std::size_t>> tail;
    while (hx > lo && hy > lo && score(x[hx - 1], y[hy - 1]) > 0) {
      --hx;
      --hy;
      tail.emplace_back(hx, hy);
    }
    const std::size_t rn = hx - lo, rm = hy - lo;
    if (rn > 0 && rm > 0 && rn * rm <= kMaxCells) {
      align_block(x, lo, hx, y, lo, hy, pairs);
    } else if (rn > 0 && rm > 0) {
      // Too long for one table (long non-repeating stretches): a block of x against a window
      // of y a little longer, both starting after the last kept match; only the matches in
      // the block's first half are kept (an alignment is least reliable near the window's
      // end), so memory and time stay linear in the lengths. Any order-preserving matching
      // merges correctly; only how much merges may be less than with one table.
      std::size_t i = lo, j = lo;
      std::vector<std::pair<std::size_t, std::size_t>> block;
      while (i < hx && j < hy) {
        const std::size_t bi = std::min(kBlock, hx - i);
        const std::size_t bj = std::min(kBlock + kBlock / 4, hy - j);
        const bool last_block = i + bi == hx || j + bj == hy;
        block.clear();
        align_block(x, i, i + bi, y, j, j + bj, block);
        const std::size_t keep_below = last_block ? hx : i + std::max<std::size_t>(1, bi / 2);
        bool kept = false;
        for (const auto& p : block) {
          if (p.first >= keep_below) break;
          pairs.push_back(p);
          kept = true;
        }
        if (last_block) break;
        if (kept) {
          i = pairs.back().first + 1;
          j = pairs.back().second + 1;
        } else {
          i = keep_below;
        }
      }
    }
    pairs.insert(pairs.end(), tail.rbegin(), tail.rend());
    return pairs;
  }

  /// Cells of the largest alignment table (16 bytes each) built in one piece.
  static constexpr std::size_t kMaxCells = std::size_t{4} << 20;
  /// Block length of the piecewise alignment (a block against twice as much: 2 M cells).
  static constexpr std::size_t kBlock = 1024;

  /// Appends the pairs of a maximal-score alignment of x[xlo, xhi) with y[ylo, yhi), in order.
  void align_block(const std::vector<Node>& x, std::size_t xlo, std::size_t xhi, const std::vector<Node>& y,
                   std::size_t ylo, std::size_t yhi, std::vector<std::pair<std::size_t, std::size_t>>& pairs) {
    const std::size_t rn = xhi - xlo, rm = yhi - ylo;
    std::vector<long> dp((rn + 1) * (rm + 1), 0);
    std::vector<long> sc(rn * rm, 0);
    auto at = [&](std::size_t i, std::size_t j) -> long& { return dp[i * (rm + 1) + j]; };
    for (std::size_t i = 1; i <= rn; ++i)
      for (std::size_t j = 1; j <= rm; ++j) {
        long s = score(x[xlo + i - 1], y[ylo + j - 1]);
        sc[(i - 1) * rm + (j - 1)] = s;
        at(i, j) = std::max({at(i - 1, j), at(i, j - 1), s > 0 ? at(i - 1, j - 1) + s : 0L});
      }
    std::vector<std::pair<std::size_t, std::size_t>> mid;
    std::size_t i = rn, j = rm;
    while (i > 0 && j > 0) {
      long s = sc[(i - 1) * rm + (j - 1)];
      if (s > 0 && at(i, j) == at(i - 1, j - 1) + s) {
        mid.emplace_back(xlo + i - 1, ylo + j - 1);
        --i;
        --j;
      } else if (at(i, j) == at(i - 1, j)) {
        --i;
      } else {
        --j;
      }
    }
    pairs.insert(pairs.end(), mid.rbegin(), mid.rend());
  }
};

std::vector<Node> merge_seq(std::vector<Node>&& a, std::vector<Node>&& b, MergeContext& ctx);

/// Wraps an event node in a one-trip pseudo-loop (same events for every rank).
Node wrap_in_pseudo_loop(Node&& ev) {
  Node loop;
  loop.ranks = ev.ranks;
  loop.presence = std::move(ev.presence);
  ev.presence = ElasticValue{};
  loop.loop = std::make_unique<LoopNode>();
  loop.loop->trips = constant_like(*occurrence_source(*ev.event), 1);
  loop.loop->body.push_back(std::move(ev));
  return loop;
}

/// Merges the per-occurrence call sites of two matched event nodes (x keeps its site as the
/// node's). Different sites (of one class) are spelled out on both sides: each side's
/// occurrences get its own site where it stored none.
void merge_sites(EventNode& x, EventNode& y, const ElasticValue& shape_x, const ElasticValue& shape_y) {
  if (x.site != y.site) {
    if (x.site_ids.empty()) x.site_ids = constant_like(shape_x, x.site);
    if (y.site_ids.empty()) y.site_ids = constant_like(shape_y, y.site);
  }
  merge_one_sided(x.site_ids, std::move(y.site_ids), shape_x, shape_y, x.site, y.site, "call-site ids");
}

void merge_node(Node& a, Node&& b, MergeContext& ctx) {
  if (a.loop && b.event) b = wrap_in_pseudo_loop(std::move(b));
  if (a.event && b.loop) a = wrap_in_pseudo_loop(std::move(a));
  const RankList a_ranks = a.ranks;
  a.ranks = unite(a.ranks, b.ranks);
  merge_elastic(a.presence, std::move(b.presence));
  if (a.loop) {
    merge_elastic(a.loop->trips, std::move(b.loop->trips));
    a.loop->body = merge_seq(std::move(a.loop->body), std::move(b.loop->body), ctx);
    return;
  }
  EventNode& x = *a.event;
  EventNode& y = *b.event;
  const ElasticValue shape_x = occurrence_shape(x), shape_y = occurrence_shape(y);
  // Lossy fields (made by the ranks' compressors, SCALATRACE_LOSSY): a field lossy on either
  // side is one histogram of both sides' occurrences.
  merge_lossy_fields(x, y, total_occurrences(shape_x), total_occurrences(shape_y));
  for (std::size_t f = 0; f < kFieldCount; ++f)
    merge_one_sided(x.fields[f], std::move(y.fields[f]), shape_x, shape_y, 0, 0, "an event field");
  for (std::size_t f = 0; f < kArrayFieldCount; ++f) {
    if (x.arrays[f].empty() != y.arrays[f].empty()) {
      // An array stored on one side only: the other side's occurrences had empty arrays.
      auto fill = [](const ElasticValue& shape) {
        ElasticArray out;
        if (shape.empty()) throw FormatError("cannot merge an array field: no occurrence counts");
        for (const auto& [seq, ranks] : shape.alternatives)
          out.alternatives.emplace_back(ArraySeq::empties(seq.size()), ranks);
        return out;
      };
      if (x.arrays[f].empty())
        x.arrays[f] = fill(shape_x);
      else
        y.arrays[f] = fill(shape_y);
    }
    merge_elastic(x.arrays[f], std::move(y.arrays[f]));
  }
  merge_sites(x, y, shape_x, shape_y);
  merge_timing(x, a_ranks, std::move(y), b.ranks, ctx.timing);
}

std::vector<Node> merge_seq(std::vector<Node>&& a, std::vector<Node>&& b, MergeContext& ctx) {
  if (b.empty()) return std::move(a);
  if (a.empty()) return std::move(b);
  canonicalize(a, ctx);
  canonicalize(b, ctx);
  Aligner aligner{ctx};
  auto pairs = aligner.align(a, b);
  std::vector<Node> out;
  out.reserve(a.size() + b.size() - pairs.size());
  std::size_t i = 0, j = 0;
  for (auto [pi, pj] : pairs) {
    while (i < pi) out.push_back(std::move(a[i++]));
    while (j < pj) out.push_back(std::move(b[j++]));
    merge_node(a[pi], std::move(b[pj]), ctx);
    out.push_back(std::move(a[pi]));
    i = pi + 1;
    j = pj + 1;
  }
  while (i < a.size()) out.push_back(std::move(a[i++]));
  while (j < b.size()) out.push_back(std::move(b[j++]));
  canonicalize(out, ctx);
  return out;
}

}  // namespace

Trace make_rank_trace(std::int64_t rank, std::int64_t nranks, std::vector<Node> nodes, CallSiteTable sites,
                      CommTable comms, std::vector<std::string> names) {
  Trace t;
  t.nranks = nranks;
  t.sites = std::move(sites);
  t.comms = std::move(comms);
  t.names = std::move(names);
  const RankList me = RankList::single(rank);
  // Id 1 is MPI_COMM_SELF by convention (event.hpp); its one member is the holder itself.
  // Keeping one entry per rank would make merged communicator tables grow with the rank count.
  std::erase_if(t.comms.entries, [&](const CommEntry& e) { return e.id == 1 && e.members == me; });
  for (auto& e : t.comms.entries)
    if (e.holders.empty()) e.holders = me;
  own_nodes(nodes, me);
  t.nodes = std::move(nodes);
  return t;
}

namespace {

/// Brings `other`'s call sites, names and communicators into `master`'s tables and renumbers
/// `other`'s nodes to match.
void import_tables(Trace& master, Trace& other) {
  Remap remap;
  remap.sites.resize(other.sites.size());
  for (std::uint32_t j = 0; j < other.sites.size(); ++j) {
    remap.sites[j] = master.sites.import(other.sites, j);
    remap.sites_identity = remap.sites_identity && remap.sites[j] == j;
  }
  std::unordered_map<std::string, std::int64_t> name_ids;
  for (std::size_t i = 0; i < master.names.size(); ++i) name_ids.emplace(master.names[i], static_cast<std::int64_t>(i));
  remap.names.resize(other.names.size());
  for (std::size_t j = 0; j < other.names.size(); ++j) {
    auto [it, inserted] = name_ids.emplace(other.names[j], static_cast<std::int64_t>(master.names.size()));
    if (inserted) master.names.push_back(other.names[j]);
    remap.names[j] = it->second;
    remap.names_identity = remap.names_identity && it->second == static_cast<std::int64_t>(j);
  }
  if (!remap.sites_identity || !remap.names_identity) remap.apply(other.nodes);
  master.comms.merge(other.comms);
}

}  // namespace

void merge_into(Trace& master, Trace&& slave, const MergeConfig& config) {
  master.nranks = std::max(master.nranks, slave.nranks);
  import_tables(master, slave);
  MergeContext ctx{SiteClasses(&master.sites, config.site_match), TimingScope{master.nranks, config.rank_time_ns}};
  for (auto& [k, v] : slave.metadata) master.metadata.emplace(k, v);
  UniteCache cache;
  UniteCache* saved = g_unite_cache;
  g_unite_cache = &cache;
  try {
    master.nodes = merge_seq(std::move(master.nodes), std::move(slave.nodes), ctx);
  } catch (...) {
    g_unite_cache = saved;
    throw;
  }
  g_unite_cache = saved;
}

void prepend_rank_segments(Trace& trace, std::vector<Trace>&& segments) {
  if (segments.empty()) return;
  std::vector<Node> nodes;
  for (Trace& segment : segments) {
    import_tables(trace, segment);
    for (Node& n : segment.nodes) nodes.push_back(std::move(n));
  }
  for (Node& n : trace.nodes) nodes.push_back(std::move(n));
  trace.nodes = std::move(nodes);
}

Trace merge_tree(std::vector<Trace> traces, const MergeConfig& config) {
  if (traces.empty()) return Trace{};
  const std::size_t n = traces.size();
  for (std::size_t step = 1; step < n; step *= 2)
    for (std::size_t i = 0; i + step < n; i += 2 * step) merge_into(traces[i], std::move(traces[i + step]), config);
  return std::move(traces[0]);
}

void TreeMerger::push(Trace&& trace) {
  stack_.emplace_back(1, std::move(trace));
  while (stack_.size() >= 2 && stack_[stack_.size() - 2].first == stack_.back().first) {
    auto top = std::move(stack_.back());
    stack_.pop_back();
    merge_into(stack_.back().second, std::move(top.second), config_);
    stack_.back().first *= 2;
  }
}

Trace TreeMerger::finish() {
  if (stack_.empty()) return Trace{};
  while (stack_.size() >= 2) {
    auto top = std::move(stack_.back());
    stack_.pop_back();
    merge_into(stack_.back().second, std::move(top.second), config_);
  }
  Trace t = std::move(stack_.back().second);
  stack_.clear();
  return t;
}

}  // namespace scalatrace
