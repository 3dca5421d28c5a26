// scalatrace-harness: the collector's compression and cross-rank merge at any scale, in one
// process and without MPI.
//
//   scalatrace-harness [--pattern P] [--ranks N] [--timesteps T] [--wrap] [--bytes B]
//                      [--seed S] [--dims AxBxC] [--window W] [-o OUT.sct]
//       generates each rank's event stream (synthetic.hpp), compresses it with the
//       IntraCompressor, merges bottom-up over the radix tree (streaming: at most log2(N)+1
//       partial traces are held), writes OUT.sct (if -o) and prints JSON statistics.
//       --clusters K: as SCALATRACE_CLUSTERS=K (signatures, K-farthest, only representatives'
//       events merged; see docs/clustering.md).
//   scalatrace-harness merge-raw RAWDIR -o OUT.sct [--window W] [--timing-bins N | --exact-timing]
//       merges the raw streams of a real run (RAWDIR/rank-*.straw) offline, as the collector
//       would have at MPI_Finalize. --exact-timing writes the timing exact (every bin, counts and
//       nanoseconds, as traces passed between the collector's processes are): the reference for
//       what a final file's compact timing costs (benchmarks/timing_storage_accuracy.py).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "scalatrace/cluster/clustering.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/safe_file.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

namespace {

using namespace scalatrace;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::size_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::int64_t parse_int(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    long long x = std::stoll(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw UsageError(flag + " expects an integer, got '" + v + "'");
  }
}

/// The radix-tree merge as a binary counter of partial results (like TreeMerger), timing each
/// merge: `total` is the sequential work of this process, `critical_path` the time a parallel
/// run over the same tree would take (each subtree merges concurrently; a parent waits for
/// the slower child): the figure comparable to the collector's merge at MPI_Finalize.
class TimedTreeMerger {
 public:
  void push(Trace&& t) {
    stack_.push_back(Entry{1, std::move(t), 0.0});
    while (stack_.size() >= 2 && stack_[stack_.size() - 2].size == stack_.back().size) combine();
  }
  Trace finish() {
    while (stack_.size() >= 2) combine();
    if (stack_.empty()) return Trace{};
    critical_path = stack_.back().path;
    Trace t = std::move(stack_.back().trace);
    stack_.clear();
    return t;
  }
  double total = 0, critical_path = 0;

 private:
  struct Entry {
    std::size_t size;
    Trace trace;
    double path;
  };
  void combine() {
    Entry top = std::move(stack_.back());
    stack_.pop_back();
    Entry& master = stack_.back();
    const auto t0 = Clock::now();
    merge_into(master.trace, std::move(top.trace));
    const double dt = seconds_since(t0);
    total += dt;
    master.path = std::max(master.path, top.path) + dt;
    master.size += top.size;
  }
  std::vector<Entry> stack_;
};

struct Stats {
  std::string command, pattern, output;
  std::int64_t ranks = 0, timesteps = 0;
  bool wrap = false;
  double generate_compress_seconds = 0, merge_seconds = 0, critical_path_seconds = 0, total_seconds = 0;
  std::size_t trace_bytes = 0, structure_bytes = 0, timing_bytes = 0, nodes = 0, intra_bytes_total = 0;
  std::uint64_t events_total = 0;
  std::int64_t clusters = 0;  ///< --clusters K: clusters found (0 = full merge)
  bool exact_timing = false;  ///< merge-raw --exact-timing: the file keeps every bin, in nanoseconds
  double cluster_signature_seconds = 0, cluster_kfarthest_seconds = 0;

