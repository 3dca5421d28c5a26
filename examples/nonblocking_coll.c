/* nonblocking_coll: nonblocking collectives completed in different ways. Per iteration:
 * Ibarrier completed by a Test loop; Ibcast (root rotating) + Wait; Iallreduce and Ialltoall
 * completed together by Waitall; Ireduce and Iallgather completed by a Testall loop; Igather
 * and Iscan completed by two Waitany calls. Each nonblocking collective creates one request
 * (handle-buffer slot); the loops' Test counts vary from run to run. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "nonblocking_coll", 3, 64);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const int n = a.bytes / 8 > 0 ? (int)(a.bytes / 8) : 1;
  double *s1 = calloc((size_t)n * size, sizeof(double)), *r1 = calloc((size_t)n * size, sizeof(double));
  double *s2 = calloc((size_t)n * size, sizeof(double)), *r2 = calloc((size_t)n * size, sizeof(double));
  MPI_Request req, pair[2];
  int flag = 0, index = 0;

  for (long it = 0; it < a.iters; ++it) {
    const int root = (int)(it % size);
    ex_compute(a.compute_us);
    LOG_IBARRIER(MPI_COMM_WORLD, &req);
    do {
      ex_compute(a.compute_us / 4);
      LOG_TEST(&req, &flag, MPI_STATUS_IGNORE);
    } while (!flag);

    LOG_IBCAST(s1, n, MPI_DOUBLE, root, MPI_COMM_WORLD, &req);
    ex_compute(a.compute_us);
    LOG_WAIT(&req, MPI_STATUS_IGNORE);

    LOG_IALLREDUCE(s1, r1, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &pair[0]);
    LOG_IALLTOALL(s2, n, MPI_DOUBLE, r2, n, MPI_DOUBLE, MPI_COMM_WORLD, &pair[1]);
    ex_compute(a.compute_us);
    LOG_WAITALL(2, pair, MPI_STATUSES_IGNORE);

    LOG_IREDUCE(s1, r1, n, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD, &pair[0]);
    LOG_IALLGATHER(s1, n, MPI_DOUBLE, r2, n, MPI_DOUBLE, MPI_COMM_WORLD, &pair[1]);
    do {
      ex_compute(a.compute_us / 4);
      LOG_TESTALL(2, pair, &flag, MPI_STATUSES_IGNORE);
    } while (!flag);

    LOG_IGATHER(s1, n, MPI_DOUBLE, r1, n, MPI_DOUBLE, (root + 1) % size, MPI_COMM_WORLD, &pair[0]);
    LOG_ISCAN(s2, r2, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &pair[1]);
    for (int k = 0; k < 2; ++k) LOG_WAITANY(2, pair, &index, MPI_STATUS_IGNORE);
  }
  (void)rank;

  free(s1);
  free(r1);
  free(s2);
  free(r2);
  LOG_FINALIZE();
  return 0;
}
