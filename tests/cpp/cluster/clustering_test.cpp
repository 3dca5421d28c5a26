// Rank signatures and K-farthest clustering: known behaviour classes of generated programs come
// out as clusters; the clustered merge keeps representatives lossless and gives every other
// rank its representative's events; cluster lists and the trace section round-trip and reject
// bad input.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scalatrace/cluster/clustering.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

using namespace scalatrace;

namespace {

SyntheticSpec stencil2d_grid(std::int64_t px, std::int64_t py) {
  SyntheticSpec spec;
  spec.pattern = SyntheticPattern::Stencil2D;
  spec.nranks = px * py;
  spec.dims = {px, py};
  spec.timesteps = 4;
  spec.wrap = false;
  spec.timing_jitter = false;
  return spec;
}

SyntheticSpec stencil2d_3x3() { return stencil2d_grid(3, 3); }

/// Clusters as sets of ranks (label numbering aside).
std::set<std::set<std::int64_t>> partition(const std::vector<std::int64_t>& labels) {
  std::map<std::int64_t, std::set<std::int64_t>> by_label;
  for (std::size_t r = 0; r < labels.size(); ++r) by_label[labels[r]].insert(static_cast<std::int64_t>(r));
  std::set<std::set<std::int64_t>> out;
  for (auto& [l, ranks] : by_label) out.insert(ranks);
  return out;
}

/// Same calls in the same order (timing aside).
bool same_calls(const std::vector<Event>& a, const std::vector<Event>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_call(b[i])) return false;
  return true;
}

}  // namespace

TEST(Signature, SameFromPerRankAndMergedTrace) {
  const auto spec = stencil2d_3x3();
  const Trace all = synthetic_merged_trace(spec);
  for (std::int64_t r = 0; r < spec.nranks; ++r)
    EXPECT_EQ(compute_signature(synthetic_rank_trace(spec, r), r), compute_signature(all, r)) << "rank " << r;
}

TEST(Signature, TraceSignaturesEqualOneCursorWalkPerRank) {
  SyntheticSpec irregular;
  irregular.pattern = SyntheticPattern::Irregular;
  irregular.nranks = 12;
  irregular.timesteps = 6;
  for (const auto& spec : {stencil2d_3x3(), irregular}) {
    const Trace t = synthetic_merged_trace(spec);
    const auto all = trace_signatures(t);
    ASSERT_EQ(all.size(), static_cast<std::size_t>(spec.nranks));
    for (std::int64_t r = 0; r < spec.nranks; ++r)
      EXPECT_EQ(all[static_cast<std::size_t>(r)], compute_signature(t, r)) << "rank " << r;
  }
}

TEST(Signature, CallPathDependsOnOrderNotOnlyOnTheSetOfCalls) {
  Trace t;
  t.nranks = 1;
  const std::uint32_t a = t.sites.intern({{0, 1}}), b = t.sites.intern({{0, 2}});
  auto push = [&](std::uint32_t site) {
    Node n;
    n.event = std::make_unique<EventNode>();
    n.event->op = Op::Barrier;
    n.event->site = site;
    n.ranks = RankList::single(0);
    t.nodes.push_back(std::move(n));
  };
  push(a);
  push(b);
  const RankSignature ab = compute_signature(t, 0);
  std::swap(t.nodes[0], t.nodes[1]);
  const RankSignature ba = compute_signature(t, 0);
  EXPECT_NE(ab.call_path, ba.call_path);
  EXPECT_EQ(ab.events, 2u);
}

TEST(Signature, FeatureNamesRoundTripAndUnknownNameIsAnError) {
  for (std::size_t i = 0; i < kSignatureFeatureCount; ++i) {
    const auto f = static_cast<SignatureFeature>(i);
    EXPECT_EQ(signature_feature_from_name(signature_feature_name(f)), f);
  }
  EXPECT_THROW(signature_feature_from_name("colour"), UsageError);
}

