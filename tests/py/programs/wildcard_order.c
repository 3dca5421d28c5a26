/* wildcard_order: the thesis' Fig. 4.6 pattern with timing deciding the match. Rank 1 receives
 * from MPI_ANY_SOURCE, then from rank 0; ranks 0 and 2 send to rank 1, rank 0 a second later.
 * The run completes (the wildcard matches rank 2), but the trace does not say so: matched with
 * rank 0 (the first sender in rank order), Recv(0) has no sender left. Benchmark generation
 * must report this, not emit a program that can hang. */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int rank, size, buf[4] = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 3) {
    if (rank == 1) {
      usleep(200000);
      MPI_Recv(buf, 4, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(buf, 4, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 0) {
      sleep(1);
      MPI_Send(buf, 4, MPI_INT, 1, 7, MPI_COMM_WORLD);
    } else {
      MPI_Send(buf, 4, MPI_INT, 1, 7, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
