/* extrap_halo2d: a 5-point halo exchange on a non-periodic 2D process grid whose sizes come
 * from MPI_Dims_create (dims[0] >= dims[1], rank = x + dims[0] * y). Per iteration every rank
 * posts Irecvs and Isends to the neighbours it has (west, east, south, north), waits for all,
 * and joins an Allreduce. Small grids (2x2, 3x2) have no interior ranks. */
#include <mpi.h>

int main(int argc, char **argv) {
  int rank, size, dims[2] = {0, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 2, dims);
  const int nx = dims[0], ny = dims[1], x = rank % nx, y = rank / nx;
  const int peers[4] = {x > 0 ? rank - 1 : -1, x < nx - 1 ? rank + 1 : -1, y > 0 ? rank - nx : -1,
                        y < ny - 1 ? rank + nx : -1};
  double out[4][16] = {{0}}, in[4][16], local = rank, global;
  for (int it = 0; it < 3; ++it) {
    MPI_Request req[8];
    MPI_Status st[8];
    int n = 0;
    for (int d = 0; d < 4; ++d)
      if (peers[d] >= 0) MPI_Irecv(in[d], 16, MPI_DOUBLE, peers[d], d ^ 1, MPI_COMM_WORLD, &req[n++]);
    for (int d = 0; d < 4; ++d)
      if (peers[d] >= 0) MPI_Isend(out[d], 16, MPI_DOUBLE, peers[d], d, MPI_COMM_WORLD, &req[n++]);
    MPI_Waitall(n, req, st);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
