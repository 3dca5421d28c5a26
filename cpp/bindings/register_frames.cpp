// Bulk per-rank event columns for pandas (scalatrace.frames): one Cursor per rank, streamed
// into rank-table rows, with a guard on the total number of rows.
#include <optional>
#include <string>
#include <unordered_map>

#include "bindings.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/merge/timing_groups.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

/// Where an event's compute or duration value in a frame comes from (scalatrace.frames
/// TIMING_SOURCES, same order): the event's own recorded time; the mean of this rank's own
/// occurrences of the node; the mean of a timing group (or of the node's ranks) of several
/// ranks; a draw from such a histogram; no time (timing "none", or no value recorded).
enum class TimingSource : std::uint8_t { Measured, PerRank, PerGroup, Sampled, None };

/// Follows a cursor's walk and says, event by event, where its compute and duration came from:
/// the same rule as the cursor (cursor.cpp: the rank's timing group else the node's histograms;
/// the first occurrence's compute from the first-occurrence histogram where it is not similar).
class TimingSourceTracker {
  static_assert(EventNode::kMaxTimingGroups < 8, "timing-group ids keep 3 bits per node");

 public:
  TimingSourceTracker(const Trace& trace, TimingMode mode) : mode_(mode) { number(trace.nodes); }
  void begin_rank(std::int64_t rank) {
    rank_ = rank;
    occurrences_.clear();
  }
  struct Sources {
    TimingSource compute, duration;
    /// The (event node, timing group) the times came from: 8 x the node's position in a
    /// pre-order walk of the trace + 1 + the group's position (0: the node-wide histograms),
    /// the same in every frame of the trace. The events with one number took their times from
    /// one pair of histograms, so their sums are the measured sums of those events.
    std::int64_t group;
  };
  /// The sources of the event the cursor just returned from `node`.
  Sources next(const Node& node) {
    const EventNode& e = *node.event;
    const TimingGroup* group = e.timing_group_for(rank_);
    const Histogram& compute = group != nullptr ? group->compute : e.compute;
    const Histogram& duration = group != nullptr ? group->duration : e.duration;
    const Histogram& first = group != nullptr ? group->first_compute : e.first_compute;
    const std::int64_t scope = group != nullptr ? group->ranks.size() : (node.ranks.empty() ? 1 : node.ranks.size());
    const bool uses_first = first.count() > 0 && !similar_timing(first, compute);
    const std::uint64_t occurrence = occurrences_[&node]++;
    std::uint64_t compute_values = compute.count();
    if (uses_first) compute_values = occurrence == 0 ? first.count() : compute.count() - first.count();
    const std::int64_t slot = group != nullptr ? 1 + (group - e.timing_groups.data()) : 0;
    return {source(scope, compute_values), source(scope, duration.count()), 8 * node_index_.at(&node) + slot};
  }

 private:
  TimingSource source(std::int64_t scope, std::uint64_t values) const {
    if (mode_ == TimingMode::None || values == 0) return TimingSource::None;  // no time recorded
    if (scope <= 1 && values <= 1) return TimingSource::Measured;
    if (mode_ == TimingMode::Sample) return TimingSource::Sampled;
    return scope <= 1 ? TimingSource::PerRank : TimingSource::PerGroup;
  }
  TimingMode mode_;
  std::int64_t rank_ = 0;
  std::unordered_map<const Node*, std::uint64_t> occurrences_;
  std::unordered_map<const Node*, std::int64_t> node_index_;

  void number(const std::vector<Node>& nodes) {
    for (const Node& n : nodes) {
      node_index_.emplace(&n, static_cast<std::int64_t>(node_index_.size()));
      if (n.loop) number(n.loop->body);
    }
  }
};

/// Rank-table rows of several ranks plus each event's index within its rank and its start time
/// on the rank's own clock (sum of the preceding computes and durations plus its compute).
class ColumnCollector {
 public:
  ColumnCollector(std::int64_t nranks, const CommTable& comms, std::uint64_t max_events)
      : rows_(0, nranks, comms), max_events_(max_events) {}

