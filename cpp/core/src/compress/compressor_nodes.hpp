#pragma once
// Internal to the core: the node model of the intra-rank compressor (compressor.cpp): queue
// entries, the views node matching compares, and the primitives that build nodes and merge one
// node's occurrences into another's (values appended in order, presence for visits without
// the node). Loop detection and alignment live in the compressor's own files (listed in
// compressor_impl.hpp); timing histograms in histogram.cpp.
#include <cstddef>
#include <cstdint>

#include "scalatrace/model/event.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace::compressor_nodes {

struct Key {
  Op op = Op::Other;
  std::uint32_t site = 0;
};

/// What node matching needs to know about an entry.
struct View {
  bool loop = false;
  Key first, last;  ///< first / last event of the subtree (the event itself for events)
};

/// A top-level queue entry: a fresh event (kept as a plain Event until it joins a loop, so the
/// common case allocates nothing) or a node.
struct Entry {
  bool raw = true;
  Event ev;   ///< raw: the event
  Node node;  ///< !raw
  View view;
};

/// The only value sequence of a per-rank elastic value (created empty if missing).
ValueSeq& single(ElasticValue& e);
ArraySeq& single(ElasticArray& e);
std::uint64_t seq_size(const ElasticValue& e);

Key first_key(const Node& n);
Key last_key(const Node& n);
View view_of(const Node& n);
View view_of(const Entry& e);
/// Times the node ran (event occurrences, loop visits with trips).
std::uint64_t occurrences(const Node& n);
/// Traversals of the enclosing body (presence length, else occurrences).
std::uint64_t visits(const Node& n);

/// Which fields an event node inside the compressor stores.
///  - Every: all of them, from its first occurrence (what a node outside the compressor has).
///  - Lazy: a field other than Comm (fields[0], whose length is the node's occurrence count)
///    from its first non-zero value on, an array field from its first non-empty array on.
///    Most of an event's 18 fields are 0 at every occurrence (a send has no root, color or
///    index): a fresh send's node takes 24 allocations instead of 84. store_every_field()
///    gives a lazy node its missing zeros and empty arrays when it leaves the compressor.
///    Not used with lossy fields (SCALATRACE_LOSSY), whose conversion empties fields.
enum class FieldStorage : std::uint8_t { Every, Lazy };

/// A one-occurrence event node for `e` (histograms with `hist_sub_bins` bins per octave).
Node make_event_node(const Event& e, std::uint32_t hist_sub_bins, FieldStorage storage = FieldStorage::Every);
/// Appends one more occurrence `e` to `a` (a node made with `storage`).
void append_event(EventNode& a, const Event& e, FieldStorage storage);
/// Appends b's occurrences after a's (both made with `storage`).
void merge_event(EventNode& a, EventNode&& b, FieldStorage storage);
/// Field i / array i of a lazy node as stored, created with `before` zeros / empty arrays
/// (its occurrences so far) if it was not stored yet.
ValueSeq& stored_field(EventNode& a, std::size_t i, std::uint64_t before);
ArraySeq& stored_array(EventNode& a, std::size_t i, std::uint64_t before);
/// Every field and array of every event node of `n` stored (FieldStorage::Lazy to Every).
void store_every_field(Node& n);
/// a's presence gets b's (both visited; a first). va / vb: visits before merging.
void merge_presence(Node& a, std::uint64_t va, const ElasticValue& b_presence, std::uint64_t vb);
/// Node `a` was not visited in `vb` further visits of its parent body.
void mark_absent(Node& a, std::uint64_t vb);
/// Node `n` joins a body that already had `va` visits in which it did not occur.
Node absent_before(Node n, std::uint64_t va);

/// Memory accounting for the SCALATRACE_MEMORY budget: the node's own size plus its heap
/// buffers (capacity, with the allocator's per-block overhead).
std::size_t node_bytes(const Node& n);
/// An entry's bytes; a fresh event is priced as the node it becomes (make_event_node).
std::size_t entry_bytes(const Entry& e, std::uint32_t hist_sub_bins);

}  // namespace scalatrace::compressor_nodes
