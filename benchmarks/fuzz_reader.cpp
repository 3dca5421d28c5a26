// Reader fuzzing at scale: N mutants of valid .sct traces and .straw raw streams (see
// tests/cpp/common/reader_fuzz.hpp for the mutations and outcomes). Runs under an address-space
// limit of 1 GiB (RLIMIT_AS: an input that needs more ends as std::bad_alloc, counted) and a
// 10 s alarm per input (an input that takes longer ends the run, naming it). Prints a Markdown
// table; exits 1 if any mutant ended other than "rejected at load", "accepted" or "refused".
//   fuzz_reader [MUTANTS=100000] [SEED=1]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "reader_fuzz.hpp"

namespace {

volatile std::sig_atomic_t current_input = 0;

void on_alarm(int) {
  char text[96];
  const int n = std::snprintf(text, sizeof text, "input %ld took more than 10 s\n", static_cast<long>(current_input));
  if (n > 0) (void)!::write(2, text, static_cast<std::size_t>(n));
  ::_exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace scalatrace::fuzz;
  const std::uint64_t mutants = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  constexpr rlim_t kMemoryLimit = rlim_t{1} << 30;
  const rlimit limit{kMemoryLimit, kMemoryLimit};
  if (::setrlimit(RLIMIT_AS, &limit) != 0) std::perror("setrlimit(RLIMIT_AS)");
  std::signal(SIGALRM, on_alarm);
  const auto scratch =
      std::filesystem::temp_directory_path() / ("scalatrace_fuzz_reader_" + std::to_string(::getpid()));
  const Corpus corpus = make_corpus(scratch);
  const auto t0 = std::chrono::steady_clock::now();
  const Tally tally = run(corpus, mutants, seed, [](std::uint64_t i) {
    current_input = static_cast<std::sig_atomic_t>(i);
    ::alarm(10);
  });
  ::alarm(0);
  std::filesystem::remove_all(scratch);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("| outcome | .sct mutants | .straw mutants |\n|---|---:|---:|\n");
  for (int o = 0; o < kOutcomes; ++o)
    std::printf("| %s | %llu | %llu |\n", outcome_name(static_cast<Outcome>(o)),
                static_cast<unsigned long long>(tally.count[0][o]), static_cast<unsigned long long>(tally.count[1][o]));
  std::printf("| **total** | %llu | %llu |\n\n", static_cast<unsigned long long>(tally.total(0)),
              static_cast<unsigned long long>(tally.total(1)));
  std::printf(
      "%llu mutants (seed %llu) in %.1f s, of them %llu raw streams with extreme rank counts or "
      "timings; address space limited to 1 GiB, 10 s alarm per input; slowest input %.2f s, "
      "over 10 s: %llu, out of memory: %llu; not clean (later failure, other exception or out "
      "of memory): %llu\n",
      static_cast<unsigned long long>(mutants), static_cast<unsigned long long>(seed), seconds,
      static_cast<unsigned long long>(tally.semantic), tally.max_seconds,
      static_cast<unsigned long long>(tally.over_10s),
      static_cast<unsigned long long>(tally.count[0][5] + tally.count[1][5]),
      static_cast<unsigned long long>(tally.unclean()));
  for (const auto& e : tally.examples) std::printf("  - %s\n", e.c_str());
  return tally.unclean() == 0 && tally.over_10s == 0 ? 0 : 1;
}
