/* extrap_butterfly: stage loops as in NPB CG's reductions, on P = 2^n ranks: a hand-written
 * recursive-doubling exchange (n stages, stage k with the rank whose bit k differs, tag k + 1,
 * 8*floor(4096/P) bytes), then the same exchange from the highest bit down with MPI_Sendrecv
 * (bit n-1-k at iteration k, tag 100 + n-1-k), then an Allreduce; three times. The trip count
 * n = log2 P and the partner change with the size, so event counts differ at every size. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int stages = 0;
  while ((2 << stages) <= size) ++stages; /* log2 P */
  const int n = 4096 / size;
  double *out = calloc((size_t)n, sizeof(double)), *in = calloc((size_t)n, sizeof(double));
  double sum = 1.0;
  for (int it = 0; it < 3; ++it) {
    for (int k = 0; k < stages; ++k) {
      const int partner = rank ^ (1 << k);
      MPI_Request req;
      MPI_Irecv(in, n, MPI_DOUBLE, partner, k + 1, MPI_COMM_WORLD, &req);
      MPI_Send(out, n, MPI_DOUBLE, partner, k + 1, MPI_COMM_WORLD);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    for (int k = stages - 1; k >= 0; --k) {
      const int partner = rank ^ (1 << k);
      MPI_Sendrecv(out, 1, MPI_DOUBLE, partner, 100 + k, in, 1, MPI_DOUBLE, partner, 100 + k, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    }
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
