// scalatrace-replay TRACE [options]: see options.cpp (usage) and docs/replay.md.
//
// MPI calls the replay makes for its own purposes (report gathering, agreeing on communicator
// layouts, waiting for recorded completions, datatype set-up) use the PMPI_ names, so a
// collector tracing the replay records only the replayed calls.
#include <mpi.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "options.hpp"
#include "replayer.hpp"
#include "report.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/safe_file.hpp"
#include "selftest_traces.hpp"
#include "watchdog.hpp"

using namespace scalatrace;
using namespace scalatrace::replay;

namespace {

constexpr int kUsageExit = 2;
constexpr int kErrorExit = 1;

std::string site_text(const Trace& trace, std::uint32_t id) {
  std::string s = "#" + std::to_string(id);
  if (id >= trace.sites.sites.size()) return s;
  const CallSite& site = trace.sites.sites[id];
  if (!site.symbol.empty()) s += " " + site.symbol;
  if (!site.location.empty()) s += " (" + site.location + ")";
  if (site.symbol.empty() && site.location.empty() && !site.frames.empty()) {
    const Frame& f = site.frames.front();
    char buf[64];
    std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(f.offset));
    s += " " + (f.module < trace.sites.modules.size() ? trace.sites.modules[f.module] : "?") + buf;
  }
  return s;
}

// A .sct trace file, or a raw recording directory (SCALATRACE_RAW): then each rank reads its
// own stream and compresses it in memory, so a recording can be replayed without the merge.
Trace load_trace(const std::string& path, int rank) {
  if (std::filesystem::is_directory(path)) {
    RankRecording rec = read_raw(path + "/" + raw_file_name(rank));
    return compress_recording(rec);
  }
  return read_trace_file(path);
}

// Why a step failed, in one line: std::bad_alloc says only "std::bad_alloc".
std::string reason(const std::exception& e) {
  return dynamic_cast<const std::bad_alloc*>(&e) != nullptr ? "out of memory" : e.what();
}

// One message line on stderr in a single write(2), so the lines of ranks reporting at the same
// moment never interleave within a line (std::cerr writes the prefix and the text separately).
void error_line(const std::string& message) {
  const std::string line = "scalatrace-replay: " + message + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Ends the run after a problem of this rank alone (its peers may be waiting for it).
[[noreturn]] void abort_run(const std::string& message) {
  error_line(message);
  // The launcher forwards a rank's stderr through its proxy; an abort right after the write
  // can tear the job down before the line is forwarded (seen with Hydra: 1 run in 12 printed
  // nothing). A moment's pause lets it through.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  PMPI_Abort(MPI_COMM_WORLD, kErrorExit);
  std::exit(kErrorExit);  // not reached: MPI_Abort ends the process
}

// Ends every rank after a problem all ranks detect alike (rank 0 reports it).
int finish_early(int rank, const std::string& message, int code) {
  if (rank == 0) error_line(message);
  MPI_Finalize();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const Error& e) {
    std::cerr << "scalatrace-replay: error: " << e.what() << " (scalatrace-replay --help lists the options)\n";
    return kUsageExit;
  }
  if (options.help) {
    std::cout << usage();
    return 0;
  }
  // Self-test traces: written without MPI, then exit.
  const auto write_selftest = [](void (*writer)(const std::string&), const std::string& path) {
    try {
      writer(path);
    } catch (const std::exception& e) {
      std::cerr << "scalatrace-replay: " << reason(e) << std::endl;
      return kErrorExit;
    }
    return 0;
  };
  if (!options.write_broken_path.empty()) return write_selftest(write_broken_trace, options.write_broken_path);
  if (!options.write_interleaved_path.empty())
    return write_selftest(write_interleaved_trace, options.write_interleaved_path);

  if (options.info) {
    try {
      Trace trace = load_trace(options.trace_path, 0);
      std::cout << trace_info_json(options.trace_path, trace);
    } catch (const std::bad_alloc&) {
      error_line("out of memory reading the trace '" + options.trace_path + "'");
      return kErrorExit;
    } catch (const std::exception& e) {
      error_line("cannot read trace '" + options.trace_path + "': " + e.what());
      return kUsageExit;
    }
    return 0;
  }

  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);

  Trace trace;
  try {
    trace = load_trace(options.trace_path, rank);
  } catch (const std::bad_alloc&) {
    abort_run("out of memory: rank " + std::to_string(rank) + ", reading the trace '" + options.trace_path + "'");
  } catch (const std::exception& e) {
    return finish_early(rank, "cannot read trace '" + options.trace_path + "': " + e.what(), kUsageExit);
  }
  if (trace.nranks != size) {
    return finish_early(rank,
                        "trace '" + options.trace_path + "' was recorded with " + std::to_string(trace.nranks) +
                            " ranks but the replay runs on " + std::to_string(size) +
                            " MPI processes; run it with mpiexec -n " + std::to_string(trace.nranks),
                        kUsageExit);
  }

  Progress progress;
  RankStats stats;
  int exit_code = 0;
  // Memory running out is a one-line message naming what was being done, and a non-zero exit.
  try {
    Watchdog watchdog(progress, options.timeout_s, rank, [&trace](std::uint32_t id) { return site_text(trace, id); });
    Replayer replayer(trace, options, rank, progress);
    PMPI_Barrier(MPI_COMM_WORLD);
    try {
      stats = replayer.run();
    } catch (const OutOfMemory& e) {
      abort_run(std::string("out of memory: ") + e.what() + "; lower --size-scale or give the replay more memory");
    } catch (const std::bad_alloc&) {
      abort_run("out of memory: rank " + std::to_string(rank) + ", walking its events");
    } catch (const std::exception& e) {
      abort_run(e.what());
    }
    // The watchdog keeps watching the end: a rank whose peers are stuck must not hang here.
    progress.finishing.store(true);
    progress.call_start_ns.store(steady_now_ns());
    std::vector<RankStats> all = gather_stats(stats, rank, size);
    if (rank == 0) {
      std::string json = report_json(options, trace.nranks, all);
      if (!options.report_path.empty()) {
        // Checked writes, atomic replace, non-regular targets refused (a full disk is an error).
        // The replay itself succeeded: every rank still finalizes (an abort here could lose this
        // message on its way through the launcher), and rank 0 exits with the error.
        try {
          scalatrace::write_file_safely(options.report_path, json);
        } catch (const std::exception& e) {
          error_line(std::string("cannot write the report: ") + e.what());
          exit_code = kErrorExit;
        }
      }
      double total = 0;
      std::uint64_t events = 0;
      for (const auto& s : all) {
        total = std::max(total, s.time_s);
        events += s.events;
      }
      std::printf("scalatrace-replay: %llu events on %d ranks replayed in %.6f s\n",
                  static_cast<unsigned long long>(events), size, total);
      std::fflush(stdout);
    }
    replayer.release();
    MPI_Finalize();
    progress.call_start_ns.store(0);
  } catch (const std::bad_alloc&) {
    abort_run("out of memory: rank " + std::to_string(rank) + ", setting up the replay or gathering its report");
  }
  return exit_code;
}
