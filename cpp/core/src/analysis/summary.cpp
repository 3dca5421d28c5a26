// Per-op and per-call-site summaries from the compressed structure.
#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/structure_walk.hpp"
#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/model/site_match.hpp"

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

/// Calls and bytes of one call site within an event node.
struct SiteShare {
  std::uint64_t calls = 0;
  double bytes = 0;
};

/// Adds to `shares` the calls and bytes of `count` occurrences of a rank whose sites, bytes and
/// peers are these sequences (null: the node's site / no bytes / no peer), `ranks` such ranks.
void add_site_shares(std::map<std::uint32_t, SiteShare>& shares, std::uint32_t node_site, const ValueSeq* sites,
                     const ValueSeq* bytes, const ValueSeq* peer, std::uint64_t count, std::uint64_t ranks) {
  if (sites == nullptr || sites->empty() || sites->is_constant()) {
    SiteShare& s = shares[sites != nullptr && !sites->empty() ? static_cast<std::uint32_t>(sites->at(0)) : node_site];
    s.calls += count * ranks;
    s.bytes += bytes_moved(bytes, peer, count) * static_cast<double>(ranks);
    return;
  }
  // Sites that vary between occurrences (call sites matched by their innermost frames): one
  // occurrence at a time.
  ValueSeq::Reader site(sites), b(bytes), p(peer);
  std::int64_t last_site = node_site, last_bytes = 0, last_peer = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!site.done()) last_site = site.next();
    if (!b.done()) last_bytes = b.next();
    if (!p.done()) last_peer = p.next();
    SiteShare& s = shares[static_cast<std::uint32_t>(last_site)];
    s.calls += ranks;
    if (last_peer != kProcNull) s.bytes += static_cast<double>(last_bytes) * static_cast<double>(ranks);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Summary

namespace {

/// The name id of a node recorded as Op::Other (its first occurrence's Field::NameId: a call
/// site calls one function), -1 for the other ops.
std::int64_t function_name_id(const EventNode& ev) {
  if (ev.op != Op::Other) return -1;
  const auto& names = ev.fields[static_cast<std::size_t>(Field::NameId)].alternatives;
  if (names.empty() || names.front().first.empty()) return -1;
  ValueSeq::Reader first(&names.front().first);
  return first.done() ? -1 : first.next();
}

}  // namespace

Summary summary(const Trace& trace) {
  const std::int64_t P = trace.nranks;
  struct Row {
    SummaryRow row;
    std::vector<bool> seen;  ///< ranks that make the call
    bool timed = false;
  };
  // Keyed by (op, function name id): every function recorded as Other has rows of its own.
  std::map<std::pair<Op, std::int64_t>, Row> by_op;
  std::map<std::tuple<std::uint32_t, Op, std::int64_t>, Row> by_site;
  NodeKeys keys(P);
  AltLabels site_labels(P);
  const std::size_t nsites = trace.sites.size();
  TreeWalker walker(trace, [&](const EventNode& ev, const RankList& ranks, ExecSource exec) {
    keys.prepare(ev, exec);
    site_labels.prepare(ev.site_ids);
    const std::int64_t name_id = function_name_id(ev);
    Row& op_row = by_op[{ev.op, name_id}];
    if (op_row.seen.empty()) op_row.seen.assign(static_cast<std::size_t>(P), false);
    auto site_row = [&](std::uint32_t site) -> Row& {
      Row& r = by_site[{site, ev.op, name_id}];
      if (r.seen.empty()) r.seen.assign(static_cast<std::size_t>(P), false);
      return r;
    };
    // A node's occurrences may come from several call sites (EventNode::site_ids): each
    // rank counts for the sites its own sequence holds.
    std::map<std::int32_t, std::vector<std::uint32_t>> sites_of_alt;
    auto sites_of = [&](std::int32_t alt) -> const std::vector<std::uint32_t>& {
      auto it = sites_of_alt.find(alt);
      if (it != sites_of_alt.end()) return it->second;
      const ValueSeq* seq = alt_seq(ev.site_ids, alt);
      return sites_of_alt
          .emplace(alt, seq != nullptr && !seq->empty() ? distinct_sites(*seq, nsites) : std::vector{ev.site})
          .first->second;
    };
    // (executions per rank, bytes alt, peer alt, site alt) -> ranks with that key
    std::map<std::tuple<std::uint64_t, std::int32_t, std::int32_t, std::int32_t>, std::uint64_t> groups;
    std::map<std::pair<std::int32_t, std::int32_t>, std::uint64_t> per_exec;
    for_each_rank(ranks, [&](std::int64_t r) {
      if (r < 0 || r >= P) return;
      const AltKey k = keys.key(r);
      const std::pair<std::int32_t, std::int32_t> ek{k[kPresence], k[kTrips]};
      auto it = per_exec.find(ek);
      if (it == per_exec.end()) it = per_exec.emplace(ek, exec_count(exec, ek.first, ek.second)).first;
      if (it->second == 0) return;
      const std::int32_t site_alt = site_labels.at(r);
      groups[{it->second, k[kBytes], k[kPeer], site_alt}] += 1;
      op_row.seen[static_cast<std::size_t>(r)] = true;
      for (std::uint32_t site : sites_of(site_alt)) site_row(site).seen[static_cast<std::size_t>(r)] = true;
    });
    std::map<std::uint32_t, SiteShare> shares;
    const auto& bytes_field = ev.fields[static_cast<std::size_t>(Field::Bytes)];
    const auto& peer_field = ev.fields[static_cast<std::size_t>(Field::Peer)];
    for (const auto& [k, nr] : groups) {
      const auto [per_rank, bytes_alt, peer_alt, site_alt] = k;
      add_site_shares(shares, ev.site, alt_seq(ev.site_ids, site_alt), alt_seq(bytes_field, bytes_alt),
                      alt_seq(peer_field, peer_alt), per_rank, nr);
    }
    // A lossy trace's byte counts (docs/lossy.md): each call moves the histogram's mean.
    if (const ValueHistogram* lossy_bytes = ev.lossy_values(Field::Bytes))
      for (auto& [site, share] : shares) share.bytes = static_cast<double>(share.calls) * lossy_bytes->mean();
    std::uint64_t calls = 0;
    double bytes = 0;
    for (const auto& [site, share] : shares) {
      calls += share.calls;
      bytes += share.bytes;
    }
    // Timing is one histogram per node: a site's part of it is its part of the calls.
    auto add = [&](Row& r, std::uint32_t site, std::uint64_t row_calls, double row_bytes, double time_share) {
      SummaryRow& row = r.row;
      row.op = ev.op;
      row.name_id = name_id;
      row.site = site;
      row.calls += row_calls;
      row.bytes += row_bytes;
      row.duration_ns += ev.duration.sum() * time_share;
      row.compute_ns += ev.compute.sum() * time_share;
      if (ev.duration.count() > 0) {
        row.min_duration_ns = r.timed ? std::min(row.min_duration_ns, ev.duration.min()) : ev.duration.min();
        row.max_duration_ns = std::max(row.max_duration_ns, ev.duration.max());
        r.timed = true;
      }
    };
    add(op_row, ev.site, calls, bytes, 1.0);
    if (shares.empty()) {
      add(site_row(ev.site), ev.site, 0, 0, 1.0);
      return;
    }
    for (const auto& [site, share] : shares)
      add(site_row(site), site, share.calls, share.bytes,
          shares.size() == 1 || calls == 0 ? 1.0 : static_cast<double>(share.calls) / static_cast<double>(calls));
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
