// Cursor: one rank's events from a compressed (per-rank or merged) trace, without expanding
// it. See docs/algorithms.md ("Cursor").
//
// The walk keeps a stack of frames (body, position, iterations left). Each node the rank visits
// has its own readers (presence, trip counts, field values), created on first visit and keyed
// by the node's address: the k-th occurrence of a node reads the k-th value of each of its
// elastic sequences.
#include "scalatrace/cursor.hpp"

#include <cmath>
#include <string>
#include <unordered_map>

#include "scalatrace/errors.hpp"

namespace scalatrace {
namespace {

/// Sequential reader over the ArraySeq that applies to a rank.
struct ArrayReader {
  const ArraySeq* seq = nullptr;
  std::size_t run = 0;
  std::uint64_t pos = 0;
  bool done() const { return seq == nullptr || run >= seq->runs().size(); }
  const std::vector<std::int64_t>& next() {
    const auto& r = seq->runs()[run];
    if (++pos >= r.count) {
      pos = 0;
      ++run;
    }
    return r.values;
  }
};

struct NodeState {
  bool has_presence = false;
  ValueSeq::Reader presence;
  ValueSeq::Reader trips;
  bool has_sites = false;
  ValueSeq::Reader site_ids;
  std::array<ValueSeq::Reader, kFieldCount> fields;
  std::array<bool, kFieldCount> field_unused{};
  std::array<ArrayReader, kArrayFieldCount> arrays;
  std::uint64_t occurrence = 0;
  const Histogram* compute = nullptr;   ///< the rank's timing group (or the node's)
  const Histogram* duration = nullptr;
};

/// Median estimate: the mean of the bin holding the middle value (exact for one-value bins).
std::uint64_t histogram_median(const Histogram& h) {
  if (h.count() == 0) return 0;
  std::uint64_t k = (h.count() - 1) / 2;
  for (const auto& b : h.bins()) {
    if (k < b.count)
      return static_cast<std::uint64_t>(std::llround(b.sum / static_cast<double>(b.count)));
    k -= b.count;
  }
  return static_cast<std::uint64_t>(std::llround(h.mean()));
}

struct WalkFrame {
  const std::vector<Node>* body;
  std::size_t pos;
  std::uint64_t trips_left;  ///< iterations still to run after the current one
};

}  // namespace

struct Cursor::Impl {
  const Trace& trace;
  std::int64_t rank;
  TimingMode timing;
  std::mt19937_64 rng;
  std::vector<WalkFrame> stack;
  std::unordered_map<const Node*, NodeState> states;
  std::uint64_t events = 0;
  const Node* last = nullptr;

  Impl(const Trace& t, std::int64_t r, TimingMode m, std::uint64_t seed)
      : trace(t), rank(r), timing(m), rng(seed) {
    stack.push_back(WalkFrame{&trace.nodes, 0, 0});
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError("trace is inconsistent for rank " + std::to_string(rank) + " (after " +
                      std::to_string(events) + " events): " + what);
  }

  const ValueSeq* seq_for(const ElasticValue& e, const char* what) const {
    const ValueSeq* s = e.for_rank(rank);
    if (s == nullptr) fail(std::string(what) + " has no value sequence for this rank");
    return s;
  }

  NodeState& state(const Node& n) {
    auto [it, inserted] = states.try_emplace(&n);
    NodeState& s = it->second;
    if (!inserted) return s;
    if (!n.presence.empty()) {
      // A merged node may carry presence for only some of its ranks: the others are present
      // at every visit.
      const ValueSeq* p = n.presence.for_rank(rank);
      if (p != nullptr) {
        s.has_presence = true;
        s.presence = ValueSeq::Reader(p);
      }
    }
    if (n.loop) {
      s.trips = ValueSeq::Reader(seq_for(n.loop->trips, "loop trip count"));
    } else if (n.event) {
      const EventNode& e = *n.event;
      s.compute = &e.compute_for(rank);
      s.duration = &e.duration_for(rank);
      if (!e.site_ids.empty()) {
        s.has_sites = true;
        s.site_ids = ValueSeq::Reader(seq_for(e.site_ids, "call-site sequence"));
      }
      for (std::size_t i = 0; i < kFieldCount; ++i) {
        if (e.fields[i].empty()) {
          s.field_unused[i] = true;  // field not stored: 0 everywhere
          continue;
        }
        s.fields[i] = ValueSeq::Reader(
            seq_for(e.fields[i], std::string(field_name(static_cast<Field>(i))).c_str()));
      }
      for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
        if (e.arrays[i].empty()) continue;
        const ArraySeq* a = e.arrays[i].for_rank(rank);
        if (a == nullptr)
          fail(std::string("array ") + std::string(array_field_name(static_cast<ArrayField>(i))) +
               " has no value sequence for this rank");
        s.arrays[i].seq = a;
      }
    } else {
      fail("node with neither event nor loop");
    }
    return s;
  }

