#include "state/recorder.hpp"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>

#if SCALATRACE_HAVE_TREE_MERGE
#include "finish/cluster_merge.hpp"
#include "finish/tree_merge.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"
#endif

namespace scalatrace::pmpi {
namespace {

/// The library's identification without its build flags: MPICH's version string also lists
/// its configure line and compiler flags (about 2 KB), which would dominate a small trace.
std::string library_summary(const std::string& version) {
  std::string out, line;
  std::istringstream in(version);
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\0' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    const bool build_flags = line.starts_with("MPICH configure") || line.starts_with("MPICH CC") ||
                             line.starts_with("MPICH CXX") || line.starts_with("MPICH F77") ||
                             line.starts_with("MPICH FC");
    if (build_flags) continue;
    for (char& c : line)
      if (c == '\t') c = ' ';
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

// 0 = not started, 1 = running, 2 = finished.
std::atomic<int> g_state{0};
Recorder* g_recorder = nullptr;
std::mutex g_start_mutex;
const std::uint64_t g_load_ns = now_ns();

std::string read_text(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string program_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("program");
}

std::string command_line() {
  std::string raw = read_text("/proc/self/cmdline");
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0') c = ' ';
  return raw;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The status the process exits with (on_exit passes it; atexit does not): a rank exiting with a
// non-zero status does not wait for the other ranks (see Recorder::end).
std::atomic<int> g_exit_status{0};

void finish_at_exit(int status, void*) {
  g_exit_status.store(status, std::memory_order_relaxed);
  Recorder::finish("exit");
}

}  // namespace

Recorder* Recorder::running() {
  const int state = g_state.load(std::memory_order_acquire);
  if (state == 1) return g_recorder;
  if (state == 2) return nullptr;
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized) return nullptr;
  PMPI_Finalized(&finalized);
  if (finalized) return nullptr;
  return start(false);
}

Recorder* Recorder::start(bool at_init) {
  std::lock_guard<std::mutex> lock(g_start_mutex);
  const int state = g_state.load(std::memory_order_acquire);
  if (state == 1) return g_recorder;
  if (state == 2) return nullptr;
  try {
    auto* r = new Recorder();
    r->begin(at_init);
    g_recorder = r;
    g_state.store(1, std::memory_order_release);
    on_exit(finish_at_exit, nullptr);
    return r;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalatrace: cannot start recording (%s); the program runs untraced\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "scalatrace: cannot start recording; the program runs untraced\n");
  }
  g_state.store(2, std::memory_order_release);
  return nullptr;
}

void Recorder::finish(const char* why) {
  Recorder* r = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_start_mutex);
    if (g_state.load(std::memory_order_acquire) != 1) return;
    r = g_recorder;
    g_state.store(2, std::memory_order_release);
  }
  std::lock_guard<std::mutex> lock(r->mu);
  try {
    r->end(why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalatrace: rank %d: finishing the recording failed: %s\n", r->rank, e.what());
  } catch (...) {
    std::fprintf(stderr, "scalatrace: rank %d: finishing the recording failed\n", r->rank);
  }
}

