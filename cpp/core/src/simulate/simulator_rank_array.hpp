#pragma once
// The simulator's per-rank states in one block of memory that asks the kernel for huge pages:
// at 65,536 ranks the states span hundreds of megabytes, touched in no useful order, and with
// 4 KB pages nearly every access to another rank also misses the TLB.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace scalatrace::sim {

/// A fixed-capacity array of T, constructed in place one element after another.
template <class T>
class RankArray {
 public:
  explicit RankArray(std::size_t capacity) : capacity_(capacity) {
    constexpr std::size_t kHugePage = std::size_t{2} << 20;
    std::size_t bytes = capacity * sizeof(T);
    const std::size_t align = bytes >= kHugePage ? kHugePage : std::max(alignof(T), alignof(std::max_align_t));
    bytes = (bytes + align - 1) / align * align;
    if (bytes == 0) bytes = align;
    data_ = static_cast<T*>(std::aligned_alloc(align, bytes));
    if (data_ == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == kHugePage) madvise(data_, bytes, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  }
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
