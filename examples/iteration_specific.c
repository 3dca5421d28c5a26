/* iteration_specific: the loop with iteration-specific behaviour of the ScalaTrace 2 thesis,
 * Fig. 5.1 (§5.2.2):
 *     for (i = 0; i < ITER; i++) {
 *       MPI_Barrier();                 // E1
 *       if (i % K == 0) MPI_Isend();   // E2
 *       if (i % K == 1) MPI_Irecv();   // E3
 *       MPI_Barrier();                 // E4
 *     }
 * (the figure is ITER = K = 2: Isend only in iteration 0, Irecv only in iteration 1). Ranks
 * pair up (r, r xor 1); the last rank of an odd count talks to MPI_PROC_NULL. After the loop,
 * Irecvs for the Isends of unmatched iterations are posted and everything is completed with
 * one Waitall. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "iteration_specific", 2, 64);
  ex_args_option(&a, 'k', 2, "period K of the iteration-specific calls (>= 2)");
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const long period = ex_opt(&a, 'k') >= 2 ? ex_opt(&a, 'k') : 2;
  const int partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;
  const int n = (int)a.bytes;
  MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)(2 * a.iters + 2));
  char* buf = calloc(((size_t)a.iters + 1) * ((size_t)n + 1), 1);
  int nreq = 0, sends = 0, recvs = 0;

  for (long i = 0; i < a.iters; ++i) {
    ex_compute(a.compute_us);
    LOG_BARRIER(MPI_COMM_WORLD);
    if (i % period == 0) {
      LOG_ISEND(buf, n, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
      sends++;
    }
    if (i % period == 1) {
      LOG_IRECV(buf + (size_t)(recvs + 1) * (n + 1), n, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
      recvs++;
    }
    ex_compute(a.compute_us);
    LOG_BARRIER(MPI_COMM_WORLD);
  }
  while (recvs < sends) {
    LOG_IRECV(buf + (size_t)(recvs + 1) * (n + 1), n, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &reqs[nreq]);
    nreq++;
    recvs++;
  }
  LOG_WAITALL(nreq, reqs, MPI_STATUSES_IGNORE);

  free(reqs);
  free(buf);
  LOG_FINALIZE();
  return 0;
}
