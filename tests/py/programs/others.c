/* Calls functions scalatrace does not model: they are counted as Op::Other by name. */
#include <mpi.h>

int main(int argc, char **argv) {
  int rank, len;
  char name[MPI_MAX_PROCESSOR_NAME];
  MPI_Datatype pair;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Get_processor_name(name, &len);
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int buf[4] = {rank, rank, 0, 0};
  MPI_Bcast(buf, 2, pair, 0, MPI_COMM_WORLD);
  MPI_Type_free(&pair);
  double t = MPI_Wtime();
  (void)t;
  MPI_Finalize();
  return 0;
}
