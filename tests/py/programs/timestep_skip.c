/* timestep_skip: a timestep loop whose first or last iteration skips a collective, as LULESH's
 * first timestep skips the MPI_Allreduce of its time increment (cycle 0).
 *
 *   timestep_skip STEPS FIELDS SKIP
 *
 * Every timestep opens with an MPI_Allreduce (the time increment), exchanges FIELDS fields
 * with both ring neighbours (Irecv, Irecv, Isend, Isend, Waitall per field, each field from its
 * own call statement, so the iteration has 5 * FIELDS distinct calls: with 16 fields it is
 * longer than the compressor's per-event alignment bound, as LULESH's is) and closes with an
 * MPI_Allreduce (a residual). SKIP: "none" (both collectives in every timestep), "first-open"
 * (the first timestep skips the opening one, as LULESH), "first-close", "last-open" or
 * "last-close". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
enum { kCount = 32, kMaxFields = 16 };

static int rank, size;
static double send_buf[2][kCount], recv_buf[2][kCount];

NOINLINE static void exchange(int field) {
  MPI_Request req[4];
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  MPI_Irecv(recv_buf[0], kCount, MPI_DOUBLE, left, field, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(recv_buf[1], kCount, MPI_DOUBLE, right, field, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(send_buf[0], kCount, MPI_DOUBLE, right, field, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(send_buf[1], kCount, MPI_DOUBLE, left, field, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

/* Each field is exchanged from its own statement: distinct call sites, as a real code's
 * exchanges of position, velocity, gradients... are. */
static void exchange_fields(int fields) {
  for (int f = 0; f < fields; ++f) {
    switch (f) {
      case 0: exchange(f); break;
      case 1: exchange(f); break;
      case 2: exchange(f); break;
      case 3: exchange(f); break;
      case 4: exchange(f); break;
      case 5: exchange(f); break;
      case 6: exchange(f); break;
      case 7: exchange(f); break;
      case 8: exchange(f); break;
      case 9: exchange(f); break;
      case 10: exchange(f); break;
      case 11: exchange(f); break;
      case 12: exchange(f); break;
      case 13: exchange(f); break;
      case 14: exchange(f); break;
      default: exchange(f); break;
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *modes[] = {"none", "first-open", "first-close", "last-open", "last-close"};
  int mode = -1;
  for (int m = 0; argc == 4 && m < 5; ++m)
    if (strcmp(argv[3], modes[m]) == 0) mode = m;
  if (argc != 4 || mode < 0 || atoi(argv[1]) < 1 || atoi(argv[2]) < 1 || atoi(argv[2]) > kMaxFields) {
    if (rank == 0)
      fprintf(stderr, "usage: timestep_skip STEPS FIELDS(1-16) none|first-open|first-close|last-open|last-close\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int steps = atoi(argv[1]), fields = atoi(argv[2]);
  int params[2] = {steps, fields};
  MPI_Bcast(params, 2, MPI_INT, 0, MPI_COMM_WORLD);
  double dt = 1.0, new_dt, residual = 0.0, total;
  for (int step = 0; step < steps; ++step) {
    const int first = step == 0, last = step == steps - 1;
    if (!(mode == 1 && first) && !(mode == 3 && last))
      MPI_Allreduce(&dt, &new_dt, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    exchange_fields(fields);
    if (!(mode == 2 && first) && !(mode == 4 && last))
      MPI_Allreduce(&residual, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Reduce(&dt, &new_dt, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
