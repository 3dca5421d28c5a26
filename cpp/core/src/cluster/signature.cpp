// Per-rank ACURDION signatures and PHANTOM computation vectors (see signature.hpp).
#include "scalatrace/cluster/signature.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <set>

#include "scalatrace/cluster/clustering.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

constexpr std::array<std::string_view, kSignatureFeatureCount> kFeatureNames = {
    "call_path", "types", "count", "src", "dest", "tag", "key", "color", "loop", "comp", "comm", "peers"};

/// Index into RankSignature::means of an averaged feature, or -1.
int mean_slot(SignatureFeature f) {
  switch (f) {
    case SignatureFeature::Count:
      return 0;
    case SignatureFeature::Src:
      return 1;
    case SignatureFeature::Dest:
      return 2;
    case SignatureFeature::Tag:
      return 3;
    case SignatureFeature::Key:
      return 4;
    case SignatureFeature::Color:
      return 5;
    case SignatureFeature::Comp:
      return 6;
    case SignatureFeature::Comm:
      return 7;
    default:
      return -1;
  }
}

struct Average {
  double sum = 0, weight = 0;
  void add(double v, double w = 1) {
    sum += w * v;
    weight += w;
  }
  double mean() const { return weight > 0 ? sum / weight : 0.0; }
};

bool is_peer(std::int64_t p) { return p != kAnySource && p != kProcNull; }

/// Accumulates one rank's events into the averaged features.
class SignatureBuilder {
 public:
  explicit SignatureBuilder(const Trace& trace) : trace_(trace) {}

  void add(const Event& e) {
    const std::uint64_t site_hash = e.site < trace_.sites.sites.size() ? trace_.sites.sites[e.site].hash : e.site;
    // Sequence weight (ACURDION §III-A): (i mod 10 + 1) keeps permutations from cancelling.
    // The op is mixed in so that two ops at one (synthetic) site still differ.
    const std::uint64_t weighted =
        (site_hash ^ (static_cast<std::uint64_t>(e.op) * 0x9e3779b97f4a7c15ull)) * (index_ % 10 + 1);
    call_path_ ^= std::rotl(weighted, static_cast<int>(index_ % 61));
    ++index_;
    const OpKind kind = op_kind(e.op);
    const bool sends = kind == OpKind::BlockingSend || kind == OpKind::NonblockingSend ||
                       kind == OpKind::PersistentSend || kind == OpKind::SendRecv;
    const bool receives = kind == OpKind::BlockingRecv || kind == OpKind::NonblockingRecv ||
                          kind == OpKind::PersistentRecv || kind == OpKind::Probe;
    if (sends && is_peer(e[Field::Peer])) dest_.add(static_cast<double>(e[Field::Peer]));
    if (receives && is_peer(e[Field::Peer])) src_.add(static_cast<double>(e[Field::Peer]));
    if (kind == OpKind::SendRecv && is_peer(e[Field::Peer2])) src_.add(static_cast<double>(e[Field::Peer2]));
    if ((sends || receives) && is_peer(e[Field::Peer])) peers_.insert({e[Field::Comm], e[Field::Peer]});
    if (kind == OpKind::SendRecv && is_peer(e[Field::Peer2])) peers_.insert({e[Field::Comm], e[Field::Peer2]});
    if ((sends || receives) && e[Field::Tag] != kAnyTag) tag_.add(static_cast<double>(e[Field::Tag]));
    if (sends || receives || op_is_collective(e.op)) {
      count_.add(static_cast<double>(e[Field::Bytes]));
      add_type_bit(std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(e[Field::DtSize], 0))) % 16);
      add_type_bit(16 + static_cast<unsigned>(std::max<std::int64_t>(e[Field::RedOp], 0) % 16));
      add_type_bit(32 + static_cast<unsigned>(std::max<std::int64_t>(e[Field::Comm], 0) % 32));
    }
    if (e.op == Op::Comm_split) {
      // Weighted by the split's sequence number (mod 10, + 1) like the call path: a plain mean
      // could not tell a rank in row 0 / column 1 from one in row 1 / column 0.
      const double w = static_cast<double>(splits_++ % 10 + 1);
      if (e[Field::Color] != kUndefined) color_.add(static_cast<double>(e[Field::Color]), w);
      key_.add(static_cast<double>(e[Field::Key]), w);
    }
    comp_.add(static_cast<double>(e.compute_ns));
    comm_.add(static_cast<double>(e.duration_ns));
  }

  RankSignature finish(std::int64_t rank, std::uint64_t loop) const {
    RankSignature s;
    s.rank = rank;
    s.events = index_;
    s.call_path = call_path_ ^ (index_ * 0xff51afd7ed558ccdull);
    s.types = types_;
    s.loop = loop;
    // Order-free: the set is sorted. (communicator, relative peer) pairs.
    std::uint64_t h = 0x84222325cbf29ce4ull ^ peers_.size();
    for (const auto& [comm, peer] : peers_) {
      h = (h ^ static_cast<std::uint64_t>(comm)) * 0x100000001b3ull;
      h = (h ^ static_cast<std::uint64_t>(peer)) * 0x100000001b3ull;
    }
    s.peers = h;
    s.means = {count_.mean(), src_.mean(),   dest_.mean(), tag_.mean(),
               key_.mean(),   color_.mean(), comp_.mean(), comm_.mean()};
    return s;
  }

 private:
  void add_type_bit(unsigned bit) { types_ |= std::uint64_t{1} << bit; }

  const Trace& trace_;
  std::uint64_t index_ = 0, call_path_ = 0, types_ = 0, splits_ = 0;
  Average count_, src_, dest_, tag_, key_, color_, comp_, comm_;
  std::set<std::pair<std::int64_t, std::int64_t>> peers_;  ///< (communicator, relative peer)
};

