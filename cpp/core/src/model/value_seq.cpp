// ValueSeq: loop-compressed value vectors (thesis §5.2.1). See docs/algorithms.md
// ("Elastic values").
//
// Representation: a list of blocks, each a list of arithmetic runs repeated `repeat` times.
// Appending extends the last run when the value continues it (only while the last block has
// repeat 1: the "open" block). When a run is complete (the next value starts a new run), the
// open block is folded:
//   * if its runs equal the runs of the block before it, that block's repeat grows by one;
//   * else, if its last p runs equal the p runs before them (p <= kMaxPeriod), those 2p runs
//     become a new block {runs} x 2.
//   * else, if the last blocks flattened repeat (nested periods, see fold_nested), they fold.
// So a periodic sequence (1 0 1 0 ..., the 8 relative peers of a stencil every timestep, ...)
// stays a constant number of runs and blocks however long it gets.
#include "scalatrace/model/value_seq.hpp"

#include <algorithm>
#include <sstream>

#include "model/value_arith.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

constexpr std::size_t kMaxPeriod = 32;  // longest period (in runs) detected on the fly

using value_arith::run_value;
using value_arith::wrap_sub;
std::uint64_t block_size(const ValueBlock& b) {
  std::uint64_t n = 0;
  for (const auto& r : b.runs) n += r.count;
  return n * b.repeat;
}

}  // namespace

ValueSeq ValueSeq::constant(std::int64_t value, std::uint64_t count) {
  ValueSeq s;
  if (count == 0) return s;
  s.blocks_.push_back(ValueBlock{{ValueRun{value, 0, count}}, 1});
  s.block_ends_.push_back(count);
  s.size_ = count;
  return s;
}

// Nested periods. A period that itself contains a repetition (the 7 message sizes of a 3D
// stencil corner, 64 8 64 8 64 8 8, per timestep) is first folded inside: its "64 8 64 8" becomes
// a block (64:-56:2)x2 and the rest "64 8x2" the open block. One level of blocks cannot hold
// "((64:-56:2)x2 64 8x2) x n", so without this step every timestep added two blocks (the 3D
// stencil's linear trace growth). Here the last k blocks (open block included) are flattened
// into their runs; if the block before them has exactly those runs, its repeat grows; if the
// k blocks before them flatten to the same runs, the 2k blocks become one block repeated twice.
constexpr std::size_t kMaxFlatRuns = 2 * kMaxPeriod;
constexpr std::size_t kMaxNestedBlocks = 8;

static bool flatten_blocks(const std::vector<ValueBlock>& blocks, std::size_t from, std::size_t to,
                           std::vector<ValueRun>& out) {
  out.clear();
  for (std::size_t b = from; b < to; ++b) {
    if (blocks[b].runs.size() * blocks[b].repeat + out.size() > kMaxFlatRuns) return false;
    for (std::uint64_t r = 0; r < blocks[b].repeat; ++r)
      out.insert(out.end(), blocks[b].runs.begin(), blocks[b].runs.end());
  }
  return true;
}

static bool fold_nested(std::vector<ValueBlock>& blocks, std::vector<std::uint64_t>& ends) {
  const std::size_t n = blocks.size();
  std::vector<ValueRun> tail, before;
  for (std::size_t k = 2; k <= kMaxNestedBlocks && k < n; ++k) {
    if (!flatten_blocks(blocks, n - k, n, tail)) return false;
    ValueBlock& prev = blocks[n - k - 1];
    if (prev.runs == tail) {
      prev.repeat += 1;
      ends[n - k - 1] = ends.back();
      blocks.resize(n - k);
      ends.resize(n - k);
      return true;
    }
    if (n >= 2 * k && flatten_blocks(blocks, n - 2 * k, n - k, before) && before == tail) {
      const std::uint64_t end = ends.back();
      blocks.resize(n - 2 * k);
      ends.resize(n - 2 * k);
      if (!blocks.empty() && blocks.back().runs == tail) {
        blocks.back().repeat += 2;
        ends.back() = end;
      } else {
        blocks.push_back(ValueBlock{std::move(tail), 2});
        ends.push_back(end);
      }
      return true;
    }
  }
  return false;
}

