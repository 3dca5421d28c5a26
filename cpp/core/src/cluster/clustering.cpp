// K-farthest clustering (ACURDION Alg. 1-2), exact rank groups, and the collector's cluster
// list encoding (see clustering.hpp).
#include "scalatrace/cluster/clustering.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "scalatrace/model/rank_math.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace {
namespace {

// ------------------------------------------------------------------ cluster list encoding
// Every number 8 bytes little-endian (support/wire.hpp): the list only passes between the
// collector's processes, so it favours a fixed layout over size.

/// The cluster list's reader: errors start "cluster list: ".
class ClusterListReader : public wire::Reader {
 public:
  using wire::Reader::Reader;
  std::uint64_t u64() { return fixed(8); }
  std::int64_t i64() { return static_cast<std::int64_t>(fixed(8)); }

 protected:
  std::string describe(const std::string& what) const override { return "cluster list: " + what; }
};

void put_u64(wire::Writer& w, std::uint64_t v) { w.fixed(v, 8); }
void put_i64(wire::Writer& w, std::int64_t v) { w.fixed(static_cast<std::uint64_t>(v), 8); }

void put_ranks(wire::Writer& w, const RankList& rl) {
  put_u64(w, rl.descriptors().size());
  for (const auto& d : rl.descriptors()) {
    put_i64(w, d.start);
    put_u64(w, d.dims.size());
    for (const auto& [count, stride] : d.dims) {
      put_i64(w, count);
      put_i64(w, stride);
    }
  }
}

/// A member ranklist, every rank in [0, nranks).
RankList get_ranks(ClusterListReader& r, std::int64_t nranks) {
  RankList rl;
  const std::size_t nd = r.bound(r.u64(), "ranklist descriptor", 16);
  for (std::size_t i = 0; i < nd; ++i) {
    RankDescriptor d;
    d.start = r.i64();
    const std::size_t dims = r.bound(r.u64(), "ranklist dimension", 16);
    std::int64_t lo = d.start, hi = d.start;
    for (std::size_t k = 0; k < dims; ++k) {
      const std::int64_t c = r.i64(), s = r.i64();
      if (c < 2 || c > nranks || s == 0 || s > nranks || s < -nranks) r.fail("bad ranklist dimension");
      (s > 0 ? hi : lo) += (c - 1) * s;
      d.dims.emplace_back(c, s);
    }
    if (lo < 0 || hi >= nranks) r.fail("rank outside [0, nranks)");
    rl.descriptors().push_back(std::move(d));
  }
  return rl;
}

void put_signature(wire::Writer& w, const RankSignature& s) {
  put_i64(w, s.rank);
  put_u64(w, s.events);
  put_u64(w, s.call_path);
  put_u64(w, s.types);
  put_u64(w, s.loop);
  put_u64(w, s.peers);
  for (double m : s.means) w.f64(m);
}

RankSignature get_signature(ClusterListReader& r, std::int64_t nranks) {
  RankSignature s;
  s.rank = r.i64();
  if (s.rank < 0 || s.rank >= nranks) r.fail("representative out of range");
  s.events = r.u64();
  s.call_path = r.u64();
  s.types = r.u64();
  s.loop = r.u64();
  s.peers = r.u64();
  for (double& m : s.means) m = r.f64();
  return s;
}

// ------------------------------------------------------------------ rank groups

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ull;
}

class GroupKeys {
 public:
  GroupKeys(std::int64_t nranks, bool with_values)
      : keys_(static_cast<std::size_t>(nranks), 0), nranks_(nranks), with_values_(with_values) {}

  void walk(const std::vector<Node>& nodes) {
    for (const auto& n : nodes) {
      const std::uint64_t id = ++next_id_;
      add(n.ranks, id);
      if (with_values_) {
        add_elastic(n.presence, id);
        if (n.loop) add_elastic(n.loop->trips, id);
        if (n.event) {
          for (const auto& f : n.event->fields) add_elastic(f, id);
          for (const auto& a : n.event->arrays) add_elastic(a, id);
          add_elastic(n.event->site_ids, id);
          // Ranks of different timing groups have different compute/duration histograms.
          const auto& groups = n.event->timing_groups;
          for (std::size_t g = 0; g < groups.size(); ++g) add(groups[g].ranks, mix(id, 0x7100 + g));
        }
      }
      if (n.loop) walk(n.loop->body);
    }
  }
  std::vector<std::int64_t> labels() const {
    std::vector<std::int64_t> out(keys_.size());
    std::unordered_map<std::uint64_t, std::int64_t> ids;
    for (std::size_t r = 0; r < keys_.size(); ++r)
      out[r] = ids.try_emplace(keys_[r], static_cast<std::int64_t>(ids.size())).first->second;
    return out;
  }