TEST(Signature, CallPathDifferenceOutweighsAnyParameterDifference) {
  RankSignature a, b, c;
  b.call_path = 1;                            // differs from a in the call path only
  c.means = {1e9, -5, 7, 3, 1, 1, 1e9, 1e9};  // differs from a in every parameter
  c.loop = 0xffff;
  EXPECT_GT(signature_distance(a, b), signature_distance(a, c));
  EXPECT_EQ(signature_distance(a, b, kAllFeatures & ~feature_bit(SignatureFeature::CallPath)), 0.0);
}

constexpr FeatureMask kWithoutPeers = kAllFeatures & ~feature_bit(SignatureFeature::Peers);

TEST(Clustering, StencilCornersEdgesInteriorAreThreeClustersWithoutPeers) {
  const Trace t = synthetic_merged_trace(stencil2d_3x3());
  const auto sigs = trace_signatures(t);
  const ClusterAssignment c = kfarthest_clusters(sigs, 3, kWithoutPeers);
  const std::set<std::set<std::int64_t>> expected = {{0, 2, 6, 8}, {1, 3, 5, 7}, {4}};
  EXPECT_EQ(partition(c.labels), expected);
  ASSERT_EQ(c.representatives.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k)
    EXPECT_EQ(c.labels[static_cast<std::size_t>(c.representatives[k])], static_cast<std::int64_t>(k));
  EXPECT_TRUE(c.format & feature_bit(SignatureFeature::CallPath));
  // With K = 9 every rank of the 3x3 grid is its own cluster (corners differ in directions).
  EXPECT_EQ(partition(kfarthest_clusters(sigs, 9, kWithoutPeers).labels).size(), 9u);
  // With the peer sets (the default), dynamic K keeps the 9 neighbour sets apart even for K = 3.
  EXPECT_EQ(partition(kfarthest_clusters(sigs, 3).labels).size(), 9u);
}

TEST(Clustering, DynamicKGivesEveryRankARepresentativeWithItsOwnPeersAndCalls) {
  const SyntheticSpec spec = stencil2d_grid(5, 5);
  const Trace full = synthetic_merged_trace(spec);
  // 5 x 5 grid: 4 corners, 4 edge orientations (3 ranks each), 9 interior ranks = 9 classes.
  const ClusterAssignment c = kfarthest_clusters(trace_signatures(full), 3);
  EXPECT_EQ(c.representatives.size(), 9u);
  for (std::int64_t r = 0; r < spec.nranks; ++r) {
    const std::int64_t rep = c.representatives[static_cast<std::size_t>(c.labels[static_cast<std::size_t>(r)])];
    EXPECT_TRUE(same_calls(expand(full, rep), expand(full, r))) << "rank " << r << " represented by " << rep;
  }
  // Dynamic K is bounded: 3 x 3 x 3 has 27 neighbour sets, all kept (27 <= 64) ...
  SyntheticSpec cube = stencil2d_grid(3, 9);
  cube.pattern = SyntheticPattern::Stencil3D;
  cube.dims = {3, 3, 3};
  EXPECT_EQ(kfarthest_clusters(trace_signatures(synthetic_merged_trace(cube)), 9).representatives.size(), 27u);
  // ... but never beyond max(k, kMaxCallPathClusters), however many classes there are.
  std::vector<RankSignature> distinct;
  for (std::int64_t r = 0; r < 200; ++r) {
    RankSignature s;
    s.rank = r;
    s.peers = static_cast<std::uint64_t>(r) * 7919u;
    distinct.push_back(s);
  }
  EXPECT_EQ(kfarthest_clusters(distinct, 9).representatives.size(), kMaxCallPathClusters);
  EXPECT_EQ(kfarthest_clusters(distinct, 100).representatives.size(), 100u);
}

TEST(Clustering, RowColumnCommunicatorsGroupByColor) {
  SyntheticSpec spec;
  spec.pattern = SyntheticPattern::RowColumn;
  spec.nranks = 6;
  spec.dims = {3, 2};
  spec.timesteps = 2;
  spec.timing_jitter = false;
  const Trace t = synthetic_merged_trace(spec);
  const auto sigs = trace_signatures(t);
  // Only the split colors/keys (and the communicator members they imply) tell ranks apart.
  const ClusterAssignment c = kfarthest_clusters(sigs, 6);
  EXPECT_EQ(partition(c.labels).size(), 6u);
  EXPECT_TRUE(c.format & feature_bit(SignatureFeature::Color));
  EXPECT_FALSE(c.format & feature_bit(SignatureFeature::CallPath));
}

