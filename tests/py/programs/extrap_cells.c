/* extrap_cells: NPB BT's multi-partition sweeps in small. argv[1] = G (global points per axis,
 * default 60), argv[2] = 2 (default: P = n*n ranks on an n x n grid, n = sqrt(P), as BT and SP)
 * or 1 (P = n ranks in a ring, for runs of 2 to 9 ranks). Rank r sits at (x, y) = (r % n, r / n)
 * (y = 0 on a ring) and, as in BT's make_set.f, works at stage t of a sweep on the cell whose
 * coordinates are (t, (x + y - t) mod n, (t - x) mod n); every cell holds q = G/n points per
 * axis (G must split evenly over n). Each of 2 time steps:
 *  - a face exchange (BT's copy_faces): MPI_Irecv from and MPI_Isend to both ring neighbours
 *    along x (periodic), 8*q*q*(n-1) bytes each, then MPI_Waitall;
 *  - a forward sweep (BT's x_solve): at stage t > 0 MPI_Irecv from the predecessor (x - 1) with
 *    tag 3000 + c1 + n*c2 of the stage's cell, MPI_Wait on the previous send and on the
 *    receive; at stage t < n - 1 MPI_Isend to the successor with the tag of the stage's cell,
 *    of 8*5*(q+1)*(q+1) bytes (BT's MAX_CELL_DIM = q + 1 squared, 5 doubles per point);
 *  - a backward sweep (BT's back substitution): the same from stage n - 1 down to 0 towards
 *    the predecessor, tags 2000 + c1 + n*c2, of 8*(q - ends(c1))*(q - ends(c2)) bytes with
 *    ends(c) = (c == 0) + (c == n-1): SP's solve messages, the stage's cell face less the global
 *    boundary planes.
 * The tags are laws of cell coordinates modulo n, the bytes of G/n (inverse sizes) and of the
 * cells' extents. argv[3] (optional) holds letters for two patterns of NPB BT's binaries:
 *  - 'r': rank 0 makes one MPI_Comm_rank more than the other ranks (BT's print_timestep) after
 *    the time steps, then every rank an MPI_Barrier;
 *  - 's': the backward sweep's first send (stage n - 1) has a call site of its own (as gfortran
 *    -O2 compiles BT's back substitution), so its loop of (MPI_Irecv, MPI_Wait, MPI_Wait,
 *    MPI_Isend) runs n - 2 times: not at all on 2 cells. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mod(int a, int n) { return ((a % n) + n) % n; }
static int ends(int c, int n) { return (c == 0) + (c == n - 1); }

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int g = argc > 1 ? atoi(argv[1]) : 60;
  const int dims = argc > 2 ? atoi(argv[2]) : 2;
  const char* flags = argc > 3 ? argv[3] : "";
  const int root_call = strchr(flags, 'r') != NULL, split_send = strchr(flags, 's') != NULL;
  int n = size;
  if (dims == 2) {
    n = 1;
    while ((n + 1) * (n + 1) <= size) ++n;
    if (n * n != size) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (g % n != 0) MPI_Abort(MPI_COMM_WORLD, 3);
  const int x = rank % n, y = dims == 2 ? rank / n : 0, q = g / n;
  const int succ = (x + 1) % n + n * y, pred = (x + n - 1) % n + n * y;
  const int face = q * q * (n - 1), solve = 5 * (q + 1) * (q + 1);
  const int most = (face > solve ? face : solve) + 1;
  double *in = calloc((size_t)most * 2, sizeof(double)), *out = calloc((size_t)most * 2, sizeof(double));
  for (int step = 0; step < 2; ++step) {
    MPI_Request faces[4];
    MPI_Status statuses[4];
    MPI_Irecv(in, face, MPI_DOUBLE, succ, 1, MPI_COMM_WORLD, &faces[0]);
    MPI_Irecv(in + most, face, MPI_DOUBLE, pred, 2, MPI_COMM_WORLD, &faces[1]);
    MPI_Isend(out, face, MPI_DOUBLE, pred, 1, MPI_COMM_WORLD, &faces[2]);
    MPI_Isend(out + most, face, MPI_DOUBLE, succ, 2, MPI_COMM_WORLD, &faces[3]);
    MPI_Waitall(4, faces, statuses);
    MPI_Request send = MPI_REQUEST_NULL, recv;
    for (int t = 0; t < n; ++t) {
      const int tag = 3000 + mod(x + y - t, n) + n * mod(t - x, n);
      if (t > 0) {
        MPI_Irecv(in, solve, MPI_DOUBLE, pred, tag, MPI_COMM_WORLD, &recv);
        MPI_Wait(&send, MPI_STATUS_IGNORE);
        MPI_Wait(&recv, MPI_STATUS_IGNORE);
      }
      if (t < n - 1) MPI_Isend(out, solve, MPI_DOUBLE, succ, tag, MPI_COMM_WORLD, &send);
    }
    for (int t = n - 1; t >= 0; --t) {
      const int c1 = mod(x + y - t, n), c2 = mod(t - x, n), tag = 2000 + c1 + n * c2;
      const int back = (q - ends(c1, n)) * (q - ends(c2, n));
      if (t < n - 1) {
        MPI_Irecv(in, back, MPI_DOUBLE, succ, tag, MPI_COMM_WORLD, &recv);
        MPI_Wait(&send, MPI_STATUS_IGNORE);
        MPI_Wait(&recv, MPI_STATUS_IGNORE);
      }
      if (t > 0 && split_send && t == n - 1)  // another buffer: the compiler keeps both calls
        MPI_Isend(out + most, back, MPI_DOUBLE, pred, tag, MPI_COMM_WORLD, &send);
      else if (t > 0)
        MPI_Isend(out, back, MPI_DOUBLE, pred, tag, MPI_COMM_WORLD, &send);
    }
  }
  if (root_call) {
    int again;
    if (rank == 0) MPI_Comm_rank(MPI_COMM_WORLD, &again);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
