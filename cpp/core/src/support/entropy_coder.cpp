// Context-mixing compressor for the .sct payload (docs/format.md, "Entropy coding").
//
// Bits are coded one at a time, most significant first. Each model predicts the next bit as a
// 16-bit probability from a context: the bits of the current byte so far plus 0 to 6 previous
// bytes (orders 0..6, orders 2 and up hashed into a table), two earlier bytes skipping the last
// (a sparse context, for fixed-width records) and a match model (the bit that followed the
// longest earlier occurrence of the last bytes). A mixer combines the predictions in the
// logistic domain with weights learned online, selected by the match length; a binary
// arithmetic coder turns the mixed probability into bits of output. The decoder runs the same
// models on the bytes it has decoded, so both sides see the same predictions. All arithmetic is
// integer: the coded bytes do not depend on the platform.
#include "scalatrace/support/entropy_coder.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string_view>

#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace::entropy {
namespace {

// ---------------------------------------------------------------- logistic domain
/// 4096 / (1 + e^(-x/256)) at x = -2048, -1920, ..., 2048, rounded: the points between which
/// squash() interpolates.
constexpr std::array<int, 33> kSquashPoints = {1,    2,    4,    6,    10,   17,   27,   45,   74,   120,  194,
                                               311,  488,  747,  1102, 1546, 2048, 2550, 2994, 3349, 3608, 3785,
                                               3902, 3976, 4022, 4051, 4069, 4079, 4086, 4090, 4092, 4094, 4095};

/// Probability (12 bits) of a logistic-domain value x (x / 256 = ln(p / (1 - p))).
int squash(int x) {
  if (x >= 2047) return 4095;
  if (x <= -2047) return 1;
  const int w = x & 127;
  const int i = (x >> 7) + 16;
  return (kSquashPoints[static_cast<std::size_t>(i)] * (128 - w) + kSquashPoints[static_cast<std::size_t>(i) + 1] * w +
          64) >>
         7;
}

/// The inverse of squash on 12-bit probabilities, built from squash alone (integers only).
struct StretchTable {
  std::array<std::int16_t, 4096> value{};
  StretchTable() {
    int pi = 0;
    for (int x = -2047; x <= 2047; ++x) {
      const int v = squash(x);
      for (int p = pi; p <= v; ++p) value[static_cast<std::size_t>(p)] = static_cast<std::int16_t>(x);
      pi = v + 1;
    }
    for (int p = pi; p < 4096; ++p) value[static_cast<std::size_t>(p)] = 2047;
  }
};
const StretchTable kStretch;
int stretch(int p12) { return kStretch.value[static_cast<std::size_t>(p12)]; }

// ---------------------------------------------------------------- adaptive bit predictors
/// A table of bit probabilities (16 bits) with a per-slot count: a slot adapts fast while it
/// has seen few bits (rate 1/(n+1.5)) and settles to rate 1/kLimit.
class CounterTable {
 public:
  static constexpr int kLimit = 60;
  explicit CounterTable(std::size_t size) : p_(size, 32768), n_(size, 0) {}
  int p12(std::size_t i) const { return p_[i] >> 4; }
  void update(std::size_t i, int bit) {
    const int target = bit ? 65535 : 0;
    const int n = n_[i];
    // 64-bit: (target - p) * rate reaches 2^31 (and signed overflow would be undefined).
    const std::int64_t step = static_cast<std::int64_t>(target - p_[i]) * kRates[static_cast<std::size_t>(n)] / 65536;
    p_[i] = static_cast<std::uint16_t>(p_[i] + step);
    if (n < kLimit) ++n_[i];
  }
  std::size_t size() const { return p_.size(); }

