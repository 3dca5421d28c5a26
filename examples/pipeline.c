/* pipeline: a software pipeline over the ranks (MK toolkit paper, Fig. 1): for every block,
 * rank i receives from i-1, computes, and sends to i+1; -b BLOCKS blocks per sweep, -i sweeps.
 * The first rank only sends, the last only receives, so the phase graph shows a pipeline
 * (chain depth = number of ranks - 1) rather than a synchronous phase. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "pipeline", 2, 2048);
  ex_args_option(&a, 'b', 4, "blocks per sweep");
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const long blocks = ex_opt(&a, 'b');
  const int n = (int)(a.bytes / (long)sizeof(double));
  double* block = calloc((size_t)n + 1, sizeof(double));

  for (long it = 0; it < a.iters; ++it)
    for (long b = 0; b < blocks; ++b) {
      if (rank > 0) LOG_RECV(block, n, MPI_DOUBLE, rank - 1, (int)b, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ex_compute(a.compute_us);
      block[0] += 1.0;
      if (rank < size - 1) LOG_SEND(block, n, MPI_DOUBLE, rank + 1, (int)b, MPI_COMM_WORLD);
    }

  free(block);
  LOG_FINALIZE();
  return 0;
}
