#include "selftest_traces.hpp"

#include <utility>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"

namespace scalatrace::replay {
namespace {

constexpr std::int64_t kRanks = 2;

/// One rank's events under construction, with its own call-site and communicator tables.
class RankBuilder {
 public:
  explicit RankBuilder(std::int64_t rank) : rank_(rank) {
    module_ = sites_.intern_module("scalatrace-replay(selftest)");
    comms_.entries.push_back({0, RankList::range(0, kRanks), {}});
    comms_.entries.push_back({1, RankList::single(rank), {}});
  }

  Event& add(Op op, std::uint64_t site_offset, const char* symbol) {
    std::uint32_t id = sites_.intern({Frame{module_, site_offset}});
    sites_.sites[id].symbol = symbol;
    Event e;
    e.op = op;
    e.site = id;
    e.compute_ns = 1000;
    events_.push_back(e);
    return events_.back();
  }

  Trace finish() {
    IntraCompressor compressor;
    compressor.set_sites(&sites_);
    for (const Event& e : events_) compressor.push(e);
    return make_rank_trace(rank_, kRanks, compressor.finish(), std::move(sites_), std::move(comms_), {});
  }

 private:
  std::int64_t rank_;
  std::uint32_t module_ = 0;
  CallSiteTable sites_;
  CommTable comms_;
  std::vector<Event> events_;
};

void point_to_point(Event& e, std::int64_t relative_peer, std::int64_t tag, std::int64_t bytes) {
  e[Field::Peer] = relative_peer;
  e[Field::Tag] = tag;
  e[Field::Bytes] = bytes;
  e[Field::DtSize] = 1;
}

}  // namespace

void write_broken_trace(const std::string& path) {
  std::vector<Trace> traces;
  for (std::int64_t rank = 0; rank < kRanks; ++rank) {
    RankBuilder b(rank);
    b.add(Op::Init, 0x10, "main").compute_ns = 0;
    b.add(Op::Barrier, 0x20, "main");
    if (rank == 0)  // relative peer +1: world rank 1, which never sends tag 77
      point_to_point(b.add(Op::Recv, 0x30, "selftest_receive_without_send"), 1, 77, 64);
    b.add(Op::Finalize, 0x40, "main");
    traces.push_back(b.finish());
  }
  Trace trace = merge_tree(std::move(traces));
  trace.metadata["program"] = "scalatrace-replay --selftest-write-broken";
  write_trace_file(trace, path);
}

void write_interleaved_trace(const std::string& path) {
  constexpr int kRounds = 3;
  std::vector<Trace> traces;
  for (std::int64_t rank = 0; rank < kRanks; ++rank) {
    RankBuilder b(rank);
    b.add(Op::Init_thread, 0x10, "main").compute_ns = 0;
    const std::int64_t partner = rank == 0 ? 1 : -1;  // relative to my rank
    for (int round = 0; round < kRounds; ++round) {
      for (int k = 0; k < 2; ++k) {
        const std::int64_t thread = rank == 0 ? k : 1 - k;  // rank 1 records thread 1 first
        point_to_point(b.add(Op::Irecv, 0x20, "selftest_thread_exchange"), partner, thread, 8);
        point_to_point(b.add(Op::Isend, 0x30, "selftest_thread_exchange"), partner, thread, 8);
        Event& wait = b.add(Op::Waitall, 0x40, "selftest_thread_exchange");
        wait[ArrayField::Requests] = {2, 1};  // the Irecv (2 back) and the Isend (newest)
      }
    }
    b.add(Op::Barrier, 0x50, "main");
    b.add(Op::Finalize, 0x60, "main");
    traces.push_back(b.finish());
  }
  Trace trace = merge_tree(std::move(traces));
  trace.metadata["program"] = "scalatrace-replay --selftest-write-interleaved";
  trace.metadata["mpi_threads"] = "2";
  write_trace_file(trace, path);
}

}  // namespace scalatrace::replay
