#pragma once
// What one rank recorded, uncompressed: the input of the compressor and the content of a raw
// stream (format/raw.hpp, docs/format.md "Raw stream").
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scalatrace/model/callsite.hpp"
#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/event.hpp"

namespace scalatrace {

/// Everything one rank recorded.
struct RankRecording {
  std::int64_t rank = 0;
  std::int64_t nranks = 0;
  std::map<std::string, std::string> metadata;
  std::vector<Event> events;
  CallSiteTable sites;
  CommTable comms;                 ///< holders empty (the recording rank)
  std::vector<std::string> names;  ///< Op::Other names
};

}  // namespace scalatrace
