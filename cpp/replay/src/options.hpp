#pragma once
// Command line of scalatrace-replay.
#include <cstdint>
#include <string>
#include <vector>

#include "scalatrace/read/cursor.hpp"

namespace scalatrace::replay {

struct Options {
  std::string trace_path;
  double compute_scale = 1.0;            ///< --compute-scale: factor on recorded compute time (0: none)
  double size_scale = 1.0;               ///< --size-scale: factor on message sizes
  TimingMode timing = TimingMode::Mean;  ///< --timing mean|spread|sample|none
  std::uint64_t seed = 0;                ///< --seed: for --timing spread/sample and lossy draws
  /// --progress-poll: in a probabilistic (lossy) replay, the emulated computation lets MPI
  /// progress every this many microseconds (0: never). docs/lossy.md, "Progress".
  double progress_poll_us = 20.0;
  std::string report_path;               ///< --report: JSON report written by rank 0
  double timeout_s = 60.0;               ///< --timeout: seconds one MPI call may block (0: no watchdog)
  std::size_t bsend_buffer = 16u << 20;  ///< --bsend-buffer: bytes attached for Bsend/Ibsend
  std::string write_broken_path;         ///< --selftest-write-broken: write a deadlocking trace, exit
  /// --selftest-write-interleaved: write a 2-thread interleaving that a serial replay deadlocks on
  std::string write_interleaved_path;
  /// --defer-waits: let Wait/Waitall wait while later nonblocking posts are issued. Auto: when
  /// the trace says more than one thread per rank called MPI (metadata "mpi_threads").
  enum class DeferWaits { Auto, On, Off } defer_waits = DeferWaits::Auto;
  bool info = false;  ///< --info: print the trace's rank count etc. as JSON, no MPI
  bool help = false;
};

/// Throws UsageError with a message naming the bad argument.
Options parse_options(const std::vector<std::string>& args);
std::string usage();
std::string_view timing_name(TimingMode mode);

}  // namespace scalatrace::replay
