#pragma once
// Test support: hand-written event streams (one event per call) and their per-rank traces
// through the collector's IntraCompressor.
#include <cstdint>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/model/event.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace::test_support {

/// One event with fixed timing (compute 100 ns, duration 10 ns).
inline Event ev(Op op, std::uint32_t site, std::int64_t peer = 0, std::int64_t bytes = 0) {
  Event e;
  e.op = op;
  e.site = site;
  e[Field::Peer] = peer;
  e[Field::Bytes] = bytes;
  e.compute_ns = 100;
  e.duration_ns = 10;
  return e;
}

inline Trace compress(const std::vector<Event>& events, CompressorConfig cfg = {}) {
  IntraCompressor c(cfg);
  for (const auto& e : events) c.push(e);
  Trace t;
  t.nranks = 1;
  t.nodes = c.finish();
  return t;
}

/// compress(), with call sites 0..3 interned, so that the trace can be written to a file.
inline Trace compress_with_sites(const std::vector<Event>& events) {
  Trace t = compress(events);
  const auto module = t.sites.intern_module("/bin/compressor_test");
  for (std::uint32_t site = 0; site < 4; ++site) t.sites.intern({Frame{module, 0x100 + site}});
  return t;
}

}  // namespace scalatrace::test_support
