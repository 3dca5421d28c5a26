/* A growing irregular event stream (benchmarks/collector_memory.py): N cheap local calls (MPI_Iprobe that
 * finds nothing) from 16 call sites in a pseudo-random order with pseudo-random tags, so no
 * loop ever repeats and every event adds to the rank's trace. Prints, per rank, the peak
 * resident memory (VmHWM of /proc/self/status, KiB) at the end of the calls (before
 * MPI_Finalize: the recording phase) and after MPI_Finalize (the collector's final merge).
 * usage: irregular_growth [-n CALLS]  (default 200000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long peak_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kib = atol(line + 6);
  fclose(f);
  return kib;
}

#define PROBE(tag) MPI_Iprobe(MPI_ANY_SOURCE, (tag), MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE)

int main(int argc, char** argv) {
  int rank, flag = 0;
  long calls = 200000;
  unsigned long long state = 88172645463325252ull;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], "-n") == 0) calls = atol(argv[i + 1]);
  for (long i = 0; i < calls; ++i) {
    state ^= state << 13; /* xorshift64: the same sequence on every rank */
    state ^= state >> 7;
    state ^= state << 17;
    const int tag = (int)(state >> 40) & 0x7fff;
    switch ((state >> 20) & 15) {
      case 0:
        PROBE(tag);
        break;
      case 1:
        PROBE(tag);
        break;
      case 2:
        PROBE(tag);
        break;
      case 3:
        PROBE(tag);
        break;
      case 4:
        PROBE(tag);
        break;
      case 5:
        PROBE(tag);
        break;
      case 6:
        PROBE(tag);
        break;
      case 7:
        PROBE(tag);
        break;
      case 8:
        PROBE(tag);
        break;
      case 9:
        PROBE(tag);
        break;
      case 10:
        PROBE(tag);
        break;
      case 11:
        PROBE(tag);
        break;
      case 12:
        PROBE(tag);
        break;
      case 13:
        PROBE(tag);
        break;
      case 14:
        PROBE(tag);
        break;
      default:
        PROBE(tag);
        break;
    }
  }
  const long recording = peak_kib();
  MPI_Finalize();
  printf("rank %d calls %ld peak_recording_kib %ld peak_final_kib %ld\n", rank, calls, recording, peak_kib());
  return 0;
}
