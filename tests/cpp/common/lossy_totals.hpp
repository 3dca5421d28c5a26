#pragma once
// Test support: per-op calls and bytes over every rank's events of a trace, exact or, for a
// lossy trace, drawn with a seed (docs/lossy.md): what lossy traces are checked against.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "scalatrace/model/trace.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/read/lossy_occurrences.hpp"

namespace scalatrace::test_support {

/// Per op: calls and bytes (Field::Bytes) over every rank's events.
struct Totals {
  std::map<Op, std::uint64_t> calls;
  std::map<Op, double> bytes;
};

/// The events walked exactly (no seed) or with lossy values drawn with `lossy_seed`, numbered
/// over all ranks (LossyOccurrences).
inline Totals totals(const Trace& t, std::optional<std::uint64_t> lossy_seed) {
  Totals out;
  const auto occurrences = lossy_seed ? std::make_shared<LossyOccurrences>(t) : nullptr;
  for (std::int64_t r = 0; r < t.nranks; ++r) {
    Cursor c(t, r, TimingMode::None);
    if (lossy_seed) c.draw_lossy_values(*lossy_seed, occurrences);
    Event e;
    while (c.next(e)) {
      ++out.calls[e.op];
      out.bytes[e.op] += static_cast<double>(e[Field::Bytes]);
    }
  }
  return out;
}

}  // namespace scalatrace::test_support
