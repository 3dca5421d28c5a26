/* extrap_transpose: NPB CG's transpose exchange on its own. The ranks form an X x Y grid with
 * X = c*Y (MPI_Dims_create's balanced factorization, the larger size X varying fastest:
 * 2 = 2x1, 4 = 2x2, 8 = 4x2, 9 = 3x3, 16 = 4x4, 32 = 8x4); rank (x, y) exchanges with CG's
 * exch_proc, the rank at (c*y + x%c, floor(x/c)): on a square grid (c = 1) the transpose
 * (y, x), on a grid twice as wide the transpose of the grid of pairs. Each of 3 iterations:
 * MPI_Irecv / MPI_Send / MPI_Wait with that rank (self on the diagonal), floor(N/X) doubles
 * (N = argv[1], default 1200: a strong-scaled vector split over the columns), then an
 * MPI_Allreduce. The partner's formula changes between square and non-square grids, so its
 * relative peer is no linear law of the sizes and coordinates. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n_global = argc > 1 ? atoi(argv[1]) : 1200;
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims); /* dims[0] >= dims[1] */
  const int X = dims[0], Y = dims[1];
  if (X % Y != 0) {
    if (rank == 0) fprintf(stderr, "extrap_transpose: %d x %d: X is not a multiple of Y\n", X, Y);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int c = X / Y, x = rank % X, y = rank / X;
  const int partner = (x / c) * X + c * y + x % c;
  const int n = n_global / X;
  double *out = calloc((size_t)n + 1, sizeof(double)), *in = calloc((size_t)n + 1, sizeof(double));
  double sum = 1.0;
  for (int it = 0; it < 3; ++it) {
    MPI_Request req;
    MPI_Irecv(in, n, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, &req);
    MPI_Send(out, n, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
