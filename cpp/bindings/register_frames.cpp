// Bulk per-rank event columns for pandas (scalatrace.frames): one Cursor per rank, streamed
// into rank-table rows, with a guard on the total number of rows.
#include <optional>
#include <string>

#include "bindings.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

/// Rank-table rows of several ranks plus each event's index within its rank and its start time
/// on the rank's own clock (sum of the preceding computes and durations plus its compute).
class ColumnCollector {
 public:
  ColumnCollector(std::int64_t nranks, const CommTable& comms, std::uint64_t max_events)
      : rows_(0, nranks, comms), max_events_(max_events) {}

  /// Starts a rank; returns false once the guard has tripped.
  bool begin_rank(std::int64_t rank, const CommTable& comms) {
    rows_.set_rank(rank);
    rows_.set_comms(comms);
    index_ = 0;
    clock_ns_ = 0;
    return !overflow_;
  }
  /// Adds one event; returns false (and stops collecting) when max_events would be exceeded.
  bool add(const Event& e) {
    if (rows_.size() >= max_events_) {
      overflow_ = true;
      return false;
    }
    rows_.add(e);
    event_.push_back(index_++);
    clock_ns_ += e.compute_ns;
    start_ns_.push_back(clock_ns_);
    clock_ns_ += e.duration_ns;
    return true;
  }
  bool overflow() const { return overflow_; }

  py::dict finish() {
    if (overflow_)
      throw_too_large("more than max_events=" + std::to_string(max_events_) +
                      " events in the requested ranks; pass fewer ranks (ranks=...) or a larger "
                      "max_events (each row takes about 80 bytes)");
    py::dict out;
    out["rows"] = rows_.finish();
    out["event"] = to_numpy(std::move(event_));
    out["start_ns"] = to_numpy(std::move(start_ns_));
    return out;
  }

 private:
  [[noreturn]] static void throw_too_large(const std::string& message) {
    auto cls = py::module_::import("scalatrace.errors").attr("TooLargeError");
    PyErr_SetString(cls.ptr(), message.c_str());
    throw py::error_already_set();
  }

  RankTableBuilder rows_;
  std::uint64_t max_events_;
  std::vector<std::int64_t> event_;
  std::vector<std::uint64_t> start_ns_;
  std::int64_t index_ = 0;
  std::uint64_t clock_ns_ = 0;
  bool overflow_ = false;
};

}  // namespace

void register_frames(py::module_& m) {
  m.def(
      "event_columns",
      [](const Trace& t, const std::vector<std::int64_t>& ranks, std::uint64_t max_events, const std::string& timing,
         std::uint64_t seed) {
        const TimingMode mode = parse_timing_mode(timing);
        for (const auto r : ranks)
          if (r < 0 || r >= t.nranks)
            throw UsageError("rank " + std::to_string(r) + " out of range (trace has " + std::to_string(t.nranks) +
                             " ranks)");
        ColumnCollector columns(t.nranks, t.comms, max_events);
        {
          py::gil_scoped_release release;
          for (const auto r : ranks) {
            if (!columns.begin_rank(r, t.comms)) break;
            Cursor cursor(t, r, mode, seed);
            while (auto e = cursor.next())
              if (!columns.add(*e)) break;
          }
        }
        return columns.finish();
      },
      py::arg("trace"), py::arg("ranks"), py::arg("max_events"), py::arg("timing") = "mean", py::arg("seed") = 0,
      "Events of `ranks` (in that order) as {'rows': rank-table rows, 'event': index within the "
      "rank, 'start_ns': start on the rank's clock}; TooLargeError beyond max_events rows.");
  m.def(
      "recording_columns",
      [](const std::vector<RankRecording>& recs, std::int64_t nranks, std::uint64_t max_events) {
        if (recs.empty()) throw UsageError("no recordings");
        ColumnCollector columns(nranks, recs.front().comms, max_events);
        for (const auto& rec : recs) {
          if (!columns.begin_rank(rec.rank, rec.comms)) break;
          for (const auto& e : rec.events)
            if (!columns.add(e)) break;
        }
        return columns.finish();
      },
      py::arg("recordings"), py::arg("nranks"), py::arg("max_events"),
      "Like event_columns for raw recordings (recorded timings).");
}
