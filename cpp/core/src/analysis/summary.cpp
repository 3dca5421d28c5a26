// Per-op and per-call-site summaries from the compressed structure.
#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/structure_walk.hpp"
#include "scalatrace/analysis/analysis.hpp"

namespace scalatrace {

using namespace structure_walk;

namespace {

/// True if some value of `peer` is MPI_PROC_NULL (checked per run, without expanding).
bool may_be_proc_null(const ValueSeq* peer) {
  if (!peer) return false;
  for (const auto& block : peer->blocks())
    for (const auto& run : block.runs) {
      const __int128 last =
          static_cast<__int128>(run.first) + static_cast<__int128>(run.stride) * static_cast<__int128>(run.count - 1);
      if (std::min<__int128>(run.first, last) <= kProcNull && std::max<__int128>(run.first, last) >= kProcNull)
        return true;
    }
  return false;
}

/// Bytes a rank moves over `count` occurrences; occurrences whose peer is MPI_PROC_NULL move
/// nothing (MPI transfers no data), so they are left out: in closed form when the peer is
/// never MPI_PROC_NULL, occurrence by occurrence otherwise.
double bytes_moved(const ValueSeq* bytes, const ValueSeq* peer, std::uint64_t count) {
  if (!may_be_proc_null(peer)) return ScalarView{bytes}.total(count);
  ValueSeq::Reader b(bytes), p(peer);
  double total = 0;
  std::int64_t last_bytes = 0, last_peer = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!b.done()) last_bytes = b.next();
    if (!p.done()) last_peer = p.next();
    if (last_peer != kProcNull) total += static_cast<double>(last_bytes);
  }
  return total;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Summary

Summary summary(const Trace& trace) {
  const std::int64_t P = trace.nranks;
  struct Row {
    SummaryRow row;
    std::vector<bool> seen;  ///< ranks that make the call
    bool timed = false;
  };
  std::map<Op, Row> by_op;
  std::map<std::pair<std::uint32_t, Op>, Row> by_site;
  NodeKeys keys(P);
  TreeWalker walker(trace, [&](const EventNode& ev, const RankList& ranks, ExecSource exec) {
    keys.prepare(ev, exec);
    Row& op_row = by_op[ev.op];
    Row& site_row = by_site[{ev.site, ev.op}];
    for (Row* r : {&op_row, &site_row})
      if (r->seen.empty()) r->seen.assign(static_cast<std::size_t>(P), false);
    // (executions per rank, bytes alt, peer alt) -> ranks with that key
    std::map<std::tuple<std::uint64_t, std::int32_t, std::int32_t>, std::uint64_t> groups;
    std::map<std::pair<std::int32_t, std::int32_t>, std::uint64_t> per_exec;
    for_each_rank(ranks, [&](std::int64_t r) {
      if (r < 0 || r >= P) return;
      const AltKey k = keys.key(r);
      const std::pair<std::int32_t, std::int32_t> ek{k[kPresence], k[kTrips]};
      auto it = per_exec.find(ek);
      if (it == per_exec.end()) it = per_exec.emplace(ek, exec_count(exec, ek.first, ek.second)).first;
      if (it->second == 0) return;
      groups[{it->second, k[kBytes], k[kPeer]}] += 1;
      op_row.seen[static_cast<std::size_t>(r)] = true;
      site_row.seen[static_cast<std::size_t>(r)] = true;
    });
    std::uint64_t calls = 0;
    double bytes = 0;
    const auto& bytes_field = ev.fields[static_cast<std::size_t>(Field::Bytes)];
    const auto& peer_field = ev.fields[static_cast<std::size_t>(Field::Peer)];
    for (const auto& [k, nr] : groups) {
      const auto [per_rank, bytes_alt, peer_alt] = k;
      calls += per_rank * nr;
      bytes += bytes_moved(alt_seq(bytes_field, bytes_alt), alt_seq(peer_field, peer_alt), per_rank) *
               static_cast<double>(nr);
    }
    for (Row* r : {&op_row, &site_row}) {
      SummaryRow& row = r->row;
      row.op = ev.op;
      row.site = ev.site;
      row.calls += calls;
      row.bytes += bytes;
      row.duration_ns += ev.duration.sum();
      row.compute_ns += ev.compute.sum();
      if (ev.duration.count() > 0) {
        row.min_duration_ns = r->timed ? std::min(row.min_duration_ns, ev.duration.min()) : ev.duration.min();
        row.max_duration_ns = std::max(row.max_duration_ns, ev.duration.max());
        r->timed = true;
      }
    }
  });
  walker.run();
  auto finish = [](Row& r) {
    r.row.ranks = static_cast<std::uint64_t>(std::count(r.seen.begin(), r.seen.end(), true));
    return r.row;
  };
  Summary s;
  for (auto& [op, r] : by_op) {
    SummaryRow row = finish(r);
    row.site = 0;
    s.total_calls += row.calls;
    s.total_bytes += row.bytes;
    s.by_op.push_back(row);
  }
  for (auto& [k, r] : by_site) s.by_site.push_back(finish(r));
  return s;
}

}  // namespace scalatrace