// Folds the open (last) block once its runs are complete. See the file comment.
static void fold_tail(std::vector<ValueBlock>& blocks, std::vector<std::uint64_t>& ends) {
  if (blocks.empty() || blocks.back().repeat != 1) return;
  auto& open = blocks.back().runs;
  const std::size_t n = open.size();
  if (blocks.size() >= 2) {
    auto& prev = blocks[blocks.size() - 2];
    if (prev.runs.size() == n && prev.runs == open) {
      prev.repeat += 1;
      const std::uint64_t add = ends.back() - ends[ends.size() - 2];
      blocks.pop_back();
      ends.pop_back();
      ends.back() += add;
      return;
    }
  }
  const std::size_t max_p = std::min(kMaxPeriod, n / 2);
  for (std::size_t p = 1; p <= max_p; ++p) {
    if (!(open[n - 1] == open[n - 1 - p])) continue;
    bool same = true;
    for (std::size_t k = 2; k <= p && same; ++k) same = open[n - k] == open[n - k - p];
    if (!same) continue;
    ValueBlock rep{std::vector<ValueRun>(open.end() - static_cast<std::ptrdiff_t>(p), open.end()), 2};
    const std::uint64_t rep_size = block_size(rep);
    open.resize(n - 2 * p);
    const std::uint64_t end = ends.back();
    if (open.empty()) {
      blocks.pop_back();
      ends.pop_back();
    } else {
      ends.back() = end - rep_size;
    }
    // A block equal to the one before it folds into it.
    if (!blocks.empty() && blocks.back().runs == rep.runs) {
      blocks.back().repeat += 2;
      ends.back() = end;
    } else {
      blocks.push_back(std::move(rep));
      ends.push_back(end);
    }
    return;
  }
  fold_nested(blocks, ends);
}

void ValueSeq::append(std::int64_t value) {
  ++size_;
  if (!blocks_.empty() && blocks_.back().repeat == 1) {
    ValueRun& last = blocks_.back().runs.back();
    if (last.count == 1) {
      last.stride = wrap_sub(value, last.first);
      last.count = 2;
      ++block_ends_.back();
      return;
    }
    if (run_value(last, last.count) == value) {
      ++last.count;
      ++block_ends_.back();
      return;
    }
    fold_tail(blocks_, block_ends_);
  }
  if (blocks_.empty() || blocks_.back().repeat != 1) {
    blocks_.push_back(ValueBlock{{}, 1});
    block_ends_.push_back(block_ends_.empty() ? 0 : block_ends_.back());
  }
  blocks_.back().runs.push_back(ValueRun{value, 0, 1});
  ++block_ends_.back();
}

// Appends a run of `count` values; merges into the open run when it continues it.
static void append_run(std::vector<ValueBlock>& blocks, std::vector<std::uint64_t>& ends, const ValueRun& run) {
  if (run.count == 0) return;
  if (!blocks.empty() && blocks.back().repeat == 1) {
    ValueRun& last = blocks.back().runs.back();
    if (last.count == 1 && (run.count == 1 || wrap_sub(run.first, last.first) == run.stride)) {
      last.stride = wrap_sub(run.first, last.first);
      last.count += run.count;
      ends.back() += run.count;
      return;
    }
    if (last.count >= 2 && run_value(last, last.count) == run.first && (run.count == 1 || run.stride == last.stride)) {
      last.count += run.count;
      ends.back() += run.count;
      return;
    }
    fold_tail(blocks, ends);
  }
  if (blocks.empty() || blocks.back().repeat != 1) {
    blocks.push_back(ValueBlock{{}, 1});
    ends.push_back(ends.empty() ? 0 : ends.back());
  }
  blocks.back().runs.push_back(ValueRun{run.first, run.count == 1 ? 0 : run.stride, run.count});
  ends.back() += run.count;
}

