/* scalatrace-calibrate: measures LogGP parameters of the local MPI between ranks 0 and 1
 * (ping-pong half round trips of several sizes, send and receive overheads at several sizes, the
 * gap between back-to-back sends) and prints them as one JSON object on rank 0's standard
 * output. scalatrace.calibrate() runs it under mpiexec and fits L, G and O (docs/simulator.md).
 *
 * With COMPUTE_NS > 0 it also measures the overheads in situ (scalatrace.calibrate_in_situ):
 * a one-way pipeline stage with a block of computation of about COMPUTE_NS between the calls,
 * walking a buffer of FOOTPRINT_BYTES (as a program's block walks its array), messages of
 * MESSAGE_BYTES; the per-message cost of each side is its period minus the same computation
 * timed alone (docs/simulator.md, "In situ").
 *
 * usage: mpiexec -n 2 scalatrace-calibrate [BATCHES] [MAX_BYTES] [COMPUTE_NS FOOTPRINT_BYTES MESSAGE_BYTES]
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

/* ---- in situ: the application's pattern (a compute block between the calls) ---- */

static double g_sink;          /* keeps the kernel's result alive */
static long long g_cells_done; /* cells the kernel updated (the test checks it is all done) */

/* One block of computation: `cells` dependent multiply-adds over consecutive doubles of `buf`
 * (`len` of them) from `*cursor` on, wrapping, the cursor left after the block: the blocked
 * pipeline's column walk, each block the next part of the array, the whole array once per
 * len / cells blocks (so the array's footprint goes through the caches as the program's does). */
static void kernel(double* buf, long long len, long long* cursor, long long cells) {
  double carry = g_sink;
  long long c = *cursor, left = cells;
  while (left > 0) { /* runs of consecutive cells up to the buffer's end */
    const long long run = left < len - c ? left : len - c;
    double* cell = &buf[c];
    for (long long i = 0; i < run; ++i) {
      carry = 0.5 * (cell[i] + carry) + 1e-9;
      cell[i] = carry;
    }
    c += run;
    if (c == len) c = 0;
    left -= run;
  }
  *cursor = c;
  g_sink = carry;
  g_cells_done += cells;
}

