/* pipelined_sweeps: the communication of NPB BT's ADI solver in small. Every timestep copies
 * faces with both ring neighbours, then solves in three directions; each solve is a pipelined
 * sweep over CELLS stages forward and CELLS stages back (BT's x_solve: the first stage computes
 * without receiving, the last one does not send on; the back-substitution runs the other way).
 *
 *   pipelined_sweeps STEPS CELLS
 *
 * A forward stage other than the first: Irecv from the predecessor, Wait for the previous
 * Isend, Wait for the Irecv; every forward stage but the last then sends on (Isend to the
 * successor). The backward sweep is the same towards the predecessor, its first stage sending
 * from a statement of its own. Every rank runs every stage (BT's multi-partition), so the
 * pipeline never waits on a rank that has not started. With CELLS = 4 the events are those of
 * BT at 16 ranks: per direction Isend (Irecv Wait Wait Isend) x 3, then Isend' (Irecv Wait Wait
 * Isend) x 2 Irecv Wait Wait. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
enum { kCount = 64 };

static int rank, size;
static double face_out[2][kCount], face_in[2][kCount], info_out[kCount], info_in[kCount];
static MPI_Request send_id = MPI_REQUEST_NULL, recv_id = MPI_REQUEST_NULL;

NOINLINE static void copy_faces(void) {
  MPI_Request req[4];
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  MPI_Irecv(face_in[0], kCount, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(face_in[1], kCount, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(face_out[0], kCount, MPI_DOUBLE, right, 10, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(face_out[1], kCount, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

NOINLINE static void send_info(int to, int tag) {
  MPI_Isend(info_out, kCount, MPI_DOUBLE, to, tag, MPI_COMM_WORLD, &send_id);
}
NOINLINE static void receive_info(int from, int tag) {
  MPI_Irecv(info_in, kCount, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, &recv_id);
}

/* One direction's solve: `stride` picks the neighbours, as BT's x, y and z partners. */
NOINLINE static void solve(int cells, int stride) {
  const int successor = (rank + stride) % size, predecessor = (rank + size - stride) % size;
  for (int stage = 0; stage < cells; ++stage) {
    const int first = stage == 0, last = stage == cells - 1;
    if (!first) {
      receive_info(predecessor, 1);
      MPI_Wait(&send_id, MPI_STATUS_IGNORE);
      MPI_Wait(&recv_id, MPI_STATUS_IGNORE);
    }
    if (!last) send_info(successor, 1);
  }
  for (int stage = cells - 1; stage >= 0; --stage) {
    const int first = stage == 0, last = stage == cells - 1;
    if (last) {
      /* The last cell back-substitutes without waiting. Its send is a call statement of its
       * own, as in BT built with -O2 (gfortran peels this first iteration of the loop). */
      send_info(predecessor, 2);
      continue;
    }
    receive_info(successor, 2);
    MPI_Wait(&send_id, MPI_STATUS_IGNORE);
    MPI_Wait(&recv_id, MPI_STATUS_IGNORE);
    if (!first) send_info(predecessor, 2);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || atoi(argv[1]) < 1 || atoi(argv[2]) < 2) {
    if (rank == 0) fprintf(stderr, "usage: pipelined_sweeps STEPS CELLS(>=2)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int params[2] = {atoi(argv[1]), atoi(argv[2])};
  MPI_Bcast(params, 2, MPI_INT, 0, MPI_COMM_WORLD);
  const int strides[3] = {1, size - 1, size > 2 ? 2 : 1};
  for (int step = 0; step < params[0]; ++step) {
    copy_faces();
    solve(params[1], strides[0]);
    solve(params[1], strides[1]);
    solve(params[1], strides[2]);
  }
  double norm = 1.0, total;
  MPI_Allreduce(&norm, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