  /// Starts a rank; returns false once the guard has tripped.
  /// `names`: the function-name table Op::Other events of this rank refer to (Field::NameId).
  bool begin_rank(std::int64_t rank, const CommTable& comms, const std::vector<std::string>& names) {
    names_ = &names;
    rows_.set_rank(rank);
    rows_.set_comms(comms);
    index_ = 0;
    clock_ns_ = 0;
    return !overflow_;
  }
  /// Adds one event; returns false (and stops collecting) when max_events would be exceeded.
  /// `sources`: where its compute and duration came from (raw recordings: measured).
  bool add(const Event& e,
           TimingSourceTracker::Sources sources = {TimingSource::Measured, TimingSource::Measured, -1}) {
    if (rows_.size() >= max_events_) {
      overflow_ = true;
      return false;
    }
    rows_.add(e);
    event_.push_back(index_++);
    clock_ns_ += e.compute_ns;
    start_ns_.push_back(clock_ns_);
    clock_ns_ += e.duration_ns;
    compute_source_.push_back(static_cast<std::uint8_t>(sources.compute));
    duration_source_.push_back(static_cast<std::uint8_t>(sources.duration));
    timing_group_.push_back(sources.group);
    function_.push_back(function_of(e));
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
    out["compute_source"] = to_numpy(std::move(compute_source_));
    out["duration_source"] = to_numpy(std::move(duration_source_));
    out["timing_group"] = to_numpy(std::move(timing_group_));
    out["function"] = to_numpy(std::move(function_));
    out["functions"] = functions_;
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
  std::vector<std::uint8_t> compute_source_, duration_source_;
  std::vector<std::int64_t> timing_group_;
  /// Op::Other rows: index into functions_ (names over all ranks), -1 for the other ops.
  std::int64_t function_of(const Event& e) {
    if (e.op != Op::Other) return -1;
    const std::int64_t id = e[Field::NameId];
    if (id < 0 || static_cast<std::size_t>(id) >= names_->size()) return -1;
    const std::string& name = (*names_)[static_cast<std::size_t>(id)];
    const auto [it, added] = function_ids_.try_emplace(name, static_cast<std::int64_t>(functions_.size()));
    if (added) functions_.push_back(name);
    return it->second;
  }
  const std::vector<std::string>* names_ = nullptr;
  std::vector<std::int64_t> function_;
  std::vector<std::string> functions_;
  std::unordered_map<std::string, std::int64_t> function_ids_;
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
        TimingSourceTracker sources(t, mode);
        {
          py::gil_scoped_release release;
          for (const auto r : ranks) {
            if (!columns.begin_rank(r, t.comms, t.names)) break;
            sources.begin_rank(r);
            Cursor cursor(t, r, mode, seed);
            while (auto e = cursor.next())
              if (!columns.add(*e, sources.next(*cursor.last_node()))) break;
          }
        }
        return columns.finish();
      },
      py::arg("trace"), py::arg("ranks"), py::arg("max_events"), py::arg("timing") = "mean", py::arg("seed") = 0,
      "Events of `ranks` (in that order) as {'rows': rank-table rows, 'event': index within the "
      "rank, 'start_ns': start on the rank's clock, 'compute_source' / 'duration_source': where "
      "each value comes from (0 measured, 1 per-rank mean, 2 per-group mean, 3 sampled, 4 none), "
      "'timing_group': events with one number share their histograms (-1: recorded), "
      "'function': Other events' index into 'functions' (names), -1 otherwise}; "
      "TooLargeError beyond max_events rows.");
  m.def(
      "recording_columns",
      [](const std::vector<RankRecording>& recs, std::int64_t nranks, std::uint64_t max_events) {
        if (recs.empty()) throw UsageError("no recordings");
        ColumnCollector columns(nranks, recs.front().comms, max_events);
        for (const auto& rec : recs) {
          if (!columns.begin_rank(rec.rank, rec.comms, rec.names)) break;
          for (const auto& e : rec.events)
            if (!columns.add(e)) break;
        }
        return columns.finish();
      },
      py::arg("recordings"), py::arg("nranks"), py::arg("max_events"),
      "Like event_columns for raw recordings (recorded timings).");
}
