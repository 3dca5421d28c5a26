#pragma once
// A vector of trivially copyable values that keeps its first N elements inside the object
// (the simulator's per-rank queues and pools, a cursor's walk stack): a rank's state then lies
// in one contiguous block, so resuming one of 65,536 ranks touches neighbouring cache lines
// instead of chasing a heap pointer per container. Past N elements it moves to the heap like
// std::vector.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

namespace scalatrace {

template <class T, std::uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "elements are moved with memcpy");

 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  /// Where element i is while the elements are inline (i < N), computed without reading the
  /// object: an address to prefetch before the object itself is in the cache (nullptr past N).
  const void* inline_address(std::size_t i) const { return i < N ? inline_ + i * sizeof(T) : nullptr; }

  void push_back(const T& value) {
    if (size_ == capacity_) grow();
    std::memcpy(static_cast<void*>(data() + size_), &value, sizeof(T));
    ++size_;
  }
  T& emplace_back() {
    push_back(T{});
    return back();
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  /// Keeps the first n elements (n <= size()).
  void truncate(std::size_t n) { size_ = static_cast<std::uint32_t>(n); }
  /// Removes [first, last), keeping the order of the rest.
  void erase(T* first, T* last) {
    std::memmove(static_cast<void*>(first), last, static_cast<std::size_t>(end() - last) * sizeof(T));
    size_ -= static_cast<std::uint32_t>(last - first);
  }
  /// Removes one element, keeping the order of the rest (the last one: no move at all, the
  /// usual case of a receive queue holding one entry).
  void erase(T* pos) {
    if (pos + 1 == end()) {
      --size_;
      return;
    }
    erase(pos, pos + 1);
  }

 private:
  /// The elements: inline_ or a heap block (one load per access, no test of which).
  T* data_ = inline_data();
  std::uint32_t size_ = 0, capacity_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];

  T* inline_data() { return reinterpret_cast<T*>(inline_); }
  bool is_inline() const { return data_ == reinterpret_cast<const T*>(inline_); }
  T* data() { return data_; }
  const T* data() const { return data_; }

  [[gnu::noinline]] void grow() {
    const std::uint32_t capacity = capacity_ * 2;
    auto* bigger = static_cast<T*>(std::malloc(std::size_t{capacity} * sizeof(T)));
    if (bigger == nullptr) throw std::bad_alloc();
    std::memcpy(static_cast<void*>(bigger), data_, std::size_t{size_} * sizeof(T));
    if (!is_inline()) std::free(data_);
    data_ = bigger;
    capacity_ = capacity;
  }
  void release() {
    if (!is_inline()) std::free(data_);
    data_ = inline_data();
    size_ = 0;
    capacity_ = N;
  }
  void take(SmallVector& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.is_inline()) {
      data_ = inline_data();
      std::memcpy(inline_, other.inline_, std::size_t{size_} * sizeof(T));
    } else {
      data_ = other.data_;
    }
    other.data_ = other.inline_data();
    other.size_ = 0;
    other.capacity_ = N;
  }
};

}  // namespace scalatrace
