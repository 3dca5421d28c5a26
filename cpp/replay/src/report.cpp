#include "report.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace scalatrace::replay {
namespace {

constexpr std::size_t kInts = 3 * kOpCount + 4;
constexpr std::size_t kDoubles = 2;

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::vector<RankStats> gather_stats(const RankStats& mine, int rank, int nranks) {
  std::vector<std::uint64_t> ints(kInts);
  for (std::size_t i = 0; i < kOpCount; ++i) {
    ints[3 * i] = mine.ops[i].count;
    ints[3 * i + 1] = mine.ops[i].bytes;
    ints[3 * i + 2] = mine.ops[i].recv_bytes;
  }
  ints[3 * kOpCount] = mine.events;
  ints[3 * kOpCount + 1] = mine.issued;
  ints[3 * kOpCount + 2] = mine.outcome_mismatches;
  ints[3 * kOpCount + 3] = mine.contexts;
  double doubles[kDoubles] = {mine.time_s, mine.compute_s};
  std::vector<std::uint64_t> all_ints(rank == 0 ? kInts * static_cast<std::size_t>(nranks) : 1);
  std::vector<double> all_doubles(rank == 0 ? kDoubles * static_cast<std::size_t>(nranks) : 1);
  PMPI_Gather(ints.data(), static_cast<int>(kInts), MPI_UINT64_T, all_ints.data(), static_cast<int>(kInts),
              MPI_UINT64_T, 0, MPI_COMM_WORLD);
  PMPI_Gather(doubles, static_cast<int>(kDoubles), MPI_DOUBLE, all_doubles.data(), static_cast<int>(kDoubles),
              MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::vector<RankStats> out;
  if (rank != 0) return out;
  for (int r = 0; r < nranks; ++r) {
    const std::uint64_t* in = all_ints.data() + kInts * static_cast<std::size_t>(r);
    RankStats s;
    for (std::size_t i = 0; i < kOpCount; ++i) s.ops[i] = {in[3 * i], in[3 * i + 1], in[3 * i + 2]};
    s.events = in[3 * kOpCount];
    s.issued = in[3 * kOpCount + 1];
    s.outcome_mismatches = in[3 * kOpCount + 2];
    s.contexts = in[3 * kOpCount + 3];
    s.time_s = all_doubles[kDoubles * static_cast<std::size_t>(r)];
    s.compute_s = all_doubles[kDoubles * static_cast<std::size_t>(r) + 1];
    out.push_back(s);
  }
  return out;
}

std::string trace_info_json(const std::string& path, const Trace& trace) {
  std::ostringstream j;
  j << "{\"trace\": " << json_string(path) << ", \"nranks\": " << trace.nranks << ", \"nodes\": " << trace.node_count()
    << ", \"metadata\": {";
  bool first = true;
  for (const auto& [key, value] : trace.metadata) {
    j << (first ? "" : ", ") << json_string(key) << ": " << json_string(value);
    first = false;
  }
  j << "}}\n";
  return j.str();
}

std::string report_json(const Options& o, std::int64_t nranks, const std::vector<RankStats>& ranks) {
  std::ostringstream j;
  auto per_rank = [&](auto get) {
    std::string s = "[";
    for (std::size_t r = 0; r < ranks.size(); ++r) s += (r ? ", " : "") + get(ranks[r]);
    return s + "]";
  };
  double total = 0;
  for (const auto& r : ranks) total = std::max(total, r.time_s);
  j << "{\n";
  j << "  \"trace\": " << json_string(o.trace_path) << ",\n";
  j << "  \"nranks\": " << nranks << ",\n";
  j << "  \"options\": {\"compute_scale\": " << json_number(o.compute_scale)
    << ", \"size_scale\": " << json_number(o.size_scale)
    << ", \"timing\": " << json_string(std::string(timing_name(o.timing))) << ", \"seed\": " << o.seed
    << ", \"timeout\": " << json_number(o.timeout_s) << "},\n";
  j << "  \"total_time_s\": " << json_number(total) << ",\n";
  j << "  \"rank_time_s\": " << per_rank([](const RankStats& s) { return json_number(s.time_s); }) << ",\n";
  j << "  \"compute_time_s\": " << per_rank([](const RankStats& s) { return json_number(s.compute_s); }) << ",\n";
  j << "  \"events\": " << per_rank([](const RankStats& s) { return std::to_string(s.events); }) << ",\n";
  j << "  \"issued\": " << per_rank([](const RankStats& s) { return std::to_string(s.issued); }) << ",\n";
  j << "  \"outcome_mismatches\": " << per_rank([](const RankStats& s) { return std::to_string(s.outcome_mismatches); })
    << ",\n";
  j << "  \"contexts\": " << per_rank([](const RankStats& s) { return std::to_string(s.contexts); }) << ",\n";
  j << "  \"ops\": {";
  bool first = true;
  for (std::size_t i = 0; i < kOpCount; ++i) {
    bool used = false;
    for (const auto& r : ranks) used = used || r.ops[i].count > 0;
    if (!used) continue;
    j << (first ? "\n" : ",\n") << "    " << json_string(std::string(op_name(static_cast<Op>(i))))
      << ": {\"count\": " << per_rank([i](const RankStats& s) { return std::to_string(s.ops[i].count); })
      << ", \"bytes\": " << per_rank([i](const RankStats& s) { return std::to_string(s.ops[i].bytes); })
      << ", \"recv_bytes\": " << per_rank([i](const RankStats& s) { return std::to_string(s.ops[i].recv_bytes); })
      << "}";
    first = false;
  }
  j << "\n  }\n}\n";
  return j.str();
}

}  // namespace scalatrace::replay
