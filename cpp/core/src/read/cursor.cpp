// Cursor: one rank's events from a compressed (per-rank or merged) trace, without expanding
// it. See docs/algorithms.md ("Cursor").
//
// The walk keeps a stack of frames (body, position, iterations left). Each node the rank visits
// has its own readers (presence, trip counts, field values), created on first visit and kept
// per body position: the k-th occurrence of a node reads the k-th value of each of its elastic
// sequences. A cursor's node states are bump-allocated in one arena that starts inside the
// cursor, so that a rank's whole walk state is a few contiguous cache lines.
#include "scalatrace/read/cursor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scalatrace/merge/timing_groups.hpp"
#include "scalatrace/model/elastic.hpp"
#include "scalatrace/read/lossy_occurrences.hpp"
#include "scalatrace/support/errors.hpp"
#include "support/huge_pages.hpp"
#include "support/prefetch.hpp"
#include "support/small_vector.hpp"

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

/// One lossy field of an event node (docs/lossy.md) and where its draws stand. The node's
/// occurrences over all its ranks are numbered g = k * P + i (occurrence k of the rank at index
/// i of the node's P ranks), and occurrence g takes the histogram's value at position
/// (a * g + b) mod T of its T recorded values, in value order: an affine permutation (a coprime
/// to T, a / T near an irrational; b from the seed). When every rank has T / P occurrences, the
/// draws are exactly the recorded values, reassigned; otherwise they follow them closely.
struct LossyReader {
  std::uint8_t field = 0;
  const ValueHistogram* values = nullptr;
  std::uint64_t total = 0;     ///< T
  std::uint64_t position = 0;  ///< of the next occurrence
  std::uint64_t step = 0;      ///< a * P mod T
};

/// Every scalar field of an event: the ones with one value throughout (most fields of a
/// regular program) set once per node, the others overwritten per occurrence.
using FieldValues = std::array<std::int64_t, kFieldCount>;

/// One stored array field of an event node and its reader.
struct ArrayFieldReader {
  std::uint8_t field = 0;
  ArrayReader reader;
};

/// The rank's walk state of one node: what every node's state starts with. A loop's state is a
/// LoopState, an event's an EventState (which one: the node's own kind). Trivially destructible:
/// it and everything it points to live in the cursor's StateArena. Each kind keeps only its
/// own fields, so that a rank's states take few cache lines: the simulator reads a rank's
/// states cold at each resumption (docs/algorithms.md, "Cursor").
struct NodeState {
  ValueSeq::Reader* presence = nullptr;  ///< nodes with a presence sequence for the rank only
};

struct LoopState : NodeState {
  ValueSeq::Reader trips{nullptr};
  /// The states of the body's nodes by position, created on first visit (kNotMember: a node
  /// of other ranks only).
  NodeState** body = nullptr;
};

struct EventState : NodeState {
  std::uint8_t field_count = 0, array_count = 0;
  std::uint8_t lossy_count = 0;
  /// TimingMode::Spread: the node's number among the rank's event nodes in first-visit order
  /// (the same in every walk of the rank), which keys its draws.
  std::uint32_t spread_key = 0;
  std::uint64_t occurrence = 0;
  /// Occurrences every constant field has values for (the smallest of their sizes).
  std::uint64_t constant_limit = UINT64_MAX;
  /// Timing modes other than Sample and Spread: the (fixed) values, computed on first visit.
  std::uint64_t compute_ns = 0, duration_ns = 0;
  FieldReader* fields = nullptr;  ///< stored varying fields, in field order
  /// Constant fields set, varying ones 0 (in the cursor's arena, or in its SharedConstants).
  const FieldValues* base = nullptr;
  ArrayFieldReader* arrays = nullptr;    ///< stored arrays only, in field order
  LossyReader* lossy = nullptr;          ///< lossy fields (lossy_count of them)
  ValueSeq::Reader* site_ids = nullptr;  ///< events with per-occurrence call sites
  const Histogram* compute = nullptr;    ///< the rank's timing group (or the node's)
  const Histogram* duration = nullptr;
  /// The group's first-occurrence compute times (EventNode::first_compute); nullptr when not
  /// recorded or similar to `compute`, and every occurrence then draws from `compute`.
  const Histogram* first_compute = nullptr;
};
static_assert(std::is_trivially_destructible_v<LoopState> && std::is_trivially_destructible_v<EventState>);

/// Marks a node the cursor's rank does not take part in (membership decided once).
NodeState not_member_marker;
NodeState* const kNotMember = &not_member_marker;

/// Bump allocator of one cursor's node states: the first kInlineBytes inside the cursor itself,
/// then heap chunks. A rank's states thus lie in one block that a prefetch can load ahead of
/// its resumption (the simulator walks 65,536 cursors, each cold when its rank resumes).
class StateArena {
 public:
  /// Enough for a stencil's whole walk (1,248 bytes in 2D and 3D, Finalize's state included,
  /// with the constant fields shared: Cursor::share_constants; 1,752 before loops and events
  /// kept states of their own kinds); bigger traces go on in chunks.
  static constexpr std::size_t kInlineBytes = 1280;

  StateArena() = default;
  StateArena(const StateArena&) = delete;
  StateArena& operator=(const StateArena&) = delete;

