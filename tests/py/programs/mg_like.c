/* mg_like: the communication of NPB MG in small, at 2 ranks: per iteration, on each of four
 * grid levels, a face exchange with both neighbours along the split dimension (MPI_Irecv,
 * MPI_Send, MPI_Wait; faces of 34x34, 18x18, 10x10 and 6x6 doubles), a computation phase
 * scaled to the level, and a norm reduced with MPI_Allreduce; a barrier at the end. */
#include <mpi.h>
#include <stdlib.h>

static void work(long n) {
  volatile double x = 1.0;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
}

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 1 ? atoi(argv[1]) : 20;
  const int faces[4] = {34 * 34, 18 * 18, 10 * 10, 6 * 6};
  double *out = calloc(34 * 34, sizeof(double)), *in = calloc(34 * 34, sizeof(double));
  const int up = (rank + 1) % size, down = (rank + size - 1) % size;
  for (int it = 0; it < iterations; ++it) {
    for (int level = 0; level < 4; ++level) {
      for (int dir = 0; dir < 2; ++dir) {
        MPI_Request req;
        const int from = dir == 0 ? down : up, to = dir == 0 ? up : down;
        MPI_Irecv(in, faces[level], MPI_DOUBLE, from, level, MPI_COMM_WORLD, &req);
        MPI_Send(out, faces[level], MPI_DOUBLE, to, level, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      }
      work(faces[level] * 20L);
      double norm = 1.0, total;
      MPI_Allreduce(&norm, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
