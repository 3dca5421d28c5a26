// ArraySeq: per-occurrence integer vectors (array parameters of events), run-length
// compressed over occurrences. See docs/algorithms.md ("Elastic values").
#include "scalatrace/model/elastic.hpp"

#include <algorithm>

#include "scalatrace/support/errors.hpp"

namespace scalatrace {

void ArraySeq::append(const std::vector<std::int64_t>& values) {
  ++size_;
  // Most arrays of most events are empty: compare sizes before contents.
  if (!runs_.empty() && runs_.back().values.size() == values.size() &&
      (values.empty() || runs_.back().values == values)) {
    ++runs_.back().count;
    return;
  }
  runs_.push_back(Run{values, 1});
}

void ArraySeq::append(const ArraySeq& other) {
  if (&other == this) {
    ArraySeq copy = other;
    append(copy);
    return;
  }
  for (const auto& r : other.runs_) {
    if (r.count == 0) continue;
    if (!runs_.empty() && runs_.back().values == r.values)
      runs_.back().count += r.count;
    else
      runs_.push_back(r);
    size_ += r.count;
  }
}

const std::vector<std::int64_t>& ArraySeq::at(std::uint64_t i) const {
  if (i >= size_)
    throw UsageError("ArraySeq::at: index " + std::to_string(i) + " out of range (size " + std::to_string(size_) + ")");
  for (const auto& r : runs_) {
    if (i < r.count) return r.values;
    i -= r.count;
  }
  throw FormatError("ArraySeq::at: inconsistent run sizes");
}

ArraySeq ArraySeq::from_runs(std::vector<Run> runs) {
  ArraySeq s;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].count == 0) throw FormatError("array sequence run " + std::to_string(i) + " has count 0");
    if (s.size_ + runs[i].count < s.size_) throw FormatError("array sequence length overflows");
    s.size_ += runs[i].count;
  }
  s.runs_ = std::move(runs);
  return s;
}

ArraySeq ArraySeq::empties(std::uint64_t n) { return n == 0 ? ArraySeq{} : from_runs({Run{{}, n}}); }

}  // namespace scalatrace
