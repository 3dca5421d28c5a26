/* triangular_loops: an inner loop whose trip count grows by one per outer iteration (1, 2, ...,
 * STEPS: an arithmetic progression), whose messages change size and tag on every inner
 * iteration (a counter over all of them), and a reduction on every third outer iteration only.
 * Each outer iteration opens with a broadcast. A generated benchmark indexes the inner values by the iterations of the earlier visits, the
 * triangular sum s*(s+1)/2 of the trip counts, and runs the reduction under a condition.
 *
 *   triangular_loops [STEPS]   (default 6) */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 6;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  char out[64] = {0}, in[64];
  double local = rank, sum = 0;
  long count = 0;
  for (int s = 0; s < steps; ++s) {
    MPI_Bcast(&local, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);  /* opens each outer iteration */
    for (int k = 0; k <= s; ++k, ++count) {
      const int bytes = 8 * (1 + (int)(count % 5)), tag = (int)(count % 7);
      MPI_Sendrecv(out, bytes, MPI_BYTE, right, tag, in, bytes, MPI_BYTE, left, tag, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    }
    if (s % 3 == 0) MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