  /// `count` value-initialised objects of a trivially destructible type.
  template <class T>
  T* make(std::size_t count = 1) {
    static_assert(std::is_trivially_destructible_v<T>, "the arena never runs destructors");
    T* p = static_cast<T*>(allocate(count * sizeof(T), alignof(T)));
    for (std::size_t i = 0; i < count; ++i) new (p + i) T{};
    return p;
  }
  const std::byte* inline_begin() const { return inline_; }
  /// Where the next allocation would start (inline or in the last chunk).
  const std::byte* used_end() const { return next_; }
  /// The end of what used_end() reads (the arena's own fields before its inline block).
  const void* bookkeeping_end() const { return &end_ + 1; }

 private:
  /// Where the next allocation may start and where its block ends. First, before the inline
  /// block: the walk reads next_ (used_end) whenever it notes where it goes on, so it lies in
  /// the cursor's first lines, which a caller prefetches (Cursor::Impl::prefetch).
  std::byte* next_ = inline_;
  std::byte* end_ = inline_ + kInlineBytes;
  alignas(64) std::byte inline_[kInlineBytes];
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::size_t chunk_bytes_ = 512;

  void* allocate(std::size_t bytes, std::size_t align) {
    auto aligned = [align](std::byte* p) {
      const auto a = reinterpret_cast<std::uintptr_t>(p);
      return p + ((align - a % align) % align);
    };
    std::byte* p = aligned(next_);
    if (bytes > static_cast<std::size_t>(end_ - p)) {
      // Chunks double up to 64 KB: few of them for big traces, little waste for small ones.
      chunk_bytes_ = std::min<std::size_t>(chunk_bytes_ * 2, std::size_t{64} << 10);
      const std::size_t size = std::max<std::size_t>(chunk_bytes_, bytes + align);
      chunks_.push_back(std::make_unique<std::byte[]>(size));
      p = aligned(chunks_.back().get());
      end_ = chunks_.back().get() + size;
    }
    next_ = p + bytes;
    return p;
  }
};

/// Median estimate: the mean of the bin holding the middle value (exact for one-value bins).
std::uint64_t histogram_median(const Histogram& h) {
  if (h.count() == 0) return 0;
  std::uint64_t k = (h.count() - 1) / 2;
  for (const auto& b : h.bins()) {
    if (k < b.count) return static_cast<std::uint64_t>(std::llround(b.sum / static_cast<double>(b.count)));
    k -= b.count;
  }
  return static_cast<std::uint64_t>(std::llround(h.mean()));
}

/// A 64-bit mix (splitmix64's finaliser): seeds each lossy field's sequence from (seed, rank,
/// node, field) so that every cursor of a rank draws the same values.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Timing modes that give each occurrence its own value (the others one value per node).
bool per_occurrence(TimingMode mode) { return mode == TimingMode::Sample || mode == TimingMode::Spread; }

/// TimingMode::Spread: occurrences are drawn in blocks of this many, one per stratum.
constexpr std::uint64_t kSpreadBlock = 16;

/// Each field's step: the fractional part of the square root of a distinct prime, so that two
/// lossy fields of one event (peer and size) are drawn jointly well spread, not in lockstep.
double lossy_step(std::size_t field) {
  static constexpr double kPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61};
  static_assert(std::size(kPrimes) >= kFieldCount);
  const double r = std::sqrt(kPrimes[field]);
  return r - std::floor(r);
}

/// (x * y + z) mod m without overflow.
std::uint64_t mul_add_mod(std::uint64_t x, std::uint64_t y, std::uint64_t z, std::uint64_t m) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * y + z) % static_cast<unsigned __int128>(m));
}

/// A multiplier coprime to `total` near total * step (an affine permutation of [0, total)
/// that spreads consecutive occurrences like an irrational rotation).
std::uint64_t coprime_multiplier(std::uint64_t total, double step) {
  if (total <= 1) return 1;
  auto a = static_cast<std::uint64_t>(std::llround(step * static_cast<double>(total)));
  if (a == 0 || a >= total) a = 1;
  while (std::gcd(a, total) != 1) a = a + 1 < total ? a + 1 : 1;
  return a;
}

/// Numbers the lossy event nodes of `nodes` in depth-first order.
void index_lossy_nodes(const std::vector<Node>& nodes, std::unordered_map<const EventNode*, std::uint64_t>& out) {
  for (const auto& n : nodes) {
    if (n.loop) index_lossy_nodes(n.loop->body, out);
    if (n.event && !n.event->lossy.empty()) out.emplace(n.event.get(), out.size());
  }
}

struct FieldValuesHash {
  std::size_t operator()(const FieldValues& values) const noexcept {
    std::uint64_t h = 0;
    for (const std::int64_t v : values) h = mix(h ^ static_cast<std::uint64_t>(v));
    return static_cast<std::size_t>(h);
  }
};

/// Whether a stored field's sequence gives the node's state one value (kept in the state's
/// `base`) rather than a reader.
bool is_constant_field(const ValueSeq& seq) { return !seq.empty() && seq.is_constant(); }

/// Whether an array field's sequence is empty at every occurrence (the usual case: an op that
/// has none): it reads like one not stored, only its length bounds the occurrences.
bool is_empty_array(const ArraySeq& seq) {
  const auto& runs = seq.runs();
  return std::all_of(runs.begin(), runs.end(), [](const ArraySeq::Run& r) { return r.values.empty(); });
}

/// The value sequence of `values` that applies to every rank of node `n` (one alternative,
/// for all ranks or for the node's ranklist), or nullptr if ranks may differ.
template <class Seq>
const Seq* sequence_for_every_member(const Elastic<Seq>& values, const Node& n) {
  if (values.alternatives.size() != 1) return nullptr;
  const auto& [seq, ranks] = values.alternatives[0];
  return ranks.empty() || ranks == n.ranks ? &seq : nullptr;
}

