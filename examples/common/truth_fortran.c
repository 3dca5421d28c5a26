/* Fortran entry points of the ground-truth layer (see truth.h), called from Fortran through
 * implicit interfaces (gfortran: trailing underscore, arguments by reference, hidden string
 * lengths at the end). With MPICH, C and Fortran request handles are the same integers, so
 * request arrays are used in place (their addresses key the request -> creating-line table). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "truth.h"

_Static_assert(sizeof(MPI_Request) == sizeof(MPI_Fint), "MPICH-style integer request handles");

static const char* const kFile = "fortran_ring.F90";

static void copy_str(char* dst, size_t cap, const char* src, size_t len) {
  if (len >= cap) len = cap - 1;
  memcpy(dst, src, len);
  while (len > 0 && dst[len - 1] == ' ') len--;
  dst[len] = '\0';
}

/* Interns op names: the logger keeps the pointers for its per-op counters. */
static const char* intern(const char* op, size_t len) {
  static char names[32][32];
  static int used = 0;
  char buf[32];
  copy_str(buf, sizeof buf, op, len);
  for (int k = 0; k < used; ++k)
    if (strcmp(names[k], buf) == 0) return names[k];
  if (used == 32) return "Other";
  snprintf(names[used], sizeof names[0], "%s", buf);
  return names[used++];
}

void exf_init_f_(const int* line, const char* truth, const int* verbose, size_t truth_len) {
  static char dir[4096];
  static ex_args a;
  copy_str(dir, sizeof dir, truth, truth_len);
  ex_args_init(&a, "fortran_ring", 0, 0);
  a.truth_dir = dir[0] ? dir : NULL;
  a.verbose = *verbose;
  ex_after_init(&a, kFile, *line, "Init");
}

void exf_before_finalize_f_(const int* line) { ex_before_finalize(kFile, *line); }
void exf_after_finalize_f_(void) { ex_after_finalize(); }
void exf_compute_f_(const int* us) { ex_compute(*us); }

/* op: "Send", "Recv", "Isend", "Irecv"; req: the request variable of nonblocking ops. */
void exf_p2p_f_(const char* op, const int* line, const int* count, const MPI_Fint* dt, const int* peer, const int* tag,
                const MPI_Fint* comm, const int* nonblocking, MPI_Fint* req, size_t op_len) {
  ex_log_p2p(intern(op, op_len), kFile, *line, *count, MPI_Type_f2c(*dt), *peer, *tag, MPI_Comm_f2c(*comm),
             *nonblocking ? (MPI_Request*)req : NULL);
}

void exf_snapshot_f_(const int* n, MPI_Fint* reqs) { ex_snapshot_requests(*n, (const MPI_Request*)reqs); }

void exf_waitall_f_(const int* line, const int* n, MPI_Fint* reqs) {
  ex_log_requests("Waitall", kFile, *line, *n, (const MPI_Request*)reqs, 0, 0, NULL, 0);
}

/* kind: 0 Barrier, 1 Bcast, 2 Allreduce(sum), 3 Reduce(max) */
void exf_coll_f_(const int* kind, const int* line, const MPI_Fint* comm, const int* root, const int* count,
                 const MPI_Fint* dt) {
  MPI_Comm c = MPI_Comm_f2c(*comm);
  MPI_Datatype t = MPI_Type_f2c(*dt);
  const int n = *count;
  switch (*kind) {
    case 0:
      ex_log_coll("Barrier", kFile, *line, c, -1, 0, MPI_BYTE, 0, MPI_BYTE, MPI_OP_NULL, NULL, NULL, NULL);
      break;
    case 1:
      ex_log_coll("Bcast", kFile, *line, c, *root, n, t, n, t, MPI_OP_NULL, NULL, NULL, NULL);
      break;
    case 2:
      ex_log_coll("Allreduce", kFile, *line, c, -1, n, t, n, t, MPI_SUM, NULL, NULL, NULL);
      break;
    default:
      ex_log_coll("Reduce", kFile, *line, c, *root, n, t, n, t, MPI_MAX, NULL, NULL, NULL);
      break;
  }
}
