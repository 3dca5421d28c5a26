/* comm_split: communicators beyond MPI_COMM_WORLD. The ranks form a 2D grid (MPI_Dims_create,
 * row-major). Setup: Comm_split into row and column communicators, a Comm_split where only
 * even ranks get a communicator (odd ranks pass MPI_UNDEFINED and get MPI_COMM_NULL),
 * Comm_dup of MPI_COMM_WORLD, Cart_create of the grid and Cart_sub keeping the first
 * dimension (the columns again, built differently). Per iteration: Allreduce along the row,
 * Bcast down the column (root rotating), a Sendrecv shift along the row, a Barrier on the dup,
 * an Allreduce on the Cart_sub communicator and a Reduce on the even-ranks communicator.
 * At the end every communicator is freed with Comm_free. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "comm_split", 3, 64);
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const int n = a.bytes / 8 > 0 ? (int)(a.bytes / 8) : 1;

  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  const int row = rank / dims[1], col = rank % dims[1];

  MPI_Comm rowcomm, colcomm, evencomm, dup, cart, cartsub;
  LOG_COMM_SPLIT(MPI_COMM_WORLD, row, col, &rowcomm);
  LOG_COMM_SPLIT(MPI_COMM_WORLD, col, row, &colcomm);
  LOG_COMM_SPLIT(MPI_COMM_WORLD, rank % 2 == 0 ? 0 : MPI_UNDEFINED, size - rank, &evencomm);
  LOG_COMM_DUP(MPI_COMM_WORLD, &dup);
  int periods[2] = {0, 0}, remain[2] = {1, 0};
  LOG_CART_CREATE(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  LOG_CART_SUB(cart, remain, &cartsub);

  int rowrank, rowsize, colsize;
  MPI_Comm_rank(rowcomm, &rowrank);
  MPI_Comm_size(rowcomm, &rowsize);
  MPI_Comm_size(colcomm, &colsize);
  double *sbuf = calloc((size_t)n, sizeof(double)), *rbuf = calloc((size_t)n, sizeof(double));

  for (long it = 0; it < a.iters; ++it) {
    ex_compute(a.compute_us);
    LOG_ALLREDUCE(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, rowcomm);
    LOG_BCAST(rbuf, n, MPI_DOUBLE, (int)(it % colsize), colcomm);
    LOG_SENDRECV(sbuf, n, MPI_DOUBLE, (rowrank + 1) % rowsize, 5, rbuf, n, MPI_DOUBLE,
                 (rowrank + rowsize - 1) % rowsize, 5, rowcomm, MPI_STATUS_IGNORE);
    ex_compute(a.compute_us);
    LOG_BARRIER(dup);
    LOG_ALLREDUCE(sbuf, rbuf, n, MPI_DOUBLE, MPI_MIN, cartsub);
    if (evencomm != MPI_COMM_NULL) LOG_REDUCE(sbuf, rbuf, n, MPI_DOUBLE, MPI_MAX, 0, evencomm);
  }

  LOG_COMM_FREE(&cartsub);
  LOG_COMM_FREE(&cart);
  LOG_COMM_FREE(&dup);
  if (evencomm != MPI_COMM_NULL) LOG_COMM_FREE(&evencomm);
  LOG_COMM_FREE(&colcomm);
  LOG_COMM_FREE(&rowcomm);
  free(sbuf);
  free(rbuf);
  LOG_FINALIZE();
  return 0;
}