 private:
  void add(const RankList& ranks, std::uint64_t id) {
    if (ranks.empty()) {
      for (auto& k : keys_) k = mix(k, id);
      return;
    }
    for_each_rank(ranks, [&](std::int64_t r) {
      if (r >= 0 && r < nranks_) keys_[static_cast<std::size_t>(r)] = mix(keys_[static_cast<std::size_t>(r)], id);
    });
  }
  template <class Seq>
  void add_elastic(const Elastic<Seq>& v, std::uint64_t id) {
    // One alternative for everybody (empty ranklist) tells no rank from another.
    if (v.alternatives.size() == 1 && v.alternatives[0].second.empty()) return;
    for (std::size_t a = 0; a < v.alternatives.size(); ++a) add(v.alternatives[a].second, mix(id, a + 1));
  }

  std::vector<std::uint64_t> keys_;
  std::int64_t nranks_;
  bool with_values_;
  std::uint64_t next_id_ = 0;
};

// ------------------------------------------------------------------ cluster assignment

template <class Seq>
void reassign(Elastic<Seq>& v, const RankList& from, const RankList& to) {
  for (auto& alt : v.alternatives)
    if (alt.second == from) alt.second = to;
}

void reassign_nodes(std::vector<Node>& nodes, const RankList& from, const RankList& to) {
  for (auto& n : nodes) {
    if (n.ranks == from) n.ranks = to;
    reassign(n.presence, from, to);
    if (n.loop) {
      reassign(n.loop->trips, from, to);
      reassign_nodes(n.loop->body, from, to);
    }
    if (n.event) {
      for (auto& f : n.event->fields) reassign(f, from, to);
      for (auto& a : n.event->arrays) reassign(a, from, to);
      reassign(n.event->site_ids, from, to);
    }
  }
}

}  // namespace

