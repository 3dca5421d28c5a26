// Events every rank has (docs/extrapolation.md, "Events not every rank has"): the thesis' LCS
// step of lossy extrapolation (§3.2.4), across the ranks of one trace.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/extrapolate/extrapolate.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

constexpr std::size_t kMaxCommonCells = std::size_t{1} << 25;  ///< 768 MiB of alignment tables

/// How far two events of the same call agree: the number of equal fields and arrays (relative
/// peers equal up to the sign: a rank's neighbour at the same distance the other way). The
/// tie-break between alignments of equal length (MG's ranks that work on a coarse level
/// exchange through the same call sites as on every other level; the level whose parameters
/// are the reference rank's is the one kept).
std::int64_t agreement(const Event& a, const Event& b) {
  std::int64_t n = 0;
  for (std::size_t f = 0; f < kFieldCount; ++f) {
    const auto field = static_cast<Field>(f);
    if (field == Field::Peer || field == Field::Peer2)  // relative: the distance, either way
      n += a.fields[f] == b.fields[f] || (a.fields[f] > kAnySource && a.fields[f] == -b.fields[f]);
    else
      n += a.fields[f] == b.fields[f];
  }
  for (std::size_t f = 0; f < kArrayFieldCount; ++f) n += a.arrays[f] == b.arrays[f];
  return n;
}

/// The alignment of `ref` (positions `cols` of `ref_events`) with `evs` that matches the most
/// events of the same call (op and site); among those, the one with the fewest gaps (runs of
/// skipped events: a rank's extra work is whole stretches, a coarse level's exchange, not
/// events picked here and there); among those, the one whose matched events agree most with
/// the reference's parameters (which of two exchanges through the same calls is the one the
/// reference makes). Returns the matched (index into cols, index into evs) pairs in order.
std::vector<std::pair<std::size_t, std::size_t>> align(const std::vector<Event>& ref_events,
                                                       const std::vector<std::size_t>& cols,
                                                       const std::vector<Event>& evs) {
  const std::size_t n = cols.size(), m = evs.size();
  if (n > 0 && m > kMaxCommonCells / n)
    throw UsageError("common_events: aligning " + std::to_string(n) + " common events with a rank's " +
                     std::to_string(m) + " events needs more than " + std::to_string(kMaxCommonCells) +
                     " table cells (24 bytes each); drop local calls or use a snippet first");
  // Weights: one gap costs more than any total agreement, one more match outweighs any number
  // of gaps.
  const auto per_pair = static_cast<std::int64_t>(kFieldCount + kArrayFieldCount);
  const std::int64_t gap = per_pair * static_cast<std::int64_t>(n + 1) + 1;
  const std::int64_t match = gap * static_cast<std::int64_t>(n + m + 2);
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min() / 4;
  // Three states (Gotoh): the last step matched (M), skipped a reference event (X) or skipped
  // one of evs (Y).
  const std::size_t cells = (n + 1) * (m + 1);
  std::vector<std::int64_t> M(cells, kNone), X(cells, kNone), Y(cells, kNone);
  auto idx = [&](std::size_t i, std::size_t j) { return i * (m + 1) + j; };
  auto best = [&](std::size_t c) { return std::max({M[c], X[c], Y[c]}); };
  auto pair_score = [&](std::size_t i, std::size_t j) -> std::int64_t {
    const Event& a = ref_events[cols[i]];
    const Event& b = evs[j];
    if (a.op != b.op || a.site != b.site) return -1;
    return match + agreement(a, b);
  };
  M[idx(0, 0)] = 0;
  for (std::size_t i = 0; i <= n; ++i)
    for (std::size_t j = 0; j <= m; ++j) {
      const auto c = idx(i, j);
      if (i > 0 && j > 0) {
        const auto s = pair_score(i - 1, j - 1);
        if (s >= 0) M[c] = best(idx(i - 1, j - 1)) + s;
      }
      if (i > 0) {
        const auto u = idx(i - 1, j);
        X[c] = std::max({M[u] - gap, Y[u] - gap, X[u]});
      }
      if (j > 0) {
        const auto l = idx(i, j - 1);
        Y[c] = std::max({M[l] - gap, X[l] - gap, Y[l]});
      }
    }
  // Traceback; on ties a match first, then extending a gap.
  auto state_of = [&](std::size_t c) {
    const auto b = best(c);
    return M[c] == b ? 0 : Y[c] == b ? 2 : 1;
  };
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t i = n, j = m;
  int state = state_of(idx(i, j));
  while (i > 0 || j > 0) {
    const auto c = idx(i, j);
    if (state == 0) {
      out.emplace_back(i - 1, j - 1);
      --i;
      --j;
      state = state_of(idx(i, j));
    } else if (state == 1) {
      const auto u = idx(i - 1, j);
      state = X[c] == X[u] ? 1 : X[c] == M[u] - gap ? 0 : 2;
      --i;
    } else {
      const auto l = idx(i, j - 1);
      state = Y[c] == Y[l] ? 2 : Y[c] == M[l] - gap ? 0 : 1;
      --j;
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

using Calls = std::vector<std::pair<Op, std::uint32_t>>;

Calls calls_of(const std::vector<Event>& evs) {
  Calls c;
  c.reserve(evs.size());
  for (const auto& e : evs) c.emplace_back(e.op, e.site);
  return c;
}

}  // namespace

std::vector<std::vector<bool>> common_keep(const std::vector<std::vector<Event>>& ranks) {
  std::vector<std::vector<bool>> keep(ranks.size());
  if (ranks.empty()) return keep;
  // The reference: the rank with the fewest events (the lowest such rank). The common events
  // are a subsequence of its events, shrunk by one alignment with every other distinct call
  // sequence (the progressive LCS of the ranks' (op, call site) sequences).
  std::size_t ref = 0;
  for (std::size_t r = 1; r < ranks.size(); ++r)
    if (ranks[r].size() < ranks[ref].size()) ref = r;
  const auto& ref_events = ranks[ref];
  std::vector<std::size_t> common(ref_events.size());
  for (std::size_t i = 0; i < common.size(); ++i) common[i] = i;
  const Calls ref_calls = calls_of(ref_events);
  std::map<Calls, bool> seen;
  seen[ref_calls] = true;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    auto calls = calls_of(ranks[r]);
    if (!seen.emplace(std::move(calls), true).second) continue;
    const auto pairs = align(ref_events, common, ranks[r]);
    if (pairs.size() == common.size()) continue;
    std::vector<std::size_t> shrunk;
    for (const auto& [i, j] : pairs) shrunk.push_back(common[i]);
    common = std::move(shrunk);
  }
  Calls common_calls;
  for (auto i : common) common_calls.emplace_back(ref_events[i].op, ref_events[i].site);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    keep[r].assign(ranks[r].size(), false);
    if (calls_of(ranks[r]) == common_calls) {  // nothing of this rank is dropped
      keep[r].assign(ranks[r].size(), true);
      continue;
    }
    for (const auto& [i, j] : align(ref_events, common, ranks[r])) keep[r][j] = true;
  }
  return keep;
}

