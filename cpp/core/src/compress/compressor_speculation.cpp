// Speculation in the intra-rank compressor (IntraCompressor::Impl, compressor_impl.hpp): the
// fast path for the next iteration of the last top-level loop, and the per-event entry point
// push() that tries it first. When the queue ends with a loop O, incoming events are matched
// against O's body as the next iteration (greedy walk: inner loops repeat while the event
// matches their first node, nodes with a presence vector may be skipped). Nothing is changed
// until the walk reaches the end of O's body; then the buffered values are appended to the
// nodes they matched (no allocation in the steady state). A mismatch replays the buffered
// events through the general path (compressor_fold.cpp), so speculation never changes what is
// recorded, only how fast. See docs/algorithms.md ("Intra-rank compression").
#include <utility>

#include "compress/compressor_impl.hpp"

namespace scalatrace {

using namespace compressor_nodes;

// The public per-event call lives here, next to the path it takes in the steady state, so that
// the compiler sees that whole path in one file.
void IntraCompressor::push(const Event& e) { impl_->push(e); }

void IntraCompressor::Impl::push(const Event& e) {
  if (++pushes_since_check >= check_interval) check_memory();
  if (spec_stack.empty() && !q.empty() && q.size() - 1 >= frozen && !q.back().raw && q.back().node.loop) {
    if (extends_one_event_loop(q.back().node, e)) return;
    spec_stack.push_back(SpecFrame{&q.back().node, 0, 1});
  }
  if (!spec_stack.empty()) {
    Step st = spec_step(e);
    if (st == Step::End) {
      // The iteration ended with skipped optional nodes: commit it, then e may start the
      // next one.
      spec_commit();
      spec_stack.push_back(SpecFrame{&q.back().node, 0, 1});
      st = spec_step(e);
    }
    if (st == Step::Ok) {
      if (spec_all_at_end()) spec_commit();
      return;
    }
    spec_flush();
  }
  normal_push(e);
}

// ---- deferred field values ----
// A lazy node's field not stored yet (compressor_nodes.hpp) drops deferred zeros; its first
// other value comes after as many zeros as its occurrences before those deferred values.
void IntraCompressor::Impl::append_deferred(EventNode& a, std::size_t i, std::int64_t value, std::uint64_t n,
                                            std::uint64_t occurrences_before) const {
  if (storage == FieldStorage::Lazy && i > 0 && a.fields[i].empty()) {
    if (value == 0) return;
    stored_field(a, i, occurrences_before);
  }
  single(a.fields[i]).append_repeat(value, n);
}

void IntraCompressor::Impl::flush_fields(EventNode& a, FieldCache& c) const {
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (const std::uint64_t n = c.pending[i] + c.repeats; n != 0) {
      // Field 0 comes first: from then on its length is every occurrence so far.
      append_deferred(a, i, c.last[i], n, seq_size(a.fields[0]) - (i == 0 ? 0 : n));
      c.pending[i] = 0;
    }
  c.repeats = 0;
  flush_arrays(a, c);
}

void IntraCompressor::Impl::flush_arrays(EventNode& a, FieldCache& c) const {
  if (c.empty_arrays == 0) return;
  const ArraySeq empties = ArraySeq::empties(c.empty_arrays);
  for (auto& array : a.arrays)
    if (storage == FieldStorage::Every || !array.empty()) single(array).append(empties);
  c.empty_arrays = 0;
}

/// The deferred values of node `a`, or nullptr.
auto IntraCompressor::Impl::find_field_cache(EventNode* a) -> FieldCache* {
  if (field_cache_next >= field_cache.size()) field_cache_next = 0;
  if (field_cache_next < field_cache.size() && field_cache[field_cache_next].node == a)
    return &field_cache[field_cache_next++];
  const auto it = field_cache_index.find(a);
  if (it == field_cache_index.end()) return nullptr;
  field_cache_next = it->second + 1;
  return &field_cache[it->second];
}

void IntraCompressor::Impl::cached_append(EventNode& a, const Event& e) {
  if (e.site != a.site || !a.site_ids.empty()) {
    // Occurrences from several call sites of one class (site_match): the site of each is
    // appended at once, the fields stay deferred. The earlier occurrences all had `site`; they
    // are counted from the field sequences, so the node's deferred values are flushed first.
    if (a.site_ids.empty()) {
      if (FieldCache* c = find_field_cache(&a)) flush_fields(a, *c);
      single(a.site_ids) = ValueSeq::constant(a.site, seq_size(a.fields[0]));
    }
    single(a.site_ids).append(static_cast<std::int64_t>(e.site));
  }
  FieldCache* found = find_field_cache(&a);
  if (found == nullptr) {
    field_cache_index.emplace(&a, field_cache.size());
    found = &field_cache.emplace_back();
    found->node = &a;
    field_cache_next = field_cache.size();
  }
  FieldCache& c = *found;
  std::int64_t differs = 0;  // branch-free comparison of all fields
  for (std::size_t i = 0; i < kFieldCount; ++i) differs |= e.fields[i] ^ c.last[i];
  if (differs == 0) {
    ++c.repeats;  // every field repeats (the steady state)
  } else {
    deferred_append_fields(a, c, e);
  }
  bool arrays_empty = true;
  for (const auto& array : e.arrays) arrays_empty = arrays_empty && array.empty();
  if (arrays_empty) {
    ++c.empty_arrays;
  } else {
    flush_arrays(a, c);
    // Occurrences before e: e's fields are counted already (deferred or appended).
    const std::uint64_t before = seq_size(a.fields[0]) + c.pending[0] + c.repeats - 1;
    for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
      if (storage == FieldStorage::Every)
        single(a.arrays[i]).append(e.arrays[i]);
      else if (!e.arrays[i].empty() || !a.arrays[i].empty())
        stored_array(a, i, before).append(e.arrays[i]);
    }
  }
  a.compute.add(e.compute_ns);
  a.duration.add(e.duration_ns);
}

