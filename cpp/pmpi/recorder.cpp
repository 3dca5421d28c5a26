#include "recorder.hpp"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace scalatrace::pmpi {
namespace {

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

void finish_at_exit() { Recorder::finish("exit"); }

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
  return start();
}

Recorder* Recorder::start() {
  std::lock_guard<std::mutex> lock(g_start_mutex);
  const int state = g_state.load(std::memory_order_acquire);
  if (state == 1) return g_recorder;
  if (state == 2) return nullptr;
  try {
    auto* r = new Recorder();
    r->begin();
    g_recorder = r;
    g_state.store(1, std::memory_order_release);
    std::atexit(finish_at_exit);
    return r;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalatrace: cannot start recording (%s); the program runs untraced\n",
                 e.what());
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
    std::fprintf(stderr, "scalatrace: rank %d: finishing the recording failed: %s\n", r->rank,
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "scalatrace: rank %d: finishing the recording failed\n", r->rank);
  }
}

void Recorder::begin() {
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const std::string program = program_path();
  settings = Settings::from_environment(std::filesystem::path(program).filename().string());
  comms.start();
  calibrate_clock();
  last_end_ns_ = g_load_ns;

  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  PMPI_Get_library_version(version, &len);
  std::string mpi_version(version, static_cast<std::size_t>(std::max(len, 0)));
  while (!mpi_version.empty() && (mpi_version.back() == '\n' || mpi_version.back() == '\0'))
    mpi_version.pop_back();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  start_metadata_ = settings.as_metadata();
  start_metadata_["program"] = program;
  start_metadata_["command_line"] = command_line();
  start_metadata_["host"] = host;
  start_metadata_["mpi_library"] = mpi_version;
  start_metadata_["date"] = utc_now();
  start_metadata_["collector"] = "scalatrace libscalatrace.so";
  start_metadata_["clock"] = clock_source();

  if (!settings.raw_dir.empty()) {
    try {
      std::error_code ec;
      std::filesystem::create_directories(settings.raw_dir, ec);
      raw_path_ = (std::filesystem::path(settings.raw_dir) / raw_file_name(rank)).string();
      raw_.open(raw_path_, rank, nranks);
    } catch (const std::exception& e) {
      warn(std::string("SCALATRACE_RAW: ") + e.what() + "; continuing without raw stream");
    }
  }
  // Integration point (compressed mode): create the IntraCompressor here from settings.
}

void Recorder::warn(const std::string& what) {
  std::fprintf(stderr, "scalatrace: rank %d: %s\n", rank, what.c_str());
}

std::int64_t Recorder::name_id(const char* name) {
  auto [it, added] = name_ids_.try_emplace(name, static_cast<std::int64_t>(names_.size()));
  if (added) names_.emplace_back(name);
  return it->second;
}

void Recorder::append(Event& e, std::uint64_t start_ns, std::uint64_t end_ns) {
  e.compute_ns = start_ns > last_end_ns_ ? start_ns - last_end_ns_ : 0;
  e.duration_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  if (end_ns > last_end_ns_) last_end_ns_ = end_ns;
  ++events_;
  if (raw_.is_open()) {
    try {
      raw_.append(e);
    } catch (const std::exception& ex) {
      warn(std::string("raw stream ") + raw_path_ + ": " + ex.what() +
           "; continuing without raw stream");
    }
  }
  // Integration point (compressed mode): compressor.push(e).
}

std::map<std::string, std::string> Recorder::metadata(const char* why) const {
  auto m = start_metadata_;
  m["finished_by"] = why;
  m["events"] = std::to_string(events_);
  return m;
}

void Recorder::end(const char* why) {
  capture.resolve_symbols(sites);
  if (raw_.is_open()) {
    try {
      raw_.close(metadata(why), sites, comms.table(), names_);
      if (rank == 0 && !settings.quiet)
        std::fprintf(stderr, "scalatrace: raw streams written to %s (rank 0: %llu events)\n",
                     settings.raw_dir.c_str(), static_cast<unsigned long long>(events_));
    } catch (const std::exception& ex) {
      warn(std::string("raw stream ") + raw_path_ + ": " + ex.what());
    }
  }
  // Integration point (compressed mode): if settings.out != "none" and MPI is still usable
  // (why != "exit" || !finalized) call scalatrace::pmpi::merge_over_tree_and_write(...).
}

}  // namespace scalatrace::pmpi
