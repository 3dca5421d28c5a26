/* cg_like: the exchanges of NPB CG in small, at 2 ranks (one row of processes, two columns):
 * per iteration a 5,600-byte exchange with the partner column and one with the rank itself
 * (the transpose partner of a 1x2 grid is the rank itself), then two 8-byte exchanges with
 * the partner (the reduction of a dot product), each MPI_Irecv, MPI_Send, MPI_Wait, with a
 * short computation between them. */
#include <mpi.h>
#include <stdlib.h>

static void work(long n) {
  volatile double x = 1.0;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
}

static void exchange(void* out, void* in, int bytes, int peer, int tag) {
  MPI_Request req;
  MPI_Irecv(in, bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req);
  MPI_Send(out, bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 1 ? atoi(argv[1]) : 40;
  char *out = calloc(5600, 1), *in = calloc(5600, 1);
  const int partner = (rank ^ 1) < size ? (rank ^ 1) : rank;
  for (int it = 0; it < iterations; ++it) {
    work(20000);
    exchange(out, in, 5600, partner, 1);
    exchange(out, in, 5600, rank, 2);
    work(200);
    exchange(out, in, 8, partner, 3);
    work(200);
    exchange(out, in, 8, partner, 4);
  }
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
