#pragma once
// The one byte codec of the core: what the .sct trace (docs/format.md), its rank segments, the
// raw stream (.straw) and the collector's cluster lists are written with. A Writer appends
// unsigned LEB128 varints (`uv`), zigzag-coded signed varints (`sv`), little-endian fixed-width
// numbers, raw bytes and length-prefixed strings; a Reader takes them back from a byte span,
// bounds-checked, and throws FormatError (errors.hpp) on anything it cannot read: truncation,
// a varint above 64 bits, a count that the bytes left cannot hold. docs/format.md, "Primitive
// encodings" (.sct) and "Encodings" (.straw).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "scalatrace/support/errors.hpp"

namespace scalatrace::wire {

/// Most bytes a varint takes (64 bits, 7 per byte).
inline constexpr std::size_t kMaxVarintBytes = 10;

/// Zigzag code of a signed number: 0, -1, 1, -2, ... become 0, 1, 2, 3, ... (small magnitudes
/// stay small whatever their sign).
constexpr std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
constexpr std::int64_t unzigzag(std::uint64_t z) { return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1)); }

/// Bytes `uv(v)` takes (1 to kMaxVarintBytes).
constexpr std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

/// `v` as a varint at `p`, which has room for kMaxVarintBytes; returns the end. For hot paths
/// that reserve room for a whole record at once (RawWriter::append); Writer::uv otherwise.
inline char* put_varint(char* p, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7) *p++ = static_cast<char>((v & 0x7F) | 0x80);
  *p++ = static_cast<char>(v);
  return p;
}
inline char* put_svarint(char* p, std::int64_t v) { return put_varint(p, zigzag(v)); }

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320; "123456789" gives 0xCBF43926).
std::uint32_t crc32(std::string_view data);

/// Appends encoded numbers and bytes to a string it owns.
class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  /// Unsigned LEB128: 7 bits per byte, low first, bit 7 set on all but the last.
  void uv(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    out_.push_back(static_cast<char>(v));
  }
  /// Signed: the zigzag code as `uv`.
  void sv(std::int64_t v) { uv(zigzag(v)); }
  /// The low `bytes` bytes of `v` (1 to 8), little-endian.
  void fixed(std::uint64_t v, int bytes) {
    if constexpr (std::endian::native == std::endian::little) {
      char b[8];
      std::memcpy(b, &v, 8);
      out_.append(b, static_cast<std::size_t>(bytes));
    } else {
      for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    }
  }
  /// A double's IEEE 754 bits, 8 bytes little-endian.
  void f64(double d) { fixed(std::bit_cast<std::uint64_t>(d), 8); }
  void raw(std::string_view bytes) { out_ += bytes; }
  /// Length-prefixed bytes: `uv size`, then the bytes as they are.
  void str(std::string_view s) {
    uv(s.size());
    out_ += s;
  }

  std::size_t size() const { return out_.size(); }
  std::string& data() { return out_; }
  const std::string& data() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// Reads what a Writer wrote from a byte span, never past its end. Every failure throws
/// FormatError through fail(), whose message describe() words; a format's reader derives from
/// this class to say where it was (section, file) in its own terms. `base` is the span's offset
/// in the whole input, for messages.
class Reader {
 public:
  explicit Reader(std::string_view data, std::size_t base = 0) : data_(data), base_(base) {}
  virtual ~Reader() = default;
  Reader(const Reader&) = default;
  Reader& operator=(const Reader&) = default;

  /// Throws FormatError(describe(what)).
  [[noreturn]] void fail(const std::string& what) const;

  std::size_t remaining() const { return data_.size() - pos_; }
  bool done() const { return pos_ >= data_.size(); }
  /// Bytes read so far.
  std::size_t pos() const { return pos_; }
  /// Offset of the next byte in the whole input (base + pos).
  std::size_t offset() const { return base_ + pos_; }
  std::size_t size() const { return data_.size(); }

  std::uint8_t u8() {
    if (pos_ >= data_.size()) fail("truncated");
    return static_cast<std::uint8_t>(data_[pos_++]);
  }
  /// Unsigned LEB128 (non-minimal forms are accepted); fails above 64 bits.
  std::uint64_t uv() {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const std::uint8_t b = u8();
      if (shift == 63 && b > 1) fail("variable-length integer overflows 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  std::int64_t sv() { return unzigzag(uv()); }
  /// `bytes` bytes (1 to 8), little-endian unsigned.
  std::uint64_t fixed(int bytes) {
    const std::string_view b = take(static_cast<std::size_t>(bytes));
    std::uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&v, b.data(), b.size());
    } else {
      for (std::size_t i = 0; i < b.size(); ++i)
        v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(b[i])) << (8 * i);
    }
    return v;
  }
  double f64() { return std::bit_cast<double>(fixed(8)); }
  /// The next `n` bytes, consumed.
  std::string_view take(std::size_t n) {
    const std::string_view s = peek(n);
    pos_ += n;
    return s;
  }
  /// The next `n` bytes, not consumed.
  std::string_view peek(std::size_t n) const {
    if (remaining() < n) fail("truncated");
    return data_.substr(pos_, n);
  }
  /// Length-prefixed bytes (Writer::str); `what` names them in errors.
  std::string_view str(const char* what) { return take(count(what)); }

  /// A count (`uv`) of items that each take at least `min_bytes`: checked against the bytes
  /// left, so that a caller may reserve room for that many before reading them.
  std::size_t count(const char* what, std::size_t min_bytes = 1) { return bound(uv(), what, min_bytes); }
  /// `n` (a count read otherwise) checked as count() does.
  std::size_t bound(std::uint64_t n, const char* what, std::size_t min_bytes = 1) const {
    if (n > remaining() / min_bytes)
      fail(std::string("implausible ") + what + " count " + std::to_string(n) + " (only " +
           std::to_string(remaining()) + " bytes left)");
    return static_cast<std::size_t>(n);
  }

 protected:
  /// The message of a failure: `what` and where. Default: "<what> at byte <offset>".
  virtual std::string describe(const std::string& what) const;

 private:
  std::string_view data_;
  std::size_t base_;
  std::size_t pos_ = 0;
};

}  // namespace scalatrace::wire