/// Mean trip count per nesting depth (0 = outermost) of the loops `rank` takes part in.
void loop_trips(const std::vector<Node>& nodes, std::int64_t rank, std::size_t depth, std::vector<Average>& by_depth) {
  for (const auto& n : nodes) {
    if (!n.loop || (!n.ranks.empty() && !n.ranks.contains(rank))) continue;
    if (by_depth.size() <= depth) by_depth.resize(depth + 1);
    if (const ValueSeq* trips = n.loop->trips.for_rank(rank)) {
      ValueSeq::Reader rd(trips);
      while (!rd.done()) by_depth[depth].add(static_cast<double>(rd.next()));
    }
    loop_trips(n.loop->body, rank, depth + 1, by_depth);
  }
}

/// ACURDION's loop signature: 16 bits per level, innermost level in the lowest bits, levels
/// beyond the third innermost folded into the top section.
std::uint64_t loop_signature(const Trace& trace, std::int64_t rank) {
  std::vector<Average> by_depth;
  loop_trips(trace.nodes, rank, 0, by_depth);
  std::uint64_t sig = 0;
  const std::size_t levels = by_depth.size();
  for (std::size_t inner = 0; inner < levels; ++inner) {
    const double mean = by_depth[levels - 1 - inner].mean();
    const auto section = static_cast<std::uint64_t>(std::min(std::llround(mean), 65535ll));
    const unsigned shift = static_cast<unsigned>(16 * std::min<std::size_t>(inner, 3));
    sig = inner < 3 ? sig | (section << shift) : sig ^ (section << shift);
  }
  return sig;
}

double relative_difference(double a, double b) {
  const double scale = std::fabs(a) + std::fabs(b);
  return scale > 0 ? std::fabs(a - b) / scale : 0.0;
}

}  // namespace

std::string_view signature_feature_name(SignatureFeature f) { return kFeatureNames.at(static_cast<std::size_t>(f)); }

SignatureFeature signature_feature_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kFeatureNames.size(); ++i)
    if (kFeatureNames[i] == name) return static_cast<SignatureFeature>(i);
  std::string valid;
  for (auto n : kFeatureNames) valid += (valid.empty() ? "" : ", ") + std::string(n);
  throw UsageError("unknown signature feature '" + std::string(name) + "' (valid: " + valid + ")");
}

