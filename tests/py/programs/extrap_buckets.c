/* extrap_buckets: NPB IS's communication on a fixed total of keys (strong scaling). Each rank
 * draws TOTAL / P random keys (a seed of its own), counts how many fall in each rank's key
 * range, exchanges the counts with MPI_Alltoall (one int per pair) and the keys with
 * MPI_Alltoallv: the Alltoallv counts follow the random keys, about TOTAL / P^2 per pair, and
 * no law of the rank count gives them at another size. Then IS's other calls: an Allreduce of
 * the bucket sizes (one int per rank) and the verification's exchange of one key with the next
 * rank (Irecv from the left, Send to the right, no wrap-around). */
#include <mpi.h>
#include <stdlib.h>

#define TOTAL 14400 /* divisible by P^2 for P = 2, 3, 4, 5, 6 */
#define MAX_KEY (1 << 20)

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int mine = TOTAL / size;
  int *keys = malloc(sizeof(int) * (size_t)mine), *sorted = malloc(sizeof(int) * (size_t)TOTAL);
  int *send_counts = calloc((size_t)size, sizeof(int)), *recv_counts = calloc((size_t)size, sizeof(int));
  int *send_displs = calloc((size_t)size, sizeof(int)), *recv_displs = calloc((size_t)size, sizeof(int));
  int *bucket_sizes = calloc((size_t)size, sizeof(int)), *all_sizes = calloc((size_t)size, sizeof(int));
  unsigned seed = 12345u + 977u * (unsigned)rank;
  for (int it = 0; it < 3; ++it) {
    for (int p = 0; p < size; ++p) send_counts[p] = 0;
    for (int i = 0; i < mine; ++i) {
      keys[i] = rand_r(&seed) % MAX_KEY;
      ++send_counts[(long)keys[i] * size / MAX_KEY];
    }
    for (int p = 1; p < size; ++p) send_displs[p] = send_displs[p - 1] + send_counts[p - 1];
    MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, MPI_COMM_WORLD);
    for (int p = 1; p < size; ++p) recv_displs[p] = recv_displs[p - 1] + recv_counts[p - 1];
    /* keys are sent unsorted: only the counts matter to the communication */
    MPI_Alltoallv(keys, send_counts, send_displs, MPI_INT, sorted, recv_counts, recv_displs, MPI_INT,
                  MPI_COMM_WORLD);
    bucket_sizes[rank] = recv_displs[size - 1] + recv_counts[size - 1];
    MPI_Allreduce(bucket_sizes, all_sizes, size, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  int left_key = 0, my_last = keys[mine - 1];
  MPI_Request req = MPI_REQUEST_NULL;
  if (rank > 0) MPI_Irecv(&left_key, 1, MPI_INT, rank - 1, 1000, MPI_COMM_WORLD, &req);
  if (rank < size - 1) MPI_Send(&my_last, 1, MPI_INT, rank + 1, 1000, MPI_COMM_WORLD);
  if (rank > 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
  free(keys);
  free(sorted);
  free(send_counts);
  free(recv_counts);
  free(send_displs);
  free(recv_displs);
  free(bucket_sizes);
  free(all_sizes);
  MPI_Finalize();
  return 0;
}