  std::uint64_t timing_value(const Histogram& h) {
    switch (timing) {
      case TimingMode::Mean: return static_cast<std::uint64_t>(std::llround(h.mean()));
      case TimingMode::Sample: return h.sample(rng);
      case TimingMode::None: return 0;
      case TimingMode::Median: return histogram_median(h);
    }
    return 0;
  }

  Event make_event(const EventNode& en, NodeState& s) {
    Event e;
    e.op = en.op;
    e.site = en.site;
    if (s.has_sites) {
      if (s.site_ids.done()) fail("call-site sequence of a " + std::string(op_name(en.op)) + " ran out");
      e.site = static_cast<std::uint32_t>(s.site_ids.next());
    }
    for (std::size_t i = 0; i < kFieldCount; ++i) {
      if (s.field_unused[i]) continue;
      if (s.fields[i].done())
        fail("field " + std::string(field_name(static_cast<Field>(i))) + " of a " +
             std::string(op_name(en.op)) + " ran out of values at occurrence " +
             std::to_string(s.occurrence));
      e.fields[i] = s.fields[i].next();
    }
    for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
      ArrayReader& r = s.arrays[i];
      if (r.seq == nullptr) continue;
      if (r.done())
        fail("array " + std::string(array_field_name(static_cast<ArrayField>(i))) + " of a " +
             std::string(op_name(en.op)) + " ran out of values at occurrence " +
             std::to_string(s.occurrence));
      e.arrays[i] = r.next();
    }
    ++s.occurrence;
    e.compute_ns = timing_value(s.compute ? *s.compute : en.compute);
    e.duration_ns = timing_value(s.duration ? *s.duration : en.duration);
    return e;
  }

  std::optional<Event> next() {
    while (!stack.empty()) {
      WalkFrame& f = stack.back();
      if (f.pos == f.body->size()) {
        if (f.trips_left > 0) {
          --f.trips_left;
          f.pos = 0;
        } else {
          stack.pop_back();
        }
        continue;
      }
      const Node& n = (*f.body)[f.pos++];
      if (!n.ranks.empty() && !n.ranks.contains(rank)) continue;
      NodeState& s = state(n);
      if (s.has_presence) {
        if (s.presence.done()) fail("presence sequence ran out");
        const std::int64_t p = s.presence.next();
        if (p == 0) continue;
        if (p != 1) fail("presence value " + std::to_string(p) + " is not 0 or 1");
      }
      if (n.loop) {
        if (s.trips.done()) fail("loop trip counts ran out");
        const std::int64_t trips = s.trips.next();
        if (trips < 0) fail("negative loop trip count " + std::to_string(trips));
        if (trips == 0 || n.loop->body.empty()) continue;
        stack.push_back(WalkFrame{&n.loop->body, 0, static_cast<std::uint64_t>(trips - 1)});
        continue;
      }
      ++events;
      last = &n;
      return make_event(*n.event, s);
    }
    return std::nullopt;
  }
};

Cursor::Cursor(const Trace& trace, std::int64_t rank, TimingMode timing, std::uint64_t seed) {
  if (rank < 0 || rank >= trace.nranks)
    throw UsageError("rank " + std::to_string(rank) + " is out of range: the trace has " +
                     std::to_string(trace.nranks) + " ranks");
  impl_ = std::make_unique<Impl>(trace, rank, timing, seed);
}
Cursor::~Cursor() = default;
Cursor::Cursor(Cursor&&) noexcept = default;

std::optional<Event> Cursor::next() { return impl_->next(); }
const Node* Cursor::last_node() const { return impl_->last; }

std::vector<Event> expand(const Trace& trace, std::int64_t rank) {
  Cursor c(trace, rank, TimingMode::Mean);
  std::vector<Event> out;
  while (auto e = c.next()) out.push_back(std::move(*e));
  return out;
}

}  // namespace scalatrace
