/* Many cheap MPI calls back to back (MPI_Comm_rank in a loop of argv[1] iterations, default
 * 2000): between two calls the program does almost nothing, so whatever compute the trace
 * records between them is the collector's own time unless the collector leaves it out
 * (docs/collector.md, "The collector's own time"). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int calls = argc > 1 ? atoi(argv[1]) : 2000;
  int rank = 0;
  for (int i = 0; i < calls; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Finalize();
  return 0;
}