Trace common_events_trace(const Trace& trace, bool drop_local, std::uint64_t* dropped) {
  const auto n = static_cast<std::size_t>(trace.nranks);
  std::vector<std::vector<Event>> ranks(n);
  std::uint64_t local = 0;
  for (std::size_t r = 0; r < n; ++r) {
    Cursor cur(trace, static_cast<std::int64_t>(r), TimingMode::Mean);
    while (auto e = cur.next()) {
      if (drop_local && e->op == Op::Other) {
        ++local;
        continue;
      }
      ranks[r].push_back(std::move(*e));
    }
  }
  const auto keep = common_keep(ranks);
  TreeMerger merger;
  std::uint64_t uncommon = 0;
  for (std::size_t r = 0; r < n; ++r) {
    IntraCompressor compressor;
    compressor.set_sites(&trace.sites);
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      if (keep[r][i])
        compressor.push(ranks[r][i]);
      else
        ++uncommon;
    }
    CommTable comms;
    for (const auto& entry : trace.comms.entries) {
      if (!entry.holders.empty() && !entry.holders.contains(static_cast<std::int64_t>(r))) continue;
      if (entry.id == 1) continue;  // MPI_COMM_SELF: implicit
      comms.entries.push_back(CommEntry{entry.id, entry.members, RankList{}});
    }
    merger.push(make_rank_trace(static_cast<std::int64_t>(r), trace.nranks, compressor.finish(), trace.sites,
                                std::move(comms), trace.names));
  }
  Trace out = merger.finish();
  out.metadata = trace.metadata;
  if (dropped) *dropped = uncommon + local;
  return out;
}

}  // namespace scalatrace
