/* Bulk-synchronous loop for the noise benchmark: -s STEPS times, spin WORK_US microseconds
 * (busy wait on MPI_Wtime), then MPI_Barrier. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int steps = 100;
  double work_us = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-s")) steps = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "-w")) work_us = atof(argv[i + 1]);
  }
  for (int s = 0; s < steps; ++s) {
    const double until = MPI_Wtime() + work_us * 1e-6;
    while (MPI_Wtime() < until) {
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