 private:
  static const std::array<int, kLimit + 1> kRates;
  std::vector<std::uint16_t> p_;
  std::vector<std::uint8_t> n_;
};

constexpr std::array<int, CounterTable::kLimit + 1> make_rates() {
  std::array<int, CounterTable::kLimit + 1> r{};
  for (int n = 0; n <= CounterTable::kLimit; ++n) r[static_cast<std::size_t>(n)] = 131072 / (2 * n + 3);
  return r;
}

const std::array<int, CounterTable::kLimit + 1> CounterTable::kRates = make_rates();

constexpr std::uint32_t hash_bytes(std::uint32_t h, std::uint32_t byte, std::uint32_t salt) {
  h = (h ^ (byte + salt)) * 0x9E3779B1u;
  return h ^ (h >> 15);
}

// ---------------------------------------------------------------- the model
class Model {
 public:
  static constexpr std::size_t kHashedOrders = 6;                    // orders 2, 3, 4, 6, the sparse context, order 8
  static constexpr std::size_t kInputs = 2 + kHashedOrders + 1 + 1;  // + match + bias

  explicit Model(std::size_t input_size)
      : order0_(256),
        order1_(65536),
        hashed_(make_hashed(input_size)),
        match_states_(64 * 2),
        weights_(kMixerSets * kInputs, 1 << 14),
        history_(),
        match_index_(hash_size(input_size) / 4, 0) {
    history_.reserve(input_size);
  }

  /// Runs the model over `text` as if it had been coded (the primer).
  void learn(std::string_view text) {
    for (const char ch : text) {
      const auto c = static_cast<unsigned char>(ch);
      for (int k = 7; k >= 0; --k) {
        predict();
        update((c >> k) & 1);
      }
    }
  }

  /// Probability (12 bits) that the next bit is 1.
  int predict() {
    std::array<int, kInputs>& in = inputs_;
    slot0_ = c0_;
    slot1_ = (static_cast<std::size_t>(c1()) << 8) | c0_;
    in[0] = stretch(order0_.p12(slot0_));
    in[1] = stretch(order1_.p12(slot1_));
    for (std::size_t k = 0; k < kHashedOrders; ++k) {
      slots_[k] = (byte_hash_[k] + c0_ * 0x2F0B4C57u) & (hashed_[k].size() - 1);
      in[2 + k] = stretch(hashed_[k].p12(slots_[k]));
    }
    // Match model: the bit that followed the earlier occurrence, trusted by match length.
    expected_bit_ = -1;
    int match_input = 0;
    if (match_length_ > 0) {
      const int predicted_byte = static_cast<unsigned char>(history_[match_ptr_]) | 256;
      const int shift = 8 - bit_count_;
      if ((predicted_byte >> shift) == static_cast<int>(c0_)) {
        expected_bit_ = (predicted_byte >> (shift - 1)) & 1;
        match_slot_ =
            2 * static_cast<std::size_t>(std::min(match_length_, 63)) + static_cast<std::size_t>(expected_bit_);
        match_input = stretch(match_states_.p12(match_slot_));
      } else {
        match_length_ = 0;
      }
    }
    in[kInputs - 2] = match_input;
    in[kInputs - 1] = 256;  // bias
    mixer_set_ = (static_cast<std::size_t>(std::min(match_length_, 15)) * 256 + c0_) % kMixerSets;
    const int* w = &weights_[mixer_set_ * kInputs];
    std::int64_t dot = 0;
    for (std::size_t i = 0; i < kInputs; ++i) dot += static_cast<std::int64_t>(in[i]) * w[i];
    int x = static_cast<int>(dot >> 16);
    x = std::clamp(x, -2047, 2047);
    mixed_ = squash(x);
    return std::clamp(mixed_, 1, 4095);
  }

  void update(int bit) {
    // Mixer: gradient step on the coding cost.
    const int err = ((bit << 12) - mixed_) * kLearningRate;
    int* w = &weights_[mixer_set_ * kInputs];
    // Weights stay within +-2^24 (16.16 fixed point: +-256), so nothing can overflow.
    for (std::size_t i = 0; i < kInputs; ++i)
      w[i] = std::clamp(w[i] + ((inputs_[i] * err + (1 << 9)) >> 10), -(1 << 24), 1 << 24);
    order0_.update(slot0_, bit);
    order1_.update(slot1_, bit);
    for (std::size_t k = 0; k < kHashedOrders; ++k) hashed_[k].update(slots_[k], bit);
    if (expected_bit_ >= 0) match_states_.update(match_slot_, bit);

    c0_ = (c0_ << 1) | static_cast<std::uint32_t>(bit);
    if (++bit_count_ < 8) return;
    end_of_byte(static_cast<char>(c0_ & 255));
  }

