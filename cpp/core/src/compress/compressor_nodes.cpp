// Node primitives of the intra-rank compressor: see compressor_nodes.hpp.
#include "compress/compressor_nodes.hpp"

#include <memory>

#include "scalatrace/compress/lossy.hpp"

namespace scalatrace::compressor_nodes {

ValueSeq& single(ElasticValue& e) {
  if (e.alternatives.empty()) e.alternatives.emplace_back(ValueSeq{}, RankList{});
  return e.alternatives.front().first;
}
ArraySeq& single(ElasticArray& e) {
  if (e.alternatives.empty()) e.alternatives.emplace_back(ArraySeq{}, RankList{});
  return e.alternatives.front().first;
}
std::uint64_t seq_size(const ElasticValue& e) {
  return e.alternatives.empty() ? 0 : e.alternatives.front().first.size();
}

Key first_key(const Node& n) {
  const Node* p = &n;
  while (p->loop) p = &p->loop->body.front();
  return Key{p->event->op, p->event->site};
}
Key last_key(const Node& n) {
  const Node* p = &n;
  while (p->loop) p = &p->loop->body.back();
  return Key{p->event->op, p->event->site};
}
View view_of(const Node& n) { return View{n.loop != nullptr, first_key(n), last_key(n)}; }
View view_of(const Entry& e) {
  if (e.raw) return View{false, Key{e.ev.op, e.ev.site}, Key{e.ev.op, e.ev.site}};
  return view_of(e.node);
}

std::uint64_t occurrences(const Node& n) {
  if (n.loop) return seq_size(n.loop->trips);
  return seq_size(n.event->fields[0]);
}
std::uint64_t visits(const Node& n) { return n.presence.empty() ? occurrences(n) : seq_size(n.presence); }
ValueSeq& stored_field(EventNode& a, std::size_t i, std::uint64_t zeros_before) {
  if (a.fields[i].empty()) single(a.fields[i]) = ValueSeq::constant(0, zeros_before);
  return single(a.fields[i]);
}

ArraySeq& stored_array(EventNode& a, std::size_t i, std::uint64_t empties_before) {
  if (a.arrays[i].empty()) single(a.arrays[i]) = ArraySeq::empties(empties_before);
  return single(a.arrays[i]);
}

Node make_event_node(const Event& e, std::uint32_t hist_sub_bins, FieldStorage storage) {
  const bool lazy = storage == FieldStorage::Lazy;
  Node n;
  n.event = std::make_unique<EventNode>();
  EventNode& en = *n.event;
  en.op = e.op;
  en.site = e.site;
  en.compute = Histogram(hist_sub_bins);
  en.duration = Histogram(hist_sub_bins);
  en.first_compute = Histogram(hist_sub_bins);
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (!lazy || i == 0 || e.fields[i] != 0) single(en.fields[i]).append(e.fields[i]);
  for (std::size_t i = 0; i < kArrayFieldCount; ++i)
    if (!lazy || !e.arrays[i].empty()) single(en.arrays[i]).append(e.arrays[i]);
  en.compute.add(e.compute_ns);
  en.duration.add(e.duration_ns);
  en.first_compute.add(e.compute_ns);  // a new node: the rank's first occurrence of it
  return n;
}

void append_event(EventNode& a, const Event& e, FieldStorage storage) {
  const bool lazy = storage == FieldStorage::Lazy;
  const std::uint64_t before = seq_size(a.fields[0]);
  if (!a.site_ids.empty() || e.site != a.site) {
    ValueSeq& s = single(a.site_ids);
    if (s.empty()) s = ValueSeq::constant(a.site, before);
    s.append(static_cast<std::int64_t>(e.site));
  }
  if (!lazy) {
    for (std::size_t i = 0; i < kFieldCount; ++i) single(a.fields[i]).append(e.fields[i]);
    for (std::size_t i = 0; i < kArrayFieldCount; ++i) single(a.arrays[i]).append(e.arrays[i]);
  } else {
    for (std::size_t i = 0; i < kFieldCount; ++i)
      if (i == 0 || e.fields[i] != 0 || !a.fields[i].empty()) stored_field(a, i, before).append(e.fields[i]);
    for (std::size_t i = 0; i < kArrayFieldCount; ++i)
      if (!e.arrays[i].empty() || !a.arrays[i].empty()) stored_array(a, i, before).append(e.arrays[i]);
  }
  a.compute.add(e.compute_ns);
  a.duration.add(e.duration_ns);
}

void merge_event(EventNode& a, EventNode&& b, FieldStorage storage) {
  const std::uint64_t na = seq_size(a.fields[0]), nb = seq_size(b.fields[0]);
  if (!a.site_ids.empty() || !b.site_ids.empty() || a.site != b.site) {
    ValueSeq& s = single(a.site_ids);
    if (s.empty()) s = ValueSeq::constant(a.site, na);
    if (b.site_ids.empty())
      s.append(ValueSeq::constant(b.site, nb));
    else
      s.append(single(b.site_ids));
  }
  // Lossy fields (SCALATRACE_LOSSY): one histogram of both sides' occurrences; their order
  // does not matter in a histogram.
  merge_lossy_fields(a, b, na, nb);
  if (storage == FieldStorage::Every) {
    for (std::size_t i = 0; i < kFieldCount; ++i) single(a.fields[i]).append(single(b.fields[i]));
    for (std::size_t i = 0; i < kArrayFieldCount; ++i) single(a.arrays[i]).append(single(b.arrays[i]));
  } else {
    // A field or array stored on neither side (0 / none at every occurrence) stays so; stored
    // on one side only, the other side's occurrences get their zeros / empty arrays first.
    for (std::size_t i = 0; i < kFieldCount; ++i)
      if (!a.fields[i].empty() || !b.fields[i].empty()) stored_field(a, i, na).append(stored_field(b, i, nb));
    for (std::size_t i = 0; i < kArrayFieldCount; ++i)
      if (!a.arrays[i].empty() || !b.arrays[i].empty()) stored_array(a, i, na).append(stored_array(b, i, nb));
  }
  a.compute.merge(b.compute);
  a.duration.merge(b.duration);
  // `b` holds later occurrences of `a`'s node (a later loop iteration): `a` keeps its first.
}

void store_every_field(Node& n) {
  if (n.loop) {
    for (Node& c : n.loop->body) store_every_field(c);
    return;
  }
  EventNode& e = *n.event;
  const std::uint64_t count = seq_size(e.fields[0]);
  for (std::size_t i = 1; i < kFieldCount; ++i) stored_field(e, i, count);
  for (std::size_t i = 0; i < kArrayFieldCount; ++i) stored_array(e, i, count);
}

void merge_presence(Node& a, std::uint64_t va, const ElasticValue& b_presence, std::uint64_t vb) {
  if (a.presence.empty() && b_presence.empty()) return;
  const bool had = !a.presence.empty();
  ValueSeq& p = single(a.presence);
  if (!had) p = ValueSeq::constant(1, va);
  if (b_presence.empty())
    p.append(ValueSeq::constant(1, vb));
  else
    p.append(b_presence.alternatives.front().first);
}
void mark_absent(Node& a, std::uint64_t vb) {
  const std::uint64_t va = visits(a);
  const bool had = !a.presence.empty();
  ValueSeq& p = single(a.presence);
  if (!had) p = ValueSeq::constant(1, va);
  p.append(ValueSeq::constant(0, vb));
}

Node absent_before(Node n, std::uint64_t va) {
  const std::uint64_t vn = visits(n);
  ValueSeq p = ValueSeq::constant(0, va);
  if (n.presence.empty())
    p.append(ValueSeq::constant(1, vn));
  else
    p.append(n.presence.alternatives.front().first);
  n.presence.alternatives.clear();
  n.presence.alternatives.emplace_back(std::move(p), RankList{});
  return n;
}
namespace {
/// Heap bytes of a vector's buffer: its capacity plus the allocator's per-block overhead.
template <class T>
std::size_t buffer_bytes(const std::vector<T>& v) {
  constexpr std::size_t kAllocationOverhead = 16;
  return v.capacity() ? v.capacity() * sizeof(T) + kAllocationOverhead : 0;
}
std::size_t seq_bytes(const ValueSeq& s) {
  std::size_t n = buffer_bytes(s.blocks());
  for (const auto& b : s.blocks()) n += buffer_bytes(b.runs);
  return n;
}
std::size_t elastic_bytes(const ElasticValue& e) {
  std::size_t n = buffer_bytes(e.alternatives);
  for (const auto& [s, r] : e.alternatives) n += seq_bytes(s) + buffer_bytes(r.descriptors());
  return n;
}
std::size_t histogram_bytes(const Histogram& h) { return buffer_bytes(h.bins()); }
}  // namespace

std::size_t node_bytes(const Node& n) {
  constexpr std::size_t kAllocationOverhead = 16;
  std::size_t b = sizeof(Node) + elastic_bytes(n.presence) + buffer_bytes(n.ranks.descriptors());
  if (n.event) {
    const EventNode& e = *n.event;
    b += sizeof(EventNode) + kAllocationOverhead + elastic_bytes(e.site_ids);
    for (const auto& f : e.fields) b += elastic_bytes(f);
    for (const auto& a : e.arrays) {
      b += buffer_bytes(a.alternatives);
      for (const auto& [s, r] : a.alternatives) {
        b += buffer_bytes(s.runs()) + buffer_bytes(r.descriptors());
        for (const auto& run : s.runs()) b += buffer_bytes(run.values);
      }
    }
    b += histogram_bytes(e.compute) + histogram_bytes(e.duration) + histogram_bytes(e.first_compute) +
         buffer_bytes(e.timing_groups) + buffer_bytes(e.lossy);
    for (const auto& l : e.lossy) b += buffer_bytes(l.values.bins());
  }
  if (n.loop) {
    b += sizeof(LoopNode) + kAllocationOverhead + elastic_bytes(n.loop->trips) + buffer_bytes(n.loop->body) -
         n.loop->body.size() * sizeof(Node);  // children below
    for (const auto& c : n.loop->body) b += node_bytes(c);
  }
  return b;
}

std::size_t entry_bytes(const Entry& e, std::uint32_t hist_sub_bins) {
  if (!e.raw) return sizeof(Entry) + node_bytes(e.node) - sizeof(Node);
  // A fresh event becomes a node when it joins a loop or at finish(): priced as that node, so
  // the budget also bounds the queue's conversion at the end. The node's size does not depend
  // on the values, only on the arrays' lengths (measured once per array shape would be exact;
  // one measurement of an event without arrays plus the arrays' values is close).
  static thread_local std::size_t plain_node = 0;
  static thread_local std::uint32_t plain_bins = 0;
  if (plain_node == 0 || plain_bins != hist_sub_bins) {
    plain_node = node_bytes(make_event_node(Event{}, hist_sub_bins));
    plain_bins = hist_sub_bins;
  }
  std::size_t b = sizeof(Entry) + plain_node;
  for (const auto& a : e.ev.arrays) b += 2 * a.size() * sizeof(std::int64_t);
  return b;
}

}  // namespace scalatrace::compressor_nodes
