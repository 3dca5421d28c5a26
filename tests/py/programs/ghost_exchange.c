/* ghost_exchange: a loosely synchronous blocked code (MK's synchronous case) with a grain K.
 * A 1D Jacobi stencil of N cells split into N / P cells per rank, with ghost zones K cells deep
 * on both sides: every K steps the ranks exchange their K boundary cells with both neighbours
 * (Irecv, Irecv, Isend, Isend, Waitall: one synchronous exchange), then take K steps without
 * communicating, each step updating one cell fewer at each side of the ghost zones (the
 * redundant computation of time tiling). Per exchange a rank updates K (N / P) + K^2 - K
 * cells, so
 *
 *   T ~ STEPS / K * (exchange time) + STEPS * a * (N / P + K - 1),
 *
 * smallest at K ~ sqrt(exchange time / a): deep ghost zones save messages and cost redundant
 * cells. The outermost ranks' outer ghost zones receive nothing and are computed like the others,
 * so that every rank does the same work. Rank 0 prints "elapsed <seconds>" (after a Barrier to
 * after the final Allreduce of a checksum).
 *
 *   ghost_exchange N K [STEPS] [WORK] [SERIAL]
 *
 * WORK (default 1): dependent multiply-adds per cell update. SERIAL (default 0): 1 chains every
 * cell update to the previous one (a dependency that changes no value), so that a step's cells
 * are computed one after the other at a fixed latency each: no vectorisation and no overlap of
 * neighbouring cells, whose gains vary with the loops' lengths and alignment. A step then costs
 * the same per cell at every N and K (MK's synchronous case needs that regular cost). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void step(const double* old, double* new_, int lo, int hi, int work, int serial) {
  double carry = 0.0; /* the previous cell's value, when SERIAL */
  for (int i = lo; i < hi; ++i) {
    double v = 0.25 * (old[i - 1] + 2.0 * old[i] + old[i + 1]);
    if (serial) v += v * (1e-300 * carry); /* below v's precision: v is unchanged */
    for (int w = 1; w < work; ++w) v = 0.5 * (v + old[i]) + 1e-9;
    new_[i] = v;
    carry = v;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* Bad arguments are the same on every rank: each ends cleanly, rank 0 says why (after an
   * MPI_Abort the launcher may drop the message). */
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: ghost_exchange N K [STEPS] [WORK] [SERIAL]\n");
    MPI_Finalize();
    return 2;
  }
  const int n = atoi(argv[1]), k = atoi(argv[2]), steps = argc > 3 ? atoi(argv[3]) : 64;
  const int work = argc > 4 ? atoi(argv[4]) : 1;
  const int serial = argc > 5 ? atoi(argv[5]) : 0;
  const int cells = n / size;
  if (cells < 1 || k < 1 || k > cells || steps < 1 || work < 1 || (serial != 0 && serial != 1)) {
    if (rank == 0)
      fprintf(stderr, "ghost_exchange: need N >= P, 1 <= K <= N / P, STEPS >= 1, WORK >= 1, SERIAL 0 or 1\n");
    MPI_Finalize();
    return 2;
  }
  const int width = cells + 2 * k; /* interior [k, k + cells), ghosts on both sides */
  double* a = calloc((size_t)width, sizeof(double));
  double* b = calloc((size_t)width, sizeof(double));
  for (int i = k; i < k + cells; ++i) a[i] = b[i] = (double)(rank * cells + i - k) / n;
  const int left = rank - 1, right = rank + 1 < size ? rank + 1 : -1;

  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int done = 0; done < steps; done += k) {
    const int depth = steps - done < k ? steps - done : k;
    MPI_Request req[4];
    int nreq = 0;
    if (left >= 0) {
      MPI_Irecv(a, k, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[nreq++]);
    }
    if (right >= 0) {
      MPI_Irecv(a + k + cells, k, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[nreq++]);
    }
    if (left >= 0) MPI_Isend(a + k, k, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[nreq++]);
    if (right >= 0) MPI_Isend(a + cells, k, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[nreq++]);
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    for (int j = 0; j < depth; ++j) {
      step(a, b, j + 1, width - 1 - j, work, serial);
      double* t = a;
      a = b;
      b = t;
    }
  }
  double sum = 0.0, total = 0.0;
  for (int i = k; i < k + cells; ++i) sum += a[i];
  MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double elapsed = MPI_Wtime() - start;
  if (rank == 0) printf("elapsed %.9f total %.17g\n", elapsed, total);

  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
