#pragma once
// Internal to the code generators: questions both back ends ask of elastic values and ranklists.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::codegen_support {

/// The one value of a sequence if every occurrence has it (empty: nullopt).
std::optional<std::int64_t> constant_of(const ValueSeq& seq);

/// The one value every rank and occurrence of an elastic value has, or nullopt.
std::optional<std::int64_t> uniform_of(const ElasticValue& value);

/// An elastic value of per-rank sequences: one alternative per distinct sequence, naming the
/// ranks that have it.
ElasticValue elastic_of(std::map<std::int64_t, ValueSeq> per_rank);

/// True if `ranks` is empty (per-rank trace: everybody) or holds every rank in [0, nranks).
bool is_everyone(const RankList& ranks, std::int64_t nranks);

/// The node's ranks, or all ranks when the node does not restrict them.
RankList ranks_of(const Node& node, std::int64_t nranks);

/// Mean compute time of an event node, rounded to ns.
std::uint64_t mean_compute_ns(const EventNode& event);

/// Integer literal text (sentinels included, as plain numbers).
std::string literal(std::int64_t v);

}  // namespace scalatrace::codegen_support