void Recorder::begin(bool at_init) {
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const std::string program = program_path();
  settings = Settings::from_environment(std::filesystem::path(program).filename().string(), rank == 0);
#if SCALATRACE_HAVE_TREE_MERGE
  settings.clusters = effective_cluster_count(settings.clusters, nranks, rank);
#endif
  comms.start();
  walks.set_enabled(settings.stack_memo);
  if (at_init) PMPI_Comm_dup(MPI_COMM_WORLD, &sync_comm_);
  calibrate_clock();
  last_end_ns_ = g_load_ns;

  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  PMPI_Get_library_version(version, &len);
  const std::string mpi_version(version, static_cast<std::size_t>(std::max(len, 0)));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  start_metadata_ = settings.as_metadata();
  start_metadata_["program"] = program;
  start_metadata_["command_line"] = command_line();
  start_metadata_["host"] = host;
  start_metadata_["mpi_library"] = library_summary(mpi_version);
  start_metadata_["date"] = utc_now();
  start_metadata_["collector"] = "scalatrace libscalatrace.so";
  start_metadata_["clock"] = clock_source();

  if (!settings.raw_dir.empty()) {
    try {
      std::error_code ec;
      std::filesystem::create_directories(settings.raw_dir, ec);
      if (ec)  // the reason (e.g. permission denied), not the later "no such file" of the open
        throw std::runtime_error("cannot create the directory " + settings.raw_dir + ": " + ec.message());
      raw_path_ = (std::filesystem::path(settings.raw_dir) / raw_file_name(rank)).string();
      raw_.open(raw_path_, rank, nranks);
    } catch (const std::exception& e) {
      raw_failed_ = true;
      warn(std::string("SCALATRACE_RAW: ") + e.what() + "; continuing without raw stream");
    }
  }
  if (settings.out != "none" && compressed_output_available()) {
    CompressorConfig config;
    config.window = settings.window;
    config.site_match = settings.site_match;
    config.site_threshold = settings.site_threshold;
    config.memory_budget = settings.memory_budget;
    config.hist_sub_bins = settings.hist_sub_bins;
    config.lossy_threshold = settings.lossy;  // histograms already per rank: bounded memory (docs/lossy.md)
    compressor_ = std::make_unique<IntraCompressor>(config);
    compressor_->set_sites(&sites);
#if SCALATRACE_HAVE_TREE_MERGE
    // A clustered merge keeps only the representatives' events (assigned to their members);
    // a member's spilled segments would mix its own events into that, so with
    // SCALATRACE_CLUSTERS the budget freezes the queue instead of spilling it.
    if (settings.clusters == 0) {
      spill_ = std::make_unique<SpillFile>(settings.spill_dir, rank);
      compressor_->set_spill([this](std::vector<Node>& nodes) { return spill_segment(nodes); });
    }
#endif
  }
}

bool compressed_output_available() {
#if SCALATRACE_HAVE_TREE_MERGE
  return true;
#else
  return false;
#endif
}

void Recorder::warn(const std::string& what) { std::fprintf(stderr, "scalatrace: rank %d: %s\n", rank, what.c_str()); }

__attribute__((noinline)) std::uint32_t Recorder::walk_site(const CallerKey& caller, bool learn,
                                                            std::unique_lock<std::mutex>& lock) {
  const std::uint64_t start_ns = now_ns();
  lock.unlock();
  RawStack stack;
  capture_stack(stack, kMaxStackDepth);
  lock.lock();
  ++stack_walks_;
  const std::uint32_t site = capture.site_id(stack, sites, settings.stack_depth);
  // Describing a walk costs several walks (walk_memo.hpp): only an outer stack already walked
  // from this place is described, not one that may never come back. walked_before() records
  // every walk, so it comes first.
  if (walks.walked_before(caller, site) && learn) {
    lock.unlock();
    WalkDescription walk = describe_walk(caller, stack);
    lock.lock();
    walks.remember(std::move(walk), site);
    ++walks_learned_;
  }
  walk_ns_ += now_ns() - start_ns;
  return site;
}

std::int64_t Recorder::name_id(const char* name) {
  auto& recent = recent_names_[(reinterpret_cast<std::uintptr_t>(name) >> 3) % recent_names_.size()];
  if (recent.first == name) return recent.second;
  auto [it, added] = name_ids_.try_emplace(name, static_cast<std::int64_t>(names_.size()));
  if (added) names_.emplace_back(name);
  recent = {name, it->second};
  return it->second;
}

void Recorder::measure_call_gap() {
  if (!settings.compensate) return;
  probes_ = 0;
  probe_started_ = false;
  probing_ = true;
  int ignored = 0;
  // One more call than gaps: the first call's gap runs from MPI_Init's return.
  for (std::size_t i = 0; i <= kProbeCalls; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &ignored);
  probing_ = false;
  if (probes_ < kProbeCalls) return;  // a wrapper did not run (cannot happen after Init)
  std::array<std::uint64_t, kProbeCalls> gaps = probe_gaps_;
  std::nth_element(gaps.begin(), gaps.begin() + kProbeCalls / 2, gaps.end());
  call_gap_ns_ = gaps[kProbeCalls / 2];
  std::lock_guard<std::mutex> lock(mu);
  start_metadata_["call_gap_ns"] = std::to_string(call_gap_ns_);
}

void Recorder::probe(std::uint64_t start_ns) {
  const bool first = !probe_started_;  // its gap runs from MPI_Init's return
  probe_started_ = true;
  if (first || probes_ >= kProbeCalls) return;
  probe_gaps_[probes_++] = start_ns > last_end_ns_ ? start_ns - last_end_ns_ : 0;
}

