#pragma once
// ValueSeq: the value vector of an elastic data element (thesis §5.2.1): the sequence of values
// a parameter took, one per occurrence, loop-compressed. Appending is amortized O(1) and keeps
// the sequence compressed on the fly.
#include <cstdint>
#include <string>
#include <vector>

namespace scalatrace {

/// `count` values first, first+stride, first+2*stride, ... (stride 0: a repeated constant).
struct ValueRun {
  std::int64_t first = 0;
  std::int64_t stride = 0;
  std::uint64_t count = 0;
  bool operator==(const ValueRun&) const = default;
};

/// A repeated block of runs: `runs` repeated `repeat` times (e.g. 1 0 1 0 1 0 = {[1],[0]} x3).
struct ValueBlock {
  std::vector<ValueRun> runs;
  std::uint64_t repeat = 1;
  bool operator==(const ValueBlock&) const = default;
};

class ValueSeq {
 public:
  ValueSeq() = default;
  static ValueSeq constant(std::int64_t value, std::uint64_t count = 1);

  void append(std::int64_t value);
  /// Appends `count` copies of `value` (no allocation when it continues the last run).
  void append_repeat(std::int64_t value, std::uint64_t count);
  /// Appends a whole sequence (used when iterations merge).
  void append(const ValueSeq& other);
  std::uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Value of occurrence i (0-based). O(log blocks).
  std::int64_t at(std::uint64_t i) const;
  /// True if every value equals v.
  bool is_constant() const;
  /// Last value (precondition: !empty()).
  std::int64_t back() const;
  /// Replaces the last value (precondition: !empty()); used to extend a loop's current trip
  /// count in place. Amortized O(runs of the last block).
  void set_back(std::int64_t value);
  std::vector<std::int64_t> to_vector() const;
  /// Folds the open (last) block as a following value would: a sequence that ends with one
  /// more period of its last repeated block, "(A)x99 A", becomes "(A)x100". The values are
  /// unchanged; appending may go on. The writer stores sequences sealed.
  void seal();
  /// This sequence if sealed(), else a sealed copy of it made in `scratch` (what the writer
  /// stores and what merging hashes).
  const ValueSeq& sealed_form(ValueSeq& scratch) const {
    if (sealed()) return *this;
    scratch = *this;
    scratch.seal();
    return scratch;
  }
  /// True if seal() has nothing to fold: no open last block (one of repeat 1), or the
  /// sequence is a single run.
  bool sealed() const {
    return blocks_.empty() || blocks_.back().repeat != 1 || (blocks_.size() == 1 && blocks_.back().runs.size() < 2);
  }
  /// The same values in canonical form (docs/algorithms.md, "Canonical value sequences"): a
  /// sealed form that depends on the values only (one run for a progression, one repeated
  /// block for a periodic sequence, else the shortest of a few candidate forms). Sequences of
  /// more than 2^18 values get the first two forms or stay as they are, sealed.
  ValueSeq canonical() const;
  const std::vector<ValueBlock>& blocks() const { return blocks_; }
  /// Rebuilds from blocks (reader); validates counts.
  static ValueSeq from_blocks(std::vector<ValueBlock> blocks);
  std::string to_string() const;
  /// Equal values in the same blocks, sealed or not: "(A)x99 A" equals "(A)x100" (a trace
  /// read back from a file, whose sequences are sealed, equals the one that was written).
  bool operator==(const ValueSeq& o) const {
    if (sealed() == o.sealed()) return blocks_ == o.blocks_;
    return equal_sealed(o);
  }

  /// Sequential reader: O(1) amortized per value. Within a run a value is the previous one
  /// plus the stride (wrapping like ValueRun's first + i * stride), so next() reads no run.
  class Reader {
   public:
    explicit Reader(const ValueSeq* seq = nullptr) : seq_(seq) { settle(); }
    bool done() const { return left_ == 0; }
    std::int64_t next() {  ///< precondition: !done()
      const auto v = static_cast<std::int64_t>(value_);
      value_ += stride_;
      if (--left_ == 0) advance();
      return v;
    }

   private:
    const ValueSeq* seq_;
    std::size_t block_ = 0, run_ = 0;       ///< the current run: blocks_[block_].runs[run_]
    std::uint64_t rep_ = 0;                 ///< repetition of the current block
    std::uint64_t value_ = 0, stride_ = 0;  ///< the next value and the run's stride (as unsigned)
    std::uint64_t left_ = 0;                ///< values left in the current run (0: done)
    void advance();                         ///< past the current run, to the next one with values
    void settle();                          ///< from the current position to the first run with values
    void start_run(const ValueRun& r);      ///< reads run r from its first value on
  };

 private:
  bool equal_sealed(const ValueSeq& o) const;  ///< one of the two sealed, the other not
  std::vector<ValueBlock> blocks_;
  std::vector<std::uint64_t> block_ends_;  ///< cumulative sizes, for at()
  std::uint64_t size_ = 0;
};

}  // namespace scalatrace
