/* ring: each iteration passes a token to the right neighbour with blocking Send/Recv (even ranks
 * send first, odd ranks receive first, so there is no deadlock), then to the left with
 * Sendrecv. With -m 1 only the Send/Recv phase runs, with -m 2 only the Sendrecv phase. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "ring", 4, 256);
  ex_args_option(&a, 'm', 3, "phases: 1 Send/Recv, 2 Sendrecv, 3 both");
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const long mode = ex_opt(&a, 'm');
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const int n = (int)a.bytes;
  char *out = calloc((size_t)n + 1, 1), *in = calloc((size_t)n + 1, 1);

  for (long it = 0; it < a.iters; ++it) {
    if (mode & 1) {
      ex_compute(a.compute_us);
      if (rank % 2 == 0) {
        LOG_SEND(out, n, MPI_CHAR, right, 1, MPI_COMM_WORLD);
        LOG_RECV(in, n, MPI_CHAR, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        LOG_RECV(in, n, MPI_CHAR, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        LOG_SEND(out, n, MPI_CHAR, right, 1, MPI_COMM_WORLD);
      }
    }
    if (mode & 2) {
      ex_compute(a.compute_us);
      LOG_SENDRECV(out, n, MPI_CHAR, left, 2, in, n, MPI_CHAR, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }

  free(out);
  free(in);
  LOG_FINALIZE();
  return 0;
}
