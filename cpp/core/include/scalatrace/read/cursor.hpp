#pragma once
// Cursor: walks a (per-rank or merged) compressed trace and yields one rank's concrete events,
// without expanding the trace.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>

#include "scalatrace/model/event.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

class LossyOccurrences;

/// How a histogram becomes one value: its mean, a seeded draw, 0, the median (the mean of the
/// bin holding the middle value), Fastest (the mean of its lowest occupied bin: the calls
/// that waited least), or Spread: a seeded draw per occurrence, stratified so that every 16
/// consecutive occurrences of a node on the rank cover the histogram's distribution evenly (in
/// an order drawn per block: the rank's total keeps the mean, its occurrences vary as recorded,
/// and ranks with other seeds vary independently; Histogram::at_fraction). LibraryTime, for
/// durations: the simulator's floor of a call's own time in the MPI library (docs/simulator.md,
/// "Library time"): Fastest for collectives and communicator creation (their calls wait for the
/// last rank to arrive; the fastest waited least), Median for every other call (an initiation,
/// a test, an eager send: it waits for no other rank, so its usual time is the library's, caches
/// as the program leaves them).
enum class TimingMode { Mean, Sample, None, Median, Fastest, Spread, LibraryTime };

/// The values of event fields that never vary, shared by the cursors of many ranks of one trace
/// (Cursor::share_constants): a node's constant fields are mostly the same on every rank, kept
/// once here instead of once per cursor. The simulator walks one cursor per rank, each cold when
/// its rank resumes: shared, they stay in the cache and the cursors' own state is smaller.
/// Cursors that share one are used by one thread at a time and must not outlive it.
class SharedConstants {
 public:
  SharedConstants();
  ~SharedConstants();
  SharedConstants(const SharedConstants&) = delete;
  SharedConstants& operator=(const SharedConstants&) = delete;
  /// Distinct sets of constant field values kept (tests).
  std::size_t size() const;

 private:
  friend class Cursor;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Room for the walk states of many cursors in one block of memory that asks the kernel for
/// huge pages. A cursor's state is otherwise a heap allocation of its own: the simulator walks
/// one cursor per rank, and at 65,536 ranks those states take some 29,000 pages of 4 KB, each
/// faulted in on its own and most of the walk's accesses then missing the TLB. Cursors made with
/// a block take its slots in order; the block must outlive them.
class CursorBlock {
 public:
  /// Room for `cursors` cursors.
  explicit CursorBlock(std::size_t cursors);
  ~CursorBlock();
  CursorBlock(const CursorBlock&) = delete;
  CursorBlock& operator=(const CursorBlock&) = delete;

 private:
  friend class Cursor;
  static std::size_t slot_bytes();
  /// The next free slot; throws std::logic_error when all are taken.
  void* take();
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0, used_ = 0;
};

class Cursor {
 public:
  /// The trace must outlive the cursor. Throws UsageError if rank is out of range.
  /// `timing` turns compute histograms into values, `duration_timing` (default: the same)
  /// duration histograms.
  /// `block`: where the cursor's state goes (null: a heap allocation of its own).
  Cursor(const Trace& trace, std::int64_t rank, TimingMode timing = TimingMode::Mean, std::uint64_t seed = 0,
         std::optional<TimingMode> duration_timing = std::nullopt, CursorBlock* block = nullptr);
  ~Cursor();
  Cursor(Cursor&&) noexcept;
  /// Lossy traces (docs/lossy.md): fields kept as value histograms yield seeded draws (the
  /// same seed, rank, trace and `occurrences` give the same values, whatever else the cursor
  /// does). `occurrences` (the trace's; read/lossy_occurrences.hpp) numbers each node's
  /// occurrences over all ranks contiguously, so that all ranks' draws together are the
  /// recorded values; without it they only follow them. Without this call a lossy field throws
  /// LossyTraceError: exact values are not in the trace. Call before the first next().
  Cursor& draw_lossy_values(std::uint64_t seed, std::shared_ptr<const LossyOccurrences> occurrences = nullptr);
  /// Keeps the values of constant fields in `shared` (with those of other cursors) instead of
  /// in this cursor: the same events, less state per cursor. Call before the first next().
  Cursor& share_constants(SharedConstants& shared);
  /// Next event of the rank (compute_ns / duration_ns from the node's histograms), or
  /// nullopt at the end. Throws FormatError if the trace is inconsistent for this rank.
  std::optional<Event> next();
  /// The same, written into `out` (its array storage reused: no allocation per event once
  /// warm). False at the end (`out` then unchanged).
  bool next(Event& out);
  /// The same without copying arrays: `out`'s arrays refer to the trace's value sequences
  /// (valid while the trace lives). What the simulator reads.
  bool next(EventView& out);
  /// Hints only, for a caller that walks many cursors in turn: prefetch() starts loading the
  /// walk's own state; prefetch_upcoming(), once that has arrived (it reads it), the node
  /// states the next calls to next() read (from the next node on, in the walk's order).
  void prefetch() const noexcept;
  void prefetch_upcoming() const noexcept;
  /// The event node the last event returned by next() came from (nullptr before the first).
  const Node* last_node() const;

 private:
  struct Impl;
  /// Destroys the state, and frees it unless it lies in a CursorBlock.
  struct ImplDeleter {
    explicit ImplDeleter(bool in_block_ = false) noexcept : in_block(in_block_) {}
    bool in_block;
    void operator()(Impl* impl) const noexcept;
  };
  friend class CursorBlock;  // its slots' size
  static Impl* make_impl(const Trace& trace, std::int64_t rank, TimingMode timing, std::uint64_t seed,
                         std::optional<TimingMode> duration_timing, CursorBlock* block);
  std::unique_ptr<Impl, ImplDeleter> impl_;
};

/// All events of one rank (tests and small traces).
std::vector<Event> expand(const Trace& trace, std::int64_t rank);

}  // namespace scalatrace
