/* extrap_ep: NPB EP's shape: a fixed number of batches (24) split over the ranks with integer
 * division, each batch asking MPI_Comm_rank (a local call) before its computation, then the
 * same reductions at every size. */
#include <mpi.h>

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int batches = 24 / size;
  double sx = 0, sy = 0, q[10] = {0}, t[10];
  for (int b = 0; b < batches; ++b) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    volatile double v = rank + b;
    sx += v;
    sy -= v;
  }
  MPI_Allreduce(&sx, &t[0], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&sy, &t[1], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(q, t, 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
