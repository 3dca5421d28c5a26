/* Never calls MPI_Finalize: the collector must still flush everything at process exit. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, size, x = 1, y = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i < 5; ++i) MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d sum %d\n", rank, y);
  return 0;
}