void ValueSeq::append_repeat(std::int64_t value, std::uint64_t count) {
  if (count == 0) return;
  if (count == 1) {
    append(value);
    return;
  }
  append_run(blocks_, block_ends_, ValueRun{value, 0, count});
  size_ += count;
}

void ValueSeq::append(const ValueSeq& other) {
  if (&other == this) {
    ValueSeq copy = other;
    append(copy);
    return;
  }
  for (const auto& b : other.blocks_) {
    if (b.repeat >= 2) {
      // Close the open block, then take the repeated block as a whole.
      if (!blocks_.empty()) fold_tail(blocks_, block_ends_);
      const std::uint64_t add = block_size(b);
      if (!blocks_.empty() && blocks_.back().repeat >= 2 && blocks_.back().runs == b.runs) {
        blocks_.back().repeat += b.repeat;
        block_ends_.back() += add;
      } else {
        blocks_.push_back(b);
        block_ends_.push_back((block_ends_.empty() ? 0 : block_ends_.back()) + add);
      }
      size_ += add;
      continue;
    }
    for (const auto& r : b.runs) {
      append_run(blocks_, block_ends_, r);
      size_ += r.count;
    }
  }
}

std::int64_t ValueSeq::at(std::uint64_t i) const {
  if (i >= size_)
    throw UsageError("ValueSeq::at: index " + std::to_string(i) + " out of range (size " + std::to_string(size_) + ")");
  const auto it = std::upper_bound(block_ends_.begin(), block_ends_.end(), i);
  const std::size_t bi = static_cast<std::size_t>(it - block_ends_.begin());
  const ValueBlock& b = blocks_[bi];
  std::uint64_t off = i - (bi == 0 ? 0 : block_ends_[bi - 1]);
  std::uint64_t period = 0;
  for (const auto& r : b.runs) period += r.count;
  off %= period;
  for (const auto& r : b.runs) {
    if (off < r.count) return run_value(r, off);
    off -= r.count;
  }
  throw FormatError("ValueSeq::at: inconsistent block sizes");
}

std::int64_t ValueSeq::back() const {
  if (size_ == 0) throw UsageError("ValueSeq::back on an empty sequence");
  const ValueRun& r = blocks_.back().runs.back();
  return run_value(r, r.count - 1);
}

void ValueSeq::set_back(std::int64_t value) {
  if (size_ == 0) throw UsageError("ValueSeq::set_back on an empty sequence");
  if (back() == value) return;
  if (size_ == 1) {  // a single value (e.g. a loop's growing trip count): no reallocation
    blocks_.front().runs.front() = ValueRun{value, 0, 1};
    return;
  }
  // Remove the last value, then append the new one.
  ValueBlock& b = blocks_.back();
  if (b.repeat > 1) {
    b.repeat -= 1;
    std::vector<ValueRun> runs = b.runs;
    const std::uint64_t end = block_ends_.back();
    block_ends_.back() = end - block_size(ValueBlock{runs, 1});
    blocks_.push_back(ValueBlock{std::move(runs), 1});
    block_ends_.push_back(end);
  }
  ValueBlock& open = blocks_.back();
  ValueRun& last = open.runs.back();
  last.count -= 1;
  if (last.count == 0)
    open.runs.pop_back();
  else if (last.count == 1)
    last.stride = 0;
  block_ends_.back() -= 1;
  if (open.runs.empty()) {
    blocks_.pop_back();
    block_ends_.pop_back();
  }
  size_ -= 1;
  append(value);
}

void ValueSeq::seal() { fold_tail(blocks_, block_ends_); }

bool ValueSeq::equal_sealed(const ValueSeq& o) const {
  if (size_ != o.size_) return false;
  ValueSeq scratch_a, scratch_b;
  return sealed_form(scratch_a).blocks_ == o.sealed_form(scratch_b).blocks_;
}

