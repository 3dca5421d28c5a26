// The payload's entropy coder: lossless on any bytes, compact on repetitive ones, and strict
// about malformed streams (a declared size above the caller's bound is refused before any
// allocation; a cut or padded stream is an error).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "scalatrace/support/entropy_coder.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

std::string random_bytes(std::mt19937_64& rng, std::size_t n, int alphabet) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() % static_cast<unsigned>(alphabet));
  return s;
}

/// Varint-like records with a few recurring shapes: what a trace payload looks like.
std::string record_like(std::mt19937_64& rng, std::size_t records) {
  std::string s;
  for (std::size_t i = 0; i < records; ++i) {
    const int shape = static_cast<int>(rng() % 4);
    s += static_cast<char>(shape);
    s += static_cast<char>(1 + i % 3);
    for (int k = 0; k < 3 + shape; ++k) s += static_cast<char>((k * 7 + shape) & 0x7F);
    if (rng() % 5 == 0) s += static_cast<char>(0x80 | (rng() & 0x7F));
  }
  return s;
}

}  // namespace

TEST(EntropyCoder, RoundTripsAnyBytes) {
  std::mt19937_64 rng(7);
  EXPECT_EQ(entropy::decode(entropy::encode(""), 0), "");
  for (const std::size_t n : {1u, 2u, 7u, 255u, 4096u, 20000u}) {
    for (const int alphabet : {1, 2, 16, 256}) {
      const std::string data = random_bytes(rng, n, alphabet);
      EXPECT_EQ(entropy::decode(entropy::encode(data), n), data) << n << " bytes over " << alphabet;
    }
  }
  const std::string records = record_like(rng, 3000);
  EXPECT_EQ(entropy::decode(entropy::encode(records), records.size()), records);
}

TEST(EntropyCoder, IsDeterministicAndCompactOnRepetitiveBytes) {
  std::mt19937_64 rng(11);
  const std::string records = record_like(rng, 3000);
  const std::string coded = entropy::encode(records);
  EXPECT_EQ(coded, entropy::encode(records));
  EXPECT_LT(coded.size() * 3, records.size()) << coded.size() << " of " << records.size();
  const std::string zeros(30000, '\0');
  EXPECT_LT(entropy::encode(zeros).size(), 100u);
  // Random bytes cost at most a little more than themselves.
  const std::string noise = random_bytes(rng, 20000, 256);
  EXPECT_LT(entropy::encode(noise).size(), noise.size() + noise.size() / 20);
}

TEST(EntropyCoder, CostPerByteAddsUpToTheCodedSize) {
  std::mt19937_64 rng(3);
  const std::string records = record_like(rng, 2000);
  std::vector<double> bits;
  const std::string coded = entropy::encode(records, {}, &bits);
  ASSERT_EQ(bits.size(), records.size());
  double total = 0;
  for (const double b : bits) total += b;
  EXPECT_NEAR(total / 8, static_cast<double>(coded.size()), 16.0);
}

TEST(EntropyCoder, MalformedStreamsAreErrors) {
  std::mt19937_64 rng(5);
  const std::string data = record_like(rng, 500);
  const std::string coded = entropy::encode(data);
  // A declared size above the bound: refused before decoding.
  try {
    (void)entropy::decode(coded, data.size() - 1);
    FAIL() << "accepted a size above the bound";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("declares"), std::string::npos) << e.what();
  }
  for (std::size_t k = 0; k < coded.size(); ++k)
    EXPECT_THROW((void)entropy::decode(coded.substr(0, k), data.size()), FormatError) << "cut at " << k;
  EXPECT_THROW((void)entropy::decode(coded + "x", data.size()), FormatError);
  // Flipped bytes decode to other bytes or fail; never a crash (callers check a CRC first).
  for (int i = 0; i < 200; ++i) {
    std::string bad = coded;
    bad[1 + rng() % (bad.size() - 1)] ^= static_cast<char>(1 + rng() % 255);
    try {
      (void)entropy::decode(bad, data.size());
    } catch (const FormatError&) {
    }
  }
}

TEST(EntropyCoder, APrimerLikeTheDataMakesItCheaperAndMustBeGivenToDecode) {
  std::mt19937_64 rng(13);
  const std::string records = record_like(rng, 300);
  const std::string primer = records.substr(0, 200) + record_like(rng, 100);
  const std::string plain = entropy::encode(records);
  const std::string primed = entropy::encode(records, primer);
  EXPECT_LT(primed.size() + 50, plain.size()) << primed.size() << " vs " << plain.size();
  EXPECT_EQ(entropy::decode(primed, records.size(), primer), records);
  // Decoded with another primer, the same stream gives other bytes or an error: never the data.
  try {
    EXPECT_NE(entropy::decode(primed, records.size(), "other text"), records);
  } catch (const FormatError&) {
  }
}
