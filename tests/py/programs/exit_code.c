/* Rank 1 calls exit(5) without MPI_Finalize while the other ranks go on (to a barrier rank 1
 * never reaches): the collector must leave the exit status to the program (issue 32). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int rank, size, x = 1, y = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 1) exit(5);
  for (int i = 0; i < 30; ++i) { usleep(100000); }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
