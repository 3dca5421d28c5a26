/* rank_divergent: the code of the ScalaTrace 2 thesis, Fig. 5.4 (§5.2.4), which needs
 * loop-agnostic inter-node compression. Ranks pair up (even r, r+1); with N = ITER + (pair
 * index mod 2) exchanges per pair:
 *   even rank:  for (i = 0; i < N-1; i++) { Isend(r+1); Irecv(r+1); }
 *               Isend(r+1); Irecv(r+1); Waitall(2N);
 *   odd rank:   for (i = 0; i < N; i++) { Isend(r-1); Irecv(r-1); Waitall(2); }
 * (the figure is N = 6: rank 0 loops 5 times plus one peeled exchange, rank 1 loops 6 times).
 * The last rank of an odd count behaves like an even rank talking to MPI_PROC_NULL. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "rank_divergent", 6, 64);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const long trips = a.iters + (rank / 2) % 2;
  const int n = (int)a.bytes;
  char* sbuf = calloc((size_t)n + 1, 1);
  char* rbuf = calloc(((size_t)trips + 1) * ((size_t)n + 1), 1);
  MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)(2 * trips + 2));

  if (rank % 2 == 0) {
    const int peer = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    int nreq = 0;
    for (long i = 0; i < trips - 1; ++i) {
      ex_compute(a.compute_us);
      LOG_ISEND(sbuf, n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
      LOG_IRECV(rbuf + (size_t)i * (n + 1), n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
    }
    if (trips > 0) {
      ex_compute(a.compute_us);
      LOG_ISEND(sbuf, n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
      LOG_IRECV(rbuf + (size_t)(trips - 1) * (n + 1), n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[nreq]);
      nreq++;
    }
    LOG_WAITALL(nreq, reqs, MPI_STATUSES_IGNORE);
  } else {
    const int peer = rank - 1;
    for (long i = 0; i < trips; ++i) {
      ex_compute(a.compute_us);
      LOG_ISEND(sbuf, n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[0]);
      LOG_IRECV(rbuf, n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[1]);
      LOG_WAITALL(2, reqs, MPI_STATUSES_IGNORE);
    }
  }

  free(sbuf);
  free(rbuf);
  free(reqs);
  LOG_FINALIZE();
  return 0;
}
