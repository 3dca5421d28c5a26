/* mpi_span: a PMPI shim (LD_PRELOAD) that measures a program's span from the return of
 * MPI_Init to the entry of MPI_Finalize, the same way for any MPI program: at MPI_Finalize every
 * rank's span is reduced to the slowest and rank 0 prints "mpi_span <seconds>" on stderr.
 * benchmarks/conceptual_acceptance.py --timing compiles it with mpicc -shared -fPIC. */
#include <mpi.h>
#include <stdio.h>

static double span_start;

int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  span_start = PMPI_Wtime();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  span_start = PMPI_Wtime();
  return rc;
}

int MPI_Finalize(void) {
  const double mine = PMPI_Wtime() - span_start;
  double slowest = 0;
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) fprintf(stderr, "mpi_span %.6f\n", slowest);
  return PMPI_Finalize();
}
