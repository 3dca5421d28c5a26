/* A first, untimed iteration reached through another call line than the timed ones, as NPB CG
 * (its conj_grad runs once before the timer starts, then inside the timed loop) and NPB FT do;
 * and, as NPB FT's setup, a communicator per rank split with the rank as color and key.
 * iterate() makes four calls in a routine with a long name (a Fortran-like symbol), so each call
 * line gives four call sites whose inner frames and symbol are those of the other line's.
 * Usage: warmup_paths [steps] [warmup] (defaults 4 and 1; warmup 0 skips the first iteration). */
#include <mpi.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static int rank, size;
static double send_buf[64], recv_buf[64];
static volatile double sink;

NOINLINE static void conjugate_gradient_iteration_(int n) {
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  MPI_Sendrecv(send_buf, n, MPI_DOUBLE, right, 1, recv_buf, n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  sink += recv_buf[0];
  MPI_Sendrecv(send_buf, n, MPI_DOUBLE, left, 2, recv_buf, n, MPI_DOUBLE, right, 2, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  sink += recv_buf[1];
  double local = sink, global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  sink += global;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  sink += global;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 4;
  const int warmup = argc > 2 ? atoi(argv[2]) : 1;
  MPI_Comm alone;
  MPI_Comm_split(MPI_COMM_WORLD, rank, rank, &alone);
  if (warmup) conjugate_gradient_iteration_(8); /* the untimed first iteration: its own call line */
  MPI_Barrier(MPI_COMM_WORLD);
  for (int step = 0; step < steps; ++step) conjugate_gradient_iteration_(16); /* the timed ones */
  MPI_Comm_free(&alone);
  MPI_Finalize();
  return 0;
}
