#pragma once
// Which call sites count as the same call for matching (SCALATRACE_SITE_MATCH): the intra-rank
// compressor and the cross-rank merge both match event nodes by op and call-site class. With
// K > 0 two sites are in one class when their innermost K frames are equal (frame 0 is the
// user's call of the MPI function, so K = 1 is "the same call statement, reached through any
// path"); with K = 0 every site is its own class (the whole stack must be equal). Matching by
// class never loses a site: a node whose occurrences come from several sites of its class keeps
// the exact site of each occurrence (EventNode::site_ids). See docs/algorithms.md ("Matching").
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/callsite.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// SCALATRACE_SITE_MATCH default: sites match when their innermost frame is equal.
inline constexpr std::size_t kDefaultSiteMatchFrames = 1;
/// The largest setting accepted (the collector records at most 64 frames per site).
inline constexpr std::size_t kMaxSiteMatchFrames = 64;

/// The classes of one growing call-site table under "the same innermost `frames` frames".
/// A class is named by its smallest site id, so classes depend on the table only (not on the
/// order of the questions), and a site is classified the first time it is asked about: the
/// table may grow between calls (the collector interns sites while it records), but the sites
/// already in it must not change.
class SiteClasses {
 public:
  /// `table` null or `frames` 0: every site is its own class.
  explicit SiteClasses(const CallSiteTable* table = nullptr, std::size_t frames = kDefaultSiteMatchFrames)
      : table_(table), frames_(table != nullptr ? frames : 0) {}

  std::size_t frames() const { return frames_; }
  /// The class of site `id`: the smallest id with the same innermost frames. An id outside the
  /// table is its own class.
  std::uint32_t of(std::uint32_t id);
  /// True if sites `a` and `b` are in one class.
  bool same(std::uint32_t a, std::uint32_t b) { return a == b || (frames_ != 0 && of(a) == of(b)); }

 private:
  const CallSiteTable* table_;
  std::size_t frames_;
  std::vector<std::uint32_t> class_of_;                            ///< of the first class_of_.size() sites of the table
  std::unordered_multimap<std::uint64_t, std::uint32_t> classes_;  ///< innermost-frames hash -> class
};

/// The distinct values of a call-site id sequence, in order of appearance, read run by run: a
/// strided run of valid ids has at most `nsites` values (the table's size), so no more are read
/// from one.
std::vector<std::uint32_t> distinct_sites(const ValueSeq& seq, std::size_t nsites);

/// The call sites of an event node's occurrences, sorted: its site, or the distinct values of
/// its per-occurrence sites (site_ids) when it has them.
std::vector<std::uint32_t> occurrence_sites(const EventNode& e, std::size_t nsites);

}  // namespace scalatrace
