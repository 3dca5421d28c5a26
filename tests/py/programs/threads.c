/* MPI_THREAD_MULTIPLE: THREADS threads per rank exchange messages with the partner rank at
 * the same time (blocking Send/Recv and Isend/Irecv/Wait, tag = thread), 2 ranks. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 20

static int rank;

static void *work(void *arg) {
  const int t = (int)(long)arg;
  const int peer = 1 - rank;
  double out[4] = {t, t, t, t}, in[4];
  for (int i = 0; i < ROUNDS; ++i) {
    MPI_Request req[2];
    MPI_Irecv(in, 4, MPI_DOUBLE, peer, t, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(out, 4, MPI_DOUBLE, peer, t, MPI_COMM_WORLD, &req[1]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    if (rank == 0) {
      MPI_Send(out, 1, MPI_DOUBLE, peer, 100 + t, MPI_COMM_WORLD);
    } else {
      MPI_Recv(in, 1, MPI_DOUBLE, peer, 100 + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    printf("no MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; ++t) pthread_create(&th[t], NULL, work, (void *)t);
  for (int t = 0; t < THREADS; ++t) pthread_join(th[t], NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
