#pragma once
#include <string>

namespace scalatrace::replay {

/// Writes a 2-rank trace in which rank 0 receives (tag 77, from rank 1) a message that rank 1
/// never sends: a replay of it cannot proceed, which is what the watchdog must report.
/// Built with the real IntraCompressor and merge, written with write_trace_file.
void write_broken_trace(const std::string& path);

}  // namespace scalatrace::replay
