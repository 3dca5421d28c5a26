/* stencil2d: 9-point stencil on a 2D process grid (MPI_Dims_create, row-major ranks,
 * non-periodic). Each timestep: compute, Irecv/Isend with up to 8 neighbours (edges carry
 * -s BYTES, corners BYTES/8), Waitall; an Allreduce (residual) every -k K timesteps.
 * Reproduces the 2D stencil of the ScalaTrace paper (trace size constant in the rank count). */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "stencil2d", 4, 1024);
  ex_args_option(&a, 'k', 2, "Allreduce every K timesteps");
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const long every = ex_opt(&a, 'k') > 0 ? ex_opt(&a, 'k') : 1;

  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  const int row = rank / dims[1], col = rank % dims[1];

  const int edge = (int)(a.bytes / (long)sizeof(double));
  const int corner = edge / 8 > 0 ? edge / 8 : 1;
  double* sendbuf = calloc(9 * (size_t)(edge + 1), sizeof(double));
  double* recvbuf = calloc(9 * (size_t)(edge + 1), sizeof(double));
  MPI_Request reqs[16];
  double residual = 1.0, global = 0.0;

  for (long it = 0; it < a.iters; ++it) {
    ex_compute(a.compute_us);
    int nreq = 0;
    for (int dr = -1; dr <= 1; ++dr)
      for (int dc = -1; dc <= 1; ++dc) {
        if (!dr && !dc) continue;
        const int r = row + dr, c = col + dc;
        if (r < 0 || r >= dims[0] || c < 0 || c >= dims[1]) continue;
        const int slot = (dr + 1) * 3 + (dc + 1);
        const int count = (dr && dc) ? corner : edge;
        /* tag = direction as seen by the sender */
        LOG_IRECV(recvbuf + (size_t)slot * (edge + 1), count, MPI_DOUBLE, r * dims[1] + c, 100 + (8 - slot),
                  MPI_COMM_WORLD, &reqs[nreq]);
        nreq++;
      }
    for (int dr = -1; dr <= 1; ++dr)
      for (int dc = -1; dc <= 1; ++dc) {
        if (!dr && !dc) continue;
        const int r = row + dr, c = col + dc;
        if (r < 0 || r >= dims[0] || c < 0 || c >= dims[1]) continue;
        const int slot = (dr + 1) * 3 + (dc + 1);
        const int count = (dr && dc) ? corner : edge;
        LOG_ISEND(sendbuf + (size_t)slot * (edge + 1), count, MPI_DOUBLE, r * dims[1] + c, 100 + slot, MPI_COMM_WORLD,
                  &reqs[nreq]);
        nreq++;
      }
    LOG_WAITALL(nreq, reqs, MPI_STATUSES_IGNORE);
    if ((it + 1) % every == 0) {
      ex_compute(a.compute_us);
      residual *= 0.5;
      LOG_ALLREDUCE(&residual, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
  }

  free(sendbuf);
  free(recvbuf);
  LOG_FINALIZE();
  return 0;
}
