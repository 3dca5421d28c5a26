#pragma once
// Reading and writing whole files safely; writing an output file without ever damaging what is at its path (traces, raw
// streams).
//
// The data goes to a new temporary file in the target's directory, created with
// O_CREAT|O_EXCL|O_NOFOLLOW under an unpredictable name (so a planted file or symlink is never
// written through); every write is checked; commit() fsyncs the data, checks that the target is
// absent or a regular file (a device node, FIFO, directory or symlink at the target is refused,
// never replaced) and renames the temporary file over it; a replaced file's permission bits are
// kept (a 0600 trace stays 0600). Any failure throws Error naming the
// path and the system's reason (strerror) and removes the temporary file.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace scalatrace {

class SafeFileWriter {
 public:
  /// Checks the target (absent or a regular file) and creates the temporary file next to it.
  explicit SafeFileWriter(std::string target);
  /// Removes the temporary file unless commit() succeeded.
  ~SafeFileWriter();
  SafeFileWriter(const SafeFileWriter&) = delete;
  SafeFileWriter& operator=(const SafeFileWriter&) = delete;

  /// Writes all bytes (retrying short writes); throws Error (e.g. "No space left on device").
  void write(std::string_view bytes);
  /// Keeps the permission bits of a regular file at the target, fsync, close, rename over the
  /// target, fsync the directory. Throws Error on failure.
  void commit();
  /// Closes and removes the temporary file (idempotent, never throws).
  void abandon() noexcept;

  bool is_open() const { return fd_ >= 0; }
  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }
  /// Bytes written so far.
  std::uint64_t written() const { return written_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);

  std::string target_;
  std::string temp_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
};

/// Throws Error if `path` exists and is not a regular file (what it is, and that it is left
/// alone); returns normally if it is absent or a regular file.
void require_replaceable(const std::string& path);

/// Writes `bytes` to `path` through a SafeFileWriter.
void write_file_safely(const std::string& path, std::string_view bytes);

/// Reads a whole regular file. Throws Error naming the path and the reason ("No such file or
/// directory", "Permission denied", "is a FIFO: not a regular file"); `what` names the kind of
/// file in the message ("trace file", "raw stream"). Never blocks on a FIFO or device.
/// `check_start`, if given, is called with the file's first `start_bytes` bytes (fewer if the
/// file is shorter) before the rest is read: it throws to refuse a file of the wrong kind after
/// reading only its first bytes (a multi-gigabyte file that is not a trace costs nothing).
std::string read_regular_file(const std::string& path, const char* what,
                              const std::function<void(std::string_view)>& check_start = {},
                              std::size_t start_bytes = 0);

}  // namespace scalatrace
