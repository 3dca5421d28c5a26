// Compression cost per event (amortized over a whole stream, median of repeats; CPU time of
// the compressing thread and wall time) and compressed node counts per synthetic pattern.
// Usage: compress_bench [events_per_run=200000] [repeats=5]
// Prints a Markdown table (benchmarks/results/compression.md holds a run).
//
// Recorded streams: compress_bench --raw REPEATS RANK.straw... pushes each raw recording's
// events (SCALATRACE_RAW, one file per rank) through a fresh IntraCompressor: CPU time of the
// pushes (median of the repeats), the longest single push (smallest over the repeats: a loop
// folded from long iterations, what the traced program waits for inside an MPI call) and the
// allocations the pushes made (counted by this program's operator new).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace scalatrace;

namespace {

std::vector<Event> events_of(SyntheticSpec spec, std::int64_t rank, std::size_t target) {
  // Enough timesteps for about `target` events.
  spec.timesteps = 10;
  auto probe = record_synthetic(spec, rank).events.size();
  const double per_step = static_cast<double>(probe) / 10.0;
  spec.timesteps = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(target) / per_step));
  return record_synthetic(spec, rank).events;
}

double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

int raw_recordings(int repeats, int nfiles, char** files) {
  std::printf("| recording | events | CPU ms (pushes) | longest push (us) | allocations |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (int f = 0; f < nfiles; ++f) {
    const RankRecording rec = read_raw(files[f]);
    std::vector<double> cpu;
    std::vector<double> longest(rec.events.size(), 1e300);
    std::uint64_t allocations = 0;
    for (int r = 0; r < repeats; ++r) {
      IntraCompressor c;
      c.set_sites(&rec.sites);
      const std::uint64_t a0 = g_allocations.load();
      const double c0 = thread_cpu_ns();
      for (std::size_t i = 0; i < rec.events.size(); ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        c.push(rec.events[i]);
        const auto t1 = std::chrono::steady_clock::now();
        longest[i] = std::min(longest[i], std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      cpu.push_back((thread_cpu_ns() - c0) / 1e6);
      allocations = g_allocations.load() - a0;
      c.finish();
    }
    std::sort(cpu.begin(), cpu.end());
    const double worst = longest.empty() ? 0.0 : *std::max_element(longest.begin(), longest.end());
    std::printf("| %s | %zu | %.3f | %.0f | %llu |\n", files[f], rec.events.size(), cpu[cpu.size() / 2], worst,
                static_cast<unsigned long long>(allocations));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--raw") == 0) {
    if (argc < 4) {
      std::fprintf(stderr, "usage: compress_bench --raw REPEATS RANK.straw...\n");
      return 2;
    }
    return raw_recordings(std::max(1, std::atoi(argv[2])), argc - 3, argv + 3);
  }
  const std::size_t target = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  std::printf(
      "| pattern | rank | events | CPU ns/event | wall ns/event | nodes | nodes @10 steps | nodes @1000 steps |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (auto p : {SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D, SyntheticPattern::Stencil3D,
                 SyntheticPattern::Collectives, SyntheticPattern::RowColumn, SyntheticPattern::Irregular}) {
    SyntheticSpec spec;
    spec.pattern = p;
    spec.nranks = p == SyntheticPattern::Stencil3D ? 64 : 16;
    const std::int64_t rank = p == SyntheticPattern::Stencil3D ? 21 : 5;  // interior-ish
    const auto events = events_of(spec, rank, target);
    std::vector<double> ns, cpu;
    std::size_t nodes = 0;
    for (int r = 0; r < repeats; ++r) {
      IntraCompressor c;
      const double c0 = thread_cpu_ns();
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& e : events) c.push(e);
      auto out = c.finish();
      const auto t1 = std::chrono::steady_clock::now();
      const double c1 = thread_cpu_ns();
      const double n = static_cast<double>(events.size());
      ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
      cpu.push_back((c1 - c0) / n);
      Trace t;
      t.nranks = spec.nranks;
      t.nodes = std::move(out);
      nodes = t.node_count();
    }
    std::sort(ns.begin(), ns.end());
    std::sort(cpu.begin(), cpu.end());
    std::size_t at[2];
    int k = 0;
    for (std::int64_t steps : {10, 1000}) {
      SyntheticSpec s2 = spec;
      s2.timesteps = steps;
      at[k++] = compress_recording(record_synthetic(s2, rank)).node_count();
    }
    std::printf("| %s | %lld | %zu | %.0f | %.0f | %zu | %zu | %zu |\n", std::string(synthetic_pattern_name(p)).c_str(),
                static_cast<long long>(rank), events.size(), cpu[cpu.size() / 2], ns[ns.size() / 2], nodes, at[0],
                at[1]);
  }
  return 0;
}
