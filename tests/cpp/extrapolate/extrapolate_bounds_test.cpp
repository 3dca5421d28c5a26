// The target size is checked before any work: a target of 10^12 ranks, 2^32 ranks or huge dims
// is refused at once with a UsageError naming the limit (and how to lift it, where it can be).
#include <gtest/gtest.h>

#include <string>

#include "scalatrace/extrapolate/extrapolate.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

std::string refusal(const ExtrapolationOptions& opt) {
  try {
    extrapolate({}, opt);  // no inputs: the size check comes first
  } catch (const UsageError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("(not a UsageError) ") + e.what();
  }
  return "(no error)";
}

TEST(ExtrapolateBounds, TargetsBeyondTheFormatAreRefused) {
  ExtrapolationOptions opt;
  opt.max_ranks = INT64_MAX;  // even with the practical limit lifted
  opt.target_ranks = 1000000000000;
  EXPECT_NE(refusal(opt).find("exceeds the trace format's limit of 4294967295 ranks"), std::string::npos)
      << refusal(opt);
  opt.target_ranks = std::int64_t{1} << 32;
  EXPECT_NE(refusal(opt).find("4294967296 ranks exceeds the trace format's limit"), std::string::npos) << refusal(opt);
  opt.target_ranks = 0;
  opt.target_grid.dims = {1000000, 1000000};
  EXPECT_NE(refusal(opt).find("trace format's limit"), std::string::npos) << refusal(opt);
  opt.target_grid.dims = {INT64_MAX, INT64_MAX, 3};  // the product would overflow
  EXPECT_NE(refusal(opt).find("trace format's limit"), std::string::npos) << refusal(opt);
}

TEST(ExtrapolateBounds, TargetsBeyondMaxRanksNameTheLimitAndHowToLiftIt) {
  ExtrapolationOptions opt;
  opt.target_ranks = kDefaultMaxExtrapolationRanks + 1;
  const std::string msg = refusal(opt);
  EXPECT_NE(msg.find("exceeds max_ranks=4194304"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pass a larger max_ranks"), std::string::npos) << msg;
  opt.target_ranks = 0;
  opt.target_grid.dims = {4096, 2048};
  EXPECT_NE(refusal(opt).find("dims 4096x2048"), std::string::npos) << refusal(opt);
  // Within the limit, the inputs are checked next (here: there are none).
  opt.target_grid.dims = {64, 64};
  EXPECT_EQ(refusal(opt).find("max_ranks"), std::string::npos) << refusal(opt);
}

}  // namespace
}  // namespace scalatrace
