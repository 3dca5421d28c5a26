/* unaligned_collectives: every rank makes the same sequence of MPI_Allreduce calls, from
 * different loop structures (as LULESH's ranks on the faces, edges and corners of its cube do):
 * rank 0 sends a message to every other rank and reduces, 2*N times in one loop; the others
 * receive and reduce twice per iteration of a loop of N, from two call sites. The merged trace
 * keeps rank 0's Allreduce and the others' in different loop nodes, which one statement per node
 * cannot align: the generated coNCePTuaL is written per rank between the collectives.
 *
 *   unaligned_collectives [N]   (default 3) */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 3;
  double local = rank, sum = 0, in = 0;
  if (rank == 0) {
    for (int i = 0; i < 2 * n; ++i) {
      for (int peer = 1; peer < size; ++peer) MPI_Send(&local, 1, MPI_DOUBLE, peer, i % 2, MPI_COMM_WORLD);
      MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
  } else {
    for (int i = 0; i < n; ++i) {
      MPI_Recv(&in, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Recv(&in, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
