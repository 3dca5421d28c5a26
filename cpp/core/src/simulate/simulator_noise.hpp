#pragma once
// OS noise of the simulator (not a public header): periodic detours that take the CPU away;
// compute between calls stretches over the detours it meets. See docs/simulator.md ("OS noise").
#include <cmath>
#include <cstdint>

#include "scalatrace/simulate/simulator.hpp"

namespace scalatrace::sim {

/// The phase in [0, period) of a rank's first detour: drawn from the seed (and the rank unless
/// coscheduled) with splitmix64, the same on every platform.
inline double noise_phase(const OsNoise& n, std::int64_t rank) {
  std::uint64_t z = n.seed + 0x9E3779B97F4A7C15ull * (n.coscheduled ? 1u : static_cast<std::uint64_t>(rank) + 1u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 * n.period;
}

/// When `work` ns of CPU work started at `start` end, with detours [phase + k*period,
/// phase + k*period + duration) taken out (0 < duration < period).
inline double noisy_end(const OsNoise& n, double phase, double start, double work) {
  const double P = n.period, d = n.duration;
  const double base = start - phase - std::floor((start - phase) / P) * P;  // position in the period
  const double period_start = start - base;
  double at = period_start + std::max(base, d);  // after a detour in progress
  const double first = period_start + P - at;    // work before the next detour
  if (work <= first) return at + work;
  work -= first;
  const double free = P - d;
  const double full = std::floor(work / free);
  const double rest = work - full * free;
  at = period_start + P + full * P;  // start of the detour after the last full period
  return rest > 0 ? at + d + rest : at;
}

}  // namespace scalatrace::sim
