/* extrap_cart: a 2D Cartesian communicator from MPI_Cart_create on MPI_Dims_create's grid,
 * periodic along the first dimension (rank = x * dims[1] + y in MPI's row-major order); per
 * iteration a Sendrecv with the neighbours MPI_Cart_shift gives in each dimension (MPI_PROC_NULL
 * at the ends of the second) and an Allreduce on the Cartesian communicator, which is freed at
 * the end. */
#include <mpi.h>

int main(int argc, char** argv) {
  int size, dims[2] = {0, 0}, periods[2] = {1, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  int source[2], dest[2];
  for (int d = 0; d < 2; ++d) MPI_Cart_shift(cart, d, 1, &source[d], &dest[d]);
  double out[8] = {0}, in[8], local = 1, global;
  for (int it = 0; it < 2; ++it) {
    for (int d = 0; d < 2; ++d)
      MPI_Sendrecv(out, 8, MPI_DOUBLE, dest[d], d, in, 8, MPI_DOUBLE, source[d], d, cart, MPI_STATUS_IGNORE);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