double RankSignature::value(SignatureFeature f) const {
  switch (f) {
    case SignatureFeature::CallPath:
      return static_cast<double>(call_path);
    case SignatureFeature::Types:
      return static_cast<double>(types);
    case SignatureFeature::Loop:
      return static_cast<double>(loop);
    case SignatureFeature::Peers:
      return static_cast<double>(peers);
    default: {
      const int slot = mean_slot(f);
      return slot >= 0 ? means[static_cast<std::size_t>(slot)] : 0.0;
    }
  }
}

RankSignature compute_signature(const Trace& trace, std::int64_t rank) {
  SignatureBuilder builder(trace);
  Cursor cursor(trace, rank, TimingMode::Mean);
  while (auto e = cursor.next()) builder.add(*e);
  return builder.finish(rank, loop_signature(trace, rank));
}

std::vector<RankSignature> trace_signatures(const Trace& trace) {
  // Ranks of one exact group (same nodes, same elastic alternative of every parameter) have the
  // same events, relative peers and histogram means: one Cursor walk per group suffices.
  const std::vector<std::int64_t> groups = rank_groups(trace, true);
  std::vector<std::optional<RankSignature>> per_group(groups.size());
  std::vector<RankSignature> out;
  out.reserve(groups.size());
  for (std::int64_t r = 0; r < trace.nranks; ++r) {
    auto& known = per_group[static_cast<std::size_t>(groups[static_cast<std::size_t>(r)])];
    if (!known) known = compute_signature(trace, r);
    out.push_back(*known);
    out.back().rank = r;
  }
  return out;
}

FeatureMask signature_difference(const RankSignature& a, const RankSignature& b) {
  FeatureMask m = 0;
  if (a.call_path != b.call_path || a.events != b.events) m |= feature_bit(SignatureFeature::CallPath);
  if (a.types != b.types) m |= feature_bit(SignatureFeature::Types);
  if (a.loop != b.loop) m |= feature_bit(SignatureFeature::Loop);
  if (a.peers != b.peers) m |= feature_bit(SignatureFeature::Peers);
  for (std::size_t i = 0; i < kSignatureFeatureCount; ++i) {
    const auto f = static_cast<SignatureFeature>(i);
    const int slot = mean_slot(f);
    if (slot >= 0 && a.means[static_cast<std::size_t>(slot)] != b.means[static_cast<std::size_t>(slot)])
      m |= feature_bit(f);
  }
  return m;
}

GroupedDistance grouped_signature_distance(const RankSignature& a, const RankSignature& b, FeatureMask mask) {
  GroupedDistance d;
  const FeatureMask differ = signature_difference(a, b) & mask;
  if (!differ) return d;
  for (std::size_t i = 0; i < kSignatureFeatureCount; ++i) {
    const auto f = static_cast<SignatureFeature>(i);
    if (!(differ & feature_bit(f))) continue;
    switch (f) {
      case SignatureFeature::CallPath:
      case SignatureFeature::Types:
      case SignatureFeature::Peers:
        d.call += 1;
        break;
      case SignatureFeature::Loop: {
        double levels = 0;
        for (unsigned s = 0; s < 64; s += 16)
          levels += relative_difference(static_cast<double>((a.loop >> s) & 0xffff),
                                        static_cast<double>((b.loop >> s) & 0xffff));
        d.params += std::min(levels, 1.0);
        break;
      }
      case SignatureFeature::Src:
      case SignatureFeature::Dest:
      case SignatureFeature::Tag:
      case SignatureFeature::Key:
      case SignatureFeature::Color:
        d.params += relative_difference(a.value(f), b.value(f));
        break;
      default:
        d.timing += relative_difference(a.value(f), b.value(f));
        break;
    }
  }
  return d;
}

double signature_distance(const RankSignature& a, const RankSignature& b, FeatureMask mask) {
  return grouped_signature_distance(a, b, mask).total();
}

std::vector<double> computation_vector(const Trace& trace, std::int64_t rank) {
  std::vector<double> out;
  Cursor cursor(trace, rank, TimingMode::Mean);
  while (auto e = cursor.next()) out.push_back(static_cast<double>(e->compute_ns));
  return out;
}

}  // namespace scalatrace
