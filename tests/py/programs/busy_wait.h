/* busy_us: spin for US microseconds of wall-clock time (CLOCK_MONOTONIC), a computation whose
 * length the recorded compute time shows even on a loaded machine. Shared by the test programs
 * with known compute times (imbalance.c, critical_pipeline.c). */
#ifndef SCALATRACE_TEST_BUSY_WAIT_H
#define SCALATRACE_TEST_BUSY_WAIT_H
#include <time.h>

static void busy_us(long us) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do clock_gettime(CLOCK_MONOTONIC, &now);
  while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

#endif
