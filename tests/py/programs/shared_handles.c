/* Small Isends that complete at once: MPICH may hand out one shared request handle for all of
 * them. Rank 0 waits for them in reverse order with one Waitall, then once more one by one. */
#include <mpi.h>

int main(int argc, char **argv) {
  int rank, v[3] = {1, 2, 3}, w[3];
  MPI_Request r[3];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    for (int i = 0; i < 3; ++i) MPI_Isend(&v[i], 1, MPI_INT, 1, i, MPI_COMM_WORLD, &r[i]);
    MPI_Request rev[3] = {r[2], r[1], r[0]};
    MPI_Waitall(3, rev, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 3; ++i) MPI_Isend(&v[i], 1, MPI_INT, 1, 10 + i, MPI_COMM_WORLD, &r[i]);
    for (int i = 0; i < 3; ++i) MPI_Wait(&r[i], MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    for (int i = 0; i < 3; ++i) MPI_Recv(&w[i], 1, MPI_INT, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3; ++i) MPI_Recv(&w[i], 1, MPI_INT, 0, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
