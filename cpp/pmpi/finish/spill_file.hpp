#pragma once
// A rank's spill file: when the compressor's queue exceeds SCALATRACE_MEMORY, the queue so far
// is encoded as a rank segment (format.hpp, encode_rank_segment) and appended here instead of
// staying in memory; at the end rank 0 copies every rank's segments after the merged trace.
// The file is created in SCALATRACE_SPILL_DIR under an unpredictable name, unlinked at once
// (it disappears with the process, even after a crash) and read back through its descriptor.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace scalatrace::pmpi {

class SpillFile {
 public:
  /// Nothing is created until the first append.
  SpillFile(std::string directory, int rank);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  /// Appends one segment. False if it could not be written completely (the reason is in
  /// error()); the file then stays as it was before the call.
  bool append(std::string_view segment);
  /// Segment i's bytes; throws std::runtime_error (with the system's reason) if unreadable.
  std::string read(std::size_t i) const;

  std::size_t segments() const { return sizes_.size(); }
  std::uint64_t bytes() const { return end_; }
  const std::string& error() const { return error_; }

 private:
  bool open();
  std::string directory_;
  int rank_;
  int fd_ = -1;
  std::uint64_t end_ = 0;
  std::vector<std::uint64_t> offsets_, sizes_;
  std::string error_;
};

}  // namespace scalatrace::pmpi