 private:
  static constexpr std::size_t kMixerSets = 16 * 256;
  static constexpr int kLearningRate = 2;

  static std::size_t hash_size(std::size_t input_size) {
    std::size_t size = std::size_t{1} << 12;
    while (size < input_size * 16 && size < (std::size_t{1} << 22)) size <<= 1;
    return size;
  }
  static std::vector<CounterTable> make_hashed(std::size_t input_size) {
    std::vector<CounterTable> t;
    for (std::size_t k = 0; k < kHashedOrders; ++k) t.emplace_back(hash_size(input_size));
    return t;
  }
  int c1() const { return history_.empty() ? 0 : static_cast<unsigned char>(history_.back()); }
  std::uint32_t byte_at(std::size_t back) const {
    return back <= history_.size() ? static_cast<unsigned char>(history_[history_.size() - back]) : 0u;
  }

  void end_of_byte(char byte) {
    history_.push_back(byte);
    c0_ = 1;
    bit_count_ = 0;
    // Match model: extend the current match or look the last bytes up.
    if (match_length_ > 0 && history_[match_ptr_] == byte) {
      ++match_length_;
      ++match_ptr_;
    } else {
      match_length_ = 0;
    }
    const std::size_t n = history_.size();
    if (n >= kMatchMinimum) {
      std::uint32_t h = 0;
      for (std::size_t b = 1; b <= kMatchMinimum; ++b) h = hash_bytes(h, byte_at(b), 0);
      const std::size_t slot = h & (match_index_.size() - 1);
      if (match_length_ == 0) {
        const std::uint32_t candidate = match_index_[slot];
        if (candidate > 0) {
          int length = 0;
          while (length < 32 && static_cast<std::size_t>(length) < candidate &&
                 history_[candidate - 1 - static_cast<std::size_t>(length)] ==
                     history_[n - 1 - static_cast<std::size_t>(length)])
            ++length;
          if (length >= static_cast<int>(kMatchMinimum)) {
            match_length_ = length;
            match_ptr_ = candidate;
          }
        }
      }
      match_index_[slot] = static_cast<std::uint32_t>(n);
    }
    if (match_length_ > 0 && match_ptr_ >= n) match_length_ = 0;
    // The byte contexts of the next byte.
    std::uint32_t h = 0;
    std::array<std::uint32_t, 9> prefix{};
    for (std::size_t b = 1; b <= 8; ++b) {
      h = hash_bytes(h, byte_at(b), static_cast<std::uint32_t>(b));
      prefix[b] = h;
    }
    byte_hash_[0] = prefix[2] * 3u + 1u;
    byte_hash_[1] = prefix[3] * 5u + 2u;
    byte_hash_[2] = prefix[4] * 7u + 3u;
    byte_hash_[3] = prefix[6] * 11u + 4u;
    byte_hash_[4] = hash_bytes(hash_bytes(0, byte_at(2), 91), byte_at(3), 92) * 13u + 5u;
    byte_hash_[5] = prefix[8] * 17u + 6u;
  }

  static constexpr std::size_t kMatchMinimum = 5;

  CounterTable order0_, order1_;
  std::vector<CounterTable> hashed_;
  CounterTable match_states_;
  std::vector<int> weights_;
  std::string history_;
  std::vector<std::uint32_t> match_index_;  // hash of the last bytes -> position after them