void Recorder::append(Event& e, std::uint64_t start_ns, std::uint64_t end_ns) {
  const std::uint64_t gap = start_ns > last_end_ns_ ? start_ns - last_end_ns_ : 0;
  e.compute_ns = gap > call_gap_ns_ ? gap - call_gap_ns_ : 0;
  e.duration_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  ++events_;
  recorded_ns_ += recorded_time_ns(e);
  // Threads that call MPI (the lock is held): a replay of a multi-threaded rank's interleaving
  // needs to know (docs/replay.md, "Multi-threaded recordings").
  static thread_local bool t_counted __attribute__((tls_model("initial-exec"))) = false;
  if (!t_counted) {
    t_counted = true;
    ++threads_calling_mpi_;
  }
  if (raw_.is_open()) {
    try {
      raw_.append(e);
    } catch (const std::exception& ex) {
      raw_failed_ = true;
      raw_.abandon();
      warn(std::string("raw stream not written: ") + ex.what());
    }
  }
  if (compressor_) {
    try {
      compressor_->push(e);
    } catch (const std::exception& ex) {
      warn(std::string("compressor: ") + ex.what() + "; continuing without compressed trace");
      compressor_.reset();
    }
  }
}

std::map<std::string, std::string> Recorder::metadata(const char* why) const {
  auto m = start_metadata_;
  m["finished_by"] = why;
  m["events"] = std::to_string(events_);
  m["stack_walks"] = std::to_string(stack_walks_);
  m["stack_walks_learned"] = std::to_string(walks_learned_);
  m["stack_walk_ns"] = std::to_string(walk_ns_);
  m["collector_ns"] = std::to_string(collector_ns_);
  if (threads_calling_mpi_ > 1) m["mpi_threads"] = std::to_string(threads_calling_mpi_);
  return m;
}

void Recorder::end(const char* why) {
  capture.resolve_symbols(sites);
  if (raw_.is_open()) {
    try {
      raw_.close(metadata(why), sites, comms.table(), names_);
    } catch (const std::exception& ex) {
      raw_failed_ = true;
      raw_.abandon();
      warn(std::string("raw stream not written: ") + ex.what());
    }
  }
  // A rank exiting with a non-zero status leaves at once, as it would untraced: waiting for
  // ranks that may never come would change how the process manager ends the run and what
  // mpiexec returns (issue 32). Its raw stream is complete; the merged trace needs every rank.
  const bool at_exit = std::string(why) == "exit";
  const bool in_step = at_exit && g_exit_status.load(std::memory_order_relaxed) == 0 && wait_for_all_ranks();
  if (!settings.raw_dir.empty()) report_raw_streams(std::string(why) == "MPI_Finalize" || in_step);
  const bool merging = compressor_ != nullptr;
  write_compressed(why, in_step);
  // A rank leaving the merge early would get rank 0 killed (hydra) before it wrote the file.
  if (in_step && merging) wait_for_all_ranks();
  // Every rank has flushed and is exiting: finalize for the program, so that the process
  // manager sees a clean end instead of killing the ranks that exit last (exit code 9).
  if (in_step) PMPI_Finalize();
}

// Every rank reports its own failure (warn, above); rank 0 says "written" only for what was:
// when the ranks are in step it counts the failed ranks over the private communicator,
// otherwise it speaks for its own stream only.
void Recorder::report_raw_streams(bool ranks_in_step) {
  int failed = raw_failed_ ? 1 : 0;
  int failed_ranks = failed;
  const bool counted = ranks_in_step && sync_comm_ != MPI_COMM_NULL &&
                       PMPI_Reduce(&failed, &failed_ranks, 1, MPI_INT, MPI_SUM, 0, sync_comm_) == MPI_SUCCESS;
  if (rank != 0 || settings.quiet) return;
  // Named by their final directory (settings.publish_raw), not the staging one of a wrapper.
  const std::string& dir = settings.shown_raw_dir();
  const char* verb = settings.publish_raw.empty() ? "written to" : "ready for";
  if (counted && failed_ranks == 0)
    std::fprintf(stderr, "scalatrace: raw streams of all %d ranks %s %s (rank 0: %llu events%s)\n", nranks, verb,
                 dir.c_str(), static_cast<unsigned long long>(events_), settings.publish_note());
  else if (counted)
    warn("raw streams in " + dir + ": " + std::to_string(failed_ranks) + " of " + std::to_string(nranks) +
         " ranks could not write theirs (see their messages)");
  else if (!raw_failed_)
    std::fprintf(stderr,
                 "scalatrace: raw stream of rank 0 %s %s (%llu events; other "
                 "ranks report their own failures%s)\n",
                 verb, dir.c_str(), static_cast<unsigned long long>(events_), settings.publish_note());
}

