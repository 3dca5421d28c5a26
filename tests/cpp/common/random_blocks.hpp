#pragma once
// Test support: the skeleton the randomized tests' program generators share: a seeded choice
// and blocks of statements made by the generator's own stmt(depth) (CRTP).
#include <cstdint>
#include <random>
#include <vector>

namespace scalatrace::test_support {

template <class Generator, class Stmt>
struct RandomBlocks {
  std::mt19937_64 rng;
  /// Uniform in [0, n).
  int pick(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
  /// 1 to max_len statements at nesting depth `depth`.
  std::vector<Stmt> block(int depth, int max_len) {
    std::vector<Stmt> out;
    const int n = 1 + pick(max_len);
    for (int i = 0; i < n; ++i) out.push_back(static_cast<Generator&>(*this).stmt(depth));
    return out;
  }
};

}  // namespace scalatrace::test_support
