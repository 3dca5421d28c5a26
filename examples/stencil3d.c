/* stencil3d: 27-point stencil on a 3D process grid (MPI_Dims_create, non-periodic): every rank
 * exchanges with up to 26 neighbours (faces -s BYTES, edges BYTES/8, corners 8 bytes) with
 * Irecv/Isend and one Waitall per timestep; an Allreduce every -k K timesteps.
 * Reproduces the 3D stencil of the ScalaTrace paper (constant trace size over rank counts). */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "stencil3d", 3, 512);
  ex_args_option(&a, 'k', 2, "Allreduce every K timesteps");
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const long every = ex_opt(&a, 'k') > 0 ? ex_opt(&a, 'k') : 1;

  int dims[3] = {0, 0, 0};
  MPI_Dims_create(size, 3, dims);
  const int x = rank / (dims[1] * dims[2]), y = (rank / dims[2]) % dims[1], z = rank % dims[2];
  const int face = (int)a.bytes > 0 ? (int)a.bytes : 1;
  const int edge = face / 8 > 0 ? face / 8 : 1;
  const int corner = 8;
  char *sendbuf = calloc(27 * (size_t)face, 1), *recvbuf = calloc(27 * (size_t)face, 1);
  MPI_Request reqs[52];
  double residual = 1.0, global = 0.0;

  for (long it = 0; it < a.iters; ++it) {
    ex_compute(a.compute_us);
    int nreq = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (int dx = -1; dx <= 1; ++dx)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dz = -1; dz <= 1; ++dz) {
            const int nx = x + dx, ny = y + dy, nz = z + dz;
            const int zeros = (dx == 0) + (dy == 0) + (dz == 0);
            if (zeros == 3) continue;
            if (nx < 0 || nx >= dims[0] || ny < 0 || ny >= dims[1] || nz < 0 || nz >= dims[2]) continue;
            const int peer = (nx * dims[1] + ny) * dims[2] + nz;
            const int slot = (dx + 1) * 9 + (dy + 1) * 3 + (dz + 1);
            const int count = zeros == 2 ? face : zeros == 1 ? edge : corner;
            if (pass == 0) {
              LOG_IRECV(recvbuf + (size_t)slot * face, count, MPI_BYTE, peer, 200 + (26 - slot), MPI_COMM_WORLD,
                        &reqs[nreq]);
            } else {
              LOG_ISEND(sendbuf + (size_t)slot * face, count, MPI_BYTE, peer, 200 + slot, MPI_COMM_WORLD, &reqs[nreq]);
            }
            nreq++;
          }
    LOG_WAITALL(nreq, reqs, MPI_STATUSES_IGNORE);
    if ((it + 1) % every == 0) {
      residual *= 0.5;
      LOG_ALLREDUCE(&residual, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
  }

  free(sendbuf);
  free(recvbuf);
  LOG_FINALIZE();
  return 0;
}
