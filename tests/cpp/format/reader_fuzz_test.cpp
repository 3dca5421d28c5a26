// A few thousand reader mutants in every `make test` (benchmarks/fuzz_reader runs 100,000+):
// every mutant is either rejected at load with a FormatError or loads and then works.
#include <gtest/gtest.h>
#include <unistd.h>

#include "reader_fuzz.hpp"

namespace scalatrace::fuzz {
namespace {

TEST(ReaderFuzz, EveryMutantIsRejectedAtLoadOrWorks) {
  const auto scratch =
      std::filesystem::temp_directory_path() / ("scalatrace_reader_fuzz_" + std::to_string(::getpid()));
  const Corpus corpus = make_corpus(scratch);
  const Tally tally = run(corpus, 4000, 20261123);
  std::filesystem::remove_all(scratch);
  EXPECT_GT(tally.semantic, 400u);  // raw streams with extreme rank counts or timings
  std::string examples;
  for (const auto& e : tally.examples) examples += "\n  " + e;
  EXPECT_EQ(tally.unclean(), 0u) << "mutants that loaded but failed later, or raised something "
                                    "other than FormatError:"
                                 << examples;
  for (int f = 0; f < 2; ++f) {
    EXPECT_EQ(tally.total(f), 2000u);
    EXPECT_GT(tally.count[f][static_cast<int>(Outcome::Rejected)], 1000u);
    for (int o = 0; o < kOutcomes; ++o)
      RecordProperty(std::string(f == 0 ? "sct_" : "straw_") + std::to_string(o), static_cast<int>(tally.count[f][o]));
  }
}

}  // namespace
}  // namespace scalatrace::fuzz
