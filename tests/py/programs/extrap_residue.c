/* extrap_residue: a single call whose size the fewest-term law gets wrong. The last rank r of P
 * sends rank 0 a message of r % 3 + r bytes (a block of r bytes plus a remainder by 3); rank 0
 * receives it into a 64-byte buffer; then an MPI_Barrier. At 2, 5, 8 ranks the last rank is
 * r = 1, 4, 7, whose r % 3 is 1 every time: its 2, 5, 8 bytes are P as well as (r%3) + r, and at
 * 9 ranks they differ (9 and 10). At 3, 4, 5 ranks only (r%3) + r fits. */
#include <mpi.h>

int main(int argc, char **argv) {
  int rank, size;
  char buf[64] = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1 && rank == size - 1) MPI_Send(buf, rank % 3 + rank, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
  if (size > 1 && rank == 0) MPI_Recv(buf, 64, MPI_BYTE, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
