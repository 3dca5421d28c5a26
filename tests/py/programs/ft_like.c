/* ft_like: the communication of NPB FT in small: parameters broadcast once, then per
 * iteration a computation phase, a global transpose (MPI_Alltoall) and a checksum reduced to
 * rank 0 (MPI_Reduce). */
#include <mpi.h>
#include <stdlib.h>

static void work(long n) {
  volatile double x = 1.0;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
}

int main(int argc, char **argv) {
  int rank, size, params[3] = {64, 64, 6};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Bcast(params, 3, MPI_INT, 0, MPI_COMM_WORLD);
  const int block = 256;
  double *a = calloc((size_t)block * size, sizeof(double));
  double *b = calloc((size_t)block * size, sizeof(double));
  double checksum[2] = {0, 0}, total[2];
  for (int it = 0; it < params[2]; ++it) {
    work(200000);
    MPI_Alltoall(a, block, MPI_DOUBLE, b, block, MPI_DOUBLE, MPI_COMM_WORLD);
    work(50000);
    MPI_Reduce(checksum, total, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  }
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
