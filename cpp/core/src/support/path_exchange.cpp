// Atomic exchange of two paths (see path_exchange.hpp).
#include "scalatrace/support/path_exchange.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

#ifndef RENAME_EXCHANGE
constexpr unsigned kRenameExchange = 1u << 1;  // linux/fs.h
#else
constexpr unsigned kRenameExchange = RENAME_EXCHANGE;
#endif

/// fsync of the directory holding `path` (best effort: the exchange itself already happened).
void sync_parent(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

bool exchange_paths(const std::string& a, const std::string& b) {
#ifdef SYS_renameat2
  // Through syscall(): glibc before 2.28 has no renameat2 wrapper.
  if (::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), kRenameExchange) == 0) {
    sync_parent(a);
    sync_parent(b);
    return true;
  }
  const int err = errno;
  // Not supported here, or not possible between these two (another file system, a mount point).
  if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == EXDEV || err == EBUSY) return false;
  throw Error("cannot exchange " + a + " and " + b + ": " + std::strerror(err));
#else
  (void)a;
  (void)b;
  return false;
#endif
}

}  // namespace scalatrace
