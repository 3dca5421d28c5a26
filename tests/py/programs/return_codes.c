/* Prints the return codes of successful and failing MPI calls (MPI_ERRORS_RETURN) and the
 * results they computed: identical output with and without the collector is the test. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, size, rc, x, y = 0, flag = -1;
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  x = rank + 1;
  rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d allreduce rc=%d sum=%d\n", rank, rc, y);
  rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD); /* invalid rank */
  int cls = -1;
  MPI_Error_class(rc, &cls);
  printf("rank %d bad send rc!=0:%d class=%d\n", rank, rc != MPI_SUCCESS, cls);
  MPI_Request req = MPI_REQUEST_NULL;
  rc = MPI_Isend(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req); /* invalid count */
  MPI_Error_class(rc, &cls);
  printf("rank %d bad isend rc!=0:%d class=%d null=%d\n", rank, rc != MPI_SUCCESS, cls,
         req == MPI_REQUEST_NULL);
  rc = MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  printf("rank %d iprobe rc=%d flag=%d\n", rank, rc, flag);
  rc = MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &(MPI_Comm){0});
  printf("rank %d split rc=%d\n", rank, rc);
  rc = MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d barrier rc=%d\n", rank, rc);
  rc = MPI_Finalize();
  printf("rank %d finalize rc=%d\n", rank, rc);
  return 0;
}
