#pragma once
// Blocks of memory that ask the kernel for huge pages: what holds one entry per rank (the
// simulator's rank states, the cursors' walk states) spans hundreds of megabytes at 65,536
// ranks, touched in no useful order. With 4 KB pages nearly every access to another rank also
// misses the TLB, and each page is faulted in on its own.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace scalatrace {

/// At least `bytes` (`align` a power of two), freed with std::free. A block of a huge page or
/// more is aligned to huge pages and advised to use them (a hint: without them it works the
/// same). Throws std::bad_alloc.
inline void* allocate_huge_page_block(std::size_t bytes, std::size_t align) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  align = bytes >= kHugePage ? kHugePage : std::max(align, alignof(std::max_align_t));
  bytes = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
  void* data = std::aligned_alloc(align, bytes);
  if (data == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (align == kHugePage) madvise(data, bytes, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  return data;
}

}  // namespace scalatrace

namespace scalatrace {

/// A std::allocator that takes blocks of a huge page or more from allocate_huge_page_block:
/// for the vectors with one entry per rank that a pass walks end to end (the simulator's
/// gathered collectives: 16 MB of steps at 65,536 ranks).
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_huge_page_block(n * sizeof(T), alignof(T))); }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

/// A vector with HugePageAllocator.
template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace scalatrace
