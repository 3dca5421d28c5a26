/* One exchange routine reached through several call paths inside a timestep loop, as NPB MG's
 * comm3 (give3 / take3 / ready) is called from its smoother, residual, restriction and
 * interpolation at every grid level. exchange() trades `n` doubles with both ring neighbours
 * (Irecv, Irecv, Isend, Isend, Waitall); a V-cycle reaches it through six call paths:
 * restrict_down() -> residual(), restrict_down() itself, and the V-cycle's calls of smooth(0),
 * interpolate(), residual() and smooth(), with sizes that depend on the level; every timestep
 * ends with an Allreduce.
 * Usage: call_paths [steps] (default 5). */
#include <mpi.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define LEVELS 3

static int rank, size;
static double send_buf[2][8 << LEVELS], recv_buf[2][8 << LEVELS];
static volatile double sink;

NOINLINE static void exchange(int n) {
  MPI_Request req[4];
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  MPI_Irecv(recv_buf[0], n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(recv_buf[1], n, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(send_buf[0], n, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(send_buf[1], n, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
  sink += recv_buf[0][0] + recv_buf[1][n - 1];
}

NOINLINE static void smooth(int level) {
  exchange(8 << level);
  sink += 1;
}
NOINLINE static void residual(int level) {
  exchange(8 << level);
  sink += 2;
}
NOINLINE static void restrict_down(int level) {
  residual(level);
  exchange(8 << (level - 1));
  sink += 3;
}
NOINLINE static void interpolate(int level) {
  exchange(8 << level);
  sink += 4;
}

NOINLINE static void vcycle(void) {
  for (int level = LEVELS - 1; level > 0; --level) restrict_down(level);
  smooth(0);
  for (int level = 1; level < LEVELS; ++level) {
    interpolate(level);
    residual(level);
    smooth(level);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 5;
  for (int k = 0; k < 8 << LEVELS; ++k) send_buf[0][k] = send_buf[1][k] = rank + k;
  for (int step = 0; step < steps; ++step) {
    vcycle();
    double norm = sink, total = 0;
    MPI_Allreduce(&norm, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
