/* extrap_requests: a 1D chain (no wrap-around) exchanging through persistent requests, a probed
 * message and a nonblocking collective. Every rank creates persistent receives from and sends
 * to its left and right neighbours (MPI_PROC_NULL at the ends), then per iteration starts them
 * all and waits, sends a message of 24 bytes to its right neighbour, which probes for it before
 * receiving it (without the probe when argv[1] is "noprobe"), and joins an MPI_Iallreduce it
 * waits for; the requests are freed at the end. With argv[1] "completions", the other
 * completion calls with outcomes that do not depend on timing: MPI_Testall of the inactive
 * persistent requests (true), MPI_Waitsome of the Iallreduce, then MPI_Waitany, MPI_Testany and
 * MPI_Test of its request, null by then. */
#include <mpi.h>
#include <string.h>

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int probe = !(argc > 1 && strcmp(argv[1], "noprobe") == 0);
  const int completions = argc > 1 && strcmp(argv[1], "completions") == 0;
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  const int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  double out[2][8] = {{0}}, in[2][8], note[3] = {0}, local = rank, global;
  MPI_Request persistent[4], collective;
  MPI_Recv_init(in[0], 8, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &persistent[0]);
  MPI_Recv_init(in[1], 8, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &persistent[1]);
  MPI_Send_init(out[0], 8, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &persistent[2]);
  MPI_Send_init(out[1], 8, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &persistent[3]);
  for (int it = 0; it < 3; ++it) {
    MPI_Startall(4, persistent);
    MPI_Status statuses[4];
    MPI_Waitall(4, persistent, statuses);
    int flag, index, done, indices[1];
    if (completions) MPI_Testall(4, persistent, &flag, statuses);
    if (right != MPI_PROC_NULL) MPI_Send(note, 3, MPI_DOUBLE, right, 5, MPI_COMM_WORLD);
    if (left != MPI_PROC_NULL) {
      MPI_Status status;
      if (probe) MPI_Probe(left, 5, MPI_COMM_WORLD, &status);
      MPI_Recv(note, 3, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Iallreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &collective);
    if (completions) {
      MPI_Waitsome(1, &collective, &done, indices, statuses);
      MPI_Waitany(1, &collective, &index, &statuses[0]);
      MPI_Testany(1, &collective, &index, &flag, &statuses[0]);
      MPI_Test(&collective, &flag, &statuses[0]);
    } else {
      MPI_Wait(&collective, MPI_STATUS_IGNORE);
    }
  }
  for (int i = 0; i < 4; ++i) MPI_Request_free(&persistent[i]);
  MPI_Finalize();
  return 0;
}
