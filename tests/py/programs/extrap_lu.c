/* extrap_lu: NPB LU's face exchanges on their own. The ranks form an X x Y grid (MPI_Dims_create's
 * balanced factorization, the larger size X varying fastest: 4 = 2x2, 6 = 3x2, 8 = 4x2,
 * 9 = 3x3, 12 = 4x3, 16 = 4x4, 32 = 8x4), not periodic. A global N x N plane (N = argv[1],
 * default 25) is split as NPB LU's subdomain.f splits it: rank (x, y) holds
 * nx = floor(N/X) + (x < N mod X ? 1 : 0) columns and ny = floor(N/Y) + (y < N mod Y ? 1 : 0)
 * rows, so with N = 25 (N mod X = 1 for X = 2, 3, 4, 6, 8, 12) the first column and the first
 * row of ranks hold one more than the others, as LU class W (N = 33) on powers of two. Each of
 * 3 iterations: with every neighbour in x (west, east) MPI_Irecv / MPI_Send / MPI_Wait of a face
 * of 5*ny doubles, then with every neighbour in y (south, north) a face of 5*nx doubles, then
 * an MPI_Allreduce. A face's bytes are 40*floor(N/d) + 40 in the first column or row and
 * 40*floor(N/d) elsewhere: a division plus a constant. argv[2] (default 5) is the number of
 * doubles per grid line (NPB's 5 components); with 1 and N = 12 at 4, 6, 9 ranks (N splits
 * evenly over X, Y = 2, 3) the faces at 10 ranks (5x2: 12 = 3, 3, 2, 2, 2) depend on how the
 * remainder is split, which no input shows: extrapolation must refuse. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void exchange(int peer, int count, double *in, double *out) {
  MPI_Request req;
  MPI_Irecv(in, count, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, &req);
  MPI_Send(out, count, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n_global = argc > 1 ? atoi(argv[1]) : 25;
  const int per_line = argc > 2 ? atoi(argv[2]) : 5;
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims); /* dims[0] >= dims[1] */
  const int X = dims[0], Y = dims[1], x = rank % X, y = rank / X;
  const int nx = n_global / X + (x < n_global % X ? 1 : 0);
  const int ny = n_global / Y + (y < n_global % Y ? 1 : 0);
  const int most = per_line * (n_global + 1);
  double *out = calloc((size_t)most, sizeof(double)), *in = calloc((size_t)most, sizeof(double));
  double sum = 1.0;
  for (int it = 0; it < 3; ++it) {
    if (x > 0) exchange(rank - 1, per_line * ny, in, out);
    if (x < X - 1) exchange(rank + 1, per_line * ny, in, out);
    if (y > 0) exchange(rank - X, per_line * nx, in, out);
    if (y < Y - 1) exchange(rank + X, per_line * nx, in, out);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