/// What every rank's first visit of one event node finds the same, worked out once for the
/// cursors that share a SharedConstants (ranks' first visits were a sixth of a 20-timestep
/// simulation at 65,536 ranks):
/// - each stored field whose one sequence applies to all the node's ranks, whether it is
///   constant, and the constant values, kept once in the shared set;
/// - for fields whose sequence depends on the rank (several alternatives: a stencil's peers),
///   which ones choose alike (the same ranklists: one search per rank for all of them), and
///   the constant values each alternative gives, kept as ranks choose it.
/// A cursor that shares nothing makes a plan per first visit with every field looked up for
/// its rank.
struct EventPlan {
  enum class Source : std::uint8_t { NotStored, Constant, Varying, PerRank };
  std::array<Source, kFieldCount> fields{};
  std::array<const ValueSeq*, kFieldCount> varying{};  ///< Varying: the sequence
  FieldValues base{};                                  ///< Constant fields' values, 0 elsewhere
  const FieldValues* kept_base = nullptr;              ///< `base` in the shared set (null: none)
  /// The smallest length of the Constant fields and of the arrays empty throughout.
  std::uint64_t constant_limit = UINT64_MAX;
  /// PerRank fields: the first PerRank field with the same ranklists (itself if none before,
  /// and in a plan made for one cursor): the alternative found for that one applies to this one.
  std::array<std::uint8_t, kFieldCount> chooses_like{};
  /// When every PerRank field chooses like one field: by its alternative, the constant values
  /// a rank choosing it has, kept (null until a rank does). Empty otherwise.
  std::vector<const FieldValues*> kept_by_choice;
  enum class ArraySource : std::uint8_t { NotStored, Empty, Stored, PerRank };
  std::array<ArraySource, kArrayFieldCount> arrays{};
  std::array<const ArraySeq*, kArrayFieldCount> stored_arrays{};  ///< Stored: the sequence

  /// The plan of event node `n`; `keep`: where its constant values are kept (null: every
  /// stored field looked up per rank).
  template <class Keep>
  static EventPlan of(const Node& n, Keep* keep) {
    EventPlan plan;
    const EventNode& e = *n.event;
    std::size_t first_per_rank = kFieldCount;
    bool one_choice = true;
    for (std::size_t i = 0; i < kFieldCount; ++i) {
      if (e.fields[i].empty()) continue;
      const ValueSeq* seq = keep != nullptr ? sequence_for_every_member(e.fields[i], n) : nullptr;
      if (seq == nullptr) {
        plan.fields[i] = Source::PerRank;
        // A plan made for one cursor (keep null) is used once: each field chooses for itself.
        std::size_t like = keep != nullptr ? 0 : i;
        while (like < i && !(plan.fields[like] == Source::PerRank && e.fields[like].same_ranklists(e.fields[i])))
          ++like;
        plan.chooses_like[i] = static_cast<std::uint8_t>(like);
        if (first_per_rank == kFieldCount) first_per_rank = i;
        one_choice = one_choice && like == first_per_rank;
      } else if (is_constant_field(*seq)) {
        plan.fields[i] = Source::Constant;
        plan.base[i] = seq->back();
        plan.constant_limit = std::min(plan.constant_limit, seq->size());
      } else {
        plan.fields[i] = Source::Varying;
        plan.varying[i] = seq;
      }
    }
    if (keep != nullptr) {
      plan.kept_base = keep->keep(plan.base);
      if (one_choice && first_per_rank < kFieldCount)
        plan.kept_by_choice.assign(e.fields[first_per_rank].alternatives.size(), nullptr);
    }
    for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
      if (e.arrays[i].empty()) continue;
      const ArraySeq* seq = keep != nullptr ? sequence_for_every_member(e.arrays[i], n) : nullptr;
      if (seq == nullptr) {
        plan.arrays[i] = ArraySource::PerRank;
      } else if (is_empty_array(*seq)) {
        plan.arrays[i] = ArraySource::Empty;
        plan.constant_limit = std::min(plan.constant_limit, seq->size());
      } else {
        plan.arrays[i] = ArraySource::Stored;
        plan.stored_arrays[i] = seq;
      }
    }
    return plan;
  }
};

struct WalkFrame {
  const Node* body = nullptr;    ///< the body's nodes (a trace's top level or a loop's body)
  std::size_t size = 0;          ///< how many
  NodeState** states = nullptr;  ///< per position of `body`
  std::size_t pos = 0;
  std::uint64_t trips_left = 0;  ///< iterations still to run after the current one
};

}  // namespace

/// Each distinct set of constant field values once (a node-based set: what it holds does not
/// move, so cursors keep pointers to it).
struct SharedConstants::Impl {
  std::unordered_set<FieldValues, FieldValuesHash> values;
  /// Each event node's first-visit plan, made by the first cursor that visits it.
  std::unordered_map<const Node*, EventPlan> plans;
  const FieldValues* keep(const FieldValues& v) { return &*values.insert(v).first; }
  EventPlan& plan(const Node& n) {
    auto it = plans.find(&n);
    if (it == plans.end()) it = plans.emplace(&n, EventPlan::of(n, this)).first;
    return it->second;
  }
};

SharedConstants::SharedConstants() : impl_(std::make_unique<Impl>()) {}
SharedConstants::~SharedConstants() = default;
std::size_t SharedConstants::size() const { return impl_->values.size(); }