TEST(Clustering, OneRankIsOneClusterAndBadKIsAnError) {
  const Trace t = synthetic_merged_trace(stencil2d_grid(1, 1));
  const ClusterAssignment c = kfarthest_clusters(trace_signatures(t), 9);
  EXPECT_EQ(c.labels, std::vector<std::int64_t>{0});
  EXPECT_EQ(c.representatives, std::vector<std::int64_t>{0});
  EXPECT_THROW(kfarthest_clusters(trace_signatures(t), 0), UsageError);
  EXPECT_THROW(kfarthest_clusters({}, 3), UsageError);
}

TEST(Clustering, KFarthestStepKeepsKAndLosesNoRank) {
  std::vector<SignatureCluster> cands;
  for (std::int64_t r = 0; r < 20; ++r) {
    RankSignature s;
    s.rank = r;
    s.call_path = static_cast<std::uint64_t>(r % 4);
    s.means[0] = static_cast<double>(r);
    cands.push_back({s, RankList::single(r)});
  }
  const auto out = kfarthest_step(cands, 4, kAllFeatures);
  ASSERT_EQ(out.size(), 4u);
  std::int64_t total = 0;
  for (const auto& c : out) {
    total += c.members.size();
    // The four call-path classes are four clusters: members share their head's call path.
    for (auto r : c.members.to_vector()) EXPECT_EQ(static_cast<std::uint64_t>(r % 4), c.head.call_path);
  }
  EXPECT_EQ(total, 20);
}

TEST(RankGroups, RanksInOneGroupHaveTheSameEvents) {
  const auto spec = stencil2d_3x3();
  const Trace t = synthetic_merged_trace(spec);
  for (bool with_values : {false, true}) {
    const auto labels = rank_groups(t, with_values);
    ASSERT_EQ(labels.size(), 9u);
    if (!with_values) continue;
    for (std::int64_t r = 0; r < 9; ++r)
      for (std::int64_t q = 0; q < r; ++q)
        if (labels[static_cast<std::size_t>(r)] == labels[static_cast<std::size_t>(q)]) {
          EXPECT_TRUE(same_calls(expand(t, r), expand(t, q))) << q << " " << r;
        }
  }
  // Distinct behaviour (corner / edge / interior trip counts) is never one group.
  const auto labels = rank_groups(t, true);
  EXPECT_NE(labels[0], labels[1]);
  EXPECT_NE(labels[1], labels[4]);
  EXPECT_NE(labels[0], labels[4]);
}

TEST(RankGroups, RanksOfDifferentTimingGroupsAreDifferentGroupsWithValues) {
  // Two ranks with the same calls; rank 1 computes 1000 x longer between them, so the merge
  // keeps a timing group per rank and their signatures' compute means differ.
  std::vector<Trace> ranks;
  for (std::int64_t r = 0; r < 2; ++r) {
    CallSiteTable sites;
    const std::uint32_t site = sites.intern({Frame{sites.intern_module("app"), 0x40}});
    IntraCompressor compressor;
    compressor.set_sites(&sites);
    for (int i = 0; i < 20; ++i) {
      Event e;
      e.op = Op::Barrier;
      e.site = site;
      e.compute_ns = r == 0 ? 1'000 : 1'000'000;
      compressor.push(e);
    }
    CommTable comms;
    comms.entries.push_back({0, RankList::range(0, 2), {}});
    ranks.push_back(make_rank_trace(r, 2, compressor.finish(), std::move(sites), std::move(comms), {}));
  }
  const Trace t = merge_tree(std::move(ranks));
  EXPECT_EQ(rank_groups(t, false), (std::vector<std::int64_t>{0, 0}));
  EXPECT_EQ(rank_groups(t, true), (std::vector<std::int64_t>{0, 1}));
  const auto sigs = trace_signatures(t);
  EXPECT_LT(sigs[0].value(SignatureFeature::Comp) * 100, sigs[1].value(SignatureFeature::Comp));
}

