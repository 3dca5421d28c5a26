#pragma once
// Raw mode (ground truth): one uncompressed event stream per rank, format in docs/format.md
// ("Raw stream"). Written by the collector with SCALATRACE_RAW=DIR as DIR/rank-<r>.straw.
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scalatrace/model/recording.hpp"
#include "scalatrace/support/safe_file.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace {

/// Streams events to a file as they come; tables are written by close(). The stream goes to a
/// temporary file next to the path (SafeFileWriter) that close() renames into place, so a
/// stream exists under its name only once it was completely written; every write is checked
/// and a failure throws Error with the system's reason (the temporary file is then removed).
class RawWriter {
 public:
  RawWriter() = default;
  ~RawWriter();
  RawWriter(const RawWriter&) = delete;
  RawWriter& operator=(const RawWriter&) = delete;
  /// Throws Error if the file cannot be created (or the path holds something that is not a
  /// regular file).
  void open(const std::string& path, std::int64_t rank, std::int64_t nranks);
  void append(const Event& e);
  void close(const std::map<std::string, std::string>& metadata, const CallSiteTable& sites, const CommTable& comms,
             const std::vector<std::string>& names);
  bool is_open() const { return file_ != nullptr; }
  /// Drops the stream (temporary file removed); nothing is left at the path.
  void abandon() noexcept { file_.reset(); }

 private:
  void flush_buffer();

  std::unique_ptr<SafeFileWriter> file_;
  wire::Writer buffer_;  ///< encoded, not yet written
  std::uint64_t events_ = 0;
  std::uint64_t hash_ = 0;  ///< running checksum of everything written so far
};

/// Reads a raw stream; throws FormatError naming the problem on bad input.
RankRecording read_raw(const std::string& path);
/// Decodes the bytes of a raw stream; `name` (the file's path) starts every error message.
RankRecording decode_raw(const std::string& data, const std::string& name);
/// Reads DIR/rank-*.straw, sorted by rank; throws if the set is incomplete.
std::vector<RankRecording> read_raw_dir(const std::string& dir);
inline std::string raw_file_name(std::int64_t rank) { return "rank-" + std::to_string(rank) + ".straw"; }

}  // namespace scalatrace
