/* scalatrace-calibrate: measures LogGP parameters of the local MPI between ranks 0 and 1
 * (ping-pong half round trips of several sizes, send and receive overheads at several sizes, the
 * gap between back-to-back sends) and prints them as one JSON object on rank 0's standard
 * output. scalatrace.calibrate() runs it under mpiexec and fits L, G and O (docs/simulator.md).
 *
 * usage: mpiexec -n 2 scalatrace-calibrate [BATCHES] [MAX_BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Half round trip of `bytes`: the fastest of `batches` batches of 10 ping-pongs (batches, since
 * MPI_Wtime may tick in microseconds; the fastest, so that batches during which a rank was
 * descheduled on a shared, oversubscribed machine do not count). */
static double half_round_trip(int rank, char* buf, int bytes, int batches) {
  const int per_batch = 10;
  double best = 1e30;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < per_batch; ++i) {
      if (rank == 0) {
        MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
    const double t = (MPI_Wtime() - t0) / (2.0 * per_batch);
    if (t < best) best = t;
  }
  return best;
}

/* Send overhead: time inside `count` back-to-back MPI_Send of `bytes` (eager) per message.
 * Receive overhead: time inside `count` MPI_Recv of messages that have all arrived already.
 * Both the fastest of `batches`. Measured at several sizes, their growth with the size is the
 * CPU time per byte of the copies (LogGOPS's O). */
static void overheads(int rank, char* buf, int bytes, int count, int batches, double* o_s, double* o_r) {
  double best_s = 1e30, best_r = 1e30;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < count; ++i) MPI_Send(buf, bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
      const double t = (MPI_Wtime() - t0) / count;
      if (t < best_s) best_s = t;
      MPI_Send(buf, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD); /* "all sent" */
    } else if (rank == 1) {
      int flag = 0; /* the marker comes after every message: wait until it has arrived */
      while (!flag) MPI_Iprobe(0, 3, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < count; ++i) MPI_Recv(buf, bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const double t = (MPI_Wtime() - t0) / count;
      if (t < best_r) best_r = t;
      MPI_Recv(buf, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  MPI_Bcast(&best_s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&best_r, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  *o_s = best_s;
  *o_r = best_r;
}

/* Gap: `count` back-to-back small sends, one acknowledgement; per-message time. */
static double gap(int rank, char* buf, int count, int batches) {
  double best = 1e30;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (rank == 0) {
      for (int i = 0; i < count; ++i) MPI_Send(buf, 8, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
      MPI_Recv(buf, 1, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      for (int i = 0; i < count; ++i) MPI_Recv(buf, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 1, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
    }
    const double t = (MPI_Wtime() - t0) / count;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reps = argc > 1 ? atoi(argv[1]) : 200;
  const int max_bytes = argc > 2 ? atoi(argv[2]) : (1 << 20);
  if (size < 2 || reps < 1 || max_bytes < 1) {
    if (rank == 0) fprintf(stderr, "scalatrace-calibrate: needs 2 ranks, REPS >= 1, MAX_BYTES >= 1\n");
    MPI_Finalize();
    return 2;
  }
  char* buf = calloc((size_t)max_bytes, 1);
  if (buf == NULL) {
    fprintf(stderr, "scalatrace-calibrate: cannot allocate %d bytes\n", max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  half_round_trip(rank, buf, 1, 2); /* warm-up */
  int sizes[64];
  double times[64];
  int n = 0;
  /* Three passes over the sizes, the fastest per size: on a loaded machine whole stretches of
   * time may pass with the two ranks never running at once. */
  for (int pass = 0; pass < 3; ++pass) {
    n = 0;
    for (int k = 1; k <= max_bytes && n < 64; k *= 4, ++n) {
      const double t = half_round_trip(rank, buf, k, k >= (1 << 16) ? (reps / 10 > 5 ? reps / 10 : 5) : reps);
      sizes[n] = k;
      times[n] = (pass == 0 || t < times[n]) ? t : times[n];
    }
  }
  double o_s = 0, o_r = 0;
  overheads(rank, buf, 8, 20, reps, &o_s, &o_r);
  /* Overheads by size (the copies): sizes small enough to stay eager (20 of them unexpected at
   * once) and within the buffer. */
  static const int kCopySizes[] = {8, 1024, 4096, 8192};
  enum { kCopyCount = sizeof kCopySizes / sizeof kCopySizes[0] };
  int copy_sizes[kCopyCount];
  double copy_s[kCopyCount], copy_r[kCopyCount];
  int m = 0;
  for (int i = 0; i < kCopyCount; ++i) {
    if (kCopySizes[i] > max_bytes) break;
    copy_sizes[m] = kCopySizes[i];
    overheads(rank, buf, kCopySizes[i], 20, reps, &copy_s[m], &copy_r[m]);
    ++m;
  }
  const double g = gap(rank, buf, 20, reps);
  if (rank == 0) {
    printf("{\"ranks\": %d, \"sizes\": [", size);
    for (int i = 0; i < n; ++i) printf("%s%d", i ? ", " : "", sizes[i]);
    printf("], \"half_round_trip\": [");
    for (int i = 0; i < n; ++i) printf("%s%.9e", i ? ", " : "", times[i]);
    printf("], \"o_s\": %.9e, \"o_r\": %.9e, \"g\": %.9e, \"copy_sizes\": [", o_s, o_r, g);
    for (int i = 0; i < m; ++i) printf("%s%d", i ? ", " : "", copy_sizes[i]);
    printf("], \"o_s_by_size\": [");
    for (int i = 0; i < m; ++i) printf("%s%.9e", i ? ", " : "", copy_s[i]);
    printf("], \"o_r_by_size\": [");
    for (int i = 0; i < m; ++i) printf("%s%.9e", i ? ", " : "", copy_r[i]);
    printf("]}\n");
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
