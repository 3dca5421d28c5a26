/* waitsome: Irecv from all neighbours (distance 1 and 2, non-periodic), Isend to all, then a
 * Waitsome loop until every request is complete (ScalaTrace aggregates such loops); a second
 * phase does the same exchange completed by a Testsome loop, and a third by Testany/Waitany.
 * Waitsome/Testsome outcounts and indices vary from run to run. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "waitsome", 3, 256);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  static const int offsets[4] = {-2, -1, 1, 2};
  const int n = (int)a.bytes;
  char *sbuf = calloc((size_t)n + 1, 1), *rbuf = calloc(4 * ((size_t)n + 1), 1);
  MPI_Request reqs[8];
  int indices[8], outcount = 0, index = 0, flag = 0;

  for (long it = 0; it < a.iters; ++it) {
    for (int phase = 0; phase < 3; ++phase) {
      ex_compute(a.compute_us);
      int nreq = 0;
      for (int k = 0; k < 4; ++k) {
        const int peer = rank + offsets[k];
        if (peer < 0 || peer >= size) continue;
        LOG_IRECV(rbuf + (size_t)k * (n + 1), n, MPI_BYTE, peer, 30 + phase, MPI_COMM_WORLD, &reqs[nreq]);
        nreq++;
      }
      for (int k = 0; k < 4; ++k) {
        const int peer = rank + offsets[k];
        if (peer < 0 || peer >= size) continue;
        LOG_ISEND(sbuf, n, MPI_BYTE, peer, 30 + phase, MPI_COMM_WORLD, &reqs[nreq]);
        nreq++;
      }
      int done = 0;
      while (done < nreq) {
        if (phase == 0) {
          LOG_WAITSOME(nreq, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
          done += outcount;
        } else if (phase == 1) {
          ex_compute(a.compute_us / 4);
          LOG_TESTSOME(nreq, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
          done += outcount;
        } else {
          LOG_TESTANY(nreq, reqs, &index, &flag, MPI_STATUS_IGNORE);
          if (flag) {
            done++;
          } else {
            LOG_WAITANY(nreq, reqs, &index, MPI_STATUS_IGNORE);
            done++;
          }
        }
      }
    }
  }

  free(sbuf);
  free(rbuf);
  LOG_FINALIZE();
  return 0;
}
