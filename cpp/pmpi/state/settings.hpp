#pragma once
// Collector settings: SCALATRACE_* environment variables, each with a default. A bad value is
// replaced by the default and reported once on stderr (by rank 0); reading settings never fails.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace scalatrace::pmpi {

struct Settings {
  std::string raw_dir;     ///< SCALATRACE_RAW: directory for raw streams; "" = off ("none"/"off")
  std::string out;         ///< SCALATRACE_OUT: compressed trace path; "none" = off (also "off")
  int stack_depth = 16;    ///< SCALATRACE_STACK_DEPTH: frames recorded per call site
  bool stack_memo = true;  ///< SCALATRACE_STACK_MEMO: 0 = walk the stack at every call
  bool compensate = true;  ///< SCALATRACE_COMPENSATE: 0 = keep the wrappers' entry and
                           ///< exit in compute_ns (docs/collector.md)
  /// SCALATRACE_OWN_TIME: "out" (default) leaves the collector's own time out of every
  /// compute_ns; "compute" keeps it in (and compensates nothing), so that each rank's compute
  /// and call durations add up to its whole span, the collector's time included: a trace of
  /// the traced run itself (docs/collector.md, "The collector's own time").
  bool own_time_in_compute = false;
  std::size_t window = 512;                ///< SCALATRACE_WINDOW (compressor), at least 2
  std::size_t site_match = 1;              ///< SCALATRACE_SITE_MATCH (compressor and merge)
  std::size_t site_threshold = 0;          ///< SCALATRACE_SITE_THRESHOLD (compressor)
  std::size_t memory_budget = 256u << 20;  ///< SCALATRACE_MEMORY (compressor), bytes
  std::uint32_t hist_sub_bins = 4;         ///< SCALATRACE_HIST_BINS (compressor)
  std::uint32_t timing_bins = 2;           ///< SCALATRACE_TIMING_BINS (bins per histogram in the file)
  std::string spill_dir = "/tmp";          ///< SCALATRACE_SPILL_DIR (default $TMPDIR or /tmp): where a
                                           ///< rank's queue goes when it exceeds SCALATRACE_MEMORY
  bool quiet = false;                      ///< SCALATRACE_QUIET: 1 = no informational messages
  /// SCALATRACE_LOSSY: point-to-point fields whose lossless form has at least this many value
  /// runs become histograms (1: all of them; 0 = off, lossless). docs/lossy.md.
  std::uint64_t lossy = 0;
  static constexpr std::uint64_t kDefaultLossyThreshold = 32;  ///< SCALATRACE_LOSSY=on
  std::uint64_t clusters = 0;      ///< SCALATRACE_CLUSTERS: K of K-farthest clustering (0 = off)
  std::uint64_t exit_wait_s = 30;  ///< SCALATRACE_EXIT_WAIT: seconds ranks wait for each
                                   ///< other at exit without MPI_Finalize (0 = no wait)
  /// SCALATRACE_PUBLISH_OUT / SCALATRACE_PUBLISH_RAW (set by scalatrace run, scalatrace.trace and
  /// replay, which let the collector write into staging paths and move the results there when
  /// the run succeeded): the final paths, named in the collector's messages and recorded as the
  /// settings instead of the staging paths. Empty: the outputs stay where they are written.
  std::string publish_out;
  std::string publish_raw;

  /// Where the trace and the raw streams end up (the final paths, else where they are written).
  const std::string& shown_out() const { return publish_out.empty() ? out : publish_out; }
  const std::string& shown_raw_dir() const { return publish_raw.empty() ? raw_dir : publish_raw; }
  /// The note added to "ready" messages when the outputs are moved into place later.
  const char* publish_note() const {
    return publish_out.empty() && publish_raw.empty() ? "" : "; put in place when the run succeeds";
  }

  /// Reads the environment; `program` is the executable's base name (default output name).
  /// `report`: print a line for each bad value (rank 0 does; the others read the same values).
  static Settings from_environment(const std::string& program, bool report = true);
  /// The effective values, as recorded in the trace metadata ("setting.<NAME>").
  std::map<std::string, std::string> as_metadata() const;
};

/// Parses a non-negative integer with optional k/M/G suffix (powers of 1024); false if bad.
bool parse_size(const std::string& text, std::uint64_t& out);

}  // namespace scalatrace::pmpi