  std::array<int, kInputs> inputs_{};
  std::array<std::uint32_t, kHashedOrders> byte_hash_{1, 2, 3, 4, 5, 6};
  std::array<std::size_t, kHashedOrders> slots_{};
  std::size_t slot0_ = 0, slot1_ = 0, match_slot_ = 0, mixer_set_ = 0;
  std::uint32_t c0_ = 1;  // the current byte's bits so far, after a leading 1
  int bit_count_ = 0;
  int mixed_ = 2048;
  int match_length_ = 0;
  std::size_t match_ptr_ = 0;
  int expected_bit_ = -1;
};

// ---------------------------------------------------------------- binary arithmetic coder
/// The split point of [x1, x2] for a 12-bit probability of a 1.
std::uint32_t split(std::uint32_t x1, std::uint32_t x2, int p12) {
  const std::uint32_t range = x2 - x1;
  return x1 + (range >> 12) * static_cast<std::uint32_t>(p12) +
         (((range & 0xFFF) * static_cast<std::uint32_t>(p12)) >> 12);
}

}  // namespace

std::string encode(std::string_view data, std::string_view primer, std::vector<double>* bits_per_byte) {
  wire::Writer out;
  out.uv(data.size());
  std::string& bytes = out.data();
  if (bits_per_byte) bits_per_byte->assign(data.size(), 0.0);
  if (data.empty()) return out.take();
  Model model(data.size() + primer.size());
  model.learn(primer);
  std::uint32_t x1 = 0, x2 = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    double cost = 0;
    for (int k = 7; k >= 0; --k) {
      const int bit = (c >> k) & 1;
      const int p = model.predict();
      if (bits_per_byte) cost -= std::log2((bit ? p : 4096 - p) / 4096.0);
      const std::uint32_t mid = split(x1, x2, p);
      if (bit)
        x2 = mid;
      else
        x1 = mid + 1;
      model.update(bit);
      while (((x1 ^ x2) & 0xFF000000u) == 0) {
        bytes.push_back(static_cast<char>(x2 >> 24));
        x1 <<= 8;
        x2 = (x2 << 8) | 255;
      }
    }
    if (bits_per_byte) (*bits_per_byte)[i] = cost;
  }
  for (int k = 0; k < 4; ++k) {
    bytes.push_back(static_cast<char>(x1 >> 24));
    x1 <<= 8;
  }
  return out.take();
}

std::string decode(std::string_view coded, std::size_t max_size, std::string_view primer) {
  wire::Reader r(coded);
  std::uint64_t size = 0;
  try {
    size = r.uv();
  } catch (const std::exception&) {
    throw FormatError("entropy-coded payload: truncated before its size");
  }
  if (size > max_size)
    throw FormatError("entropy-coded payload declares " + std::to_string(size) + " bytes (at most " +
                      std::to_string(max_size) + " for its coded size)");
  const std::string_view stream = coded.substr(r.pos());
  if (size == 0) {
    if (!stream.empty()) throw FormatError("entropy-coded payload: bytes after an empty payload");
    return {};
  }
  std::size_t pos = 0;
  auto next = [&]() -> std::uint32_t {
    if (pos >= stream.size()) throw FormatError("entropy-coded payload: stream ends early (truncated)");
    return static_cast<unsigned char>(stream[pos++]);
  };
  std::uint32_t x1 = 0, x2 = 0xFFFFFFFFu, x = 0;
  for (int k = 0; k < 4; ++k) x = (x << 8) | next();
  std::string data;
  data.reserve(static_cast<std::size_t>(size));
  Model model(static_cast<std::size_t>(size) + primer.size());
  model.learn(primer);
  for (std::uint64_t i = 0; i < size; ++i) {
    int c = 0;
    for (int k = 0; k < 8; ++k) {
      const int p = model.predict();
      const std::uint32_t mid = split(x1, x2, p);
      const int bit = x <= mid ? 1 : 0;
      if (bit)
        x2 = mid;
      else
        x1 = mid + 1;
      model.update(bit);
      c = (c << 1) | bit;
      while (((x1 ^ x2) & 0xFF000000u) == 0) {
        x1 <<= 8;
        x2 = (x2 << 8) | 255;
        x = (x << 8) | next();
      }
    }
    data.push_back(static_cast<char>(c));
  }
  if (pos != stream.size())
    throw FormatError("entropy-coded payload: " + std::to_string(stream.size() - pos) + " bytes after its end");
  return data;
}

}  // namespace scalatrace::entropy
