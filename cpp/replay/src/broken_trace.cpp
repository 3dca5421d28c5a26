#include "broken_trace.hpp"

#include <vector>

#include "scalatrace/compressor.hpp"
#include "scalatrace/format.hpp"
#include "scalatrace/merge.hpp"

namespace scalatrace::replay {

void write_broken_trace(const std::string& path) {
  constexpr std::int64_t kRanks = 2;
  std::vector<Trace> traces;
  for (std::int64_t rank = 0; rank < kRanks; ++rank) {
    CallSiteTable sites;
    std::uint32_t module = sites.intern_module("scalatrace-replay(selftest)");
    auto site = [&](std::uint64_t offset, const char* symbol) {
      std::uint32_t id = sites.intern({Frame{module, offset}});
      sites.sites[id].symbol = symbol;
      return id;
    };
    CommTable comms;
    comms.entries.push_back({0, RankList::range(0, kRanks), {}});
    comms.entries.push_back({1, RankList::single(rank), {}});

    std::vector<Event> events;
    Event init;
    init.op = Op::Init;
    init.site = site(0x10, "main");
    events.push_back(init);
    Event barrier;
    barrier.op = Op::Barrier;
    barrier.site = site(0x20, "main");
    barrier.compute_ns = 1000;
    events.push_back(barrier);
    if (rank == 0) {
      Event recv;
      recv.op = Op::Recv;
      recv.site = site(0x30, "selftest_receive_without_send");
      recv[Field::Peer] = 1;  // relative: world rank 1
      recv[Field::Tag] = 77;
      recv[Field::Bytes] = 64;
      recv[Field::DtSize] = 1;
      recv.compute_ns = 1000;
      events.push_back(recv);
    }
    Event fin;
    fin.op = Op::Finalize;
    fin.site = site(0x40, "main");
    events.push_back(fin);

    IntraCompressor compressor;
    compressor.set_sites(&sites);
    for (const Event& e : events) compressor.push(e);
    traces.push_back(make_rank_trace(rank, kRanks, compressor.finish(), std::move(sites),
                                     std::move(comms), {}));
  }
  Trace trace = merge_tree(std::move(traces));
  trace.metadata["program"] = "scalatrace-replay --selftest-write-broken";
  write_trace_file(trace, path);
}

}  // namespace scalatrace::replay
