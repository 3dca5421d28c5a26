/* One MPI call statement reached through stack shapes that exercise the collector's remembered
 * stack walks (cpp/pmpi/capture/walk_memo.hpp): the same return address at the same stack position
 * under different outer frames, recursion of varying depth, frames sized at run time (alloca),
 * a function that realigns the stack, and a second thread (MPI_THREAD_MULTIPLE).
 * Iteration i of the loop calls leaf() through path i % 5 (see the switch). */
#include <alloca.h>
#include <mpi.h>
#include <pthread.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
static volatile int sink;

NOINLINE static void leaf(int i) {
  int flag;
  MPI_Iprobe(MPI_ANY_SOURCE, 777, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  sink += i;
}
NOINLINE static void via_a(int i) { leaf(i); sink += 1; }
NOINLINE static void via_b(int i) { leaf(i); sink += 2; }
NOINLINE static void recurse(int depth, int i) {
  if (depth == 0) leaf(i);
  else recurse(depth - 1, i);
  sink += depth;
}
NOINLINE static void sized(int n) {
  char *p = alloca((size_t)n);
  memset(p, n & 0x7f, (size_t)n);
  via_a(p[n / 2]);
  sink += p[n - 1];
}
NOINLINE static void realigned(int i) {
  double buf[8] __attribute__((aligned(64)));
  for (int k = 0; k < 8; ++k) buf[k] = i + k;
  via_b((int)buf[i & 7]);
  sink += (int)buf[3];
}

static void run_paths(int n) {
  for (int i = 0; i < n; ++i) {
    switch (i % 5) {
      case 0: via_a(i); break;
      case 1: via_b(i); break;
      case 2: recurse(i % 7, i); break;
      case 3: sized(16 + 48 * (i % 4)); break;
      default: realigned(i); break;
    }
  }
}

static void *worker(void *arg) {
  run_paths(*(int *)arg);
  return NULL;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int n = 200;
  run_paths(n);
  if (provided == MPI_THREAD_MULTIPLE) {
    /* the second thread's calls come after the main thread's (joined before the barrier) */
    pthread_t t;
    pthread_create(&t, NULL, worker, &n);
    pthread_join(t, NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
