/* first_touch: what the first write to fresh memory costs on this machine, the way the
 * simulator's engine takes its memory (BENCHMARKS.md 10o). Allocates MEGABYTES in one block
 * aligned to 2 MB, advised to use huge pages when HUGE is 1 (support/huge_pages.hpp does the
 * same), writes one byte per 4 KB page, frees the block; ROUNDS times in one process, printing
 * each round's thread CPU time and wall time. On a virtual machine the first round may also pay
 * the host's backing of guest memory that was handed back to it (free page reporting), which
 * the later rounds, reusing the pages the previous round freed, do not.
 * Build: cc -O2 benchmarks/first_touch.c -o first_touch
 * Usage: first_touch MEGABYTES HUGE(0|1) [ROUNDS (default 5)] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double ms_of(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MEGABYTES HUGE(0|1) [ROUNDS]\n", argv[0]);
    return 2;
  }
  const size_t bytes = (size_t)atol(argv[1]) << 20;
  const int huge = atoi(argv[2]);
  const int rounds = argc > 3 ? atoi(argv[3]) : 5;
  const size_t align = (size_t)2 << 20;
  for (int round = 1; round <= rounds; ++round) {
    char* block = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (block == NULL) {
      fprintf(stderr, "out of memory\n");
      return 1;
    }
    if (huge) madvise(block, bytes, MADV_HUGEPAGE);
    const double cpu = ms_of(CLOCK_THREAD_CPUTIME_ID), wall = ms_of(CLOCK_MONOTONIC);
    for (size_t i = 0; i < bytes; i += 4096) block[i] = 1;
    printf("round %d: %zu MB, huge pages %s: cpu %.1f ms, wall %.1f ms\n", round, bytes >> 20,
           huge ? "advised" : "not advised", ms_of(CLOCK_THREAD_CPUTIME_ID) - cpu, ms_of(CLOCK_MONOTONIC) - wall);
    free(block);
  }
  return 0;
}
