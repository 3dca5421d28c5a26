// Whole-structure validation at load (issue 10, items 3, 6, 7): UTF-8 text, negative byte
// counts, rank counts the file cannot justify, traces that only fail when walked; the
// communication matrix refuses before allocating; summary() leaves MPI_PROC_NULL out.
#include "scalatrace/format/trace_validation.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "error_text.hpp"
#include "reader_fuzz.hpp"
#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/safe_file.hpp"

namespace scalatrace {
namespace {

using test_support::error_of;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("scalatrace_validation_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

/// One merged-looking event node executed once by ranks [0, n).
Node event_node(Op op, std::int64_t n, std::int64_t bytes, std::int64_t peer) {
  Node node;
  node.ranks = RankList::range(0, n);
  node.event = std::make_unique<EventNode>();
  node.event->op = op;
  auto& f = node.event->fields;
  f[static_cast<std::size_t>(Field::Bytes)].alternatives = {{ValueSeq::constant(bytes, 1), RankList::range(0, n)}};
  if (peer != 0)
    f[static_cast<std::size_t>(Field::Peer)].alternatives = {{ValueSeq::constant(peer, 1), RankList::range(0, n)}};
  return node;
}

Trace small_trace(std::int64_t n) {
  Trace t;
  t.nranks = n;
  t.sites.intern({Frame{t.sites.intern_module("/bin/app"), 0x10}});
  t.nodes.push_back(event_node(Op::Send, n, 100, 1));
  return t;
}

TEST(Utf8, WellFormedAndIllFormed) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_EQ(to_valid_utf8("a\xff"
                          "b"),
            "a\xef\xbf\xbd"
            "b");
}

TEST(TraceValidation, WriterStoresTextAsUtf8AndReaderRejectsOtherText) {
  Trace t = small_trace(2);
  t.metadata["command_line"] = "./app caf\xe9";  // Latin-1 argument
  const std::string path = temp_path("latin1.sct");
  write_trace_file(t, path);
  EXPECT_EQ(read_trace_file(path).metadata.at("command_line"), "./app caf\xef\xbf\xbd");

  // The same file with the replacement character's bytes turned back into 0xE9 (checksum
  // repaired): a crafted file, rejected at load. Written plain, so the text is in its bytes.
  std::string bytes = encode_trace(t, false, PayloadCoding::Plain);
  const auto at = bytes.find("caf\xef\xbf\xbd");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 6, "caf\xe9\xe9\xe9");
  fuzz::repair(bytes, true);
  write_file_safely(path, bytes);
  const std::string err = error_of([&] { read_trace_file(path); });
  EXPECT_NE(err.find("metadata value is not valid UTF-8"), std::string::npos) << err;
  EXPECT_EQ(err.find(path), 0u) << err;
  EXPECT_EQ(err.find(path, 1), std::string::npos) << "path repeated: " << err;
  std::filesystem::remove(path);
}

TEST(TraceValidation, NegativeByteCountsAreRejectedAtLoad) {
  Trace t = small_trace(2);
  t.nodes.push_back(event_node(Op::Isend, 2, -5, 1));
  const std::string err = error_of([&] { decode_trace_checked(encode_trace(t)); });
  EXPECT_NE(err.find("negative Bytes"), std::string::npos) << err;

  const std::string path = temp_path("rank-0.straw");
  RawWriter w;
  w.open(path, 0, 1);
  Event e;
  e.op = Op::Send;
  e[Field::Bytes] = -4096;
  w.append(e);
  w.close({}, CallSiteTable{}, CommTable{}, {});
  const std::string raw_err = error_of([&] { read_raw(path); });
  EXPECT_NE(raw_err.find("negative Bytes -4096"), std::string::npos) << raw_err;
  std::filesystem::remove(path);
}

TEST(TraceValidation, RankCountTheFileCannotJustifyIsRejected) {
  Trace t = small_trace(4);
  t.nranks = 30000;  // a crafted header on a 4-rank trace
  const std::string err = error_of([&] { decode_trace_checked(encode_trace(t)); });
  EXPECT_NE(err.find("declares 30000 ranks"), std::string::npos) << err;
  t.nranks = 4;
  EXPECT_NO_THROW(decode_trace_checked(encode_trace(t)));
}

TEST(TraceValidation, TraceThatFailsOnlyWhenWalkedIsRejectedAtLoad) {
  // A loop of 3 trips whose body's Bytes has one value for 3 occurrences: decodes, but rank
  // 1's events run out of values. Found at load, not in the middle of events().
  Trace t;
  t.nranks = 2;
  t.sites.intern({Frame{t.sites.intern_module("/bin/app"), 0x10}});
  Node loop;
  loop.ranks = RankList::range(0, 2);
  loop.loop = std::make_unique<LoopNode>();
  loop.loop->trips.alternatives = {{ValueSeq::constant(3, 1), RankList::range(0, 2)}};
  loop.loop->body.push_back(event_node(Op::Send, 2, 8, 1));
  t.nodes.push_back(std::move(loop));
  const std::string err = error_of([&] { decode_trace_checked(encode_trace(t)); });
  EXPECT_NE(err.find("ran out of values"), std::string::npos) << err;
}

TEST(CommMatrixGuard, CollectivesOn65536RanksAreRefusedBeforeAllocating) {
  Trace t;
  t.nranks = 65536;
  t.sites.intern({Frame{t.sites.intern_module("/bin/app"), 0x10}});
  t.nodes.push_back(event_node(Op::Allreduce, t.nranks, 8, 0));
  t.nodes.push_back(event_node(Op::Send, t.nranks, 8, 1));
  EXPECT_EQ(collective_pair_bound(t, CommKind::All), 65536ull * 65535ull);
  EXPECT_EQ(collective_pair_bound(t, CommKind::PointToPoint), 0u);
  for (CommKind kind : {CommKind::All, CommKind::Collective}) {
    const std::string err = error_of([&] { comm_matrix_sparse(t, Metric::Messages, kind, std::uint64_t{8} << 30); });
    EXPECT_NE(err.find("4294901760 (sender, receiver) pairs"), std::string::npos) << err;
    EXPECT_NE(err.find("kind=\"p2p\""), std::string::npos) << err;
  }
  const CommTriplets p2p = comm_matrix_sparse(t, Metric::Messages, CommKind::PointToPoint);
  EXPECT_EQ(p2p.value.size(), 65535u);  // every rank but the last sends to its right neighbour
  const std::string dense = error_of([&] { comm_matrix(t, Metric::Messages, CommKind::PointToPoint); });
  EXPECT_NE(dense.find("does not fit the memory limit"), std::string::npos) << dense;
}

TEST(Summary, BytesToProcNullAreNotCounted) {
  Trace t = small_trace(2);
  t.nodes.push_back(event_node(Op::Send, 2, std::int64_t{3} << 30, kProcNull));
  Node mixed = event_node(Op::Isend, 2, 0, 0);
  ValueSeq peers, bytes;
  for (std::int64_t v : {1, 1, 1}) peers.append(v);
  peers.append(kProcNull);
  for (std::int64_t v : {10, 20, 30, 1000}) bytes.append(v);
  Node loop;
  loop.ranks = RankList::range(0, 2);
  loop.loop = std::make_unique<LoopNode>();
  loop.loop->trips.alternatives = {{ValueSeq::constant(4, 1), RankList::range(0, 2)}};
  mixed.event->fields[static_cast<std::size_t>(Field::Peer)].alternatives = {{peers, RankList::range(0, 2)}};
  mixed.event->fields[static_cast<std::size_t>(Field::Bytes)].alternatives = {{bytes, RankList::range(0, 2)}};
  loop.loop->body.push_back(std::move(mixed));
  t.nodes.push_back(std::move(loop));
  const Summary s = summary(t);
  for (const auto& row : s.by_op) {
    if (row.op == Op::Send) {
      EXPECT_EQ(row.calls, 4u);
      EXPECT_EQ(row.bytes, 2 * 100.0);  // the 3 GiB to MPI_PROC_NULL moved nothing
    }
    if (row.op == Op::Isend) {
      EXPECT_EQ(row.calls, 8u);
      EXPECT_EQ(row.bytes, 2 * 60.0);
    }
  }
  EXPECT_EQ(s.total_bytes, 2 * 100.0 + 2 * 60.0);
}

}  // namespace
}  // namespace scalatrace
