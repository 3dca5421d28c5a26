/* critical_pipeline: a pipeline with one slow stage, whose critical path is known. Every
 * iteration rank r > 0 receives a value from rank r - 1 (Recv on even iterations, Irecv + Wait on
 * odd ones), computes, and sends it on to rank r + 1. Every stage computes 2 ms per iteration but
 * the SLOW rank 40 ms, so after the first iteration the pipeline runs at the slow rank's pace and
 * the ranks after it wait. The last rank computes a 10 ms tail after its last receive, then all
 * ranks meet in a Barrier.
 *
 * The run's critical path: rank 0's first computation and send, each stage's first receive up
 * to the slow rank, every computation of the slow rank, its last send, the last rank's tail,
 * the Barrier (the last rank enters last).
 *
 *   critical_pipeline [ITERATIONS] [SLOW] [UNIT]   (defaults 5, 2, 2000; at least 4 ranks)
 *
 * UNIT scales the times: a stage computes UNIT us, the slow rank 20 x UNIT, the tail 5 x UNIT.
 * With more ranks than cores a rank can start its first receive milliseconds late (descheduled);
 * a larger UNIT keeps rank 0's first computation longer than that.
 */
#include <mpi.h>
#include <stdlib.h>
#include "busy_wait.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 1 ? atoi(argv[1]) : 5;
  const int slow = argc > 2 ? atoi(argv[2]) : 2;
  const long unit = argc > 3 ? atol(argv[3]) : 2000;
  double value = 0.0;
  for (int i = 0; i < iterations; ++i) {
    if (rank > 0) {
      if (i % 2 == 0) {
        MPI_Recv(&value, 1, MPI_DOUBLE, rank - 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Request request;
        MPI_Irecv(&value, 1, MPI_DOUBLE, rank - 1, i, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
      }
    }
    busy_us(rank == slow ? 20 * unit : unit);
    value += 1.0;
    if (rank < size - 1) MPI_Send(&value, 1, MPI_DOUBLE, rank + 1, i, MPI_COMM_WORLD);
  }
  if (rank == size - 1) busy_us(5 * unit);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return value == iterations + rank ? 0 : 1;
}
