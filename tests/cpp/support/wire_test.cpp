// The byte codec (support/wire.hpp): varints, zigzag, fixed-width numbers and strings round-trip
// and take the bytes docs/format.md gives them; the reader fails with FormatError on truncation,
// varints above 64 bits and counts the bytes left cannot hold; CRC-32 matches its check value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/wire.hpp"

using namespace scalatrace;

namespace {

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMinI64 = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Wire, VarintBytesAreLeb128) {
  wire::Writer w;
  w.uv(0);
  w.uv(127);
  w.uv(128);
  w.uv(300);
  EXPECT_EQ(w.data(), std::string("\x00\x7f\x80\x01\xac\x02", 6));
  wire::Writer max;
  max.uv(kMaxU64);
  EXPECT_EQ(max.data(), std::string(9, '\xff') + '\x01');
  EXPECT_EQ(wire::varint_size(0), 1u);
  EXPECT_EQ(wire::varint_size(127), 1u);
  EXPECT_EQ(wire::varint_size(128), 2u);
  EXPECT_EQ(wire::varint_size(kMaxU64), wire::kMaxVarintBytes);
}

TEST(Wire, ZigzagKeepsSmallMagnitudesSmall) {
  EXPECT_EQ(wire::zigzag(0), 0u);
  EXPECT_EQ(wire::zigzag(-1), 1u);
  EXPECT_EQ(wire::zigzag(1), 2u);
  EXPECT_EQ(wire::zigzag(-2), 3u);
  EXPECT_EQ(wire::zigzag(kMaxI64), kMaxU64 - 1);
  EXPECT_EQ(wire::zigzag(kMinI64), kMaxU64);
  for (const std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1}, kMinI64, kMaxI64})
    EXPECT_EQ(wire::unzigzag(wire::zigzag(v)), v);
}

TEST(Wire, FixedWidthIsLittleEndian) {
  wire::Writer w;
  w.fixed(0x01, 1);
  w.fixed(0x0302, 2);
  w.fixed(0x07060504, 4);
  w.fixed(0x0f0e0d0c0b0a0908, 8);
  w.fixed(0xAABB, 1);  // only the low byte
  EXPECT_EQ(w.data(), std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\xbb", 16));
  wire::Reader r(w.data());
  EXPECT_EQ(r.fixed(1), 0x01u);
  EXPECT_EQ(r.fixed(2), 0x0302u);
  EXPECT_EQ(r.fixed(4), 0x07060504u);
  EXPECT_EQ(r.fixed(8), 0x0f0e0d0c0b0a0908u);
  EXPECT_EQ(r.u8(), 0xbbu);
  EXPECT_TRUE(r.done());
}

TEST(Wire, RandomValuesRoundTrip) {
  std::mt19937_64 rng(29);
  std::vector<std::uint64_t> us = {0, 1, 127, 128, 16383, 16384, kMaxU64, kMaxU64 - 1, std::uint64_t{1} << 63};
  std::vector<std::int64_t> ss = {0, 1, -1, 63, -64, 64, -65, kMinI64, kMaxI64, kMinI64 + 1};
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t x = rng() >> (rng() % 64);  // every magnitude
    us.push_back(x);
    ss.push_back(static_cast<std::int64_t>(rng() % 2 ? x : ~x));
  }
  wire::Writer w;
  for (std::size_t i = 0; i < us.size(); ++i) {
    w.uv(us[i]);
    w.sv(ss[i]);
    w.fixed(us[i], 8);
    w.fixed(us[i], 4);
    w.f64(static_cast<double>(ss[i]) / 3);
  }
  w.f64(-0.0);
  w.f64(std::numeric_limits<double>::infinity());
  w.str("");
  w.str(std::string("a\0b", 3));
  wire::Reader r(w.data());
  for (std::size_t i = 0; i < us.size(); ++i) {
    ASSERT_EQ(r.uv(), us[i]);
    ASSERT_EQ(r.sv(), ss[i]);
    ASSERT_EQ(r.fixed(8), us[i]);
    ASSERT_EQ(r.fixed(4), us[i] & 0xFFFFFFFFu);
    ASSERT_EQ(r.f64(), static_cast<double>(ss[i]) / 3);
  }
  const double negative_zero = r.f64();
  EXPECT_TRUE(negative_zero == 0 && std::signbit(negative_zero));
  EXPECT_EQ(r.f64(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.str("empty"), "");
  EXPECT_EQ(r.str("text"), std::string("a\0b", 3));
  EXPECT_TRUE(r.done());
  EXPECT_EQ(r.pos(), w.size());
}

TEST(Wire, HotPathEncoderMatchesTheWriter) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    const std::uint64_t u = rng() >> (rng() % 64);
    const auto s = static_cast<std::int64_t>(rng() >> (rng() % 64)) * (i % 2 ? -1 : 1);
    wire::Writer w;
    w.uv(u);
    w.sv(s);
    char buf[2 * wire::kMaxVarintBytes];
    char* end = wire::put_svarint(wire::put_varint(buf, u), s);
    ASSERT_EQ(std::string(buf, end), w.data());
  }
}