bool ValueSeq::is_constant() const {
  if (size_ <= 1) return true;
  const std::int64_t v = blocks_.front().runs.front().first;
  for (const auto& b : blocks_)
    for (const auto& r : b.runs)
      if (r.first != v || (r.count > 1 && r.stride != 0)) return false;
  return true;
}

std::vector<std::int64_t> ValueSeq::to_vector() const {
  std::vector<std::int64_t> out;
  out.reserve(size_);
  Reader rd(this);
  while (!rd.done()) out.push_back(rd.next());
  return out;
}

ValueSeq ValueSeq::from_blocks(std::vector<ValueBlock> blocks) {
  ValueSeq s;
  std::uint64_t total = 0;
  for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
    const auto& b = blocks[bi];
    if (b.repeat == 0) throw FormatError("value sequence block " + std::to_string(bi) + " has repeat 0");
    if (b.runs.empty()) throw FormatError("value sequence block " + std::to_string(bi) + " has no runs");
    std::uint64_t n = 0;
    for (const auto& r : b.runs) {
      if (r.count == 0) throw FormatError("value sequence block " + std::to_string(bi) + " has a run of count 0");
      if (n + r.count < n) throw FormatError("value sequence length overflows");
      n += r.count;
    }
    if (n > UINT64_MAX / b.repeat || total + n * b.repeat < total) throw FormatError("value sequence length overflows");
    total += n * b.repeat;
    s.block_ends_.push_back(total);
  }
  s.blocks_ = std::move(blocks);
  s.size_ = total;
  return s;
}

std::string ValueSeq::to_string() const {
  std::ostringstream os;
  os << '[';
  bool first_block = true;
  for (const auto& b : blocks_) {
    if (!first_block) os << ' ';
    first_block = false;
    if (b.repeat > 1) os << '(';
    bool first_run = true;
    for (const auto& r : b.runs) {
      if (!first_run) os << ' ';
      first_run = false;
      os << r.first;
      if (r.count > 1) {
        if (r.stride == 0)
          os << 'x' << r.count;
        else
          os << ':' << r.stride << ':' << r.count;
      }
    }
    if (b.repeat > 1) os << ")x" << b.repeat;
  }
  os << ']';
  return os.str();
}

namespace {

/// Moves a reader's position (block, run, repetition) past run `run` of block `b`.
void step_past_run(const ValueBlock& b, std::size_t& block, std::size_t& run, std::uint64_t& rep) {
  if (++run == b.runs.size()) {
    run = 0;
    if (++rep >= b.repeat) {
      rep = 0;
      ++block;
    }
  }
}

}  // namespace

void ValueSeq::Reader::advance() {
  const std::size_t block = block_;
  const ValueBlock& b = seq_->blocks_[block];
  step_past_run(b, block_, run_, rep_);
  // The usual case: the block's next run (or its first, in the block's next repetition) holds
  // values, and settle's search is not needed.
  if (block_ == block && b.runs[run_].count > 0) {
    start_run(b.runs[run_]);
    return;
  }
  settle();
}

void ValueSeq::Reader::start_run(const ValueRun& r) {
  value_ = static_cast<std::uint64_t>(r.first);
  stride_ = static_cast<std::uint64_t>(r.stride);
  left_ = r.count;
}

void ValueSeq::Reader::settle() {
  left_ = 0;
  if (seq_ == nullptr) return;
  while (block_ < seq_->blocks_.size()) {
    const ValueBlock& b = seq_->blocks_[block_];
    if (b.repeat == 0 || b.runs.empty()) {  // holds no values
      ++block_;
      run_ = rep_ = 0;
      continue;
    }
    const ValueRun& r = b.runs[run_];
    if (r.count > 0) {
      start_run(r);
      return;
    }
    step_past_run(b, block_, run_, rep_);
  }
}

}  // namespace scalatrace
