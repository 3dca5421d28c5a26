/* extrap_coarse: NPB MG's V-cycle in small, on a periodic 2D process grid from MPI_Dims_create
 * (dims[0] >= dims[1], rank = x + dims[0] * y). Per iteration: the fine level's halo exchange
 * (every rank: Irecv from the - and + neighbour, Send to the + and -, Wait for both, along x and
 * then y), a coarse level on which, as on MG's coarse grids, only the ranks whose coordinates are
 * odd hold a point (in a dimension of size 1 the only rank): those exchange with their coarse
 * neighbours, the next such rank up and down each dimension with wrap-around (in a dimension
 * with one coarse point the rank itself: a peer of 0), through the same calls as the fine level
 * and with smaller faces; then the fine level again and an Allreduce. Which ranks work on the
 * coarse level changes with the grid (rank 3 of 2x2, rank 4 of 3x2 and 3x3, ranks 5 and 7 of
 * 4x2), so the ranks' event sequences differ at every size; the fine levels are every rank's. */
#include <mpi.h>

static void exchange(int rank, const int c[2], const int dims[2], int dist, int count, int tag) {
  double out[2][16] = {{0}}, in[2][16];
  const int stride[2] = {1, dims[0]};
  for (int d = 0; d < 2; ++d) {
    /* the next point up and down at distance dist, with wrap-around over the points of the
     * level: coordinates c0, c0 + dist, ... below dims[d] */
    const int c0 = dist == 1 || dims[d] == 1 ? 0 : 1;
    const int points = dims[d] == 1 ? 1 : (dims[d] - c0 + dist - 1) / dist;
    const int index = (c[d] - c0) / (dims[d] == 1 ? 1 : dist);
    const int up_c = c0 + ((index + 1) % points) * (dims[d] == 1 ? 1 : dist);
    const int down_c = c0 + ((index + points - 1) % points) * (dims[d] == 1 ? 1 : dist);
    const int up = rank + stride[d] * (up_c - c[d]);
    const int down = rank + stride[d] * (down_c - c[d]);
    MPI_Request req[2];
    MPI_Irecv(in[0], count, MPI_DOUBLE, down, tag + 10 * d + 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in[1], count, MPI_DOUBLE, up, tag + 10 * d + 2, MPI_COMM_WORLD, &req[1]);
    MPI_Send(out[0], count, MPI_DOUBLE, up, tag + 10 * d + 1, MPI_COMM_WORLD);
    MPI_Send(out[1], count, MPI_DOUBLE, down, tag + 10 * d + 2, MPI_COMM_WORLD);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
  }
}

int main(int argc, char** argv) {
  int rank, size, dims[2] = {0, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 2, dims);
  const int c[2] = {rank % dims[0], rank / dims[0]};
  int coarse = 1; /* holds a point of the coarse level: odd coordinates (or a dimension of 1) */
  for (int d = 0; d < 2; ++d)
    if (dims[d] > 1 && c[d] % 2 == 0) coarse = 0;
  double local = rank, global;
  for (int it = 0; it < 3; ++it) {
    exchange(rank, c, dims, 1, 16, 0);            /* fine level, down */
    if (coarse) exchange(rank, c, dims, 2, 4, 0); /* coarse level: its ranks only */
    exchange(rank, c, dims, 1, 16, 0);            /* fine level, up */
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
