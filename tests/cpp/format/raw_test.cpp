#include "scalatrace/format/raw.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

namespace fs = std::filesystem;

class RawTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Tests write many small files: prefer a memory file system.
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    dir_ = base / ("scalatrace_raw_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

RankRecording sample(std::int64_t rank, std::int64_t nranks, int events) {
  RankRecording rec;
  rec.rank = rank;
  rec.nranks = nranks;
  rec.metadata = {{"program", "/bin/x"}, {"host", "h\nwith newline"}, {"empty", ""}};
  const auto m0 = rec.sites.intern_module("/bin/x");
  const auto m1 = rec.sites.intern_module("/lib/libc.so.6");
  rec.sites.intern({Frame{m0, 0x1234}, Frame{m1, 0xffffffffffull}});
  rec.sites.intern({Frame{m0, 7}});
  rec.sites.sites[0].symbol = "main";
  rec.sites.sites[1].location = "x.c:12";
  std::vector<std::int64_t> members;
  for (std::int64_t r = 0; r < nranks; ++r) members.push_back(r);
  rec.comms.entries.push_back(CommEntry{0, RankList::from_sequence(members), {}});
  rec.comms.entries.push_back(CommEntry{1, RankList::from_sequence({rank}), {}});
  rec.names = {"MPI_Comm_rank", "MPI_File_open"};
  std::mt19937_64 rng(static_cast<std::uint64_t>(rank) * 977 + 1);
  for (int i = 0; i < events; ++i) {
    Event e;
    e.op = static_cast<Op>(rng() % kOpCount);
    e.site = static_cast<std::uint32_t>(rng() % 2);
    for (auto& f : e.fields) {
      switch (rng() % 4) {
        case 0:
          f = 0;
          break;
        case 1:
          f = static_cast<std::int64_t>(rng() % 1000) - 500;
          break;
        case 2:
          f = kAnySource;
          break;
        default:
          f = static_cast<std::int64_t>(rng());
          break;
      }
    }
    if (e.op == Op::Other) e[Field::NameId] = static_cast<std::int64_t>(rng() % 2);
    for (auto& a : e.arrays) {
      const auto n = rng() % 4;
      for (std::uint64_t k = 0; k < n; ++k) a.push_back(static_cast<std::int64_t>(rng() % 100) - 50);
    }
    // Byte counts and datatype sizes are never negative (the reader rejects them).
    for (Field f : {Field::Bytes, Field::DtSize, Field::Bytes2, Field::DtSize2})
      if (e[f] < 0) e[f] = e[f] == INT64_MIN ? 1 : -e[f];
    for (ArrayField f : {ArrayField::SendCounts, ArrayField::RecvCounts})
      for (auto& v : e[f]) v = v < 0 ? -v : v;
    e.compute_ns = rng() % 100000;
    e.duration_ns = rng();
    rec.events.push_back(e);
  }
  return rec;
}

void write(const std::string& path, const RankRecording& rec) {
  RawWriter w;
  w.open(path, rec.rank, rec.nranks);
  EXPECT_TRUE(w.is_open());
  for (const auto& e : rec.events) w.append(e);
  w.close(rec.metadata, rec.sites, rec.comms, rec.names);
  EXPECT_FALSE(w.is_open());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void spit(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

void expect_same(const RankRecording& a, const RankRecording& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.nranks, b.nranks);
  EXPECT_EQ(a.metadata, b.metadata);
  EXPECT_EQ(a.sites.modules, b.sites.modules);
  ASSERT_EQ(a.sites.sites.size(), b.sites.sites.size());
  for (std::size_t i = 0; i < a.sites.sites.size(); ++i) {
    EXPECT_EQ(a.sites.sites[i].frames, b.sites.sites[i].frames);
    EXPECT_EQ(a.sites.sites[i].hash, b.sites.sites[i].hash);
    EXPECT_EQ(a.sites.sites[i].symbol, b.sites.sites[i].symbol);
    EXPECT_EQ(a.sites.sites[i].location, b.sites.sites[i].location);
  }
  ASSERT_EQ(a.comms.entries.size(), b.comms.entries.size());
  for (std::size_t i = 0; i < a.comms.entries.size(); ++i) {
    EXPECT_EQ(a.comms.entries[i].id, b.comms.entries[i].id);
    EXPECT_EQ(a.comms.entries[i].members.to_vector(), b.comms.entries[i].members.to_vector());
  }
  EXPECT_EQ(a.names, b.names);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_TRUE(a.events[i].same_call(b.events[i])) << describe(a.events[i]) << " vs " << describe(b.events[i]);
    EXPECT_EQ(a.events[i].compute_ns, b.events[i].compute_ns);
    EXPECT_EQ(a.events[i].duration_ns, b.events[i].duration_ns);
  }
}

TEST_F(RawTest, RoundTrip) {
  const auto rec = sample(2, 5, 3000);
  write(path("r.straw"), rec);
  expect_same(rec, read_raw(path("r.straw")));
}

TEST_F(RawTest, RoundTripAcrossBufferFlushes) {
  const auto rec = sample(0, 1, 120000);  // well over the 1 MiB write buffer
  write(path("big.straw"), rec);
  EXPECT_GT(fs::file_size(path("big.straw")), 2u << 20);
  expect_same(rec, read_raw(path("big.straw")));
}

TEST_F(RawTest, EmptyRecording) {
  RankRecording rec;
  rec.nranks = 1;
  write(path("e.straw"), rec);
  const auto back = read_raw(path("e.straw"));
  EXPECT_TRUE(back.events.empty());
  EXPECT_TRUE(back.sites.sites.empty());
}

TEST_F(RawTest, TruncationAtEveryByteIsAFormatError) {
  const auto rec = sample(1, 3, 12);
  write(path("t.straw"), rec);
  const std::string data = slurp(path("t.straw"));
  for (std::size_t n = 0; n < data.size(); ++n) {
    spit(path("cut.straw"), data.substr(0, n));
    EXPECT_THROW(read_raw(path("cut.straw")), FormatError) << "truncated to " << n << " bytes";
  }
}

TEST_F(RawTest, EveryCorruptedByteIsAFormatError) {
  const auto rec = sample(1, 3, 12);
  write(path("c.straw"), rec);
  const std::string data = slurp(path("c.straw"));
  std::mt19937 rng(11);
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::string bad = data;
    bad[i] = static_cast<char>(bad[i] ^ (1 + rng() % 255));
    spit(path("bad.straw"), bad);
    EXPECT_THROW(read_raw(path("bad.straw")), FormatError) << "byte " << i;
  }
}

