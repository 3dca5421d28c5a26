#pragma once
// A cache-line prefetch the optimiser keeps. GCC 12 drops some __builtin_prefetch calls in the
// simulator's inlined hot loop (found by counting prefetch instructions in its object file), so
// on x86-64 the instruction is written out; elsewhere the builtin stands in.

namespace scalatrace {

inline void prefetch_line(const void* address) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address);
#endif
}

}  // namespace scalatrace
