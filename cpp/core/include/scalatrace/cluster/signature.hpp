#pragma once
// Per-rank behaviour signatures for clustering ranks (ACURDION §III) and PHANTOM's sequential
// computation vectors. Both are computed from a per-rank compressed trace or from a merged trace,
// one rank at a time through a Cursor (never expanding more than that rank). See docs/clustering.md.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// The signature features of ACURDION §III. The numeric values are bit positions of a feature
/// mask (the "signature format" of Adaptive Signature Building) and part of the collector's
/// wire format: append only.
enum class SignatureFeature : std::uint8_t {
  CallPath,  ///< XOR over events of (call-site hash x (sequence number mod 10 + 1))
  Types,     ///< bit set of datatype sizes, reduction ops and communicator ids used
  Count,     ///< mean bytes per event that moves data
  Src,       ///< mean relative source of receives (wildcards and MPI_PROC_NULL left out)
  Dest,      ///< mean relative destination of sends
  Tag,       ///< mean tag of sends and receives (MPI_ANY_TAG left out)
  Key,       ///< mean Comm_split key, weighted by the split's sequence number (mod 10, + 1)
  Color,     ///< the same for Comm_split colors (MPI_UNDEFINED left out)
  Loop,      ///< mean loop trip counts by nesting depth (innermost 16 bits ... depth >= 3)
  Comp,      ///< mean compute time before a call, ns
  Comm,      ///< mean time inside a call, ns
  Peers,     ///< the set of distinct relative peers (sources and destinations), hashed
  kCount
};
inline constexpr std::size_t kSignatureFeatureCount = static_cast<std::size_t>(SignatureFeature::kCount);
/// A set of features (bit i = SignatureFeature i).
using FeatureMask = std::uint32_t;
inline constexpr FeatureMask kAllFeatures = (FeatureMask{1} << kSignatureFeatureCount) - 1;

constexpr FeatureMask feature_bit(SignatureFeature f) { return FeatureMask{1} << static_cast<unsigned>(f); }
std::string_view signature_feature_name(SignatureFeature f);
/// Inverse of signature_feature_name ("call_path", "types", "count", "src", "dest", "tag", "key",
/// "color", "loop", "comp", "comm", "peers"); throws UsageError naming the valid names otherwise.
SignatureFeature signature_feature_from_name(std::string_view name);

struct RankSignature {
  std::int64_t rank = 0;
  std::uint64_t events = 0;     ///< number of events of the rank (part of the call path)
  std::uint64_t call_path = 0;  ///< SignatureFeature::CallPath
  std::uint64_t types = 0;      ///< SignatureFeature::Types
  std::uint64_t loop = 0;       ///< SignatureFeature::Loop, four 16-bit sections
  std::uint64_t peers = 0;      ///< SignatureFeature::Peers (order-free hash of the peer set)
  /// Count, Src, Dest, Tag, Key, Color, Comp, Comm (averages; 0 when nothing to average).
  std::array<double, 8> means{};

  /// The value of a numeric (averaged) feature; CallPath / Types / Loop give their bits as double.
  double value(SignatureFeature f) const;
  bool operator==(const RankSignature&) const = default;
};

/// The signature of `rank`: walks its events with a Cursor (timing = histogram means) and its
/// loops' trip counts. Works on per-rank traces (make_rank_trace) and merged traces alike.
RankSignature compute_signature(const Trace& trace, std::int64_t rank);
/// Signatures of every rank 0..nranks-1: one Cursor walk per exact rank group (rank_groups
/// with values), whose ranks have identical events, so regular codes cost a few walks.
std::vector<RankSignature> trace_signatures(const Trace& trace);

/// Features in which a and b differ (Adaptive Signature Building compares along the tree).
FeatureMask signature_difference(const RankSignature& a, const RankSignature& b);
/// A signature distance split by ACURDION's importance groups; compared lexicographically (a
/// call-path difference beats any parameter difference, which beats any timing difference).
struct GroupedDistance {
  double call = 0;    ///< group 3: number of differing CallPath / Types / Peers features
  double params = 0;  ///< group 2: sum of relative differences of Src, Dest, Tag, Key, Color, Loop
  double timing = 0;  ///< group 1: sum of relative differences of Count, Comp, Comm
  auto operator<=>(const GroupedDistance&) const = default;
  bool zero() const { return call == 0 && params == 0 && timing == 0; }
  /// The same as one number: 64 call + 8 params + timing (see signature_distance).
  double total() const { return 64 * call + 8 * params + timing; }
};
GroupedDistance grouped_signature_distance(const RankSignature& a, const RankSignature& b,
                                           FeatureMask mask = kAllFeatures);

/// ACURDION's normalized, importance-ordered Manhattan distance over the features in `mask`:
/// group 3 (CallPath, Types, Peers: 0 or 1 each, weight 64) dominates group 2 (Src, Dest, Key, Color,
/// Tag, Loop: relative difference |a-b|/(|a|+|b|) each, weight 8), which dominates group 1
/// (Count, Comp, Comm: relative difference, weight 1). A call-path difference therefore always
/// outweighs any parameter difference, and a parameter difference any timing difference.
double signature_distance(const RankSignature& a, const RankSignature& b, FeatureMask mask = kAllFeatures);

/// PHANTOM's sequential computation vector of `rank`: the compute time (ns) before each of its
/// events, in order (histogram means of the nodes, as the Cursor gives them).
std::vector<double> computation_vector(const Trace& trace, std::int64_t rank);

}  // namespace scalatrace
