/* reduce_types: reductions of predefined types whose elements are not 1, 2, 4 or 8 bytes (as NPB
 * FT's MPI_DOUBLE_COMPLEX checksum): 16-byte complex sums, long double maxima, and the pair
 * types of MAXLOC / MINLOC, each with its real op. */
#include <complex.h>
#include <mpi.h>

int main(int argc, char** argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double complex z[2] = {rank + 1.0 * I, 2.0}, zsum[2];
  long double l = rank, lmax;
  struct {
    long value;
    int rank;
  } li = {rank, rank}, limin;
  struct {
    int value;
    int rank;
  } ii = {rank, rank}, iimax;
  for (int it = 0; it < 3; ++it) {
    MPI_Reduce(z, zsum, 2, MPI_C_DOUBLE_COMPLEX, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(z, zsum, 2, MPI_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
    MPI_Allreduce(&l, &lmax, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&li, &limin, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD);
    MPI_Allreduce(&ii, &iimax, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
