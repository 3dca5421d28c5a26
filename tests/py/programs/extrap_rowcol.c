/* extrap_rowcol: row and column communicators of a 2D process grid from MPI_Dims_create
 * (rank = x + dims[0] * y): MPI_Comm_split by row (colour y, key x) and by column (colour x,
 * key y); per iteration an Allreduce along the row, a Bcast down the column from its first
 * rank and a Sendrecv with the east/west neighbours inside the row communicator (MPI_PROC_NULL
 * at the row's ends). */
#include <mpi.h>

int main(int argc, char **argv) {
  int rank, size, dims[2] = {0, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 2, dims);
  const int nx = dims[0], x = rank % nx, y = rank / nx;
  MPI_Comm row, col;
  MPI_Comm_split(MPI_COMM_WORLD, y, x, &row);
  MPI_Comm_split(MPI_COMM_WORLD, x, y, &col);
  const int east = x < nx - 1 ? x + 1 : MPI_PROC_NULL, west = x > 0 ? x - 1 : MPI_PROC_NULL;
  double a[8] = {0}, b[8], c[4] = {0}, d[4];
  for (int it = 0; it < 2; ++it) {
    MPI_Allreduce(a, b, 8, MPI_DOUBLE, MPI_SUM, row);
    MPI_Bcast(c, 4, MPI_DOUBLE, 0, col);
    MPI_Sendrecv(c, 4, MPI_DOUBLE, east, 7, d, 4, MPI_DOUBLE, west, 7, row, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&row);
  MPI_Comm_free(&col);
  MPI_Finalize();
  return 0;
}
