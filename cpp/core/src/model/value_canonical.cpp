// Canonical value sequences (docs/algorithms.md, "Canonical value sequences").
//
// The online ValueSeq builds its runs greedily as values arrive, and loop folding appends whole
// sequences, so the same values can end up in different, and longer, forms: a stencil rank's
// peers 1 3 4 1 3 4 ... come out as "(1:2:2 4)x3 (1:2:2 4:-3:2 3:1:2)x48 1:2:2 4" instead of
// "(1:2:2 4)x100" (the run 4 1 swallowed the start of the next period). At the end of a rank's
// compression every sequence is rebuilt from its values alone:
//   * an arithmetic progression is one run;
//   * a periodic sequence (smallest period p, at least two periods) is one block of the period's
//     maximal arithmetic runs, repeated, then the incomplete last period;
//   * otherwise the longest periodic prefix or suffix (with at least two periods) becomes such a
//     block and the rest is encoded the same way (a few levels deep), or the values are appended
//     one by one to a fresh ValueSeq (the online rules, from values only);
// choosing the form that takes the fewest bytes. The result depends on the values only, so
// ranks whose values agree get equal sequences and merge, however each rank's compressor
// reached them.
#include <algorithm>
#include <span>

#include "model/value_arith.hpp"
#include "model/value_canonical.hpp"
#include "scalatrace/model/value_seq.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace {
namespace {

/// Sequences longer than this are not held in memory: only their first kCanonicalLimit values,
/// to find a progression or a period that one pass over the rest confirms (canonical_long).
constexpr std::uint64_t kCanonicalLimit = std::uint64_t{1} << 18;
/// Levels of "periodic prefix or suffix, then the rest".
constexpr int kMaxDepth = 3;

using Values = std::span<const std::int64_t>;
using Blocks = std::vector<ValueBlock>;

using value_arith::run_value;
using value_arith::wrap_add;
using value_arith::wrap_sub;

std::size_t uv_bytes(std::uint64_t v) { return wire::varint_size(v); }
std::size_t sv_bytes(std::int64_t v) { return wire::varint_size(wire::zigzag(v)); }

/// Bytes the writer takes for these blocks (plain numbers; scaled ones differ by little).
std::size_t encoded_bytes(const Blocks& blocks) {
  std::size_t n = uv_bytes(2 * blocks.size());
  for (const auto& b : blocks) {
    n += uv_bytes(b.repeat) + uv_bytes(b.runs.size());
    for (const auto& r : b.runs) n += sv_bytes(r.first) + sv_bytes(r.stride) + uv_bytes(r.count);
  }
  return n;
}

/// Maximal arithmetic runs, left to right (the fewest runs that hold the values).
std::vector<ValueRun> maximal_runs(Values v) {
  std::vector<ValueRun> runs;
  std::size_t i = 0;
  while (i < v.size()) {
    if (i + 1 == v.size()) {
      runs.push_back(ValueRun{v[i], 0, 1});
      break;
    }
    const std::int64_t stride = wrap_sub(v[i + 1], v[i]);
    std::size_t j = i + 2;
    while (j < v.size() && wrap_add(v[j - 1], stride) == v[j]) ++j;
    runs.push_back(ValueRun{v[i], stride, j - i});
    i = j;
  }
  return runs;
}

/// True if the values are one arithmetic progression (one run).
bool is_progression(Values v) {
  if (v.size() <= 2) return true;
  const std::int64_t stride = wrap_sub(v[1], v[0]);
  for (std::size_t i = 2; i < v.size(); ++i)
    if (wrap_add(v[i - 1], stride) != v[i]) return false;
  return true;
}

/// Appends `more` to `out`; two adjacent unrepeated blocks become one.
void append_blocks(Blocks& out, Blocks&& more) {
  for (auto& b : more) {
    if (!out.empty() && out.back().repeat == 1 && b.repeat == 1) {
      auto& runs = out.back().runs;
      runs.insert(runs.end(), b.runs.begin(), b.runs.end());
    } else {
      out.push_back(std::move(b));
    }
  }
}

/// The online rules on the values alone.
Blocks online_blocks(Values v) {
  ValueSeq s;
  for (auto x : v) s.append(x);
  s.seal();
  return s.blocks();
}

/// prefix[i]: length of the longest proper border of v[0..i] (Knuth-Morris-Pratt); the smallest
/// period of v[0..m) is m - prefix[m - 1].
std::vector<std::size_t> prefix_function(Values v) {
  std::vector<std::size_t> pi(v.size(), 0);
  for (std::size_t i = 1; i < v.size(); ++i) {
    std::size_t k = pi[i - 1];
    while (k > 0 && v[i] != v[k]) k = pi[k - 1];
    if (v[i] == v[k]) ++k;
    pi[i] = k;
  }
  return pi;
}

/// The longest prefix of v holding at least two periods of its smallest period: {length,
/// period}, or {0, 0}. Prefixes shorter than 4 values are not worth a block.
std::pair<std::size_t, std::size_t> longest_periodic_prefix(const std::vector<std::size_t>& pi) {
  for (std::size_t m = pi.size(); m >= 4; --m) {
    const std::size_t p = m - pi[m - 1];
    if (2 * p <= m) return {m, p};
  }
  return {0, 0};
}

/// Block of `reps` periods v[0..p), then the encoding of what follows them.
Blocks periodic_then(Values v, std::size_t p, std::uint64_t reps, Blocks&& rest) {
  Blocks out{ValueBlock{maximal_runs(v.first(p)), reps}};
  append_blocks(out, std::move(rest));
  return out;
}

/// A sequence of n values whose first values are `period` (n >= 2 * period.size()): the
/// period's runs repeated, then the incomplete last period.
Blocks periodic_form(Values period, std::size_t p, std::uint64_t n) {
  const std::uint64_t reps = n / p;
  return periodic_then(period, p, reps, online_blocks(period.first(static_cast<std::size_t>(n - reps * p))));
}

Blocks encode(Values v, int depth) {
  const std::size_t n = v.size();
  if (n == 0) return {};
  if (is_progression(v)) return Blocks{ValueBlock{maximal_runs(v), 1}};

  const auto pi = prefix_function(v);
  const std::size_t p = n - pi[n - 1];
  if (2 * p <= n) return periodic_form(v, p, n);  // periodic as a whole

  Blocks best = online_blocks(v);
  if (depth >= kMaxDepth) return best;
  std::size_t best_bytes = encoded_bytes(best);
  auto consider = [&](Blocks&& candidate) {
    const std::size_t bytes = encoded_bytes(candidate);
    if (bytes <= best_bytes) {
      best = std::move(candidate);
      best_bytes = bytes;
    }
  };

  // Periodic first part, then something else.
  if (const auto [m, q] = longest_periodic_prefix(pi); m > 0) {
    const std::size_t reps = m / q;
    consider(periodic_then(v, q, reps, encode(v.subspan(reps * q), depth + 1)));
  }
  // Something else, then a periodic last part (the prefix function of the reversed values).
  std::vector<std::int64_t> reversed(v.rbegin(), v.rend());
  if (const auto [m, q] = longest_periodic_prefix(prefix_function(reversed)); m > 0) {
    const std::size_t start = n - m, reps = m / q;
    Blocks candidate = encode(v.first(start), depth + 1);
    append_blocks(candidate, periodic_then(v.subspan(start), q, reps, online_blocks(v.subspan(start + reps * q))));
    consider(std::move(candidate));
  }
  return best;
}

bool is_single_run(const ValueSeq& seq) {
  const auto& blocks = seq.blocks();
  return blocks.size() == 1 && blocks.front().repeat == 1 && blocks.front().runs.size() == 1;
}

/// The canonical form of a sequence longer than kCanonicalLimit, from its first kCanonicalLimit
/// values and one pass over the rest: an arithmetic progression or a periodic sequence gets the
/// form encode() gives it (the smallest period of the first values is the sequence's, when it
/// is a period of the whole); anything else keeps its online form, sealed.
ValueSeq canonical_long(const ValueSeq& seq) {
  ValueSeq::Reader reader(&seq);
  std::vector<std::int64_t> first;
  first.reserve(kCanonicalLimit);
  while (first.size() < kCanonicalLimit) first.push_back(reader.next());
  const auto pi = prefix_function(first);
  const std::size_t p = first.size() - pi.back();
  const std::int64_t stride = wrap_sub(first[1], first[0]);
  bool arithmetic = is_progression(first), periodic = 2 * p <= first.size();
  std::int64_t last = first.back();
  for (std::uint64_t i = first.size(); !reader.done() && (arithmetic || periodic); ++i) {
    const std::int64_t x = reader.next();
    arithmetic = arithmetic && x == wrap_add(last, stride);
    periodic = periodic && x == first[static_cast<std::size_t>(i % p)];
    last = x;
  }
  ValueSeq out;
  if (arithmetic)
    out = ValueSeq::from_blocks({ValueBlock{{ValueRun{first[0], stride, seq.size()}}, 1}});
  else if (periodic)
    out = ValueSeq::from_blocks(periodic_form(first, p, seq.size()));
  else
    out = seq;
  if (!out.sealed()) out.seal();
  return out;
}

/// Values of `runs`, appended to `out`; false (out unspecified) past `limit` values.
bool expand_runs(const std::vector<ValueRun>& runs, std::size_t limit, std::vector<std::int64_t>& out) {
  for (const auto& r : runs) {
    if (r.count > limit - std::min(limit, out.size())) return false;
    for (std::uint64_t i = 0; i < r.count; ++i) out.push_back(run_value(r, i));
  }
  return true;
}

/// True if `seq` is already the canonical form of a periodic sequence (what compression leaves
/// in a long run: "(P) x reps, tail"), checked in the period's length instead of the sequence's:
/// its first block P repeats at least twice, P is primitive (no smaller period divides it, so
/// by Fine and Wilf the whole sequence has no period smaller than |P|), P followed by its first
/// value is no progression (the sequence is not one run), the rest is a proper prefix of P, and
/// the form built from P is exactly this one.
bool canonical_periodic(const ValueSeq& seq) {
  constexpr std::size_t kMaxPeriodValues = 4096;
  const auto& blocks = seq.blocks();
  if (blocks.empty() || blocks.front().repeat < 2) return false;
  std::vector<std::int64_t> period, tail;
  if (!expand_runs(blocks.front().runs, kMaxPeriodValues, period) || period.size() < 2) return false;
  for (std::size_t b = 1; b < blocks.size(); ++b)
    if (blocks[b].repeat != 1 || !expand_runs(blocks[b].runs, period.size() - 1, tail)) return false;
  if (!std::equal(tail.begin(), tail.end(), period.begin())) return false;
  const auto pi = prefix_function(period);
  const std::size_t p = period.size() - pi.back();
  if (p < period.size() && period.size() % p == 0) return false;  // not primitive
  period.push_back(period.front());
  if (is_progression(period)) return false;
  period.pop_back();
  ValueSeq built = ValueSeq::from_blocks(periodic_form(period, period.size(), seq.size()));
  built.seal();
  return built.blocks() == blocks;
}

/// True if `seq` is its own canonical form by its shape alone (checked without its values).
bool already_canonical(const ValueSeq& seq) { return seq.empty() || is_single_run(seq) || canonical_periodic(seq); }

/// The canonical form of a sequence that is not already_canonical().
ValueSeq rebuilt(const ValueSeq& seq) {
  if (seq.size() > kCanonicalLimit) return canonical_long(seq);
  const std::vector<std::int64_t> values = seq.to_vector();
  ValueSeq out = ValueSeq::from_blocks(encode(values, 0));
  out.seal();
  return out;
}

void canonicalize(ElasticValue& e) {
  for (auto& alternative : e.alternatives)
    if (!already_canonical(alternative.first)) alternative.first = rebuilt(alternative.first);
}

}  // namespace

