/* extrap_torus: NPB MG's communication in small. A 7-point halo exchange on a periodic 3D
 * process grid (a torus) whose sizes come from MPI_Dims_create (dims[0] >= dims[1] >= dims[2],
 * rank = x + dims[0] * (y + dims[1] * z)): per iteration and dimension every rank posts Irecvs
 * from its - and + neighbours, sends to the + and - neighbours and waits for both (in a
 * dimension of size 2 both neighbours are one rank, in one of size 1 the rank itself). Then a
 * "coarse level" where, as on MG's coarse grids, only some ranks work: ranks with even x send
 * to x + 1 if there is one, which receives; the others idle. An Allreduce ends the iteration. */
#include <mpi.h>

int main(int argc, char** argv) {
  int rank, size, dims[3] = {0, 0, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 3, dims);
  const int c[3] = {rank % dims[0], (rank / dims[0]) % dims[1], rank / (dims[0] * dims[1])};
  const int stride[3] = {1, dims[0], dims[0] * dims[1]};
  double out[2][16] = {{0}}, in[2][16], local = rank, global;
  for (int it = 0; it < 3; ++it) {
    for (int d = 0; d < 3; ++d) {
      const int up = rank + stride[d] * ((c[d] + 1) % dims[d] - c[d]);
      const int down = rank + stride[d] * ((c[d] + dims[d] - 1) % dims[d] - c[d]);
      MPI_Request req[2];
      MPI_Irecv(in[0], 16, MPI_DOUBLE, down, 10 * d + 1, MPI_COMM_WORLD, &req[0]);
      MPI_Irecv(in[1], 16, MPI_DOUBLE, up, 10 * d + 2, MPI_COMM_WORLD, &req[1]);
      MPI_Send(out[0], 16, MPI_DOUBLE, up, 10 * d + 1, MPI_COMM_WORLD);
      MPI_Send(out[1], 16, MPI_DOUBLE, down, 10 * d + 2, MPI_COMM_WORLD);
      MPI_Wait(&req[0], MPI_STATUS_IGNORE);
      MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    }
    if (c[0] % 2 == 0 && c[0] + 1 < dims[0])
      MPI_Send(out[0], 4, MPI_DOUBLE, rank + 1, 99, MPI_COMM_WORLD);
    else if (c[0] % 2 == 1)
      MPI_Recv(in[0], 4, MPI_DOUBLE, rank - 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
