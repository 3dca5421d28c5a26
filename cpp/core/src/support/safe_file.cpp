// Safe output files: unique temporary file, checked writes, fsync, rename (see safe_file.hpp).
#include "scalatrace/support/safe_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

constexpr int kNameAttempts = 100;

std::string random_suffix() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[8] = {};
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    // No entropy source: the name is still unique thanks to O_EXCL, only guessable.
    const auto mix = static_cast<std::uint64_t>(getpid()) * 0x9e3779b97f4a7c15ull ^
                     static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&bytes));
    std::memcpy(bytes, &mix, sizeof bytes);
  }
  std::string out;
  for (unsigned char b : bytes) out.push_back(kAlphabet[b % (sizeof kAlphabet - 1)]);
  return out;
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string sys_error(int err) { return std::strerror(err); }

}  // namespace

void require_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw Error(path + ": cannot check the output path: " + sys_error(errno));
  }
  if (!S_ISREG(st.st_mode))
    throw Error(path + " is " + kind_of(st.st_mode) + "; refusing to replace it (choose a regular file path)");
}

SafeFileWriter::SafeFileWriter(std::string target) : target_(std::move(target)) {
  if (target_.empty()) throw Error("empty output path");
  require_replaceable(target_);
  namespace fs = std::filesystem;
  const fs::path t(target_);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  const std::string stem = "." + t.filename().string() + ".";
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    temp_ = (dir / (stem + random_suffix() + ".tmp")).string();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno != EEXIST) {
      const int err = errno;
      temp_.clear();
      throw Error(target_ + ": cannot create a file in " + dir.string() + ": " + sys_error(err));
    }
  }
  temp_.clear();
  throw Error(target_ + ": cannot find an unused temporary file name in " + dir.string());
}

SafeFileWriter::~SafeFileWriter() { abandon(); }

void SafeFileWriter::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

void SafeFileWriter::fail(const std::string& what, int err) {
  abandon();
  throw Error(target_ + ": " + what + ": " + sys_error(err) + " (nothing written)");
}

void SafeFileWriter::write(std::string_view bytes) {
  if (fd_ < 0) throw Error(target_ + ": write after the file was closed");
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing failed after " + std::to_string(written_) + " bytes", errno);
    }
    if (n == 0) fail("writing failed after " + std::to_string(written_) + " bytes", EIO);
    p += n;
    left -= static_cast<std::size_t>(n);
    written_ += static_cast<std::uint64_t>(n);
  }
}

void SafeFileWriter::commit() {
  if (fd_ < 0) throw Error(target_ + ": commit after the file was closed");
  // Replacing a regular file keeps its permission bits (a private 0600 trace stays private).
  struct stat old {};
  if (::lstat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode) && ::fchmod(fd_, old.st_mode & 07777) != 0)
    fail("keeping the permissions of the file it replaces failed", errno);
  if (::fsync(fd_) != 0) fail("flushing to disk (fsync) failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing failed", errno);
  try {
    require_replaceable(target_);  // again: the path may have changed meanwhile
  } catch (...) {
    abandon();
    throw;
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("renaming " + temp_ + " failed", errno);
  temp_.clear();
  // Make the rename itself durable (best effort: some file systems refuse fsync on a directory).
  const std::filesystem::path t(target_);
  const std::string dir = t.has_parent_path() ? t.parent_path().string() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_regular_file(const std::string& path, const char* what,
                              const std::function<void(std::string_view)>& check_start, std::size_t start_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open " + what + ": " + sys_error(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (st.st_mode == 0) throw Error(path + ": cannot open " + what + ": " + sys_error(errno));
    throw Error(path + " is " + kind_of(st.st_mode) + ", not a " + what);
  }
  std::string data;
  std::size_t have = 0;
  // Reads until `data` is full or the file ends; false at the end of the file.
  const auto fill = [&]() {
    while (have < data.size()) {
      const ssize_t n = ::read(fd, data.data() + have, data.size() - have);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(path + ": reading the " + what + " failed: " + sys_error(errno));
      if (n == 0) return false;
      have += static_cast<std::size_t>(n);
    }
    return true;
  };
  if (check_start) {
    data.resize(start_bytes);
    const bool more = fill();
    check_start(std::string_view(data.data(), have));
    if (!more) {
      data.resize(have);
      return data;
    }
  }
  data.resize(std::max(have, static_cast<std::size_t>(st.st_size)));
  for (;;) {
    if (have == data.size()) data.resize(have + 65536);  // the file grew meanwhile
    if (!fill()) break;
  }
  data.resize(have);
  return data;
}

void write_file_safely(const std::string& path, std::string_view bytes) {
  SafeFileWriter out(path);
  out.write(bytes);
  out.commit();
}

}  // namespace scalatrace