ValueSeq ValueSeq::canonical() const { return already_canonical(*this) ? *this : rebuilt(*this); }

void canonicalize_values(std::vector<Node>& nodes) {
  for (auto& node : nodes) {
    canonicalize(node.presence);
    if (node.loop) {
      canonicalize(node.loop->trips);
      canonicalize_values(node.loop->body);
    }
    if (node.event) {
      for (auto& field : node.event->fields) canonicalize(field);
      canonicalize(node.event->site_ids);
    }
  }
}

ValueSeq canonical_repeated(std::span<const std::int64_t> block, std::uint64_t repeat) {
  if (block.empty() || repeat == 0) return {};
  const std::uint64_t k = block.size();
  if (repeat <= kCanonicalLimit / k) {  // as short as rebuilt() takes it: from the values
    std::vector<std::int64_t> values;
    values.reserve(static_cast<std::size_t>(k * repeat));
    for (std::uint64_t r = 0; r < repeat; ++r) values.insert(values.end(), block.begin(), block.end());
    ValueSeq out = ValueSeq::from_blocks(encode(values, 0));
    out.seal();
    return out;
  }
  // Longer than kCanonicalLimit (so repeat >= 2): what canonical_long finds. The smallest period
  // of the whole is the block's primitive period, which divides the block, so no tail.
  const auto pi = prefix_function(block);
  std::size_t p = block.size() - pi.back();
  if (block.size() % p != 0) p = block.size();
  const std::uint64_t n = k * repeat;
  ValueSeq out = p == 1 ? ValueSeq::from_blocks({ValueBlock{{ValueRun{block[0], 0, n}}, 1}})
                        : ValueSeq::from_blocks(periodic_form(block, p, n));
  if (!out.sealed()) out.seal();
  return out;
}

}  // namespace scalatrace