/// The cursor's state, laid out for a simulator that walks thousands of cursors in turn, each
/// cold when its rank resumes: what next() reads (the timing modes, counts, the upcoming node
/// and the stack, with the arena's bookkeeping) first, in the lines prefetch() loads; then the
/// node states (the arena's inline block); the rest (set-up, lossy draws, errors) after them.
struct Cursor::Impl {
  TimingMode timing;           ///< compute times
  TimingMode duration_timing;  ///< durations (the simulator takes their median)
  /// Set by prefetch(): the caller prefetches, so next() notes the upcoming node for
  /// prefetch_upcoming() (a cursor walked alone does not pay for noting it).
  mutable bool hinting = false;
  std::uint64_t events = 0;
  const Node* last = nullptr;
  /// Where the node that next() reads first is (its entry in its body's states, and its state
  /// up to the end of the used inline arena: the nodes after it in the walk, allocated in
  /// first-visit order), set by each next(); null when unknown (prefetch_upcoming then loads
  /// the whole inline arena).
  NodeState* const* upcoming_slot = nullptr;
  const std::byte* upcoming_begin = nullptr;
  const std::byte* upcoming_end = nullptr;
  SmallVector<WalkFrame, 4> stack;  ///< loop nesting: rarely deeper than a few levels
  /// Every NodeState and what it points to; its bookkeeping (what note_upcoming reads) right
  /// after the stack, its inline block from the next line on.
  StateArena arena;
  const Trace& trace;
  std::int64_t rank;
  /// TimingMode::Sample only (2.5 KB of state: not kept by cursors that do not draw).
  std::unique_ptr<std::mt19937_64> rng;
  std::uint64_t seed;             ///< TimingMode::Spread
  std::uint32_t spread_keys = 0;  ///< event nodes first visited so far (NodeState::spread_key)
  /// draw_lossy_values: the seed, and each lossy event node's position among the trace's lossy
  /// nodes in depth-first order (the same for every rank and every process).
  bool draws_lossy = false;
  std::uint64_t lossy_seed = 0;
  std::unordered_map<const EventNode*, std::uint64_t> lossy_index;
  std::shared_ptr<const LossyOccurrences> occurrences;  ///< optional: contiguous numbering
  SharedConstants::Impl* shared_constants = nullptr;    ///< share_constants(): where constant fields are kept

  Impl(const Trace& t, std::int64_t r, TimingMode m, std::uint64_t seed, TimingMode d)
      : timing(m), duration_timing(d), trace(t), rank(r), seed(seed) {
    if (timing == TimingMode::Sample || duration_timing == TimingMode::Sample)
      rng = std::make_unique<std::mt19937_64>(seed);
    stack.push_back(
        WalkFrame{trace.nodes.data(), trace.nodes.size(), arena.make<NodeState*>(trace.nodes.size()), 0, 0});
  }

  /// The lines next() reads first: the walk's scalars and stack, and where the used arena ends
  /// (note_upcoming reads it). (The store to `hinting`
  /// fetches the first line like a prefetch: nothing waits for it.)
  void prefetch() const {
    hinting = true;
    const char* p = reinterpret_cast<const char*>(this);
    const char* end = static_cast<const char*>(arena.bookkeeping_end());
    for (; p < end; p += 64) prefetch_line(p);
  }

  /// The node states next() reads (this object's first lines must be cached: prefetch()).
  void prefetch_upcoming() const {
    if (upcoming_begin == nullptr) {
      const char* p = reinterpret_cast<const char*>(arena.inline_begin());
      for (const char* end = p + StateArena::kInlineBytes; p < end; p += 64) prefetch_line(p);
      return;
    }
    prefetch_line(upcoming_slot);
    for (const std::byte* p = upcoming_begin; p < upcoming_end; p += 64) prefetch_line(p);
  }

  /// Remembers where the walk goes on (after next() returned from frame `f`): the state of the
  /// frame's next node, or of its first when the frame repeats; unknown otherwise.
  void note_upcoming(const WalkFrame& f) {
    const std::size_t pos = f.pos < f.size ? f.pos : 0;
    NodeState* const* slot = &f.states[pos];
    NodeState* s = f.pos < f.size || f.trips_left > 0 ? *slot : nullptr;
    if (s == nullptr || s == kNotMember) {
      upcoming_begin = nullptr;
      return;
    }
    upcoming_slot = slot;
    upcoming_begin = reinterpret_cast<const std::byte*>(s);
    const std::byte* inline_end = arena.inline_begin() + StateArena::kInlineBytes;
    // Inside the inline arena: up to its used end; in a heap chunk: the state and what
    // follows it, a few lines.
    upcoming_end = upcoming_begin >= arena.inline_begin() && upcoming_begin < inline_end
                       ? std::min(inline_end, arena.used_end())
                       : upcoming_begin + 8 * 64;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError("trace is inconsistent for rank " + std::to_string(rank) + " (after " + std::to_string(events) +
                      " events): " + what);
  }
  /// fail() with a message and a number (out of line: the walk builds no string).
  [[noreturn, gnu::noinline, gnu::cold]] void fail_with(const char* what, std::int64_t value) const {
    fail(what + std::to_string(value));
  }
  [[noreturn, gnu::noinline, gnu::cold]] void fail_with(const char* what) const { fail(what); }

  /// The sequence of `e` that applies to the rank (`what` names it in the error if none does).
  const ValueSeq* seq_for(const ElasticValue& e, std::string_view what) const {
    const ValueSeq* s = e.for_rank(rank);
    if (s == nullptr) fail_no_sequence(what);
    return s;
  }
  [[noreturn, gnu::noinline, gnu::cold]] void fail_no_sequence(std::string_view what) const {
    fail(std::string(what) + " has no value sequence for this rank");
  }

