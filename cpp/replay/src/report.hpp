#pragma once
// The JSON report of a replay (written by rank 0 from every rank's statistics).
#include <string>
#include <vector>

#include "options.hpp"
#include "replayer.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace::replay {

/// Collects every rank's statistics on rank 0 (PMPI, unseen by a collector); empty elsewhere.
std::vector<RankStats> gather_stats(const RankStats& mine, int rank, int nranks);
/// --info: {"trace": ..., "nranks": N, "nodes": ..., "metadata": {...}}.
std::string trace_info_json(const std::string& path, const Trace& trace);
std::string report_json(const Options& options, std::int64_t nranks, const std::vector<RankStats>& ranks);

}  // namespace scalatrace::replay
