/* dims_create: prints MPI_Dims_create(n, nd, {0, ...}) for every n <= N and nd = 2, 3, one line
 * "nd n d0 d1 [d2]" each: the MPI library's own grids, against which extrapolation's grid rule
 * is checked.
 *
 *   dims_create N
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int limit = argc > 1 ? atoi(argv[1]) : 100;
  for (int nd = 2; nd <= 3; ++nd)
    for (int n = 1; n <= limit; ++n) {
      int dims[3] = {0, 0, 0};
      MPI_Dims_create(n, nd, dims);
      printf("%d %d", nd, n);
      for (int i = 0; i < nd; ++i) printf(" %d", dims[i]);
      printf("\n");
    }
  MPI_Finalize();
  return 0;
}
