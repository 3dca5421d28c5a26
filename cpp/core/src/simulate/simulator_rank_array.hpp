#pragma once
// The simulator's per-rank states in one block of memory that asks the kernel for huge pages:
// at 65,536 ranks the states span hundreds of megabytes, touched in no useful order, and with
// 4 KB pages nearly every access to another rank also misses the TLB.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

#include "support/huge_pages.hpp"

namespace scalatrace::sim {

/// A fixed-capacity array of T, constructed in place one element after another.
template <class T>
class RankArray {
 public:
  explicit RankArray(std::size_t capacity)
      : data_(static_cast<T*>(allocate_huge_page_block(capacity * sizeof(T), alignof(T)))), capacity_(capacity) {}
  RankArray(const RankArray&) = delete;
  RankArray& operator=(const RankArray&) = delete;
  ~RankArray() {
    for (std::size_t i = size_; i > 0; --i) data_[i - 1].~T();
    std::free(data_);
  }

  template <class... Args>
  void emplace_back(Args&&... args) {
    if (size_ == capacity_) throw std::bad_alloc();
    new (data_ + size_) T(std::forward<Args>(args)...);
    ++size_;
  }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace scalatrace::sim
