/* wavefront2d: an LU-like 2D sweep (NPB LU's SSOR lower/upper triangular solves in small).
 * The ranks form a PX x PY grid (row-major: rank = y * PX + x). Per sweep, for every block of
 * K rows, a rank receives from its west (x - 1) and north (y - 1) neighbours, computes, and
 * sends to its east (x + 1) and south (y + 1) neighbours; the corner (0, 0) starts without
 * receiving and (PX - 1, PY - 1) ends without sending. The longest chain of messages that
 * wait on one another runs from (0, 0) to (PX - 1, PY - 1): PX + PY - 2 hops. After each
 * sweep an Allreduce (the residual norm).
 *
 *   wavefront2d PX PY [SWEEPS] [BLOCKS] [BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: wavefront2d PX PY [SWEEPS] [BLOCKS] [BYTES]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int px = atoi(argv[1]), py = atoi(argv[2]);
  const int sweeps = argc > 3 ? atoi(argv[3]) : 2, blocks = argc > 4 ? atoi(argv[4]) : 3;
  const int bytes = argc > 5 ? atoi(argv[5]) : 256;
  if (px < 1 || py < 1 || px * py != size || sweeps < 1 || blocks < 1 || bytes < 1) {
    if (rank == 0) fprintf(stderr, "wavefront2d: PX * PY must equal the %d ranks\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int x = rank % px, y = rank / px;
  const int n = bytes / (int)sizeof(double) + 1;
  double* west = calloc((size_t)n, sizeof(double));
  double* north = calloc((size_t)n, sizeof(double));
  double* east = calloc((size_t)n, sizeof(double));
  double* south = calloc((size_t)n, sizeof(double));
  double residual = 0.0, total = 0.0;

  for (int s = 0; s < sweeps; ++s) {
    for (int b = 0; b < blocks; ++b) {
      if (x > 0) MPI_Recv(west, n, MPI_DOUBLE, rank - 1, b, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (y > 0) MPI_Recv(north, n, MPI_DOUBLE, rank - px, b, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < n; ++i) east[i] = south[i] = 0.5 * (west[i] + north[i]) + 1.0;
      residual += east[0];
      if (x < px - 1) MPI_Send(east, n, MPI_DOUBLE, rank + 1, b, MPI_COMM_WORLD);
      if (y < py - 1) MPI_Send(south, n, MPI_DOUBLE, rank + px, b, MPI_COMM_WORLD);
    }
    MPI_Allreduce(&residual, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }

  free(west);
  free(north);
  free(east);
  free(south);
  MPI_Finalize();
  return 0;
}
