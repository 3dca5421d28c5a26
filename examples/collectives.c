/* collectives: every blocking collective scalatrace models, with the root rotating over the
 * iterations (root = iteration mod ranks) and v-variants whose counts depend on the rank:
 * Barrier, Bcast, Reduce, Allreduce, Gather, Gatherv, Scatter, Scatterv, Allgather,
 * Allgatherv, Alltoall, Reduce_scatter, Reduce_scatter_block, Scan, Exscan.
 * -s BYTES is the per-rank block size (rounded down to doubles, at least one). */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "collectives", 3, 64);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const int n = a.bytes / 8 > 0 ? (int)(a.bytes / 8) : 1;

  /* v-counts: rank r contributes (r % 3 + 1) * n doubles */
  int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = (r % 3 + 1) * n;
    displs[r] = total;
    total += counts[r];
  }
  const size_t big = (size_t)(total > size * n ? total : size * n) + 1;
  double *sbuf = calloc(big, sizeof(double)), *rbuf = calloc(big, sizeof(double));
  for (size_t k = 0; k < big; ++k) sbuf[k] = rank + 0.5 * (double)k;

  for (long it = 0; it < a.iters; ++it) {
    const int root = (int)(it % size);
    ex_compute(a.compute_us);
    LOG_BARRIER(MPI_COMM_WORLD);
    LOG_BCAST(sbuf, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    LOG_REDUCE(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    ex_compute(a.compute_us);
    LOG_ALLREDUCE(sbuf, rbuf, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    LOG_GATHER(sbuf, n, MPI_DOUBLE, rbuf, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    LOG_GATHERV(sbuf, counts[rank], MPI_DOUBLE, rbuf, counts, displs, MPI_DOUBLE, root, MPI_COMM_WORLD);
    ex_compute(a.compute_us);
    LOG_SCATTER(sbuf, n, MPI_DOUBLE, rbuf, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    LOG_SCATTERV(sbuf, counts, displs, MPI_DOUBLE, rbuf, counts[rank], MPI_DOUBLE, root, MPI_COMM_WORLD);
    LOG_ALLGATHER(sbuf, n, MPI_DOUBLE, rbuf, n, MPI_DOUBLE, MPI_COMM_WORLD);
    ex_compute(a.compute_us);
    LOG_ALLGATHERV(sbuf, counts[rank], MPI_DOUBLE, rbuf, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    LOG_ALLTOALL(sbuf, n, MPI_DOUBLE, rbuf, n, MPI_DOUBLE, MPI_COMM_WORLD);
    LOG_REDUCE_SCATTER(sbuf, rbuf, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ex_compute(a.compute_us);
    LOG_REDUCE_SCATTER_BLOCK(sbuf, rbuf, n, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    LOG_SCAN(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    LOG_EXSCAN(sbuf, rbuf, n, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
  }

  free(counts);
  free(displs);
  free(sbuf);
  free(rbuf);
  LOG_FINALIZE();
  return 0;
}
