/* persistent: persistent requests to both ring neighbours (Send_init/Recv_init once), then per
 * iteration Startall + Waitall; every other iteration one extra persistent pair is driven with
 * Start + Wait. Request_free at the end. Exercises request-handle offsets of persistent
 * requests (ScalaTrace paper, Fig. 5). */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "persistent", 4, 512);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const int n = (int)a.bytes;
  char* buf = calloc(6 * ((size_t)n + 1), 1);
  MPI_Request reqs[4], extra[2];

  LOG_RECV_INIT(buf, n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &reqs[0]);
  LOG_RECV_INIT(buf + n + 1, n, MPI_BYTE, right, 2, MPI_COMM_WORLD, &reqs[1]);
  LOG_SEND_INIT(buf + 2 * (n + 1), n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &reqs[2]);
  LOG_SEND_INIT(buf + 3 * (n + 1), n, MPI_BYTE, left, 2, MPI_COMM_WORLD, &reqs[3]);
  LOG_RECV_INIT(buf + 4 * (n + 1), 8, MPI_BYTE, left, 3, MPI_COMM_WORLD, &extra[0]);
  LOG_SEND_INIT(buf + 5 * (n + 1), 8, MPI_BYTE, right, 3, MPI_COMM_WORLD, &extra[1]);

  for (long it = 0; it < a.iters; ++it) {
    ex_compute(a.compute_us);
    LOG_STARTALL(4, reqs);
    LOG_WAITALL(4, reqs, MPI_STATUSES_IGNORE);
    if (it % 2 == 1) {
      LOG_START(&extra[0]);
      LOG_START(&extra[1]);
      LOG_WAIT(&extra[1], MPI_STATUS_IGNORE);
      LOG_WAIT(&extra[0], MPI_STATUS_IGNORE);
    }
  }
  for (int k = 0; k < 4; ++k) LOG_REQUEST_FREE(&reqs[k]);
  LOG_REQUEST_FREE(&extra[0]);
  LOG_REQUEST_FREE(&extra[1]);

  free(buf);
  LOG_FINALIZE();
  return 0;
}