std::vector<SignatureCluster> kfarthest_step(std::vector<SignatureCluster> candidates, std::size_t k, FeatureMask mask,
                                             bool grow) {
  if (k == 0) throw UsageError("K-farthest clustering needs k >= 1");
  const std::size_t n = candidates.size();
  if (n <= 1) return candidates;
  // Distances compare lexicographically by importance group (ACURDION's group shifting).
  std::vector<GroupedDistance> dist(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      dist[i * n + j] = dist[j * n + i] = grouped_signature_distance(candidates[i].head, candidates[j].head, mask);
  // Farthest-first: the next selected candidate maximizes its distance to the nearest selected.
  std::vector<std::size_t> selected{0};
  std::vector<GroupedDistance> nearest(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<bool> chosen(n, false);
  chosen[0] = true;
  while (true) {
    std::size_t best = n;
    for (std::size_t i = 0; i < n; ++i)
      if (!chosen[i] && (best == n || nearest[i] > nearest[best])) best = i;
    if (best == n || nearest[best].zero()) break;  // the rest repeat a selected signature
    // Dynamic K (ACURDION §V): past k, a candidate is still selected while its call path, types
    // or peer set differ from every selected one, so no rank is represented by one with other
    // calls or other relative peers (whose events would not fit the ranks it stands for).
    // Bounded (kMaxCallPathClusters) so that a program whose every rank calls differently
    // cannot make the step quadratic in the rank count.
    if (selected.size() >= k && (!grow || nearest[best].call == 0 || selected.size() >= kMaxCallPathClusters)) break;
    chosen[best] = true;
    selected.push_back(best);
    for (std::size_t i = 0; i < n; ++i) nearest[i] = std::min(nearest[i], dist[best * n + i]);
  }
  std::vector<SignatureCluster> out;
  out.reserve(k);
  for (std::size_t s : selected) out.push_back(candidates[s]);
  // Every other candidate joins its nearest selected cluster (ties: the earlier selected).
  for (std::size_t i = 0; i < n; ++i) {
    if (chosen[i]) continue;
    std::size_t to = 0;
    for (std::size_t s = 1; s < selected.size(); ++s)
      if (dist[selected[s] * n + i] < dist[selected[to] * n + i]) to = s;
    out[to].members = out[to].members.unite(candidates[i].members);
  }
  return out;
}

FeatureMask signature_format(const std::vector<RankSignature>& signatures) {
  FeatureMask format = 0;
  const std::size_t n = signatures.size();
  for (std::size_t step = 1; step < n; step *= 2)
    for (std::size_t r = 0; r + step < n; r += 2 * step)
      format |= signature_difference(signatures[r], signatures[r + step]);
  return format;
}

ClusterAssignment kfarthest_clusters(const std::vector<RankSignature>& signatures, std::size_t k, FeatureMask features,
                                     bool grow) {
  if (k == 0) throw UsageError("K-farthest clustering needs k >= 1");
  if (signatures.empty()) throw UsageError("K-farthest clustering of zero ranks");
  ClusterAssignment result;
  result.format = signature_format(signatures) & features;
  const std::size_t n = signatures.size();
  std::vector<std::vector<SignatureCluster>> lists(n);
  for (std::size_t i = 0; i < n; ++i) lists[i].push_back({signatures[i], RankList::single(signatures[i].rank)});
  for (std::size_t step = 1; step < n; step *= 2)
    for (std::size_t r = 0; r + step < n; r += 2 * step) {
      auto& mine = lists[r];
      auto& child = lists[r + step];
      for (auto& c : child) mine.push_back(std::move(c));
      child.clear();
      mine = kfarthest_step(std::move(mine), k, result.format, grow);
    }
  std::vector<SignatureCluster> clusters = std::move(lists[0]);
  std::sort(clusters.begin(), clusters.end(), [](const auto& a, const auto& b) { return a.head.rank < b.head.rank; });
  std::unordered_map<std::int64_t, std::size_t> position;
  for (std::size_t i = 0; i < n; ++i) position.emplace(signatures[i].rank, i);
  result.labels.assign(n, -1);
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    result.representatives.push_back(clusters[c].head.rank);
    for_each_rank(clusters[c].members,
                  [&](std::int64_t r) { result.labels[position.at(r)] = static_cast<std::int64_t>(c); });
  }
  return result;
}

std::vector<std::int64_t> rank_groups(const Trace& trace, bool with_values) {
  GroupKeys keys(trace.nranks, with_values);
  keys.walk(trace.nodes);
  return keys.labels();
}

void assign_to_cluster(Trace& trace, std::int64_t rank, const RankList& members) {
  reassign_nodes(trace.nodes, RankList::single(rank), members);
}

void prepare_clustered_rank_trace(Trace& local, std::int64_t rank, const std::vector<RankCluster>& clusters,
                                  FeatureMask format) {
  const RankCluster* mine = nullptr;
  for (const auto& c : clusters)
    if (c.members.contains(rank)) mine = &c;
  if (!mine) throw UsageError("rank " + std::to_string(rank) + " is in no cluster");
  if (mine->representative == rank)
    assign_to_cluster(local, rank, mine->members);
  else
    local.nodes.clear();
  if (rank != 0) return;
  local.clusters = clusters;
  std::string features;
  for (std::size_t i = 0; i < kSignatureFeatureCount; ++i)
    if (format & (FeatureMask{1} << i))
      features += (features.empty() ? "" : ",") + std::string(signature_feature_name(static_cast<SignatureFeature>(i)));
  local.metadata["clusters.count"] = std::to_string(clusters.size());
  local.metadata["clusters.signature_format"] = features;
  if (clusters.size() < static_cast<std::size_t>(local.nranks))
    local.metadata["clusters.lossy"] =
        "only representatives' events are recorded; every other rank reads its representative's "
        "events with peers relative to itself";
}

std::string encode_clusters(FeatureMask format, const std::vector<SignatureCluster>& clusters) {
  wire::Writer w;
  put_u64(w, format);
  put_u64(w, clusters.size());
  for (const auto& c : clusters) {
    put_signature(w, c.head);
    put_ranks(w, c.members);
  }
  return w.take();
}

std::vector<SignatureCluster> decode_clusters(std::string_view bytes, std::int64_t nranks, FeatureMask& format) {
  ClusterListReader r(bytes);
  const std::uint64_t f = r.u64();
  if (f & ~std::uint64_t{kAllFeatures}) r.fail("unknown feature bits");
  format = static_cast<FeatureMask>(f);
  std::vector<SignatureCluster> out(r.bound(r.u64(), "cluster", 120));
  for (auto& c : out) {
    c.head = get_signature(r, nranks);
    c.members = get_ranks(r, nranks);
  }
  if (!r.done()) r.fail("unexpected bytes at the end");
  return out;
}

std::vector<RankCluster> to_rank_clusters(const std::vector<SignatureCluster>& clusters) {
  std::vector<RankCluster> out;
  out.reserve(clusters.size());
  for (const auto& c : clusters) out.push_back({c.head.rank, c.members});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.representative < b.representative; });
  return out;
}

std::vector<RankCluster> to_rank_clusters(const ClusterAssignment& assignment,
                                          const std::vector<RankSignature>& signatures) {
  std::vector<RankCluster> out;
  for (std::int64_t rep : assignment.representatives) out.push_back({rep, {}});
  std::vector<std::pair<std::int64_t, std::size_t>> by_rank;  // (rank, cluster), ascending rank
  for (std::size_t i = 0; i < signatures.size(); ++i)
    by_rank.emplace_back(signatures[i].rank, static_cast<std::size_t>(assignment.labels.at(i)));
  std::sort(by_rank.begin(), by_rank.end());
  for (const auto& [rank, cluster] : by_rank) out.at(cluster).members.push_back(rank);
  return out;
}

std::int64_t representative_of(const Trace& trace, std::int64_t rank) {
  for (const auto& c : trace.clusters)
    if (c.members.contains(rank)) return c.representative;
  return rank;
}

}  // namespace scalatrace
