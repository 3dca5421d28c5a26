/* extrap_strong: strong scaling as in NPB IS, FT and CG, on a 1D decomposition of fixed
 * global sizes: boundary exchanges of N / P doubles with the left and right neighbours
 * (integer division, no wrap-around), an MPI_Alltoall of M / P^2 doubles per pair (FT's
 * transpose; integer division where P^2 does not divide M), an Allreduce of K / P elements
 * (IS's bucket counts) and a Bcast of floor(log2 P) + 1 integers (CG's reduction levels). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = 1000 / size, m = 4096 / (size * size), k = 12000 / size;
  int levels = 0;
  while ((2 << levels) <= size) ++levels; /* floor(log2 P) */
  double *halo = calloc((size_t)n, sizeof(double)), *in = calloc((size_t)n, sizeof(double));
  double *a = calloc((size_t)m * size, sizeof(double)), *b = calloc((size_t)m * size, sizeof(double));
  int *keys = calloc((size_t)k, sizeof(int)), *sums = calloc((size_t)k, sizeof(int));
  int info[16] = {0};
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  for (int it = 0; it < 2; ++it) {
    MPI_Sendrecv(halo, n, MPI_DOUBLE, right, 1, in, n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(halo, n, MPI_DOUBLE, left, 2, in, n, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Alltoall(a, m, MPI_DOUBLE, b, m, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Allreduce(keys, sums, k, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(info, levels + 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  free(halo);
  free(in);
  free(a);
  free(b);
  free(keys);
  free(sums);
  MPI_Finalize();
  return 0;
}