TEST(ClusteredMerge, RepresentativesLosslessOthersGetTheirRepresentativesEvents) {
  const auto spec = stencil2d_3x3();
  const Trace full = synthetic_merged_trace(spec);
  std::vector<RankSignature> sigs;
  for (std::int64_t r = 0; r < spec.nranks; ++r) sigs.push_back(compute_signature(synthetic_rank_trace(spec, r), r));
  // Without the peer sets, so that corners (and edges) share a representative: the lossy case.
  const ClusterAssignment a = kfarthest_clusters(sigs, 3, kWithoutPeers);
  std::vector<RankCluster> clusters;
  for (std::size_t k = 0; k < a.representatives.size(); ++k) {
    RankCluster c{a.representatives[k], {}};
    for (std::int64_t r = 0; r < spec.nranks; ++r)
      if (a.labels[static_cast<std::size_t>(r)] == static_cast<std::int64_t>(k)) c.members.push_back(r);
    clusters.push_back(std::move(c));
  }
  TreeMerger merger;
  for (std::int64_t r = 0; r < spec.nranks; ++r) {
    Trace local = synthetic_rank_trace(spec, r);
    prepare_clustered_rank_trace(local, r, clusters, a.format);
    merger.push(std::move(local));
  }
  const Trace clustered = decode_trace(encode_trace(merger.finish()));
  EXPECT_EQ(clustered.clusters, clusters);
  EXPECT_EQ(clustered.metadata.at("clusters.count"), "3");
  EXPECT_TRUE(clustered.metadata.count("clusters.lossy"));
  EXPECT_EQ(clustered.sites.size(), full.sites.size());
  for (std::int64_t r = 0; r < spec.nranks; ++r) {
    const std::int64_t rep = representative_of(clustered, r);
    EXPECT_EQ(a.labels[static_cast<std::size_t>(rep)], a.labels[static_cast<std::size_t>(r)]);
    const auto got = expand(clustered, r);
    if (rep == r) {
      EXPECT_TRUE(same_calls(got, expand(full, r))) << "representative " << r;
    }
    EXPECT_TRUE(same_calls(got, expand(full, rep))) << "rank " << r;
  }
}

TEST(ClusterList, RoundTripsAndRejectsBadBytes) {
  RankSignature s;
  s.rank = 3;
  s.call_path = 42;
  s.means = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<SignatureCluster> list = {{s, RankList::range(0, 4)}};
  FeatureMask f = 0;
  const std::string bytes = encode_clusters(5, list);
  const auto back = decode_clusters(bytes, 4, f);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(f, 5u);
  EXPECT_EQ(back[0].head, s);
  EXPECT_EQ(back[0].members, RankList::range(0, 4));
  EXPECT_THROW(decode_clusters(bytes.substr(0, bytes.size() - 1), 4, f), FormatError);
  EXPECT_THROW(decode_clusters(bytes, 3, f), FormatError);  // ranks beyond nranks
  std::string huge = bytes;
  huge[8] = '\xff';  // cluster count
  EXPECT_THROW(decode_clusters(huge, 4, f), FormatError);
}

TEST(ClusterSection, ReaderRejectsClustersThatDoNotPartitionTheRanks) {
  Trace t = synthetic_merged_trace(stencil2d_3x3());
  t.clusters = {{0, RankList::range(0, 5)}, {4, RankList::range(4, 5)}};  // rank 4 twice
  EXPECT_THROW(decode_trace(encode_trace(t)), FormatError);
  t.clusters = {{0, RankList::range(0, 8)}};  // rank 8 missing
  EXPECT_THROW(decode_trace(encode_trace(t)), FormatError);
  t.clusters = {{8, RankList::range(0, 8)}, {9, RankList::single(8)}};  // representative outside
  EXPECT_THROW(decode_trace(encode_trace(t)), FormatError);
  t.clusters = {{0, RankList::range(0, 4)}, {4, RankList::range(4, 5)}};
  EXPECT_EQ(decode_trace(encode_trace(t)).clusters, t.clusters);
  t.clusters.clear();
  EXPECT_TRUE(decode_trace(encode_trace(t)).clusters.empty());
}
