#pragma once
// Event timestamps in nanoseconds of CLOCK_MONOTONIC. clock_gettime costs 25-90 ns on this
// class of machine (VMs), three times per MPI call; where the kernel itself uses an invariant TSC
// (clocksource "tsc", CPU flags constant_tsc + nonstop_tsc), timestamps are read with rdtsc
// (~10 ns) and converted with a factor calibrated against CLOCK_MONOTONIC over ~2 ms when the
// recorder starts. Differences (compute_ns, duration_ns) are what matters; the calibration
// error is ~1e-4 relative.
#include <cstdint>

namespace scalatrace::pmpi {

/// Hidden: the wrappers call it directly, not through the PLT (it is on the program's time line).
__attribute__((visibility("hidden"))) std::uint64_t now_ns();
/// now_ns() read after every earlier instruction has completed (LFENCE, then RDTSC): the read
/// that ends the program's computation at a wrapper's entry. A plain RDTSC may execute while a
/// latency-bound computation before the MPI call is still in flight, and moved its last
/// ~50-100 ns out of compute_ns into the call (docs/collector.md, "Timing"). The fence costs
/// ~15 ns; the collector's other reads (inside its own time) stay plain.
__attribute__((visibility("hidden"))) std::uint64_t now_ns_after_program();
/// Switches now_ns() to the TSC if the platform allows it (call once, at recorder start).
void calibrate_clock();
/// "tsc" or "monotonic": what now_ns() uses (recorded in the metadata).
const char* clock_source();

}  // namespace scalatrace::pmpi
