/* Messages beyond the range of an int count, to MPI_PROC_NULL (MPI transfers nothing, so the
 * buffers stay small): a 3 GiB MPI_Send_c of bytes, a 4 GiB MPI_Send of 2^30 ints, a 3 GiB
 * MPI_Recv_c, then one small real message between ranks 0 and 1 so the run has traffic too. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char small[64] = {0};
  const MPI_Count three_gib = (MPI_Count)3 << 30;
  MPI_Send_c(small, three_gib, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
  MPI_Send(small, 1 << 30, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD);
  MPI_Recv_c(small, three_gib, MPI_BYTE, MPI_PROC_NULL, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (size >= 2 && rank < 2)
    MPI_Sendrecv(small, 10, MPI_BYTE, 1 - rank, 4, small + 32, 10, MPI_BYTE, 1 - rank, 4,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("proc_null_large done\n");
  MPI_Finalize();
  return 0;
}
