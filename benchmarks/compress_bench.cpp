// Compression cost per event (amortized over a whole stream, median of repeats; CPU time of
// the compressing thread and wall time) and compressed node counts per synthetic pattern.
// Usage: compress_bench [events_per_run=200000] [repeats=5]
// Prints a Markdown table (benchmarks/results/compression.md holds a run).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

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

}  // namespace

int main(int argc, char** argv) {
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
      timespec c0{}, c1{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& e : events) c.push(e);
      auto out = c.finish();
      const auto t1 = std::chrono::steady_clock::now();
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
      const double n = static_cast<double>(events.size());
      ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
      cpu.push_back((static_cast<double>(c1.tv_sec - c0.tv_sec) * 1e9 + static_cast<double>(c1.tv_nsec - c0.tv_nsec)) /
                    n);
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
