/* Microbenchmark for the collector's cost per MPI call (benchmarks/collector_overhead.py).
 * 2 ranks. Each kernel runs N calls from ONE call site and prints the mean ns per call:
 *   iprobe     MPI_Iprobe that finds nothing (a cheap traced call, Op::Probe)
 *   comm_rank  MPI_Comm_rank (a cheap call counted as Op::Other)
 *   pingpong   8-byte MPI_Send/MPI_Recv ping-pong (per MPI call, 2 calls per message)
 * Each kernel reports the CPU time of the calling thread per call (CLOCK_THREAD_CPUTIME_ID):
 * unlike wall time it does not grow when the machine is oversubscribed (2 busy-polling ranks
 * plus other load on 2 cores). Kernel "pingpong" also reports wall time (MPI_Wtime, which the
 * collector does not wrap), since its CPU time includes MPICH's busy waiting.
 * usage: collector_bench [-n CALLS]   output: one JSON object on rank 0's stdout */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static double iprobe(int n) {
  int flag;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = cpu_ns();
  for (int i = 0; i < n; ++i) MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return (cpu_ns() - t0) / n;
}

static double comm_rank(int n) {
  int r;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = cpu_ns();
  for (int i = 0; i < n; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return (cpu_ns() - t0) / n;
}

static double pingpong(int n, int rank) {
  double buf = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < n; ++i) {
    if (rank == 0) {
      MPI_Send(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) * 1e9 / (2.0 * n);
}

int main(int argc, char** argv) {
  int rank, size, n = 200000;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], "-n") == 0) n = atoi(argv[i + 1]);
  iprobe(n / 10); /* warm-up: first visit of each call site */
  comm_rank(n / 10);
  const double a = iprobe(n);
  const double b = comm_rank(n);
  const double c = size >= 2 ? pingpong(n / 10, rank) : 0.0;
  if (rank == 0) printf("{\"iprobe\": %.1f, \"comm_rank\": %.1f, \"pingpong\": %.1f}\n", a, b, c);
  MPI_Finalize();
  return 0;
}