void IntraCompressor::Impl::deferred_append_fields(EventNode& a, FieldCache& c, const Event& e) const {
  for (std::size_t i = 0; i < kFieldCount; ++i) c.pending[i] += c.repeats;
  c.repeats = 0;
  const std::uint64_t before = seq_size(a.fields[0]) + c.pending[0];  // occurrences before e
  for (std::size_t i = 0; i < kFieldCount; ++i) {
    const std::int64_t v = e.fields[i];
    if (c.pending[i] != 0 && v == c.last[i]) {
      ++c.pending[i];
      continue;
    }
    if (c.pending[i] != 0) append_deferred(a, i, c.last[i], c.pending[i], before - c.pending[i]);
    c.last[i] = v;
    c.pending[i] = 1;
  }
}

// ---- the speculative walk ----
auto IntraCompressor::Impl::spec_step(const Event& e) -> Step {
  const Key k{e.op, e.site};
  while (true) {
    SpecFrame& f = spec_stack.back();
    auto& body = f.loop->loop->body;
    if (f.idx == body.size()) {
      if (spec_stack.size() == 1) return Step::End;  // only optional nodes were left
      if (key_match(first_key(body.front()), k)) {
        ++f.iters;
        f.idx = 0;
        continue;
      }
      spec_actions.push_back(Action{f.loop, ActionKind::Trips, static_cast<std::int64_t>(f.iters)});
      spec_stack.pop_back();
      continue;
    }
    Node& n = body[f.idx];
    const bool optional = !n.presence.empty();
    const bool fits = n.event ? key_match(Key{n.event->op, n.event->site}, k) : key_match(first_key(n), k);
    if (!fits) {
      if (!optional) return Step::Fail;
      spec_actions.push_back(Action{&n, ActionKind::Presence, 0});
      ++f.idx;
      continue;
    }
    if (optional) spec_actions.push_back(Action{&n, ActionKind::Presence, 1});
    ++f.idx;
    if (n.loop) {
      spec_stack.push_back(SpecFrame{&n, 0, 1});
      continue;
    }
    if (spec_count == spec_events.size())
      spec_events.push_back(e);
    else
      spec_events[spec_count] = e;
    spec_actions.push_back(Action{&n, ActionKind::Event, static_cast<std::int64_t>(spec_count)});
    ++spec_count;
    return Step::Ok;
  }
}

bool IntraCompressor::Impl::spec_all_at_end() const {
  for (const auto& f : spec_stack)
    if (f.idx != f.loop->loop->body.size()) return false;
  return true;
}

void IntraCompressor::Impl::spec_commit() {
  for (std::size_t i = spec_stack.size(); i-- > 1;)
    spec_actions.push_back(
        Action{spec_stack[i].loop, ActionKind::Trips, static_cast<std::int64_t>(spec_stack[i].iters)});
  for (const auto& a : spec_actions) {
    switch (a.kind) {
      case ActionKind::Event:
        cached_append(*a.node->event, spec_events[static_cast<std::size_t>(a.value)]);
        break;
      case ActionKind::Presence:
        single(a.node->presence).append(a.value);
        break;
      case ActionKind::Trips:
        single(a.node->loop->trips).append(a.value);
        break;
    }
  }
  ValueSeq& trips = single(spec_stack.front().loop->loop->trips);
  trips.set_back(trips.back() + 1);
  spec_reset();
}

void IntraCompressor::Impl::spec_reset() {
  spec_stack.clear();
  spec_actions.clear();
  spec_count = 0;
}

/// Gives up speculation: the buffered events take the general path.
void IntraCompressor::Impl::spec_flush() {
  const std::size_t n = spec_count;
  spec_reset();
  for (std::size_t i = 0; i < n; ++i) normal_push(spec_events[i]);
}

/// Fast path for a polling loop (a loop whose body is one event): the iteration is complete with
/// this event, so it is appended at once (what spec_step and spec_commit would do, without
/// buffering). The polling loop may also be the innermost of a chain of loops that each end
/// their body with the next (a timestep loop whose iterations end in a poll of varying length):
/// the event then extends the last iteration's poll, which is what the general path's absorption
/// (try_absorb) does, as long as no outer level could take the event as the start of a new
/// iteration of its own (its body starts with another call, which is not optional).
bool IntraCompressor::Impl::extends_one_event_loop(Node& top, const Event& e) {
  const Key key{e.op, e.site};
  Node* level = &top;
  for (;;) {
    auto& body = level->loop->body;
    if (body.size() == 1 && body.front().event && body.front().presence.empty()) {
      EventNode& only = *body.front().event;
      if (!key_match(Key{only.op, only.site}, key)) return false;
      cached_append(only, e);
      ValueSeq& trips = single(level->loop->trips);
      trips.set_back(trips.back() + 1);
      return true;
    }
    // Speculation could start a new iteration with the event (at its first node, or past an
    // optional one), or the absorption could merge it into this level: leave it to them.
    if (!body.front().presence.empty() || key_match(first_key(body.front()), key)) return false;
    Node& last = body.back();
    if (!last.loop || !last.presence.empty()) return false;
    level = &last;
  }
}

}  // namespace scalatrace
