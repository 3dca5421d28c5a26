#include "capture/clock.hpp"

#include <time.h>

#include <atomic>
#include <fstream>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SCALATRACE_HAVE_TSC 1
#endif

namespace scalatrace::pmpi {
namespace {

std::uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct TscCalibration {
  std::uint64_t tsc0 = 0;
  std::uint64_t ns0 = 0;
  double ns_per_tick = 0;
};
TscCalibration g_tsc;
std::atomic<bool> g_use_tsc{false};

#ifdef SCALATRACE_HAVE_TSC
/// The TSC read after every earlier instruction has completed (LFENCE first, as the kernel's
/// rdtsc_ordered).
std::uint64_t ordered_tsc() {
  _mm_lfence();
  return __rdtsc();
}
#endif

bool invariant_tsc_is_the_kernel_clock() {
#ifdef SCALATRACE_HAVE_TSC
  std::ifstream cs("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(cs >> source) || source != "tsc") return false;
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("flags", 0) == 0)
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
  }
#endif
  return false;
}

#ifdef SCALATRACE_HAVE_TSC
std::uint64_t ns_of_tsc(std::uint64_t tsc) {
  const auto ticks = static_cast<std::int64_t>(tsc - g_tsc.tsc0);  // may be < 0
  return g_tsc.ns0 +
         static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<double>(ticks) * g_tsc.ns_per_tick));
}
#endif

}  // namespace

std::uint64_t now_ns() {
#ifdef SCALATRACE_HAVE_TSC
  if (g_use_tsc.load(std::memory_order_relaxed)) return ns_of_tsc(__rdtsc());
#endif
  return monotonic_ns();
}

std::uint64_t now_ns_after_program() {
#ifdef SCALATRACE_HAVE_TSC
  if (g_use_tsc.load(std::memory_order_relaxed)) return ns_of_tsc(ordered_tsc());
#endif
  return monotonic_ns();  // clock_gettime orders its own read
}

void calibrate_clock() {
#ifdef SCALATRACE_HAVE_TSC
  if (g_use_tsc.load() || !invariant_tsc_is_the_kernel_clock()) return;
  const std::uint64_t t0 = monotonic_ns();
  const std::uint64_t c0 = ordered_tsc();
  std::uint64_t t1 = t0, c1 = c0;
  while (t1 - t0 < 2000000) {
    t1 = monotonic_ns();
    c1 = ordered_tsc();
  }
  if (c1 <= c0) return;
  g_tsc.ns_per_tick = static_cast<double>(t1 - t0) / static_cast<double>(c1 - c0);
  g_tsc.tsc0 = c1;
  g_tsc.ns0 = t1;
  g_use_tsc.store(true);
#endif
}

const char* clock_source() { return g_use_tsc.load() ? "tsc" : "monotonic"; }

}  // namespace scalatrace::pmpi
