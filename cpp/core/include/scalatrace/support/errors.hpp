#pragma once
#include <stdexcept>
#include <string>

namespace scalatrace {

/// Base of every error the core raises.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A file that is not a valid trace / raw stream (truncated, corrupt, foreign, wrong version).
struct FormatError : Error {
  using Error::Error;
};
/// Invalid arguments / settings.
struct UsageError : Error {
  using Error::Error;
};
/// Exact events were asked of a lossy trace (SCALATRACE_LOSSY), whose histogram fields have
/// only drawn values (docs/lossy.md).
struct LossyTraceError : UsageError {
  using UsageError::UsageError;
};

}  // namespace scalatrace
