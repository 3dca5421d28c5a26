#pragma once
// Test support: the message of the scalatrace::Error an action throws.
#include <functional>
#include <string>

#include "scalatrace/support/errors.hpp"

namespace scalatrace::test_support {

/// Runs `f` and returns the what() of the scalatrace::Error it throws, or "" if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace scalatrace::test_support
