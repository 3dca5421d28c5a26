/* stencil1d: 1D halo exchange with neighbours at distance 1 and 2 (non-periodic).
 * Each timestep: compute, Irecv from and Isend to every existing neighbour, Waitall.
 * Reproduces the 1D stencil of the ScalaTrace paper (constant trace size over rank counts). */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "stencil1d", 4, 1024);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();

  static const int offsets[4] = {-2, -1, 1, 2};
  const int n = (int)(a.bytes / (long)sizeof(double));
  double* sendbuf = calloc(4 * (size_t)(n ? n : 1), sizeof(double));
  double* recvbuf = calloc(4 * (size_t)(n ? n : 1), sizeof(double));
  MPI_Request reqs[8];

  for (long it = 0; it < a.iters; ++it) {
    ex_compute(a.compute_us);
    int nreq = 0;
    for (int k = 0; k < 4; ++k) {
      const int peer = rank + offsets[k];
      if (peer < 0 || peer >= size) continue;
      /* the sender of this message used direction -offsets[k] */
      LOG_IRECV(recvbuf + (size_t)k * n, n, MPI_DOUBLE, peer, 10 - offsets[k], MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
    }
    for (int k = 0; k < 4; ++k) {
      const int peer = rank + offsets[k];
      if (peer < 0 || peer >= size) continue;
      sendbuf[(size_t)k * n] = (double)it;
      LOG_ISEND(sendbuf + (size_t)k * n, n, MPI_DOUBLE, peer, 10 + offsets[k], MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
    }
    LOG_WAITALL(nreq, reqs, MPI_STATUSES_IGNORE);
  }

  free(sendbuf);
  free(recvbuf);
  LOG_FINALIZE();
  return 0;
}