  void print() const {
    std::printf(
        "{\"command\":\"%s\",\"pattern\":\"%s\",\"ranks\":%lld,\"timesteps\":%lld,\"wrap\":%s,"
        "\"events\":%llu,\"generate_compress_seconds\":%.6f,\"merge_seconds\":%.6f,"
        "\"merge_critical_path_seconds\":%.6f,\"total_seconds\":%.6f,\"peak_rss_bytes\":%zu,\"intra_bytes_total\":%zu,"
        "\"trace_bytes\":%zu,\"structure_bytes\":%zu,\"timing_bytes\":%zu,\"nodes\":%zu,\"output\":\"%s\",\"clusters\":"
        "%lld,"
        "\"cluster_signature_seconds\":%.6f,\"cluster_kfarthest_seconds\":%.6f}\n",
        command.c_str(), json_escape(pattern).c_str(), static_cast<long long>(ranks), static_cast<long long>(timesteps),
        wrap ? "true" : "false", static_cast<unsigned long long>(events_total), generate_compress_seconds,
        merge_seconds, critical_path_seconds, total_seconds, peak_rss_bytes(), intra_bytes_total, trace_bytes,
        structure_bytes, timing_bytes, nodes, json_escape(output).c_str(), static_cast<long long>(clusters),
        cluster_signature_seconds, cluster_kfarthest_seconds);
  }
};

/// Bytes of the node tree and its tables, without metadata and timing histograms: the part
/// that depends only on the communication structure (comparable across runs and rank counts);
/// and the bytes the timing histograms add to it. Both plain (before entropy coding), so that
/// they do not depend on each other; the file's coded bytes per part are in trace_byte_breakdown.
void measure_structure(const Trace& t, Stats& st) {
  Trace without_metadata = t.clone();
  without_metadata.metadata.clear();
  // The timing histograms as the file keeps them (the trace's own setting of bins).
  if (const auto it = t.metadata.find(kTimingBinsKey); it != t.metadata.end())
    without_metadata.metadata[kTimingBinsKey] = it->second;
  st.structure_bytes = scalatrace::structure_bytes(t);
  st.timing_bytes = encode_trace(without_metadata, false, PayloadCoding::Plain).size() - st.structure_bytes;
}

void finish_trace(Trace& merged, Stats& st, double merge_seconds) {
  measure_structure(merged, st);
  merged.metadata["merge_seconds"] = std::to_string(merge_seconds);
  merged.metadata["peak_memory_bytes"] = std::to_string(peak_rss_bytes());
  std::string bytes = encode_trace(merged);
  st.trace_bytes = bytes.size();
  st.nodes = merged.node_count();
  if (st.output.empty()) return;
  // The final file is the bytes just measured; --exact-timing writes the form traces passed
  // between processes take instead (every bin, exact counts and nanoseconds).
  write_file_safely(st.output, st.exact_timing ? encode_trace_for_transfer(merged) : bytes);
}

int run_synthetic(const std::vector<std::string>& args) {
  SyntheticSpec spec;
  spec.nranks = 1024;
  spec.timesteps = 10;
  spec.wrap = false;
  CompressorConfig config;
  bool intra_sizes = false;
  std::int64_t clusters_k = 0;
  Stats st;
  st.command = "synthetic";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "--pattern") {
      std::string p = value();
      if (p == "rowcol") p = "rowcolumn";
      spec.pattern = synthetic_pattern_from_name(p);
    } else if (a == "--ranks") {
      spec.nranks = parse_int(a, value());
    } else if (a == "--timesteps") {
      spec.timesteps = parse_int(a, value());
    } else if (a == "--wrap") {
      spec.wrap = true;
    } else if (a == "--bytes") {
      spec.bytes = parse_int(a, value());
    } else if (a == "--seed") {
      spec.seed = static_cast<std::uint64_t>(parse_int(a, value()));
    } else if (a == "--window") {
      config.window = static_cast<std::size_t>(parse_int(a, value()));
    } else if (a == "--dims") {
      std::string d = value();
      spec.dims.clear();
      std::size_t start = 0;
      while (start <= d.size()) {
        std::size_t x = d.find('x', start);
        spec.dims.push_back(parse_int(a, d.substr(start, x - start)));
        if (x == std::string::npos) break;
        start = x + 1;
      }
    } else if (a == "--clusters") {
      clusters_k = parse_int(a, value());  // SCALATRACE_CLUSTERS=K, simulated (clustering.hpp)
      if (clusters_k < 1) throw UsageError("--clusters must be at least 1");
    } else if (a == "--intra-sizes") {
      intra_sizes = true;  // also encode every per-rank trace (raw vs intra vs merged tables)
    } else if (a == "-o" || a == "--output") {
      st.output = value();
    } else {
      throw UsageError("unknown argument '" + a + "' (see scalatrace-harness --help)");
    }
  }
  if (spec.nranks < 1 || spec.nranks > (std::int64_t{1} << 24)) throw UsageError("--ranks must be in [1, 16777216]");
  st.pattern = std::string(synthetic_pattern_name(spec.pattern));
  st.ranks = spec.nranks;
  st.timesteps = spec.timesteps;
  st.wrap = spec.wrap;

  const auto t0 = Clock::now();
  std::vector<RankCluster> clusters;
  FeatureMask cluster_format = 0;
  if (clusters_k > 0) {
    // What every rank computes at MPI_Finalize, then K-farthest over the same radix tree.
    std::vector<RankSignature> signatures;
    for (std::int64_t r = 0; r < spec.nranks; ++r) {
      const Trace t = synthetic_rank_trace(spec, r, config);
      const auto ts = Clock::now();
      signatures.push_back(compute_signature(t, r));
      st.cluster_signature_seconds += seconds_since(ts);
    }
    const auto tk = Clock::now();
    const ClusterAssignment assignment = kfarthest_clusters(signatures, static_cast<std::size_t>(clusters_k));
    clusters = to_rank_clusters(assignment, signatures);
    cluster_format = assignment.format;
    st.cluster_kfarthest_seconds = seconds_since(tk);
    st.clusters = static_cast<std::int64_t>(clusters.size());
  }
  TimedTreeMerger merger;
  for (std::int64_t r = 0; r < spec.nranks; ++r) {
    const auto tg = Clock::now();
    Trace t = synthetic_rank_trace(spec, r, config, &st.events_total);
    if (intra_sizes) st.intra_bytes_total += encode_trace(t, false, PayloadCoding::Plain).size();
    if (!clusters.empty()) prepare_clustered_rank_trace(t, r, clusters, cluster_format);
    st.generate_compress_seconds += seconds_since(tg);
    merger.push(std::move(t));
  }
  Trace merged = merger.finish();
  st.merge_seconds = merger.total;
  st.critical_path_seconds = merger.critical_path;
  merged.metadata["program"] = "scalatrace-harness " + st.pattern;
  merged.metadata["command_line"] = "scalatrace-harness --pattern " + st.pattern + " --ranks " +
                                    std::to_string(spec.nranks) + " --timesteps " + std::to_string(spec.timesteps) +
                                    (spec.wrap ? " --wrap" : "");
  finish_trace(merged, st, merger.critical_path);
  st.total_seconds = seconds_since(t0);
  st.print();
  return 0;
}

