#pragma once
// Clustering ranks by behaviour: ACURDION's Adaptive Signature Building (Alg. 1) and K-farthest
// clustering over a radix tree (Alg. 2), the exact groups a merged trace already holds, and the
// pieces the collector needs to merge only the representatives' traces (SCALATRACE_CLUSTERS).
// See docs/clustering.md.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scalatrace/cluster/signature.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// A cluster while K-farthest runs: the signature of its head (the representative, head.rank)
/// and every rank assigned to it (a set, includes the head).
struct SignatureCluster {
  RankSignature head;
  RankList members;
};

/// Dynamic K stops here: beyond k clusters, one per distinct call-path pattern, at most this many.
inline constexpr std::size_t kMaxCallPathClusters = 64;

/// One radix-tree node of ACURDION Alg. 2: selects k candidates farthest-first (starting from
/// the first candidate, then always the one farthest from the selected ones; selection stops
/// early when every remaining candidate has the signature of a selected one, so identical
/// behaviour never costs a cluster) and assigns every other candidate, with its members, to the
/// nearest selected one. Dynamic K (ACURDION §V): selection goes on past k while a remaining
/// candidate's call path, types or peer set differ from every selected one (up to
/// max(k, kMaxCallPathClusters) clusters), so every cluster's members share their
/// representative's calls and relative peers (when those features are in `mask`). With `grow`
/// false, selection stops at k (an analysis asking for k groups; the collector always grows).
/// Distances: grouped_signature_distance over `mask`. Order of the result: selection order.
std::vector<SignatureCluster> kfarthest_step(std::vector<SignatureCluster> candidates, std::size_t k, FeatureMask mask,
                                             bool grow = true);

/// ACURDION Alg. 1 over the same radix tree the collector uses (step s = 1, 2, 4, ...: rank r
/// with r % 2s == 0 compares its own signature with that of r + s): the features in which some
/// pair of tree neighbours differs, i.e. the features that are not constant over the ranks.
FeatureMask signature_format(const std::vector<RankSignature>& signatures);

struct ClusterAssignment {
  std::vector<std::int64_t> labels;           ///< cluster index of each rank (by position)
  std::vector<std::int64_t> representatives;  ///< rank representing each cluster, ascending
  FeatureMask format = 0;                     ///< features used (signature format & requested)
};

/// K-farthest clustering of `signatures` (signatures[i] describes rank signatures[i].rank) over
/// the radix tree, exactly as the collector does it: every rank starts as its own cluster, and
/// at step s rank r absorbs r + s's clusters then keeps k. Clusters are numbered by ascending
/// representative rank. `grow`: dynamic K as in kfarthest_step (false: at most k clusters, fewer
/// only when fewer distinct signatures exist). Throws UsageError if k == 0 or signatures is empty.
ClusterAssignment kfarthest_clusters(const std::vector<RankSignature>& signatures, std::size_t k,
                                     FeatureMask features = kAllFeatures, bool grow = true);

/// The exact behaviour groups a merged trace already holds: ranks that take part in exactly the
/// same event and loop nodes (node ranklists) share a group; with `with_values`, ranks must also
/// fall in the same elastic-value alternative of every parameter and in the same timing group
/// of every event node (so they have the same events, relative peers and histogram means). Returns a group label per
/// rank, groups numbered by their lowest rank.
std::vector<std::int64_t> rank_groups(const Trace& trace, bool with_values = false);

/// Collector support: rewrites a per-rank trace of representative `rank` (make_rank_trace) so
/// that every ranklist naming only `rank` names `members` instead (ACURDION §III-C: the
/// representative's events stand for its whole cluster). Communicator tables are left alone.
void assign_to_cluster(Trace& trace, std::int64_t rank, const RankList& members);

/// Collector (and harness) support, run on every rank once the final clusters are known:
/// a representative's trace is assigned to its cluster's members (assign_to_cluster); any other
/// rank's trace keeps only its tables (call sites, communicators, names), so that the merge keeps
/// every call site of every rank while merging only the representatives' events. Rank 0 also
/// records the clusters and marks the trace lossy in its metadata ("clusters.*").
void prepare_clustered_rank_trace(Trace& local, std::int64_t rank, const std::vector<RankCluster>& clusters,
                                  FeatureMask format);

/// Collector wire format of a cluster list: the signature format, then per cluster the head
/// signature and the member ranklist. decode_clusters validates sizes against the input and
/// ranks against nranks (FormatError).
std::string encode_clusters(FeatureMask format, const std::vector<SignatureCluster>& clusters);
std::vector<SignatureCluster> decode_clusters(std::string_view bytes, std::int64_t nranks, FeatureMask& format);

/// The trace's record of the clustering: one RankCluster per cluster, ascending representative.
std::vector<RankCluster> to_rank_clusters(const std::vector<SignatureCluster>& clusters);
/// The same from an in-process clustering (members gathered from the labels).
std::vector<RankCluster> to_rank_clusters(const ClusterAssignment& assignment,
                                          const std::vector<RankSignature>& signatures);
/// The representative of `rank` in a clustered trace, or `rank` itself if not clustered.
std::int64_t representative_of(const Trace& trace, std::int64_t rank);

}  // namespace scalatrace
