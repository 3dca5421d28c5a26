// Reader fuzzing at scale: N mutants of valid .sct traces and .straw raw streams (see
// tests/cpp/common/reader_fuzz.hpp for the mutations and outcomes). Prints a Markdown table; exits 1
// if any mutant ended other than "rejected at load" or "accepted".
//   fuzz_reader [MUTANTS=100000] [SEED=1]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "reader_fuzz.hpp"

int main(int argc, char** argv) {
  using namespace scalatrace::fuzz;
  const std::uint64_t mutants = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const auto scratch = std::filesystem::temp_directory_path() /
                       ("scalatrace_fuzz_reader_" + std::to_string(::getpid()));
  const Corpus corpus = make_corpus(scratch);
  std::filesystem::remove_all(scratch);
  const auto t0 = std::chrono::steady_clock::now();
  const Tally tally = run(corpus, mutants, seed);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("| outcome | .sct mutants | .straw mutants |\n|---|---:|---:|\n");
  for (int o = 0; o < kOutcomes; ++o)
    std::printf("| %s | %llu | %llu |\n", outcome_name(static_cast<Outcome>(o)),
                static_cast<unsigned long long>(tally.count[0][o]),
                static_cast<unsigned long long>(tally.count[1][o]));
  std::printf("| **total** | %llu | %llu |\n\n", static_cast<unsigned long long>(tally.total(0)),
              static_cast<unsigned long long>(tally.total(1)));
  std::printf("%llu mutants (seed %llu) in %.1f s; not clean (later failure or other exception): %llu\n",
              static_cast<unsigned long long>(mutants), static_cast<unsigned long long>(seed), seconds,
              static_cast<unsigned long long>(tally.unclean()));
  for (const auto& e : tally.examples) std::printf("  - %s\n", e.c_str());
  return tally.unclean() == 0 ? 0 : 1;
}
