/* slow_rank: NPB EP's pattern, a computation per step and an MPI_Allreduce that meets the ranks,
 * with one rank slower at every step: rank 0 computes US microseconds per step, the others 15 %
 * less (as when rank 0's core runs slower). Each step's difference is within 20 % of the step,
 * the band in which the merge once always united the ranks' timing, but it adds up: the run
 * takes rank 0's time.
 *
 *   slow_rank [STEPS [US]]   (defaults 40 steps, 500 us)
 */
#include <mpi.h>
#include <stdlib.h>
#include "busy_wait.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int steps = argc > 1 ? atoi(argv[1]) : 40;
  const long us = argc > 2 ? atol(argv[2]) : 500;
  const long work = rank == 0 ? us : us * 85 / 100;
  double local = rank, total = 0;
  for (int s = 0; s < steps; ++s) {
    busy_us(work);
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return total < 0;
}
