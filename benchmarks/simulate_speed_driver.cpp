// Simulator speed driver: simulates one trace file several times in one process and prints
// the median and best wall time, the same for the calling thread's CPU time (steadier on a
// loaded machine), the medians of that CPU time's user and kernel parts (the kernel's part is
// mostly zeroing the pages the engine touches first, which varies between runs of one binary
// on a virtual machine; both counted in scheduler ticks, so meaningful for runs of a second or
// more), and the predicted total time (to check that two builds agree). Used to
// compare two builds of the core library on the same files (benchmarks/results/simulator.md,
// "fourth run", "Engine split"): built here as
// build/py/benchmarks/simulate_speed_driver, or by hand against another build's library:
//   g++ -std=c++20 -O3 -I cpp/core/include benchmarks/simulate_speed_driver.cpp
//       BUILD/cpp/core/libscalatrace_core.a -o driver   (one command line)
// Usage: simulate_speed_driver TRACE.sct CALLS [mean|sample] [WARMUP_CALLS (default 3)]
#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "scalatrace/format/format.hpp"
#include "scalatrace/simulate/simulator.hpp"

namespace {

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

/// The calling thread's user and kernel CPU time, in ms.
std::pair<double, double> thread_user_kernel_ms() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  const auto ms = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3;
  };
  return {ms(u.ru_utime), ms(u.ru_stime)};
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace scalatrace;
  if (argc < 3 || std::atoi(argv[2]) < 1) {
    std::fprintf(stderr, "usage: %s TRACE.sct CALLS [mean|sample] [WARMUP_CALLS]\n", argv[0]);
    return 2;
  }
  try {
    const Trace trace = read_trace_file(argv[1]);
    const int calls = std::atoi(argv[2]);
    const int warm_up = argc > 4 ? std::max(0, std::atoi(argv[4])) : 3;
    SimOptions options;
    options.timing = argc > 3 && std::string(argv[3]) == "sample" ? TimingMode::Sample : TimingMode::Mean;
    std::vector<double> ms, cpu_ms, user_ms, kernel_ms;
    std::uint64_t events = 0;
    double predicted = 0;
    for (int i = 0; i < calls + warm_up; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = thread_cpu_ms();
      const auto [user_start, kernel_start] = thread_user_kernel_ms();
      const SimResult result = simulate(trace, options);
      const auto [user_end, kernel_end] = thread_user_kernel_ms();
      const double cpu_end = thread_cpu_ms();
      const auto end = std::chrono::steady_clock::now();
      events = result.events;
      predicted = result.total_ns;
      if (i >= warm_up) {
        ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
        cpu_ms.push_back(cpu_end - cpu_start);
        user_ms.push_back(user_end - user_start);
        kernel_ms.push_back(kernel_end - kernel_start);
      }
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu_ms.begin(), cpu_ms.end());
    const double median = ms[ms.size() / 2];
    std::printf(
        "%s events=%llu median=%.3f ms best=%.3f ms %.2f M events/s (median) cpu_median=%.3f ms "
        "cpu_best=%.3f ms user_median=%.1f ms kernel_median=%.1f ms predicted=%.17g ns\n",
        argv[1], static_cast<unsigned long long>(events), median, ms.front(),
        static_cast<double>(events) / median / 1e3, cpu_ms[cpu_ms.size() / 2], cpu_ms.front(), median_of(user_ms),
        median_of(kernel_ms), predicted);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
