#include "options.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "scalatrace/support/errors.hpp"

namespace scalatrace::replay {
namespace {

double parse_double(const std::string& flag, const std::string& text, double min, double max) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(value) || value < min || value > max) {
    char range[64];
    std::snprintf(range, sizeof range, "a number from %g to %g", min, max);
    throw UsageError(flag + " expects " + range + ", got '" + text + "'");
  }
  return value;
}

// --size-scale: messages are allocated at their scaled size, so the factor is bounded (a
// recorded 1 MiB message at the bound is 1 GiB); a scaled message past the memory fails the run.
constexpr double kMaxSizeScale = 1024;
constexpr double kMaxSeconds = 1e9;

std::uint64_t parse_uint(const std::string& flag, const std::string& text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
    throw UsageError(flag + " expects a non-negative integer, got '" + text + "'");
  return value;
}

}  // namespace

std::string_view timing_name(TimingMode mode) {
  switch (mode) {
    case TimingMode::Mean:
      return "mean";
    case TimingMode::Sample:
      return "sample";
    case TimingMode::None:
      return "none";
    case TimingMode::Median:
      return "median";
    case TimingMode::Fastest:
      return "fastest";
    case TimingMode::Spread:
      return "spread";
    case TimingMode::LibraryTime:
      return "library";
  }
  return "?";
}

std::string usage() {
  return "usage: mpiexec -n NRANKS scalatrace-replay TRACE [options]\n"
         "TRACE: a .sct trace, or a raw recording directory (SCALATRACE_RAW; each rank compresses its own stream).\n"
         "Re-issues the MPI calls of a scalatrace trace, each rank walking its own events.\n"
         "  --compute-scale F   factor on the recorded compute time between calls (default 1; 0 = none)\n"
         "  --size-scale F      factor on message sizes (default 1, at most 1024)\n"
         "  --timing MODE       mean (histogram mean, default) | spread (stratified draws from the histograms,\n"
         "                      for data-dependent computation) | sample (independent draws) | none\n"
         "  --seed N            random seed for --timing spread/sample (rank r mixes r into it) and for a lossy "
         "trace's drawn\n"
         "                      peers, tags and sizes (the same on every rank; default 0)\n"
         "  --progress-poll US  lossy traces: let MPI progress every US microseconds of emulated computation\n"
         "                      (default 20; 0 = never; docs/lossy.md)\n"
         "  --report FILE       write a JSON report (times, per-rank per-op counts and bytes)\n"
         "  --timeout S         fail if one MPI call blocks longer than S seconds (default 60; 0 = off)\n"
         "  --bsend-buffer B    bytes attached for buffered sends (default 16777216)\n"
         "  --defer-waits MODE  auto (default: when the recording had several threads per rank calling\n"
         "                      MPI) | on | off: an MPI_Wait/MPI_Waitall that cannot complete yet waits\n"
         "                      while the next nonblocking sends/receives are issued (see docs/replay.md)\n"
         "  --info              print the trace's rank count and size as JSON and exit (no MPI)\n"
         "  --selftest-write-broken FILE\n"
         "                      write a 2-rank trace whose receive has no matching send, then exit\n"
         "                      (no MPI; used to test the watchdog)\n"
         "  --selftest-write-interleaved FILE\n"
         "                      write a 2-rank trace of two threads per rank whose recorded order\n"
         "                      deadlocks a strictly serial replay, then exit (no MPI)\n";
}

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--compute-scale") {
      o.compute_scale = parse_double(a, value(), 0.0, 1e6);
    } else if (a == "--size-scale") {
      o.size_scale = parse_double(a, value(), 0.0, kMaxSizeScale);
    } else if (a == "--timing") {
      const std::string& v = value();
      if (v == "spread")
        o.timing = TimingMode::Spread;
      else if (v == "mean")
        o.timing = TimingMode::Mean;
      else if (v == "sample")
        o.timing = TimingMode::Sample;
      else if (v == "none")
        o.timing = TimingMode::None;
      else
        throw UsageError("--timing expects spread, mean, sample or none, got '" + v + "'");
    } else if (a == "--seed") {
      o.seed = parse_uint(a, value());
    } else if (a == "--progress-poll") {
      o.progress_poll_us = parse_double(a, value(), 0.0, kMaxSeconds * 1e6);
    } else if (a == "--report") {
      o.report_path = value();
    } else if (a == "--timeout") {
      o.timeout_s = parse_double(a, value(), 0.0, kMaxSeconds);
    } else if (a == "--bsend-buffer") {
      o.bsend_buffer = parse_uint(a, value());
    } else if (a == "--info") {
      o.info = true;
    } else if (a == "--defer-waits") {
      const std::string& v = value();
      if (v == "auto")
        o.defer_waits = Options::DeferWaits::Auto;
      else if (v == "on")
        o.defer_waits = Options::DeferWaits::On;
      else if (v == "off")
        o.defer_waits = Options::DeferWaits::Off;
      else
        throw UsageError("--defer-waits expects auto, on or off, got '" + v + "'");
    } else if (a == "--selftest-write-broken") {
      o.write_broken_path = value();
    } else if (a == "--selftest-write-interleaved") {
      o.write_interleaved_path = value();
    } else if (a.starts_with("-")) {
      throw UsageError("unknown option '" + a + "'");
    } else if (o.trace_path.empty()) {
      o.trace_path = a;
    } else {
      throw UsageError("unexpected argument '" + a + "' (only one trace file)");
    }
  }
  if (!o.help && o.write_broken_path.empty() && o.write_interleaved_path.empty() && o.trace_path.empty())
    throw UsageError("missing TRACE argument");
  return o;
}

}  // namespace scalatrace::replay
