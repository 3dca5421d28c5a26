/* blocked_pipeline: a pipelined sweep with a block size (the MK toolkit's PGE1 in small).
 * The N x N work array is split into row strips of N / P rows over the P ranks. A sweep walks
 * the N columns in blocks of K: for every block a rank receives the K boundary values of its
 * predecessor, updates its strip's K columns (N / P * K dependent multiply-adds), and sends its
 * K boundary values to its successor. After each sweep an Allreduce of the residual.
 *
 *   blocked_pipeline N K [SWEEPS] [WORK]
 *
 * WORK (default 1): dependent multiply-adds per cell, to make the computation outweigh the cost
 * of a message on a loaded machine. K need not divide N (the last block of a sweep is narrower).
 * The strip is stored by columns, so a block's update walks memory contiguously and a cell costs
 * the same whatever K (stored by rows, the column walk strides N doubles, a power of two here,
 * and the cache's set conflicts made the cost per cell depend on K).
 * Time ~ SWEEPS * (ceil(N / K) + P - 1) * (a * N / P * K + message time): small K pays the
 * message time N / K times, large K fills the pipeline slowly; the best K lies between. Rank 0
 * prints "elapsed <seconds>" (from after a Barrier to after the last Allreduce). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double update_block(double* strip, int rows, int col0, int k, int work, const double* in, double* out) {
  double acc = 0.0;
  for (int c = 0; c < k; ++c) {
    double carry = in[c];
    double* column = &strip[(size_t)(col0 + c) * (size_t)rows];
    for (int r = 0; r < rows; ++r) {
      double* cell = &column[r];
      for (int w = 0; w < work; ++w) carry = 0.5 * (*cell + carry) + 1e-9;
      *cell = carry;
    }
    out[c] = carry;
    acc += carry;
  }
  return acc;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: blocked_pipeline N K [SWEEPS] [WORK]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int n = atoi(argv[1]), k = atoi(argv[2]), sweeps = argc > 3 ? atoi(argv[3]) : 4;
  const int work = argc > 4 ? atoi(argv[4]) : 1;
  if (n < size || k < 1 || k > n || sweeps < 1 || work < 1) {
    if (rank == 0) fprintf(stderr, "blocked_pipeline: need N >= P, 1 <= K <= N, SWEEPS >= 1, WORK >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int rows = n / size + (rank < n % size ? 1 : 0);
  double* strip = calloc((size_t)rows * (size_t)n, sizeof(double));
  double* in = calloc((size_t)k, sizeof(double));
  double* out = calloc((size_t)k, sizeof(double));
  double residual = 0.0, total = 0.0;

  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int s = 0; s < sweeps; ++s) {
    for (int col = 0; col < n; col += k) {
      const int width = n - col < k ? n - col : k;
      if (rank > 0) MPI_Recv(in, width, MPI_DOUBLE, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      residual += update_block(strip, rows, col, width, work, in, out);
      if (rank < size - 1) MPI_Send(out, width, MPI_DOUBLE, rank + 1, 0, MPI_COMM_WORLD);
    }
    MPI_Allreduce(&residual, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  const double elapsed = MPI_Wtime() - start;
  if (rank == 0) printf("elapsed %.9f total %g\n", elapsed, total);

  free(strip);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
