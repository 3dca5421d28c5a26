/* scalatrace-calibrate: measures LogGP parameters of the local MPI between ranks 0 and 1
 * (ping-pong half round trips of several sizes, send and receive overheads at several sizes, the
 * gap between back-to-back sends, the size where MPI_Send switches from eager to rendezvous and
 * the ping-pong past it) and prints them as one JSON object on rank 0's standard
 * output. scalatrace.calibrate() runs it under mpiexec and fits L, G and O (docs/simulator.md).
 *
 * With COMPUTE_NS > 0 it also measures the overheads in situ (scalatrace.calibrate_in_situ):
 * a one-way pipeline stage with a block of computation of about COMPUTE_NS between the calls,
 * walking a buffer of FOOTPRINT_BYTES (as a program's block walks its array), messages of
 * MESSAGE_BYTES; the per-message cost of each side is its period minus the same computation
 * timed alone (docs/simulator.md, "In situ"). COMPUTE_NS may be a comma-separated list of block
 * sizes (MESSAGE_BYTES then one size for all or one per block): their batches are interleaved in
 * one run, so that every block size sees the same state of the machine
 * (scalatrace.calibrate_in_situ_blocks). The "in_situ" field is a list, one object per block.
 * CHAINS (default 1; one for all or one per block) splits each block into that many dependent
 * chains, each from the block's first value, as a pipeline's block of K columns is K chains
 * (the processor overlaps them within the block, not across the MPI call between blocks).
 *
 * usage: mpiexec -n 2 scalatrace-calibrate [BATCHES] [MAX_BYTES] [COMPUTE_NS[,NS...] FOOTPRINT_BYTES
 * MESSAGE_BYTES[,B...] [CHAINS[,C...]]]
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

/* Half round trips of `count` sizes into `times`: three passes over all of them, the fastest per
 * size (on a loaded machine whole stretches of time may pass with the two ranks never running
 * at once); sizes of 64 KiB and more take a tenth of the batches (at least 5). */
static void half_round_trips(int rank, char* buf, const int* sizes, int count, int reps, double* times) {
  for (int pass = 0; pass < 3; ++pass)
    for (int i = 0; i < count; ++i) {
      const int batches = sizes[i] >= (1 << 16) ? (reps / 10 > 5 ? reps / 10 : 5) : reps;
      const double t = half_round_trip(rank, buf, sizes[i], batches);
      times[i] = (pass == 0 || t < times[i]) ? t : times[i];
    }
}

/* Whether rank 0's blocking MPI_Send of `bytes` returns before rank 1, kLate (200 us) behind
 * it, posts the receive: eager (the message is buffered) or rendezvous (the send waits for the receive).
 * The fastest of three tries; both ranks get the answer. A behaviour, not a time: the waits
 * differ by the whole delay, so a loaded machine does not blur the answer. */
