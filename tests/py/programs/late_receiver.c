/* late_receiver: rank 0 makes one blocking MPI_Send of each size given on the command line to
 * rank 1, which posts its receive 20 ms late. An eager send returns before the receive is
 * posted, a rendezvous one waits for it. Rank 0 prints each send's time ("BYTES SECONDS" per
 * line), measured by the program itself. Ranks beyond 1 only take part in the barriers. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "busy_wait.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long largest = 1;
  for (int i = 1; i < argc; ++i)
    if (atol(argv[i]) > largest) largest = atol(argv[i]);
  char* buf = calloc((size_t)largest, 1);
  for (int i = 1; i < argc; ++i) {
    const int bytes = atoi(argv[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(buf, bytes, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
      printf("%d %.6f\n", bytes, MPI_Wtime() - t0);
      fflush(stdout);
    } else if (rank == 1) {
      busy_us(20000);
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(buf);
  MPI_Finalize();
  return 0;
}
