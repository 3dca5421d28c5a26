/* wildcard_lu: receives with MPI_ANY_SOURCE / MPI_ANY_TAG and a deterministic send side.
 * Per iteration:
 *  1. a wavefront over the ranks like NPB LU's sweeps: rank i receives from MPI_ANY_SOURCE
 *     (only i-1 sends to it), computes, sends to i+1;
 *  2. master/worker: every worker sends a result (tag = its rank) to rank 0; the master takes
 *     them in arrival order with Probe(ANY_SOURCE, ANY_TAG) followed by a Recv from the probed
 *     source and tag, then hands new work to workers 1..n-1 in order; workers receive it with
 *     Irecv(0, ANY_TAG) + Wait. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "wildcard_lu", 3, 128);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const int n = (int)a.bytes;
  char* buf = calloc((size_t)n + 1, 1);
  MPI_Status status;
  MPI_Request req;

  for (long it = 0; it < a.iters; ++it) {
    /* 1. wavefront */
    if (rank > 0) LOG_RECV(buf, n, MPI_BYTE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &status);
    ex_compute(a.compute_us);
    if (rank < size - 1) LOG_SEND(buf, n, MPI_BYTE, rank + 1, 7, MPI_COMM_WORLD);

    /* 2. master/worker */
    if (rank == 0) {
      for (int k = 1; k < size; ++k) {
        LOG_PROBE(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        const int src = status.MPI_SOURCE, tag = status.MPI_TAG;
        LOG_RECV(buf, n, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      ex_compute(a.compute_us);
      for (int w = 1; w < size; ++w) LOG_SEND(buf, n / 2, MPI_BYTE, w, 1000 + (int)it, MPI_COMM_WORLD);
    } else {
      ex_compute(a.compute_us * rank);
      LOG_SEND(buf, n, MPI_BYTE, 0, rank, MPI_COMM_WORLD);
      LOG_IRECV(buf, n / 2, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
      LOG_WAIT(&req, &status);
    }
  }

  free(buf);
  LOG_FINALIZE();
  return 0;
}
