/* threads_waitall: MPI_THREAD_MULTIPLE with two threads per rank. Thread t of every rank
 * exchanges small messages with thread t of the partner rank (rank ^ 1): per iteration one
 * MPI_Irecv and one MPI_Isend with tag t, completed by one MPI_Waitall. Small sends complete
 * at once, and MPICH then hands the SAME request handle to both threads, so a collector that
 * pairs completions with requests by handle value alone mixes up the threads' requests.
 *
 * Ground truth (no truth file: the logging layer is single-threaded): every MPI_Waitall waits
 * for exactly one Irecv and one Isend of its own thread, i.e. with the same tag. Needs an even
 * number of ranks. Options: -i ITER (default 400), -s BYTES (default 8), -t THREADS (2). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "truth.h"

typedef struct {
  int thread, partner;
  long iters;
  int bytes;
} exchange_args;

static void* exchange(void* p) {
  const exchange_args* x = p;
  char *out = calloc((size_t)x->bytes + 1, 1), *in = calloc((size_t)x->bytes + 1, 1);
  for (long it = 0; it < x->iters; ++it) {
    MPI_Request req[2];
    MPI_Irecv(in, x->bytes, MPI_CHAR, x->partner, x->thread, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(out, x->bytes, MPI_CHAR, x->partner, x->thread, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  }
  free(out);
  free(in);
  return NULL;
}

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "threads_waitall", 400, 8);
  ex_args_option(&a, 't', 2, "threads per rank");
  ex_args_parse(&a, argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE || size % 2 != 0) {
    if (rank == 0) fprintf(stderr, "threads_waitall: needs MPI_THREAD_MULTIPLE and an even number of ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int nthreads = (int)ex_opt(&a, 't');
  pthread_t tid[16];
  exchange_args args[16];
  for (int t = 0; t < nthreads && t < 16; ++t) {
    args[t] = (exchange_args){t, rank ^ 1, a.iters, (int)a.bytes};
    pthread_create(&tid[t], NULL, exchange, &args[t]);
  }
  for (int t = 0; t < nthreads && t < 16; ++t) pthread_join(tid[t], NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  if (a.verbose && rank == 0)
    printf("threads_waitall: %d ranks x %d threads x %ld iterations\n", size, nthreads, a.iters);
  MPI_Finalize();
  return 0;
}