  /// The rank's state of node `n` (whose entry in its body's states is `slot`), created on
  /// first visit; nullptr if the rank does not take part in the node.
  NodeState* state(const Node& n, NodeState*& slot) {
    if (slot != nullptr) [[likely]]
      return slot == kNotMember ? nullptr : slot;
    return first_visit(n, slot);
  }

  /// state() on the rank's first visit of node `n`: decides membership, creates the readers.
  [[gnu::noinline]] NodeState* first_visit(const Node& n, NodeState*& slot) {
    if (!n.ranks.empty() && !n.ranks.contains(rank)) {
      slot = kNotMember;
      return nullptr;
    }
    if (!n.loop && !n.event) fail("node with neither event nor loop");
    // The node's own state first (its first line is what the walk reads), then its readers.
    NodeState& state =
        n.loop ? static_cast<NodeState&>(*arena.make<LoopState>()) : static_cast<NodeState&>(*arena.make<EventState>());
    if (!n.presence.empty()) {
      // A merged node may carry presence for only some of its ranks: the others are present
      // at every visit.
      const ValueSeq* p = n.presence.for_rank(rank);
      if (p != nullptr) {
        state.presence = arena.make<ValueSeq::Reader>();
        *state.presence = ValueSeq::Reader(p);
      }
    }
    if (n.loop) {
      LoopState& s = static_cast<LoopState&>(state);
      s.trips = ValueSeq::Reader(seq_for(n.loop->trips, "loop trip count"));
      s.body = arena.make<NodeState*>(n.loop->body.size());
    } else {
      EventState& s = static_cast<EventState&>(state);
      const EventNode& e = *n.event;
      const TimingGroup* group = e.timing_group_for(rank);  // one lookup for the three
      s.compute = group != nullptr ? &group->compute : &e.compute;
      s.duration = group != nullptr ? &group->duration : &e.duration;
      // First occurrences like the others (the same rule the writer uses to drop them) add
      // nothing: then every occurrence draws from `compute`, in memory as after a file.
      const Histogram& first = group != nullptr ? group->first_compute : e.first_compute;
      if (first.count() > 0 && !similar_timing(first, *s.compute)) s.first_compute = &first;
      s.spread_key = spread_keys++;
      if (!per_occurrence(timing)) s.compute_ns = later_compute_value(s, 0);
      if (!per_occurrence(duration_timing)) s.duration_ns = value_of(*s.duration, duration_mode(e.op), 0.5);
      if (!e.site_ids.empty()) {
        s.site_ids = arena.make<ValueSeq::Reader>();
        *s.site_ids = ValueSeq::Reader(seq_for(e.site_ids, "call-site sequence"));
      }
      // Stored fields: constant ones (value known once, in `base`) and varying ones (read per
      // occurrence: `varying` lists them). What is the same on every rank of the node comes
      // from its plan; the rest is looked up for this rank.
      std::optional<EventPlan> own_plan;
      if (shared_constants == nullptr) own_plan = EventPlan::of(n, static_cast<SharedConstants::Impl*>(nullptr));
      EventPlan& plan = shared_constants == nullptr ? *own_plan : shared_constants->plan(n);
      std::array<const ValueSeq*, kFieldCount> varying = plan.varying;
      std::size_t varying_count = 0;
      FieldValues base = plan.base;
      bool own_constants = plan.kept_base == nullptr;  // constants of this rank's own
      s.constant_limit = plan.constant_limit;
      std::array<std::size_t, kFieldCount> chosen{};  // PerRank fields: the alternative
      std::size_t choice = 0;
      for (std::size_t i = 0; i < kFieldCount; ++i) {
        if (plan.fields[i] == EventPlan::Source::Varying) ++varying_count;
        if (plan.fields[i] != EventPlan::Source::PerRank) continue;
        const ElasticValue& values = e.fields[i];
        const std::size_t like = plan.chooses_like[i];
        choice = chosen[i] = like == i ? values.index_for_rank(rank) : chosen[like];
        if (choice == ElasticValue::npos) fail_no_sequence(field_name(static_cast<Field>(i)));
        const ValueSeq* seq = &values.alternatives[choice].first;
        if (is_constant_field(*seq)) {
          s.constant_limit = std::min(s.constant_limit, seq->size());
          base[i] = seq->back();
          own_constants = true;
        } else {
          varying[i] = seq;
          ++varying_count;
        }
      }
      s.fields = arena.make<FieldReader>(varying_count);
      for (std::size_t i = 0; i < kFieldCount; ++i)
        if (varying[i] != nullptr)
          s.fields[s.field_count++] = FieldReader{static_cast<std::uint8_t>(i), ValueSeq::Reader(varying[i])};
      if (!own_constants) {
        s.base = plan.kept_base;
      } else if (!plan.kept_by_choice.empty()) {  // decided by the one choice of this rank
        const FieldValues*& kept = plan.kept_by_choice[choice];
        if (kept == nullptr) kept = keep_constants(base);
        s.base = kept;
      } else {
        s.base = keep_constants(base);
      }
      std::array<const ArraySeq*, kArrayFieldCount> arrays = plan.stored_arrays;
      std::size_t stored_arrays = 0;
      for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
        if (plan.arrays[i] == EventPlan::ArraySource::Stored) ++stored_arrays;
        if (plan.arrays[i] != EventPlan::ArraySource::PerRank) continue;
        arrays[i] = e.arrays[i].for_rank(rank);
        if (arrays[i] == nullptr)
          fail(std::string("array ") + std::string(array_field_name(static_cast<ArrayField>(i))) +
               " has no value sequence for this rank");
        if (is_empty_array(*arrays[i])) {
          s.constant_limit = std::min(s.constant_limit, arrays[i]->size());
          arrays[i] = nullptr;
          continue;
        }
        ++stored_arrays;
      }
      if (!e.lossy.empty()) setup_lossy(n, e, s);
      s.arrays = arena.make<ArrayFieldReader>(stored_arrays);
      for (std::size_t i = 0; i < kArrayFieldCount; ++i)
        if (arrays[i] != nullptr)
          s.arrays[s.array_count++] = ArrayFieldReader{static_cast<std::uint8_t>(i), ArrayReader{arrays[i]}};
    }
    slot = &state;
    return slot;
  }

  /// Where a node's constant field values are kept: the shared set, or this cursor's arena.
  const FieldValues* keep_constants(const FieldValues& values) {
    if (shared_constants != nullptr) return shared_constants->keep(values);
    FieldValues* own = arena.make<FieldValues>();
    *own = values;
    return own;
  }

  [[gnu::noinline]] void setup_lossy(const Node& n, const EventNode& e, EventState& s) {
    if (!draws_lossy)
      throw LossyTraceError("rank " + std::to_string(rank) + ": field " +
                            std::string(field_name(e.lossy.front().field)) + " of a " + std::string(op_name(e.op)) +
                            " at call site " + std::to_string(e.site) +
                            " is a histogram (a lossy trace, SCALATRACE_LOSSY): its exact values were not kept; "
                            "ask for drawn values with a seed instead (docs/lossy.md)");
    const auto it = lossy_index.find(&e);
    const std::uint64_t node = it == lossy_index.end() ? 0 : it->second;
    // The number of the rank's first occurrence among all ranks' occurrences of the node, and
    // the step between its own: contiguous with LossyOccurrences, else interleaved (rank index
    // i of the node's P ranks: i, i + P, i + 2P, ...).
    std::uint64_t first = 0, stride = 1;
    if (const auto before = occurrences ? occurrences->before(&e, rank) : std::nullopt) {
      first = *before;
    } else {
      first = static_cast<std::uint64_t>(std::max<std::int64_t>(n.ranks.empty() ? rank : n.ranks.index_of(rank), 0));
      stride = static_cast<std::uint64_t>(std::max<std::int64_t>(n.ranks.empty() ? trace.nranks : n.ranks.size(), 1));
    }
    s.lossy = arena.make<LossyReader>(e.lossy.size());
    for (const auto& l : e.lossy) {
      const auto f = static_cast<std::size_t>(l.field);
      const std::uint64_t total = std::max<std::uint64_t>(l.values.count(), 1);
      const std::uint64_t a = coprime_multiplier(total, lossy_step(f));
      const std::uint64_t b = mix(mix(lossy_seed ^ 0x6c6f737379ULL) ^ (node << 8 | f)) % total;
      s.lossy[s.lossy_count++] =
          LossyReader{static_cast<std::uint8_t>(f), &l.values, total, mul_add_mod(a, first % total, b, total),
                      mul_add_mod(a, stride % total, 0, total)};
    }
  }

  /// The lossy fields' draws for the node's current occurrence (after the exact fields:
  /// drawn byte counts are rounded down to a multiple of the datatype size).
  template <class E>
  void draw_lossy(EventState& s, E& e) const {
    for (LossyReader& l : std::span(s.lossy, s.lossy_count)) {
      std::int64_t v = l.values->value_at_position(l.position);
      l.position = mul_add_mod(1, l.position, l.step, l.total);
      const auto field = static_cast<Field>(l.field);
      if (field == Field::Bytes || field == Field::Bytes2) {
        const std::int64_t dt =
            e.fields[static_cast<std::size_t>(field == Field::Bytes ? Field::DtSize : Field::DtSize2)];
        if (v < 0) v = 0;
        if (dt > 1) v -= v % dt;
      }
      e.fields[l.field] = v;
    }
  }

  /// The compute time of an occurrence after the first: from the compute times without the
  /// first occurrences' when those were recorded (Median: the median of all, which a few first
  /// occurrences hardly move).
  /// `k`: the occurrence's number (TimingMode::Spread).
  std::uint64_t later_compute_value(const EventState& s, std::uint64_t k) {
    const double u = timing == TimingMode::Spread ? spread_fraction(s, k, 0) : 0.5;
    if (s.first_compute == nullptr) return value_of(*s.compute, timing, u);
    switch (timing) {
      case TimingMode::Mean:
        return static_cast<std::uint64_t>(std::llround(s.compute->mean_excluding(*s.first_compute)));
      case TimingMode::Sample:
        return s.compute->sample_excluding(*s.first_compute, *rng);
      case TimingMode::Spread:
        return s.compute->at_fraction_excluding(*s.first_compute, u);
      case TimingMode::None:
      case TimingMode::Median:
      case TimingMode::Fastest:
      case TimingMode::LibraryTime:
        return value_of(*s.compute, timing, u);
    }
    return 0;
  }

  /// TimingMode::Spread: the fraction in [0, 1) at which occurrence `k` of node `s` draws
  /// (`stream` tells compute and duration draws apart). The occurrences go in blocks of
  /// kSpreadBlock; a block's occurrences take the strata of [0, 1) in an order shuffled by
  /// (seed, node, stream, block), each at a hashed place inside its stratum. So every block
  /// covers the distribution evenly (the mean is kept), and ranks (other seeds) and nodes vary
  /// independently of each other.
  double spread_fraction(const EventState& s, std::uint64_t k, std::uint64_t stream) const {
    const std::uint64_t key =
        mix(seed ^ mix((static_cast<std::uint64_t>(s.spread_key) << 1 | stream) ^ mix(k / kSpreadBlock)));
    std::array<std::uint8_t, kSpreadBlock> strata{};
    for (std::size_t i = 0; i < kSpreadBlock; ++i) strata[i] = static_cast<std::uint8_t>(i);
    std::uint64_t h = key;
    for (std::size_t i = kSpreadBlock - 1; i > 0; --i) {  // Fisher-Yates
      h = mix(h);
      std::swap(strata[i], strata[h % (i + 1)]);
    }
    const double inside = static_cast<double>(mix(key ^ (k % kSpreadBlock)) >> 11) * 0x1.0p-53;
    return (strata[k % kSpreadBlock] + inside) / static_cast<double>(kSpreadBlock);
  }

  /// The mode that turns a call of `op`'s durations into its value (TimingMode::LibraryTime).
  TimingMode duration_mode(Op op) const {
    if (duration_timing != TimingMode::LibraryTime) return duration_timing;
    const OpKind kind = op_kind(op);
    return kind == OpKind::Collective || kind == OpKind::CommCreate ? TimingMode::Fastest : TimingMode::Median;
  }

  /// `u`: the fraction TimingMode::Spread draws at (other modes ignore it).
  std::uint64_t value_of(const Histogram& h, TimingMode mode, double u) {
    switch (mode) {
      case TimingMode::Mean:
        return static_cast<std::uint64_t>(std::llround(h.mean()));
      case TimingMode::Sample:
        return h.sample(*rng);
      case TimingMode::Spread:
        return h.at_fraction(u);
      case TimingMode::None:
        return 0;
      case TimingMode::Median:
      case TimingMode::LibraryTime:  // as Median where no op chose (duration_mode)
        return histogram_median(h);
      case TimingMode::Fastest:
        for (const auto& b : h.bins())
          if (b.count > 0) return static_cast<std::uint64_t>(std::llround(b.sum / static_cast<double>(b.count)));
        return 0;
    }
    return 0;
  }

  [[noreturn, gnu::noinline, gnu::cold]] void fail_sites_ran_out(const EventNode& en) const {
    fail("call-site sequence of a " + std::string(op_name(en.op)) + " ran out");
  }

  /// Names the first field (in field order), else the first array, that has no value for this
  /// occurrence.
  [[noreturn, gnu::noinline, gnu::cold]] void fail_ran_out(const EventNode& en, const EventState& s) const {
    for (std::size_t i = 0; i < kFieldCount; ++i) {
      if (en.fields[i].empty()) continue;
      const ValueSeq* seq = en.fields[i].for_rank(rank);
      if (seq != nullptr && seq->size() > s.occurrence) continue;
      fail("field " + std::string(field_name(static_cast<Field>(i))) + " of a " + std::string(op_name(en.op)) +
           " ran out of values at occurrence " + std::to_string(s.occurrence));
    }
    for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
      if (en.arrays[i].empty()) continue;
      const ArraySeq* seq = en.arrays[i].for_rank(rank);
      if (seq != nullptr && seq->size() > s.occurrence) continue;
      fail_array_ran_out(en, static_cast<ArrayField>(i), s);
    }
    fail("a field of a " + std::string(op_name(en.op)) + " ran out of values");
  }

  [[noreturn, gnu::noinline, gnu::cold]] void fail_array_ran_out(const EventNode& en, ArrayField a,
                                                                 const EventState& s) const {
    fail("array " + std::string(array_field_name(a)) + " of a " + std::string(op_name(en.op)) +
         " ran out of values at occurrence " + std::to_string(s.occurrence));
  }

  /// Fills `e` (an Event or an EventView) with the node's next occurrence: every field and
  /// array overwritten (an Event's array storage reused; an EventView's arrays refer to the
  /// trace's value sequences).
  template <class E>
  void make_event(const EventNode& en, EventState& s, E& e) {
    e.op = en.op;
    e.site = en.site;
    if (s.site_ids != nullptr) {
      if (s.site_ids->done()) fail_sites_ran_out(en);
      e.site = static_cast<std::uint32_t>(s.site_ids->next());
    }
    e.fields = *s.base;
    if (s.occurrence >= s.constant_limit) fail_ran_out(en, s);
    for (FieldReader& f : std::span(s.fields, s.field_count)) {
      if (f.reader.done()) fail_ran_out(en, s);
      e.fields[f.field] = f.reader.next();
    }
    if (s.lossy_count != 0) [[unlikely]]
      draw_lossy(s, e);
    if constexpr (std::is_same_v<E, EventView>) {
      if ((e.arrays[0].size() | e.arrays[1].size() | e.arrays[2].size() | e.arrays[3].size()) != 0) e.arrays = {};
      static_assert(kArrayFieldCount == 4);
    } else
      for (auto& a : e.arrays) a.clear();
    for (ArrayFieldReader& a : std::span(s.arrays, s.array_count)) {
      if (a.reader.done()) fail_array_ran_out(en, static_cast<ArrayField>(a.field), s);
      const std::vector<std::int64_t>& values = a.reader.next();
      if constexpr (std::is_same_v<E, EventView>)
        e.arrays[a.field] = values;
      else
        e.arrays[a.field].assign(values.begin(), values.end());
    }
    const std::uint64_t k = s.occurrence++;
    if (k == 0 && s.first_compute != nullptr) [[unlikely]]
      e.compute_ns = value_of(*s.first_compute, timing, timing == TimingMode::Spread ? spread_fraction(s, k, 0) : 0.5);
    else
      e.compute_ns = per_occurrence(timing) ? later_compute_value(s, k) : s.compute_ns;
    if (per_occurrence(duration_timing)) [[unlikely]]
      e.duration_ns = value_of(*s.duration, duration_timing,
                               duration_timing == TimingMode::Spread ? spread_fraction(s, k, 1) : 0.5);
    else
      e.duration_ns = s.duration_ns;
  }

  template <class E>
  bool next(E& out) {
    if (stack.empty()) return false;
    WalkFrame* top = &stack.back();  // the innermost frame, re-read only on a push or pop
    for (;;) {
      WalkFrame& f = *top;
      if (f.pos == f.size) {
        if (f.trips_left > 0) {
          --f.trips_left;
          f.pos = 0;
        } else {
          stack.pop_back();
          if (stack.empty()) return false;
          top = &stack.back();
        }
        continue;
      }
      const std::size_t pos = f.pos++;
      const Node& n = f.body[pos];
      NodeState* state_of_node = state(n, f.states[pos]);
      if (state_of_node == nullptr) continue;
      if (ValueSeq::Reader* presence = state_of_node->presence) {
        if (presence->done()) fail_with("presence sequence ran out");
        const std::int64_t p = presence->next();
        if (p == 0) continue;
        if (p != 1) fail_with("presence value is not 0 or 1: ", p);
      }
      if (n.loop) {
        LoopState& s = static_cast<LoopState&>(*state_of_node);
        if (s.trips.done()) fail_with("loop trip counts ran out");
        const std::int64_t trips = s.trips.next();
        if (trips < 0) fail_with("negative loop trip count ", trips);
        if (trips == 0 || n.loop->body.empty()) continue;
        stack.push_back(
            WalkFrame{n.loop->body.data(), n.loop->body.size(), s.body, 0, static_cast<std::uint64_t>(trips - 1)});
        top = &stack.back();
        continue;
      }
      ++events;
      last = &n;
      make_event(*n.event, static_cast<EventState&>(*state_of_node), out);
      if (hinting) note_upcoming(f);
      return true;
    }
  }
};

