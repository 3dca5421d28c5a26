#pragma once
// Grow-only message buffers: replay sends arbitrary content, so one send area and one receive
// area serve every call. Growing keeps the old blocks alive (nonblocking and persistent
// requests may still point into them) until the pool is destroyed.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

namespace scalatrace::replay {

class BufferPool {
 public:
  explicit BufferPool(unsigned char fill) : fill_(fill) {}
  /// At least `bytes` bytes of arbitrary content, valid until the pool is destroyed.
  void* get(std::size_t bytes) {
    if (bytes > capacity_ || blocks_.empty()) {
      std::size_t size = std::max<std::size_t>({bytes, 2 * capacity_, 4096});
      blocks_.push_back(std::make_unique<unsigned char[]>(size));
      std::memset(blocks_.back().get(), fill_, size);
      capacity_ = size;
    }
    return blocks_.back().get();
  }
  std::size_t capacity() const { return capacity_; }

 private:
  unsigned char fill_;
  std::size_t capacity_ = 0;
  std::vector<std::unique_ptr<unsigned char[]>> blocks_;
};

}  // namespace scalatrace::replay