bool Recorder::wait_for_all_ranks() {
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (sync_comm_ == MPI_COMM_NULL || !initialized || finalized || settings.exit_wait_s == 0) return false;
  MPI_Request req;
  if (PMPI_Ibarrier(sync_comm_, &req) != MPI_SUCCESS) return false;
  const std::uint64_t deadline = now_ns() + settings.exit_wait_s * 1000000000ull;
  int done = 0;
  while (!done) {
    if (PMPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) break;
    if (now_ns() > deadline) {
      warn("exit without MPI_Finalize: not every rank reached exit within SCALATRACE_EXIT_WAIT=" +
           std::to_string(settings.exit_wait_s) + " s; leaving");
      return false;
    }
    timespec pause{0, 200000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

// INTEGRATION POINT (compressed mode). The cross-rank merge over MPI lives in
// cpp/pmpi/finish/tree_merge.hpp/.cpp; CMake compiles it and defines SCALATRACE_HAVE_TREE_MERGE
// unless the option SCALATRACE_WITH_TREE_MERGE is OFF. The merge is collective over
// MPI_COMM_WORLD, so it only runs when the ranks are in step: at MPI_Finalize, or at exit without
// MPI_Finalize once wait_for_all_ranks() saw every rank arrive. After MPI_Abort no compressed trace is written (the raw
// stream is).
bool Recorder::spill_segment(std::vector<Node>& nodes) {
#if SCALATRACE_HAVE_TREE_MERGE
  Trace segment = make_rank_trace(rank, nranks, std::move(nodes), sites, comms.table(), names_);
  std::string why;
  try {
    if (spill_->append(encode_rank_segment(rank, segment))) return true;
    why = spill_->error();
  } catch (const std::exception& e) {
    why = e.what();
  }
  warn("SCALATRACE_MEMORY: " + why + "; keeping this rank's events in memory from now on");
  nodes = std::move(segment.nodes);
#else
  (void)nodes;
#endif
  return false;
}

void Recorder::write_compressed(const char* why, bool ranks_in_step) {
  if (!compressor_) return;
  std::unique_ptr<IntraCompressor> compressor = std::move(compressor_);
  if (std::string(why) != "MPI_Finalize" && !ranks_in_step) {
    if (rank == 0 && !settings.quiet)
      warn(std::string("no compressed trace: the recording finished by ") + why +
           ", not MPI_Finalize (use SCALATRACE_RAW for such programs)");
    return;
  }
#if SCALATRACE_HAVE_TREE_MERGE
  Trace local = make_rank_trace(rank, nranks, compressor->finish(), sites, comms.table(), names_);
  local.metadata = metadata(why);
  if (settings.clusters > 0)
    if (const std::string e = cluster_before_merge(local, settings.clusters); !e.empty())
      warn("SCALATRACE_CLUSTERS: " + e + "; merging every rank's trace");
  const TreeMergeResult result =
      merge_over_tree_and_write(std::move(local), settings.out, MergeConfig{settings.site_match}, recorded_ns_,
                                RankSpill{spill_.get(), compressor->peak_memory_bytes()}, settings.lossy);
  // Errors about the file itself start with its path; others get it prepended.
  // Errors name the file written (a staging path under a wrapper); the rest the final path.
  const std::string& out = settings.out;
  const std::string about_file = result.error.starts_with(out) ? result.error : out + ": " + result.error;
  if (!result.error.empty() && rank != 0)
    warn("compressed trace " + settings.shown_out() + ": this rank's part could not be merged: " + result.error);
  else if (!result.error.empty() && result.wrote)
    warn("compressed trace written but incomplete: " + about_file);
  else if (!result.error.empty())
    warn("compressed trace not written: " + about_file);
  else if (rank == 0 && result.wrote && !settings.quiet)
    std::fprintf(stderr, "scalatrace: compressed trace %s %s (merge %.3f s%s)\n",
                 settings.publish_out.empty() ? "written to" : "ready for", settings.shown_out().c_str(),
                 result.seconds, settings.publish_note());
#endif
}

}  // namespace scalatrace::pmpi
