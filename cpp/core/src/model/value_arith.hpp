#pragma once
// Internal to the core: wrap-around arithmetic on value-sequence values. Values are opaque
// 64-bit integers; a run's i-th value is first + i * stride modulo 2^64 (no overflow UB).
#include <cstdint>

#include "scalatrace/model/value_seq.hpp"

namespace scalatrace::value_arith {

inline std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_mul(std::int64_t a, std::uint64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * b);
}
/// Value i of run r.
inline std::int64_t run_value(const ValueRun& r, std::uint64_t i) { return wrap_add(r.first, wrap_mul(r.stride, i)); }

}  // namespace scalatrace::value_arith
