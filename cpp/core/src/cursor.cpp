// Cursor: one rank's events from a compressed (per-rank or merged) trace, without expanding
// it. See docs/algorithms.md ("Cursor").
//
// The walk keeps a stack of frames (body, position, iterations left). Each node the rank visits
// has its own readers (presence, trip counts, field values), created on first visit and keyed
// by the node's address: the k-th occurrence of a node reads the k-th value of each of its
// elastic sequences.
#include "scalatrace/cursor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <memory>
#include <vector>

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

/// One stored scalar field of an event node whose values vary, and its reader.
struct FieldReader {
  std::uint8_t field = 0;
  ValueSeq::Reader reader;
};

/// A stored field with one value throughout (most fields of a regular program).
struct ConstantField {
  std::uint8_t field = 0;
  std::int64_t value = 0;
};

/// One stored array field of an event node and its reader.
struct ArrayFieldReader {
  std::uint8_t field = 0;
  ArrayReader reader;
};

struct NodeState {
  bool has_presence = false;
  bool has_sites = false;
  ValueSeq::Reader presence;
  ValueSeq::Reader trips;
  ValueSeq::Reader site_ids;
  std::vector<FieldReader> fields;        ///< stored varying fields, in field order
  std::vector<ConstantField> constants;   ///< stored constant non-zero fields
  /// Occurrences every constant field has values for (the smallest of their sizes).
  std::uint64_t constant_limit = UINT64_MAX;
  std::vector<ArrayFieldReader> arrays;   ///< stored arrays only, in field order
  std::uint64_t occurrence = 0;
  const Histogram* compute = nullptr;   ///< the rank's timing group (or the node's)
  const Histogram* duration = nullptr;
  /// Timing modes other than Sample: the (fixed) values, computed on first visit.
  std::uint64_t compute_ns = 0, duration_ns = 0;
  /// Loops: the states of the body's nodes by position, created on first visit
  /// (kNotMember: a node of other ranks only).
  std::vector<NodeState*> body;
};

/// Marks a node the cursor's rank does not take part in (membership decided once).
NodeState not_member_marker;
NodeState* const kNotMember = &not_member_marker;

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
  std::vector<NodeState*>* states;  ///< per position of `body`
  std::size_t pos;
  std::uint64_t trips_left;  ///< iterations still to run after the current one
};

}  // namespace

struct Cursor::Impl {
  const Trace& trace;
  std::int64_t rank;
  TimingMode timing;
  /// TimingMode::Sample only (2.5 KB of state: not kept by cursors that do not draw).
  std::unique_ptr<std::mt19937_64> rng;
  std::vector<WalkFrame> stack;
  std::vector<NodeState*> top_states;  ///< per position of trace.nodes
  std::vector<std::unique_ptr<NodeState>> owned;  ///< every NodeState created
  std::uint64_t events = 0;
  const Node* last = nullptr;