static int sends_eagerly(int rank, char* buf, int bytes) {
  const double kLate = 200e-6;
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
      const double t = MPI_Wtime() - t0;
      if (t < best) best = t;
    } else if (rank == 1) {
      while (MPI_Wtime() - t0 < kLate) {
      }
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  int eager = best < kLate / 2;
  MPI_Bcast(&eager, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return eager;
}

/* The largest message size that goes eagerly (sends_eagerly), by bisection up to `max_bytes`;
 * -1 if every size up to `max_bytes` does, 0 if none does. */
static int eager_limit(int rank, char* buf, int max_bytes) {
  if (sends_eagerly(rank, buf, max_bytes)) return -1;
  if (!sends_eagerly(rank, buf, 1)) return 0;
  int lo = 1, hi = max_bytes; /* lo eager, hi not */
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (sends_eagerly(rank, buf, mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
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

/* `cells` dependent multiply-adds from `carry` on over consecutive doubles of `buf` (`len` of
 * them) from `*cursor` on, wrapping, the cursor left after them; the last value. */
static double chain_of_cells(double* buf, long long len, long long* cursor, long long cells, double carry) {
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
  return carry;
}

/* One block of computation: `cells` multiply-adds over the next doubles of `buf`, the cursor
 * left after the block: the blocked pipeline's column walk, each block the next part of the
 * array, the whole array once per len / cells blocks (so the array's footprint goes through the
 * caches as the program's does). The block is `chains` dependent chains of about cells / chains
 * cells each, every chain starting from the block's first value (as every column of a pipeline's
 * block starts from a received value): one chain is one long dependency; several are the
 * program's columns, which the processor overlaps within a block but not across an MPI call. */
static void kernel(double* buf, long long len, long long* cursor, long long cells, long long chains) {
  const double seed = g_sink;
  double sum = 0.0;
  for (long long j = 0; j < chains; ++j) {
    const long long share = cells / chains + (j < cells % chains ? 1 : 0);
    sum += chain_of_cells(buf, len, cursor, share, seed);
  }
  g_sink = sum / (double)chains;
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
  long long cells, blocks, chains;
  double compute_alone, period, overhead; /* this rank's medians over the batches, seconds */
  long long cells_done;                   /* cells this rank's measured blocks updated */
} InSitu;

/* Cells per block of `chains` chains for about `compute_ns`: time a trial block size on both
 * ranks at once (as in the stage), scale to compute_ns, time again and rescale (the per-cell cost
 * depends on the block's size and chains). `*buf` is grown to at least the block. */
static long long cells_for(double compute_ns, long long chains, double** buf, long long len) {
  long long cells = 1024 > chains ? 1024 : chains, cursor = 0;
  for (int round = 0; round < 3; ++round) {
    const long long this_len = cells > len ? cells : len;
    *buf = filled(*buf, this_len);
    double best = 1e30;
    for (int b = 0; b < 5; ++b) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < 16; ++i) kernel(*buf, this_len, &cursor, cells, chains);
      const double t = (MPI_Wtime() - t0) / 16.0;
      if (t < best) best = t;
    }
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double next = (double)cells * compute_ns * 1e-9 / (best > 0 ? best : 1e-9);
    if (next < (double)chains) next = (double)chains;
    if (next > 1e9) next = 1e9;
    cells = (long long)(next + 0.5);
    MPI_Bcast(&cells, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  }
  return cells;
}

/* `nsizes` block sizes (`compute_ns[i]`, messages of `msg_bytes[i]`), their batches interleaved
 * (batch b runs every size once, starting at size b mod nsizes, so no size always follows the
 * same one). Each batch of a size: both ranks time `blocks` blocks of computation alone, then
 * the one-way stage (rank 0: compute, MPI_Send; rank 1: MPI_Recv, compute; the receiver's
 * period from the return of its first receive, so the fill is not in it). A rank's per-message
 * cost in the batch is its stage period minus its computation alone; the medians over the
 * batches are reported in `out[i]`. */
static void in_situ(int rank, const double* compute_ns, long long footprint, const int* msg_bytes,
                    const long long* chains, int nsizes, int batches, InSitu* out) {
  long long len = footprint / (long long)sizeof(double);
  if (len < 1) len = 1;
  double* buf = NULL;
  int max_msg = 1;
  for (int i = 0; i < nsizes; ++i) {
    out[i] = (InSitu){cells_for(compute_ns[i], chains[i], &buf, len), 64, chains[i], 0, 0, 0, 0};
    if (out[i].cells > len) len = out[i].cells;
    if (msg_bytes[i] > max_msg) max_msg = msg_bytes[i];
  }
  buf = filled(buf, len);
  char* msg = calloc((size_t)max_msg, 1);
  const size_t cells = (size_t)batches * (size_t)nsizes;
  double* alone = malloc(cells * sizeof(double));
  double* period = malloc(cells * sizeof(double));
  double* diff = malloc(cells * sizeof(double));
  if (msg == NULL || alone == NULL || period == NULL || diff == NULL) {
    fprintf(stderr, "scalatrace-calibrate: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  long long cursor = 0;
  for (int b = 0; b < batches; ++b) {
    for (int j = 0; j < nsizes; ++j) {
      const int i = (b + j) % nsizes;
      const int blocks = (int)out[i].blocks, bytes = msg_bytes[i];
      const long long n = out[i].cells, ch = out[i].chains;
      const size_t at = (size_t)i * (size_t)batches + (size_t)b;
      const long long before = g_cells_done;
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int k = 0; k < blocks; ++k) kernel(buf, len, &cursor, n, ch);
      alone[at] = (MPI_Wtime() - t0) / blocks;
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        t0 = MPI_Wtime();
        for (int k = 0; k < blocks; ++k) {
          kernel(buf, len, &cursor, n, ch);
          MPI_Send(msg, bytes, MPI_BYTE, 1, 6, MPI_COMM_WORLD);
        }
        period[at] = (MPI_Wtime() - t0) / blocks;
      } else if (rank == 1) {
        MPI_Recv(msg, bytes, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t0 = MPI_Wtime();
        for (int k = 1; k < blocks; ++k) {
          kernel(buf, len, &cursor, n, ch);
          MPI_Recv(msg, bytes, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        period[at] = (MPI_Wtime() - t0) / (blocks - 1);
        kernel(buf, len, &cursor, n, ch);
      } else {
        period[at] = alone[at];
      }
      diff[at] = period[at] - alone[at];
      out[i].cells_done += g_cells_done - before;
    }
  }
  for (int i = 0; i < nsizes; ++i) {
    const size_t at = (size_t)i * (size_t)batches;
    out[i].overhead = median(diff + at, batches);
    out[i].compute_alone = median(alone + at, batches);
    out[i].period = median(period + at, batches);
  }
  free(diff);
  free(period);
  free(alone);
  free(msg);
  free(buf);
}

/* A comma-separated list of numbers into `v` (at most `cap`); the count, or -1 if malformed. */
static int parse_list(const char* text, double* v, int cap) {
  int n = 0;
  const char* p = text;
  while (*p != '\0') {
    char* end = NULL;
    const double x = strtod(p, &end);
    if (end == p || n == cap) return -1;
    v[n++] = x;
    if (*end == ',')
      ++end;
    else if (*end != '\0')
      return -1;
    p = end;
  }
  return n;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reps = argc > 1 ? atoi(argv[1]) : 200;
  const int max_bytes = argc > 2 ? atoi(argv[2]) : (1 << 20);
  enum { kMaxBlocks = 64 };
  double compute_ns[kMaxBlocks], msg_list[kMaxBlocks], chain_list[kMaxBlocks];
  int nsizes = 0, nmsg = 1, nchains = 1;
  msg_list[0] = 8;
  chain_list[0] = 1;
  if (argc > 3) nsizes = parse_list(argv[3], compute_ns, kMaxBlocks);
  const long long footprint = argc > 4 ? atoll(argv[4]) : 0;
  if (argc > 5) nmsg = parse_list(argv[5], msg_list, kMaxBlocks);
  if (argc > 6) nchains = parse_list(argv[6], chain_list, kMaxBlocks);
  int bad = size < 2 || reps < 1 || max_bytes < 1 || footprint < 0 || nsizes < 0 || nmsg < 1 ||
            (nmsg > 1 && nmsg != nsizes) || nchains < 1 || (nchains > 1 && nchains != nsizes);
  for (int i = 0; i < nsizes && !bad; ++i) bad = !(compute_ns[i] >= 0);
  for (int i = 0; i < nmsg && !bad; ++i) bad = !(msg_list[i] >= 0 && msg_list[i] < 2147483648.0);
  for (int i = 0; i < nchains && !bad; ++i)
    bad = !(chain_list[i] >= 1 && chain_list[i] <= 1e6 && chain_list[i] == (double)(long long)chain_list[i]);
  if (nsizes == 1 && compute_ns[0] == 0) nsizes = 0; /* COMPUTE_NS 0: no in-situ measurement */
  for (int i = 0; i < nsizes && !bad; ++i) bad = !(compute_ns[i] > 0);
  if (bad) {
    if (rank == 0)
      fprintf(
          stderr,
          "scalatrace-calibrate: needs 2 ranks, REPS >= 1, MAX_BYTES >= 1, COMPUTE_NS (> 0, or a comma-separated "
          "list of up to %d), FOOTPRINT_BYTES >= 0, MESSAGE_BYTES >= 0 (one, or one per COMPUTE_NS) and CHAINS (whole "
          "numbers 1 to 1000000, one or one per COMPUTE_NS)\n",
          (int)kMaxBlocks);
    MPI_Finalize();
    return 2;
  }
  int msg_bytes[kMaxBlocks];
  long long chains[kMaxBlocks];
  for (int i = 0; i < nsizes; ++i) {
    msg_bytes[i] = (int)msg_list[nmsg > 1 ? i : 0];
    chains[i] = (long long)chain_list[nchains > 1 ? i : 0];
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
  for (int k = 1; k <= max_bytes && n < 61; k *= 4) sizes[n++] = k; /* 3 places left below */
  half_round_trips(rank, buf, sizes, n, reps, times);
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
  /* The protocol switch and the ping-pong just past it (1, 2, 4 and 8 times the first
   * rendezvous size): what a rendezvous handshake costs beyond an eager message. */
  const int limit = eager_limit(rank, buf, max_bytes);
  /* The eager line's own sizes up to the switch (a quarter, a half and all of it): the powers
   * of 4 below it may stop far short of it (4,096 for 8,255). */
  const int powers = n;
  for (int d = 4; limit > 0 && d >= 1; d /= 2)
    if (limit / d > 1) sizes[n++] = limit / d;
  half_round_trips(rank, buf, sizes + powers, n - powers, reps, times + powers);
  int rendezvous_sizes[4];
  double rendezvous_times[4];
  int nr = 0;
  for (long long k = (long long)limit + 1; limit > 0 && k <= max_bytes && nr < 4; k *= 2)
    rendezvous_sizes[nr++] = (int)k;
  half_round_trips(rank, buf, rendezvous_sizes, nr, reps, rendezvous_times);
  InSitu mine[kMaxBlocks], other[kMaxBlocks];
  if (nsizes > 0) {
    in_situ(rank, compute_ns, footprint, msg_bytes, chains, nsizes, reps, mine);
    for (int i = 0; i < nsizes; ++i) {
      other[i] = mine[i];
      if (rank == 1) {
        double v[4] = {mine[i].compute_alone, mine[i].period, mine[i].overhead, (double)mine[i].cells_done};
        MPI_Send(v, 4, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
      } else if (rank == 0) {
        double v[4];
        MPI_Recv(v, 4, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        other[i].compute_alone = v[0];
        other[i].period = v[1];
        other[i].overhead = v[2];
        other[i].cells_done = (long long)v[3];
      }
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
    printf("], \"eager_limit\": %d, \"rendezvous_sizes\": [", limit);
    for (int i = 0; i < nr; ++i) printf("%s%d", i ? ", " : "", rendezvous_sizes[i]);
    printf("], \"rendezvous_half_round_trip\": [");
    for (int i = 0; i < nr; ++i) printf("%s%.9e", i ? ", " : "", rendezvous_times[i]);
    printf("]");
    if (nsizes > 0) {
      /* one object per block size, in the order given; the pairs [rank 0 (the sender), rank 1 (the receiver)] */
      printf(", \"in_situ\": [");
      for (int i = 0; i < nsizes; ++i) {
        const InSitu *a = &mine[i], *b = &other[i];
        printf(
            "%s{\"compute_ns\": %.9e, \"footprint_bytes\": %lld, \"message_bytes\": %d, \"chains\": %lld, "
            "\"cells\": %lld, \"blocks\": %lld, \"batches\": %d, \"cells_done\": [%lld, %lld], "
            "\"compute_alone\": [%.9e, %.9e], \"period\": [%.9e, %.9e], \"overhead\": [%.9e, %.9e]}",
            i ? ", " : "", compute_ns[i], footprint, msg_bytes[i], a->chains, a->cells, a->blocks, reps, a->cells_done,
            b->cells_done, a->compute_alone, b->compute_alone, a->period, b->period, a->overhead, b->overhead);
      }
      printf("]");
    }
    printf("}\n");
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
