/* alltoallv_is: the communication of NPB IS (integer sort). Every iteration: an Allreduce of
 * bucket sizes, an Alltoall of the number of keys each rank sends to each other rank, then an
 * Alltoallv of the keys. Send counts change every iteration; they are deterministic
 * pseudo-random numbers from the seed -r SEED, the iteration and the rank pair, between 0 and
 * -s BYTES / 4 keys (ints). Exercises elastic values / histograms of v-collective counts. */
#include <stdlib.h>

#include "truth.h"

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "alltoallv_is", 3, 256);
  ex_args_option(&a, 'r', 42, "seed of the key distribution");
  ex_args_option(&a, 'b', 8, "buckets in the bucket-size Allreduce");
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();
  const int maxkeys = a.bytes / 4 > 0 ? (int)(a.bytes / 4) : 1;
  const int nbuckets = ex_opt(&a, 'b') > 0 ? (int)ex_opt(&a, 'b') : 1;
  const unsigned long long seed = (unsigned long long)ex_opt(&a, 'r');

  int *scounts = malloc(sizeof(int) * (size_t)size), *rcounts = malloc(sizeof(int) * (size_t)size);
  int *sdispls = malloc(sizeof(int) * (size_t)size), *rdispls = malloc(sizeof(int) * (size_t)size);
  int* keys = calloc((size_t)size * (size_t)maxkeys + 1, sizeof(int));
  int* sorted = calloc((size_t)size * (size_t)maxkeys + 1, sizeof(int));
  int *buckets = calloc((size_t)nbuckets, sizeof(int)), *gbuckets = calloc((size_t)nbuckets, sizeof(int));

  for (long it = 0; it < a.iters; ++it) {
    ex_compute(a.compute_us);
    for (int j = 0; j < size; ++j) {
      unsigned long long s = seed * 1000003ULL + (unsigned long long)it * 7919ULL + (unsigned long long)rank * 131ULL +
                             (unsigned long long)j;
      scounts[j] = (int)(ex_rand(&s) % (unsigned long long)(maxkeys + 1));
    }
    for (int b = 0; b < nbuckets; ++b) buckets[b] = scounts[b % size] + b;
    LOG_ALLREDUCE(buckets, gbuckets, nbuckets, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    LOG_ALLTOALL(scounts, 1, MPI_INT, rcounts, 1, MPI_INT, MPI_COMM_WORLD);
    int st = 0, rt = 0;
    for (int j = 0; j < size; ++j) {
      sdispls[j] = st;
      rdispls[j] = rt;
      st += scounts[j];
      rt += rcounts[j];
    }
    ex_compute(a.compute_us);
    LOG_ALLTOALLV(keys, scounts, sdispls, MPI_INT, sorted, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
  }

  free(scounts);
  free(rcounts);
  free(sdispls);
  free(rdispls);
  free(keys);
  free(sorted);
  free(buckets);
  free(gbuckets);
  LOG_FINALIZE();
  return 0;
}
