/* extrap_halo3d: a 7-point halo exchange on a non-periodic 3D process grid whose sizes come
 * from MPI_Dims_create (dims[0] >= dims[1] >= dims[2], rank = x + dims[0] * (y + dims[1] * z)).
 * Per iteration every rank computes for 2000 us (a busy loop on the wall clock), posts Irecvs
 * and Isends to the neighbours it has (west, east, south, north, down, up), waits for all, and
 * joins an Allreduce. Grids with a dimension of 2 have no rank in the middle of it. */
#include <mpi.h>

#include "busy_wait.h"

int main(int argc, char** argv) {
  int rank, size, dims[3] = {0, 0, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 3, dims);
  const int nx = dims[0], ny = dims[1], nz = dims[2];
  const int x = rank % nx, y = (rank / nx) % ny, z = rank / (nx * ny);
  const int peers[6] = {x > 0 ? rank - 1 : -1,       x < nx - 1 ? rank + 1 : -1,  y > 0 ? rank - nx : -1,
                        y < ny - 1 ? rank + nx : -1, z > 0 ? rank - nx * ny : -1, z < nz - 1 ? rank + nx * ny : -1};
  double out[6][8] = {{0}}, in[6][8], local = rank, global;
  for (int it = 0; it < 3; ++it) {
    MPI_Request req[12];
    MPI_Status st[12];
    int n = 0;
    busy_us(2000);
    for (int d = 0; d < 6; ++d)
      if (peers[d] >= 0) MPI_Irecv(in[d], 8, MPI_DOUBLE, peers[d], d ^ 1, MPI_COMM_WORLD, &req[n++]);
    for (int d = 0; d < 6; ++d)
      if (peers[d] >= 0) MPI_Isend(out[d], 8, MPI_DOUBLE, peers[d], d, MPI_COMM_WORLD, &req[n++]);
    MPI_Waitall(n, req, st);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