TEST(Wire, TruncationFails) {
  wire::Writer w;
  w.uv(300);
  w.fixed(0x11223344, 4);
  w.str("hello");
  const std::string& bytes = w.data();
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    wire::Reader r(std::string_view(bytes).substr(0, cut));
    const std::string err = error_of([&] {
      r.uv();
      r.fixed(4);
      r.str("greeting");
    });
    // A cut string's length is a count the bytes left cannot hold.
    const char* expected = cut <= 6 ? "truncated" : "implausible greeting count 5";
    EXPECT_NE(err.find(expected), std::string::npos) << "cut at " << cut << ": " << err;
  }
  wire::Reader empty("");
  EXPECT_THROW(empty.u8(), FormatError);
  EXPECT_THROW(empty.peek(1), FormatError);
  EXPECT_EQ(empty.peek(0), "");
}

TEST(Wire, VarintsAbove64BitsFail) {
  // Ten bytes whose last holds more than the top bit, and eleven bytes.
  const std::string over = std::string(9, '\xff') + '\x02';
  EXPECT_NE(error_of([&] { wire::Reader(over).uv(); }).find("overflows 64 bits"), std::string::npos);
  const std::string longer = std::string(10, '\x80') + '\x00';
  EXPECT_NE(error_of([&] { wire::Reader(longer).uv(); }).find("overflows 64 bits"), std::string::npos);
  // Non-minimal forms within 10 bytes are read (the format never writes them; readers accept them).
  EXPECT_EQ(wire::Reader(std::string("\x80\x00", 2)).uv(), 0u);
  EXPECT_EQ(wire::Reader(std::string(9, '\xff') + '\x01').uv(), kMaxU64);
}

TEST(Wire, CountsAreBoundedByTheBytesLeft) {
  wire::Writer w;
  w.uv(4);
  w.raw("abcdefgh");
  {
    wire::Reader r(w.data());
    EXPECT_EQ(r.count("pair", 2), 4u);  // 8 bytes left, 2 each
  }
  {
    wire::Reader r(w.data());
    const std::string err = error_of([&] { r.count("triple", 3); });
    EXPECT_NE(err.find("implausible triple count 4 (only 8 bytes left)"), std::string::npos) << err;
  }
  wire::Reader r(w.data());
  EXPECT_THROW(r.bound(kMaxU64, "item", 1), FormatError);  // never a huge allocation
  EXPECT_EQ(r.bound(0, "item", 1000), 0u);
  wire::Writer huge;
  huge.uv(kMaxU64);
  EXPECT_THROW(wire::Reader(huge.data()).str("text"), FormatError);
}

TEST(Wire, FailuresSayWhereAndCanBeWorded) {
  const std::string bytes("\x01\x02", 2);
  wire::Reader plain(bytes, 100);
  plain.u8();
  EXPECT_EQ(error_of([&] { plain.fail("odd"); }), "odd at byte 101");

  class Named : public wire::Reader {
   public:
    using wire::Reader::Reader;

   protected:
    std::string describe(const std::string& what) const override { return "list: " + what; }
  };
  Named named(bytes);
  EXPECT_EQ(error_of([&] { named.fixed(4); }), "list: truncated");
}

TEST(Wire, Crc32IsIeee) {
  EXPECT_EQ(wire::crc32("123456789"), 0xCBF43926u);  // the CRC-32/ISO-HDLC check value
  EXPECT_EQ(wire::crc32(""), 0u);
  EXPECT_EQ(wire::crc32("The quick brown fox jumps over the lazy dog"), 0x414FA339u);
}