/// A slot of a CursorBlock: one cursor's state, whole cache lines (each slot then starts
/// aligned as the state needs).
std::size_t CursorBlock::slot_bytes() {
  static_assert(64 % alignof(Cursor::Impl) == 0, "a cursor's state needs at most a cache line's alignment");
  return (sizeof(Cursor::Impl) + 63) / 64 * 64;
}

CursorBlock::CursorBlock(std::size_t cursors)
    : data_(static_cast<std::byte*>(allocate_huge_page_block(cursors * slot_bytes(), alignof(Cursor::Impl)))),
      capacity_(cursors) {}
CursorBlock::~CursorBlock() { std::free(data_); }
void* CursorBlock::take() {
  if (used_ == capacity_) throw std::logic_error("cursor block: every slot is taken");
  return data_ + slot_bytes() * used_++;
}

/// A cursor's state, in a slot of `block` or on the heap (block null).
Cursor::Impl* Cursor::make_impl(const Trace& trace, std::int64_t rank, TimingMode timing, std::uint64_t seed,
                                std::optional<TimingMode> duration_timing, CursorBlock* block) {
  if (rank < 0 || rank >= trace.nranks)
    throw UsageError("rank " + std::to_string(rank) + " is out of range: the trace has " +
                     std::to_string(trace.nranks) + " ranks");
  const TimingMode durations = duration_timing.value_or(timing);
  if (block == nullptr) return new Impl(trace, rank, timing, seed, durations);
  return new (block->take()) Impl(trace, rank, timing, seed, durations);
}