/* `buf` grown to `n` doubles, each 1.0. */
static double* filled(double* buf, long long n) {
  double* grown = realloc(buf, (size_t)n * sizeof(double));
  if (grown == NULL) {
    fprintf(stderr, "scalatrace-calibrate: cannot allocate %lld bytes\n", n * 8);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (long long i = 0; i < n; ++i) grown[i] = 1.0;
  return grown;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
  long long cells, blocks;
  double compute_alone, period, overhead; /* this rank's medians over the batches, seconds */
} InSitu;

/* Each batch: both ranks time `blocks` blocks of computation alone, then the one-way stage
 * (rank 0: compute, MPI_Send; rank 1: MPI_Recv, compute; the receiver's period from the return
 * of its first receive, so the fill is not in it). A rank's per-message cost in the batch is its
 * stage period minus its computation alone; the medians over the batches are reported. */
static InSitu in_situ(int rank, double compute_ns, long long footprint, int msg_bytes, int batches) {
  InSitu r = {0, 64, 0, 0, 0};
  long long len = footprint / (long long)sizeof(double);
  if (len < 1) len = 1;
  /* Cells per block: time a trial block size on both ranks at once (as in the stage), scale to
   * compute_ns, time again and rescale (the per-cell cost depends on the block's size). */
  long long cells = 1024;
  double* buf = NULL;
  long long cursor = 0;
  for (int round = 0; round < 3; ++round) {
    const long long this_len = cells > len ? cells : len;
    buf = filled(buf, this_len);
    double best = 1e30;
    for (int b = 0; b < 5; ++b) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < 16; ++i) kernel(buf, this_len, &cursor, cells);
      const double t = (MPI_Wtime() - t0) / 16.0;
      if (t < best) best = t;
    }
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double next = (double)cells * compute_ns * 1e-9 / (best > 0 ? best : 1e-9);
    if (next < 1) next = 1;
    if (next > 1e9) next = 1e9;
    cells = (long long)(next + 0.5);
    MPI_Bcast(&cells, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  }
  if (cells > len) len = cells;
  buf = filled(buf, len);
  char* msg = calloc((size_t)(msg_bytes > 0 ? msg_bytes : 1), 1);
  double* alone = malloc((size_t)batches * sizeof(double));
  double* period = malloc((size_t)batches * sizeof(double));
  double* diff = malloc((size_t)batches * sizeof(double));
  if (msg == NULL || alone == NULL || period == NULL || diff == NULL) {
    fprintf(stderr, "scalatrace-calibrate: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int blocks = (int)r.blocks;
  cursor = 0;
  g_cells_done = 0;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < blocks; ++i) kernel(buf, len, &cursor, cells);
    alone[b] = (MPI_Wtime() - t0) / blocks;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      t0 = MPI_Wtime();
      for (int i = 0; i < blocks; ++i) {
        kernel(buf, len, &cursor, cells);
        MPI_Send(msg, msg_bytes, MPI_BYTE, 1, 6, MPI_COMM_WORLD);
      }
      period[b] = (MPI_Wtime() - t0) / blocks;
    } else if (rank == 1) {
      MPI_Recv(msg, msg_bytes, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      t0 = MPI_Wtime();
      for (int i = 1; i < blocks; ++i) {
        kernel(buf, len, &cursor, cells);
        MPI_Recv(msg, msg_bytes, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      period[b] = (MPI_Wtime() - t0) / (blocks - 1);
      kernel(buf, len, &cursor, cells);
    } else {
      period[b] = alone[b];
    }
    diff[b] = period[b] - alone[b];
  }
  r.cells = cells;
  r.overhead = median(diff, batches);
  r.compute_alone = median(alone, batches);
  r.period = median(period, batches);
  free(diff);
  free(period);
  free(alone);
  free(msg);
  free(buf);
  return r;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reps = argc > 1 ? atoi(argv[1]) : 200;
  const int max_bytes = argc > 2 ? atoi(argv[2]) : (1 << 20);
  const double compute_ns = argc > 3 ? atof(argv[3]) : 0.0;
  const long long footprint = argc > 4 ? atoll(argv[4]) : 0;
  const int msg_bytes = argc > 5 ? atoi(argv[5]) : 8;
  if (size < 2 || reps < 1 || max_bytes < 1 || compute_ns < 0 || footprint < 0 || msg_bytes < 0) {
    if (rank == 0)
      fprintf(stderr,
              "scalatrace-calibrate: needs 2 ranks, REPS >= 1, MAX_BYTES >= 1, COMPUTE_NS, FOOTPRINT_BYTES and "
              "MESSAGE_BYTES >= 0\n");
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
  InSitu mine = {0, 0, 0, 0, 0}, other = {0, 0, 0, 0, 0};
  long long other_done = 0;
  if (compute_ns > 0) {
    mine = in_situ(rank, compute_ns, footprint, msg_bytes, reps);
    other = mine;
    other_done = g_cells_done;
    if (rank == 1) {
      double v[4] = {mine.compute_alone, mine.period, mine.overhead, (double)g_cells_done};
      MPI_Send(v, 4, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    } else if (rank == 0) {
      double v[4];
      MPI_Recv(v, 4, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      other.compute_alone = v[0];
      other.period = v[1];
      other.overhead = v[2];
      other_done = (long long)v[3];
    }
  }
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
    printf("]");
    if (compute_ns > 0) {
      /* [rank 0 (the sender), rank 1 (the receiver)] */
      printf(
          ", \"in_situ\": {\"compute_ns\": %.9e, \"footprint_bytes\": %lld, \"message_bytes\": %d, "
          "\"cells\": %lld, \"blocks\": %lld, \"batches\": %d, \"cells_done\": [%lld, %lld], "
          "\"compute_alone\": [%.9e, %.9e], \"period\": [%.9e, %.9e], \"overhead\": [%.9e, %.9e]}",
          compute_ns, footprint, msg_bytes, mine.cells, mine.blocks, reps, g_cells_done, other_done, mine.compute_alone,
          other.compute_alone, mine.period, other.period, mine.overhead, other.overhead);
    }
    printf("}\n");
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