  Impl(const Trace& t, std::int64_t r, TimingMode m, std::uint64_t seed)
      : trace(t), rank(r), timing(m) {
    if (timing == TimingMode::Sample) rng = std::make_unique<std::mt19937_64>(seed);
    top_states.resize(trace.nodes.size());
    stack.push_back(WalkFrame{&trace.nodes, &top_states, 0, 0});
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

  /// The rank's state of node `n` (whose entry in its body's states is `slot`), created on
  /// first visit; nullptr if the rank does not take part in the node.
  NodeState* state(const Node& n, NodeState*& slot) {
    if (slot != nullptr) return slot == kNotMember ? nullptr : slot;
    if (!n.ranks.empty() && !n.ranks.contains(rank)) {
      slot = kNotMember;
      return nullptr;
    }
    owned.push_back(std::make_unique<NodeState>());
    NodeState& s = *owned.back();
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
      s.body.assign(n.loop->body.size(), nullptr);
    } else if (n.event) {
      const EventNode& e = *n.event;
      s.compute = &e.compute_for(rank);
      s.duration = &e.duration_for(rank);
      if (timing != TimingMode::Sample) {
        s.compute_ns = timing_value(*s.compute);
        s.duration_ns = timing_value(*s.duration);
      }
      if (!e.site_ids.empty()) {
        s.has_sites = true;
        s.site_ids = ValueSeq::Reader(seq_for(e.site_ids, "call-site sequence"));
      }
      for (std::size_t i = 0; i < kFieldCount; ++i) {
        if (e.fields[i].empty()) continue;  // field not stored: 0 everywhere
        const ValueSeq* seq =
            seq_for(e.fields[i], std::string(field_name(static_cast<Field>(i))).c_str());
        const auto field = static_cast<std::uint8_t>(i);
        if (!seq->empty() && seq->is_constant()) {
          s.constant_limit = std::min(s.constant_limit, seq->size());
          if (seq->back() != 0) s.constants.push_back(ConstantField{field, seq->back()});
        } else {
          s.fields.push_back(FieldReader{field, ValueSeq::Reader(seq)});
        }
      }
      s.fields.shrink_to_fit();
      s.constants.shrink_to_fit();
      for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
        if (e.arrays[i].empty()) continue;
        const ArraySeq* a = e.arrays[i].for_rank(rank);
        if (a == nullptr)
          fail(std::string("array ") + std::string(array_field_name(static_cast<ArrayField>(i))) +
               " has no value sequence for this rank");
        s.arrays.push_back(ArrayFieldReader{static_cast<std::uint8_t>(i), ArrayReader{a}});
      }
    } else {
      fail("node with neither event nor loop");
    }
    slot = &s;
    return slot;
  }

  std::uint64_t timing_value(const Histogram& h) {
    switch (timing) {
      case TimingMode::Mean: return static_cast<std::uint64_t>(std::llround(h.mean()));
      case TimingMode::Sample: return h.sample(*rng);
      case TimingMode::None: return 0;
      case TimingMode::Median: return histogram_median(h);
    }
    return 0;
  }

  /// Names the first field (in field order) that has no value for this occurrence.
  [[noreturn]] void fail_field_ran_out(const EventNode& en, const NodeState& s) const {
    for (std::size_t i = 0; i < kFieldCount; ++i) {
      if (en.fields[i].empty()) continue;
      const ValueSeq* seq = en.fields[i].for_rank(rank);
      if (seq != nullptr && seq->size() > s.occurrence) continue;
      fail("field " + std::string(field_name(static_cast<Field>(i))) + " of a " +
           std::string(op_name(en.op)) + " ran out of values at occurrence " +
           std::to_string(s.occurrence));
    }
    fail("a field of a " + std::string(op_name(en.op)) + " ran out of values");
  }

  /// Fills `e` with the node's next occurrence (every field and array overwritten; array
  /// storage reused).
  void make_event(const EventNode& en, NodeState& s, Event& e) {
    e.op = en.op;
    e.site = en.site;
    if (s.has_sites) {
      if (s.site_ids.done()) fail("call-site sequence of a " + std::string(op_name(en.op)) + " ran out");
      e.site = static_cast<std::uint32_t>(s.site_ids.next());
    }
    e.fields.fill(0);
    if (s.occurrence >= s.constant_limit) fail_field_ran_out(en, s);
    for (FieldReader& f : s.fields) {
      if (f.reader.done()) fail_field_ran_out(en, s);
      e.fields[f.field] = f.reader.next();
    }
    for (const ConstantField& c : s.constants) e.fields[c.field] = c.value;
    for (auto& a : e.arrays) a.clear();
    for (ArrayFieldReader& a : s.arrays) {
      if (a.reader.done())
        fail("array " + std::string(array_field_name(static_cast<ArrayField>(a.field))) + " of a " +
             std::string(op_name(en.op)) + " ran out of values at occurrence " +
             std::to_string(s.occurrence));
      const std::vector<std::int64_t>& values = a.reader.next();
      e.arrays[a.field].assign(values.begin(), values.end());
    }
    ++s.occurrence;
    if (timing == TimingMode::Sample) {
      e.compute_ns = timing_value(*s.compute);
      e.duration_ns = timing_value(*s.duration);
    } else {
      e.compute_ns = s.compute_ns;
      e.duration_ns = s.duration_ns;
    }
  }

  bool next(Event& out) {
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
      const std::size_t pos = f.pos++;
      const Node& n = (*f.body)[pos];
      NodeState* state_of_node = state(n, (*f.states)[pos]);
      if (state_of_node == nullptr) continue;
      NodeState& s = *state_of_node;
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
        stack.push_back(WalkFrame{&n.loop->body, &s.body, 0, static_cast<std::uint64_t>(trips - 1)});
        continue;
      }
      ++events;
      last = &n;
      make_event(*n.event, s, out);
      return true;
    }
    return false;
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

std::optional<Event> Cursor::next() {
  Event e;
  if (!impl_->next(e)) return std::nullopt;
  return e;
}
bool Cursor::next(Event& out) { return impl_->next(out); }
const Node* Cursor::last_node() const { return impl_->last; }

std::vector<Event> expand(const Trace& trace, std::int64_t rank) {
  Cursor c(trace, rank, TimingMode::Mean);
  std::vector<Event> out;
  while (auto e = c.next()) out.push_back(std::move(*e));
  return out;
}

}  // namespace scalatrace
