/* imbalance: a ring halo exchange where rank r computes BASE * 3^r microseconds per step before
 * sending (each rank three times its left neighbour's work, so every rank's compute times fall
 * in a timing group of their own), then waits for both neighbours and meets the others in a
 * barrier. Rank 0 waits the longest: the load imbalance a data frame must not average away.
 *
 *   imbalance [STEPS [BASE]]   (defaults 6 steps, 40 us)
 *
 * With more ranks than cores, a rank that is descheduled when its busy wait ends computes longer
 * than asked (milliseconds per step): a large BASE keeps the ranks' order above that noise.
 */
#include <mpi.h>
#include <stdlib.h>
#include "busy_wait.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 6;
  long work = argc > 2 ? atol(argv[2]) : 40;
  for (int r = 0; r < rank; ++r) work *= 3;
  double out[2] = {1.0, 2.0}, in[2];
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  for (int s = 0; s < steps; ++s) {
    MPI_Request req[4];
    busy_us(work);
    MPI_Irecv(&in[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&in[1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(&out[0], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(&out[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
