#pragma once
// Test support: the synthetic stencil runs that several tests build (their spec, and their
// merged trace through the streaming radix-tree merge).
#include <cstdint>

#include "scalatrace/synthetic/synthetic.hpp"

namespace scalatrace::test_support {

inline SyntheticSpec synthetic_spec(SyntheticPattern pattern, std::int64_t nranks, std::int64_t timesteps,
                                    bool wrap = false) {
  SyntheticSpec spec;
  spec.pattern = pattern;
  spec.nranks = nranks;
  spec.timesteps = timesteps;
  spec.wrap = wrap;
  return spec;
}

inline Trace synthetic_merged(SyntheticPattern pattern, std::int64_t nranks, std::int64_t timesteps) {
  return synthetic_merged_trace(synthetic_spec(pattern, nranks, timesteps));
}

}  // namespace scalatrace::test_support
