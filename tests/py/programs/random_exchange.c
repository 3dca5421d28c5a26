/* random_exchange: a data-dependent program whose peers and message sizes change every
 * iteration (a random graph exchange, as sort and graph codes do), for lossy traces and their
 * probabilistic replay (issue 36, docs/lossy.md). Every rank draws the same random numbers, so
 * each knows whom it receives from:
 *   - two random shifts s1, s2 (1..size-1) per iteration: each rank sends a message of a random
 *     size (8..1600 bytes, drawn per rank) to rank + s1 and one to rank + s2 (Isend), receiving
 *     from rank - s1 and rank - s2 (Irecv from the source), then Waitall;
 *   - a gather step: rank (iteration mod size) receives one blocking message from every other
 *     rank with MPI_ANY_SOURCE, random sizes;
 *   - an MPI_Allreduce of a checksum.
 * The calls are the same every iteration; only peers and sizes vary.
 * Usage: random_exchange [iterations [work_us [max_shift]]]: 12 iterations by default; max_shift > 0
 * keeps the shifts within max_shift ranks on either side and leaves the gather out (a random
 * exchange among neighbours only: each rank hears from at most 2 * max_shift ranks); work_us > 0 adds a
 * data-dependent computation per iteration (work_us microseconds per KB the rank received,
 * spinning) so that replay times can be compared with the run's (rank 0 prints the time from
 * after MPI_Init to before MPI_Finalize). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_DEGREE 2
#define MAX_BYTES 1600

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void spin(double seconds) {
  const double end = now_s() + seconds;
  while (now_s() < end) {
  }
}

static unsigned long long state;
static unsigned draw(unsigned n) { /* the same sequence on every rank */
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)((state >> 33) % n);
}

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 1 ? atoi(argv[1]) : 12;
  const double work_us = argc > 2 ? atof(argv[2]) : 0;
  const int max_shift = argc > 3 ? atoi(argv[3]) : 0;
  const double start = MPI_Wtime();
  int* bytes = malloc(sizeof(int) * (size_t)size * MAX_DEGREE);
  char* sendbuf = calloc(MAX_BYTES * MAX_DEGREE, 1);
  char* recvbuf = calloc((size_t)MAX_BYTES * MAX_DEGREE * (size_t)size, 1);
  MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)(MAX_DEGREE * size + MAX_DEGREE));
  double checksum = 0;
  state = 12345;
  for (int it = 0; it < iterations; ++it) {
    /* The exchange of this iteration: every rank draws it whole. */
    int shift[MAX_DEGREE];
    for (int k = 0; k < MAX_DEGREE; ++k) {
      shift[k] = size > 1 ? 1 + (int)draw((unsigned)(size - 1)) : 0;
      if (max_shift > 0 && size > 1) {
        const int step = 1 + (int)draw((unsigned)max_shift);
        shift[k] = draw(2) ? step % size : (size - step % size) % size;
        if (shift[k] == 0) shift[k] = 1;
      }
    }
    for (int r = 0; r < size; ++r)
      for (int k = 0; k < MAX_DEGREE; ++k) bytes[r * MAX_DEGREE + k] = 8 * (1 + (int)draw(MAX_BYTES / 8));
    int n = 0, received = 0;
    if (size > 1) {
      for (int k = 0; k < MAX_DEGREE; ++k) {
        const int from = (rank - shift[k] + size) % size;
        received += bytes[from * MAX_DEGREE + k];
        MPI_Irecv(recvbuf + (size_t)n * MAX_BYTES, bytes[from * MAX_DEGREE + k], MPI_BYTE, from, it, MPI_COMM_WORLD,
                  &reqs[n]);
        ++n;
      }
      for (int k = 0; k < MAX_DEGREE; ++k)
        MPI_Isend(sendbuf + k * MAX_BYTES, bytes[rank * MAX_DEGREE + k], MPI_BYTE, (rank + shift[k]) % size, it,
                  MPI_COMM_WORLD, &reqs[n++]);
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    if (work_us > 0) spin(1e-6 * work_us * (1.0 + received / 1024.0));
    /* Gather with a wildcard: the root takes the others' messages in arrival order. */
    const int root = it % size;
    const int mine = 8 * (1 + (int)((rank * 7919u + (unsigned)it * 104729u) % (MAX_BYTES / 8)));
    if (max_shift > 0) {
      /* neighbours only: no gather */
    } else if (rank == root) {
      for (int k = 1; k < size; ++k)
        MPI_Recv(recvbuf, MAX_BYTES, MPI_BYTE, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Send(sendbuf, mine, MPI_BYTE, root, 99, MPI_COMM_WORLD);
    }
    double local = (double)(n + rank), sum = 0;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    checksum += sum;
  }
  const double elapsed = MPI_Wtime() - start;
  if (rank == 0) printf("random_exchange: %d iterations, checksum %.0f, %.6f s\n", iterations, checksum, elapsed);
  free(bytes), free(sendbuf), free(recvbuf), free(reqs);
  MPI_Finalize();
  return 0;
}