Cursor::Cursor(const Trace& trace, std::int64_t rank, TimingMode timing, std::uint64_t seed,
               std::optional<TimingMode> duration_timing, CursorBlock* block)
    : impl_(make_impl(trace, rank, timing, seed, duration_timing, block), ImplDeleter(block != nullptr)) {}
void Cursor::ImplDeleter::operator()(Impl* impl) const noexcept {
  if (in_block)
    impl->~Impl();
  else
    delete impl;
}
Cursor::~Cursor() = default;
Cursor& Cursor::draw_lossy_values(std::uint64_t seed, std::shared_ptr<const LossyOccurrences> occurrences) {
  impl_->draws_lossy = true;
  impl_->lossy_seed = seed;
  impl_->occurrences = std::move(occurrences);
  if (impl_->lossy_index.empty()) index_lossy_nodes(impl_->trace.nodes, impl_->lossy_index);
  return *this;
}
Cursor::Cursor(Cursor&&) noexcept = default;
Cursor& Cursor::share_constants(SharedConstants& shared) {
  impl_->shared_constants = shared.impl_.get();
  return *this;
}

std::optional<Event> Cursor::next() {
  Event e;
  if (!impl_->next(e)) return std::nullopt;
  return e;
}
bool Cursor::next(Event& out) { return impl_->next(out); }
bool Cursor::next(EventView& out) { return impl_->next(out); }
void Cursor::prefetch() const noexcept { impl_->prefetch(); }
void Cursor::prefetch_upcoming() const noexcept { impl_->prefetch_upcoming(); }
const Node* Cursor::last_node() const { return impl_->last; }

std::vector<Event> expand(const Trace& trace, std::int64_t rank) {
  Cursor c(trace, rank, TimingMode::Mean);
  std::vector<Event> out;
  while (auto e = c.next()) out.push_back(std::move(*e));
  return out;
}

}  // namespace scalatrace