int run_merge_raw(const std::vector<std::string>& args) {
  std::string dir, timing_bins;
  CompressorConfig config;
  Stats st;
  st.command = "merge-raw";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "-o" || a == "--output") && i + 1 < args.size()) {
      st.output = args[++i];
    } else if (a == "--window" && i + 1 < args.size()) {
      config.window = static_cast<std::size_t>(parse_int(a, args[++i]));
    } else if (a == "--timing-bins" && i + 1 < args.size()) {
      timing_bins = args[++i];
      if (timing_bins.size() != 1 || timing_bins[0] < '1' || timing_bins[0] > '8')
        throw UsageError("--timing-bins takes 1 to 8, not '" + timing_bins + "'");
    } else if (a == "--exact-timing") {
      st.exact_timing = true;
    } else if (!a.empty() && a[0] != '-' && dir.empty()) {
      dir = a;
    } else {
      throw UsageError(
          "usage: scalatrace-harness merge-raw RAWDIR -o OUT.sct [--window W] [--timing-bins N | --exact-timing]");
    }
  }
  if (dir.empty() || st.output.empty())
    throw UsageError(
        "usage: scalatrace-harness merge-raw RAWDIR -o OUT.sct [--window W] [--timing-bins N | --exact-timing]");
  const auto t0 = Clock::now();
  std::vector<RankRecording> recs = read_raw_dir(dir);
  st.pattern = dir;
  st.ranks = static_cast<std::int64_t>(recs.size());
  TimedTreeMerger merger;
  std::map<std::string, std::string> metadata;
  for (auto& rec : recs) {
    const auto tg = Clock::now();
    st.events_total += rec.events.size();
    if (metadata.empty()) metadata = rec.metadata;
    Trace t = compress_recording(rec, config);
    Trace rt = make_rank_trace(rec.rank, rec.nranks, std::move(t.nodes), std::move(t.sites), std::move(t.comms),
                               std::move(t.names));
    st.intra_bytes_total += encode_trace(rt, false, PayloadCoding::Plain).size();
    st.generate_compress_seconds += seconds_since(tg);
    merger.push(std::move(rt));
  }
  Trace merged = merger.finish();
  for (auto& [k, v] : metadata) merged.metadata.emplace(k, v);
  if (!timing_bins.empty()) merged.metadata[kTimingBinsKey] = timing_bins;
  st.merge_seconds = merger.total;
  st.critical_path_seconds = merger.critical_path;
  finish_trace(merged, st, merger.critical_path);
  st.total_seconds = seconds_since(t0);
  st.print();
  return 0;
}

void usage(std::FILE* out) {
  std::fputs(
      "usage:\n"
      "  scalatrace-harness [--pattern stencil1d|stencil2d|stencil3d|collectives|rowcol|irregular]\n"
      "                     [--ranks N] [--timesteps T] [--wrap] [--bytes B] [--seed S]\n"
      "                     [--dims AxBxC] [--window W] [--intra-sizes] [--clusters K] [-o OUT.sct]\n"
      "  scalatrace-harness merge-raw RAWDIR -o OUT.sct [--window W] [--timing-bins N | --exact-timing]\n"
      "Prints JSON statistics (times in seconds, peak resident memory, trace bytes).\n",
      out);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args)
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
  try {
    if (!args.empty() && args[0] == "merge-raw")
      return run_merge_raw(std::vector<std::string>(args.begin() + 1, args.end()));
    return run_synthetic(args);
  } catch (const scalatrace::UsageError& e) {
    std::fprintf(stderr, "scalatrace-harness: %s\n", e.what());
    usage(stderr);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalatrace-harness: %s\n", e.what());
    return 1;
  }
}
