#include "finish/spill_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace scalatrace::pmpi {

SpillFile::SpillFile(std::string directory, int rank) : directory_(std::move(directory)), rank_(rank) {}

SpillFile::~SpillFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool SpillFile::open() {
  if (fd_ >= 0) return true;
  std::string path = directory_ + "/scalatrace-spill-rank" + std::to_string(rank_) + "-XXXXXX";
  fd_ = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd_ < 0) {
    error_ = "cannot create a spill file in " + directory_ + ": " + std::strerror(errno);
    return false;
  }
  ::unlink(path.c_str());  // lives as long as the descriptor
  return true;
}

bool SpillFile::append(std::string_view segment) {
  if (!open()) return false;
  std::uint64_t done = 0;
  while (done < segment.size()) {
    const ssize_t n = ::pwrite(fd_, segment.data() + done, segment.size() - done, static_cast<off_t>(end_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = "writing the spill file in " + directory_ + ": " + (n < 0 ? std::strerror(errno) : "nothing written");
      if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) {
        // The segments before stay readable at their offsets; the tail is simply unused.
      }
      return false;
    }
    done += static_cast<std::uint64_t>(n);
  }
  offsets_.push_back(end_);
  sizes_.push_back(segment.size());
  end_ += segment.size();
  return true;
}

std::string SpillFile::read(std::size_t i) const {
  std::string out(sizes_.at(i), '\0');
  std::uint64_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offsets_[i] + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error("reading back spill segment " + std::to_string(i) + ": " +
                               (n < 0 ? std::strerror(errno) : "unexpected end of file"));
    done += static_cast<std::uint64_t>(n);
  }
  return out;
}

}  // namespace scalatrace::pmpi