std::string with_valid_checksum(std::string data) {
  data.resize(data.size() - 8);
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; ++i) data += static_cast<char>((h >> (8 * i)) & 0xff);
  return data;
}

TEST_F(RawTest, CorruptionBehindAValidChecksumIsParsedSafely) {
  // The parser itself must survive any content: each corrupted byte (checksum recomputed) is
  // either rejected with FormatError or read as some other valid recording; never a crash,
  // never another exception type, never a huge allocation.
  const auto rec = sample(1, 3, 12);
  write(path("c.straw"), rec);
  const std::string data = slurp(path("c.straw"));
  std::mt19937 rng(5);
  int rejected = 0;
  for (std::size_t i = 0; i + 8 < data.size(); ++i) {
    for (int flip : {1, 0x80, static_cast<int>(1 + rng() % 255)}) {
      std::string bad = data;
      bad[i] = static_cast<char>(bad[i] ^ flip);
      spit(path("bad.straw"), with_valid_checksum(bad));
      try {
        read_raw(path("bad.straw"));
      } catch (const FormatError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST_F(RawTest, UnfinishedStreamIsRejected) {
  {
    RawWriter w;
    w.open(path("u.straw"), 0, 1);
    w.append(Event{});
  }  // destroyed without close(): nothing appears under the name, no temporary file is left
  EXPECT_FALSE(fs::exists(path("u.straw")));
  EXPECT_TRUE(fs::is_empty(dir_));
  EXPECT_THROW(read_raw(path("u.straw")), FormatError);
}

TEST_F(RawTest, ForeignFilesAndMissingFiles) {
  spit(path("x.straw"), "hello, this is not a raw stream at all");
  EXPECT_THROW(read_raw(path("x.straw")), FormatError);
  EXPECT_THROW(read_raw(path("does-not-exist.straw")), FormatError);
  EXPECT_THROW(read_raw_dir(path("no-such-dir")), FormatError);
}

TEST_F(RawTest, HugeCountsDoNotAllocate) {
  // A well-formed header followed by an event whose array claims 2^60 elements: rejected by
  // the bounds check, not by running out of memory. The checksum is made valid on purpose.
  const auto rec = sample(0, 1, 1);
  write(path("ok.straw"), rec);
  std::string data = slurp(path("ok.straw"));
  // Rewrite: keep the header (8 magic + 4 version + rank + nranks = 14 bytes), then an event
  // with array mask 1 and length 2^60, then recompute the checksum.
  std::string bad = data.substr(0, 14);
  bad += 'E';
  bad += '\x01';  // op Init
  bad += '\x00';  // site
  bad += '\x00';  // no fields
  bad += '\x01';  // Requests present
  std::uint64_t n = std::uint64_t{1} << 60;
  while (n >= 0x80) {
    bad += static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  bad += static_cast<char>(n);
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bad) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; ++i) bad += static_cast<char>((h >> (8 * i)) & 0xff);
  spit(path("huge.straw"), bad);
  try {
    read_raw(path("huge.straw"));
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("implausible"), std::string::npos) << e.what();
  }
}

TEST_F(RawTest, RankCountTheStreamCannotJustifyIsRejected) {
  // A crafted header declaring 10^12 ranks on a 3-rank stream: refused at read (analyses would
  // allocate per rank), with the declared and the justified counts in the message.
  auto rec = sample(1, 3, 5);
  rec.nranks = 1000000000000;
  write(path("huge.straw"), rec);
  try {
    read_raw(path("huge.straw"));
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("declares 1000000000000 ranks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("name only 3"), std::string::npos) << e.what();
  }
  rec.nranks = 4;  // one rank more than MPI_COMM_WORLD lists
  write(path("four.straw"), rec);
  EXPECT_THROW(read_raw(path("four.straw")), FormatError);
  rec.nranks = 3;
  write(path("ok.straw"), rec);
  expect_same(rec, read_raw(path("ok.straw")));
  // Without communicators a stream justifies its own rank only.
  RankRecording bare;
  bare.rank = 4;
  bare.nranks = 5;
  write(path("bare.straw"), bare);
  EXPECT_EQ(read_raw(path("bare.straw")).nranks, 5);
  bare.nranks = 6;
  write(path("bare6.straw"), bare);
  EXPECT_THROW(read_raw(path("bare6.straw")), FormatError);
}

TEST_F(RawTest, DuplicateCallSitesAreRejectedAsInATrace) {
  // Found by the fuzzer: a stream listing a call site twice loaded, but the trace compressed
  // from it could be saved and not loaded back ("duplicate call site").
  auto rec = sample(0, 1, 5);
  rec.sites.sites.push_back(rec.sites.sites[0]);
  write(path("d.straw"), rec);
  try {
    read_raw(path("d.straw"));
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate call site 2"), std::string::npos) << e.what();
  }
}

TEST_F(RawTest, ExtremeTimingsRoundTripThroughTheCompressedTrace) {
  // Whatever the raw reader accepts, the trace writer saves and the trace reader loads back.
  auto rec = sample(0, 1, 200);
  rec.events[0].duration_ns = ~std::uint64_t{0};
  rec.events[1].compute_ns = ~std::uint64_t{0};
  rec.events[2].duration_ns = std::uint64_t{1} << 63;
  rec.events[3].duration_ns = 0;
  write(path("t.straw"), rec);
  const RankRecording back = read_raw(path("t.straw"));
  EXPECT_EQ(back.events[0].duration_ns, ~std::uint64_t{0});
  const Trace t = compress_recording(back);
  Trace loaded;
  ASSERT_NO_THROW(loaded = decode_trace_checked(encode_trace(t)));
  EXPECT_EQ(encode_trace(loaded), encode_trace(t));  // the same trace, bin for bin
  // The largest duration comes back as the largest time code (within 2^-7 of 2^64 - 1).
  bool largest_kept = false;
  for (const Node& n : loaded.nodes)
    if (n.event && n.event->duration.max() >= ~std::uint64_t{0} - (~std::uint64_t{0} >> 7)) largest_kept = true;
  EXPECT_TRUE(largest_kept);
}

TEST_F(RawTest, HugeForeignFileIsRefusedFromItsFirstBytes) {
  // A sparse 1 TiB file that is not a trace: refused after its first bytes (reading it whole
  // would need 1 TiB of memory), by both readers.
  const std::string big = path("big.bin");
  spit(big, "not a trace");
  std::error_code ec;
  fs::resize_file(big, std::uint64_t{1} << 40, ec);
  if (ec) GTEST_SKIP() << "cannot make a sparse 1 TiB file here: " << ec.message();
  try {
    read_raw(big);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos) << e.what();
  }
  try {
    read_trace_file(big);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos) << e.what();
  }
}

TEST_F(RawTest, DirectoryIsSortedAndMustBeComplete) {
  write(path("rank-2.straw"), sample(2, 3, 5));
  write(path("rank-0.straw"), sample(0, 3, 5));
  try {
    read_raw_dir(dir_.string());
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("rank-1.straw"), std::string::npos) << e.what();
  }
  write(path("rank-1.straw"), sample(1, 3, 5));
  const auto all = read_raw_dir(dir_.string());
  ASSERT_EQ(all.size(), 3u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].rank, static_cast<std::int64_t>(i));
  write(path("rank-3.straw"), sample(0, 4, 5));  // disagrees on nranks
  EXPECT_THROW(read_raw_dir(dir_.string()), FormatError);
}

TEST_F(RawTest, WriterErrors) {
  RawWriter w;
  EXPECT_THROW(w.open(path("no/such/dir/r.straw"), 0, 1), Error);
  EXPECT_THROW(w.append(Event{}), UsageError);
  EXPECT_EQ(raw_file_name(12), "rank-12.straw");
}

}  // namespace
}  // namespace scalatrace
