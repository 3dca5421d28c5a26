/* Ground-truth logging and argument parsing shared by the example programs.
 *
 * Every MPI call an example makes goes through one of the LOG_* macros below. A macro performs
 * the MPI call INLINE at its point of use (so the return address the collector sees belongs to
 * the example's own source line) and then logs what the program asked for. With `--truth DIR`
 * each rank writes DIR/truth-<rank>.jsonl, one JSON object per call, in call order:
 *
 *   {"i":7,"op":"Isend","label":"stencil2d.c:123","comm":[0,1,2,3],"peer":1,"peer_world":1,
 *    "tag":5,"bytes":800,"root":null,"nreq":null, ...op-specific keys...}
 *
 * Always present: i (0-based line index), op (MPI name without "MPI_"), label (file:line of the
 * call, plus "#context" when the example set one with ex_set_context), comm (world ranks of the
 * communicator's members in comm-rank order, null for ops without a communicator), peer (rank in
 * comm, "any" for MPI_ANY_SOURCE, "proc_null" for MPI_PROC_NULL, null if not applicable),
 * peer_world (the peer as a world rank, or the same sentinel / null), tag ("any" for
 * MPI_ANY_TAG), bytes, root, nreq (number of requests an op refers to).
 * Op-specific keys: dtsize, peer2/peer2_world/tag2/bytes2/dtsize2 (Sendrecv receive side and
 * collective receive side), redop (RedOpCode number: 1 sum, 2 prod, 3 max, 4 min, ...),
 * requests (for each request an op refers to: the line index "i" of the call that created it,
 * or null for MPI_REQUEST_NULL), sendcounts/recvcounts (bytes per comm rank, v-collectives),
 * newcomm (members of the created communicator, null for MPI_COMM_NULL), color, key, ndims,
 * index / outcount / indices (as returned), flag (as returned).
 *
 * Internal queries of the logging layer use PMPI_* so a PMPI collector never sees them.
 */
#ifndef SCALATRACE_EXAMPLES_TRUTH_H
#define SCALATRACE_EXAMPLES_TRUTH_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- arguments */

typedef struct ex_args {
  const char* prog;
  long iters;            /* -i ITER */
  long bytes;            /* -s BYTES */
  long compute_us;       /* -c MICROSECONDS of busy computation between calls */
  int verbose;           /* -v: per-op count summary on rank 0 at the end */
  const char* truth_dir; /* --truth DIR */
  long opt[26];          /* example-specific -<letter> VALUE options */
  unsigned char known[26];
  const char* help[26];
} ex_args;

/* Sets the common defaults (-c defaults to 20 microseconds). */
void ex_args_init(ex_args* a, const char* prog, long iters, long bytes);
/* Declares an example-specific integer option -<letter> with a default and a help text. */
void ex_args_option(ex_args* a, char letter, long def, const char* help);
/* Parses argv; prints usage and exits on -h or a bad argument. */
void ex_args_parse(ex_args* a, int argc, char** argv);
long ex_opt(const ex_args* a, char letter);

/* Busy computation for about `us` microseconds (clock_gettime, no MPI). */
void ex_compute(long us);
/* Deterministic pseudo-random numbers (splitmix64). */
unsigned long long ex_rand(unsigned long long* state);

/* ---------------------------------------------------------------- truth state */

/* Label suffix for the calls that follow ("" or NULL clears it). Use it when one source line
 * is reached through different call paths (e.g. the first level of a recursion). */
void ex_set_context(const char* context);
int ex_rank(void); /* world rank (valid after LOG_INIT) */
int ex_size(void);

/* Implementation hooks used by the macros (not for direct use). */
void ex_after_init(const ex_args* a, const char* file, int line, const char* op);
void ex_before_finalize(const char* file, int line);
void ex_after_finalize(void);
void ex_log_p2p(const char* op, const char* file, int line, int count, MPI_Datatype dt, int peer, int tag,
                MPI_Comm comm, MPI_Request* created);
void ex_log_sendrecv(const char* file, int line, int scount, MPI_Datatype sdt, int dest, int stag, int rcount,
                     MPI_Datatype rdt, int source, int rtag, MPI_Comm comm);
void ex_log_probe(const char* op, const char* file, int line, int source, int tag, MPI_Comm comm, int flag);
void ex_snapshot_requests(int n, const MPI_Request* reqs);
void ex_log_requests(const char* op, const char* file, int line, int n, const MPI_Request* reqs, int index,
                     int outcount, const int* indices, int flag);
void ex_log_coll(const char* op, const char* file, int line, MPI_Comm comm, int root, int scount, MPI_Datatype sdt,
                 int rcount, MPI_Datatype rdt, MPI_Op redop, const int* scounts, const int* rcounts,
                 MPI_Request* created);
void ex_log_comm_create(const char* op, const char* file, int line, MPI_Comm comm, MPI_Comm newcomm, int color, int key,
                        int ndims);
void ex_forget_comm(MPI_Comm comm); /* before Comm_free: remembers members, drops the cache */
void ex_log_comm_free(const char* file, int line);

#define EX_SITE __FILE__, __LINE__
#define EX_NOOP MPI_OP_NULL

/* ---------------------------------------------------------------- lifecycle */
#define LOG_INIT(argcp, argvp, args)      \
  do {                                    \
    MPI_Init(argcp, argvp);               \
    ex_after_init(args, EX_SITE, "Init"); \
  } while (0)
#define LOG_FINALIZE()           \
  do {                           \
    ex_before_finalize(EX_SITE); \
    MPI_Finalize();              \
    ex_after_finalize();         \
  } while (0)

/* ---------------------------------------------------------------- point to point */
#define LOG_SEND(buf, n, dt, dest, tag, comm)                  \
  do {                                                         \
    MPI_Send(buf, n, dt, dest, tag, comm);                     \
    ex_log_p2p("Send", EX_SITE, n, dt, dest, tag, comm, NULL); \
  } while (0)
#define LOG_SSEND(buf, n, dt, dest, tag, comm)                  \
  do {                                                          \
    MPI_Ssend(buf, n, dt, dest, tag, comm);                     \
    ex_log_p2p("Ssend", EX_SITE, n, dt, dest, tag, comm, NULL); \
  } while (0)
#define LOG_RECV(buf, n, dt, src, tag, comm, status)          \
  do {                                                        \
    MPI_Recv(buf, n, dt, src, tag, comm, status);             \
    ex_log_p2p("Recv", EX_SITE, n, dt, src, tag, comm, NULL); \
  } while (0)
#define LOG_SENDRECV(sb, sn, sdt, dest, stag, rb, rn, rdt, src, rtag, comm, status) \
  do {                                                                              \
    MPI_Sendrecv(sb, sn, sdt, dest, stag, rb, rn, rdt, src, rtag, comm, status);    \
    ex_log_sendrecv(EX_SITE, sn, sdt, dest, stag, rn, rdt, src, rtag, comm);        \
  } while (0)
#define LOG_ISEND(buf, n, dt, dest, tag, comm, req)            \
  do {                                                         \
    MPI_Isend(buf, n, dt, dest, tag, comm, req);               \
    ex_log_p2p("Isend", EX_SITE, n, dt, dest, tag, comm, req); \
  } while (0)
#define LOG_IRECV(buf, n, dt, src, tag, comm, req)            \
  do {                                                        \
    MPI_Irecv(buf, n, dt, src, tag, comm, req);               \
    ex_log_p2p("Irecv", EX_SITE, n, dt, src, tag, comm, req); \
  } while (0)
#define LOG_SEND_INIT(buf, n, dt, dest, tag, comm, req)            \
  do {                                                             \
    MPI_Send_init(buf, n, dt, dest, tag, comm, req);               \
    ex_log_p2p("Send_init", EX_SITE, n, dt, dest, tag, comm, req); \
  } while (0)
#define LOG_RECV_INIT(buf, n, dt, src, tag, comm, req)            \
  do {                                                            \
    MPI_Recv_init(buf, n, dt, src, tag, comm, req);               \
    ex_log_p2p("Recv_init", EX_SITE, n, dt, src, tag, comm, req); \
  } while (0)
#define LOG_PROBE(src, tag, comm, status)              \
  do {                                                 \
    MPI_Probe(src, tag, comm, status);                 \
    ex_log_probe("Probe", EX_SITE, src, tag, comm, 1); \
  } while (0)
#define LOG_IPROBE(src, tag, comm, flagp, status)              \
  do {                                                         \
    MPI_Iprobe(src, tag, comm, flagp, status);                 \
    ex_log_probe("Iprobe", EX_SITE, src, tag, comm, *(flagp)); \
  } while (0)

/* ---------------------------------------------------------------- requests */
#define LOG_START(req)                                        \
  do {                                                        \
    ex_snapshot_requests(1, req);                             \
    MPI_Start(req);                                           \
    ex_log_requests("Start", EX_SITE, 1, req, 0, 0, NULL, 0); \
  } while (0)
#define LOG_STARTALL(n, reqs)                                     \
  do {                                                            \
    ex_snapshot_requests(n, reqs);                                \
    MPI_Startall(n, reqs);                                        \
    ex_log_requests("Startall", EX_SITE, n, reqs, 0, 0, NULL, 0); \
  } while (0)
#define LOG_REQUEST_FREE(req)                                        \
  do {                                                               \
    ex_snapshot_requests(1, req);                                    \
    MPI_Request_free(req);                                           \
    ex_log_requests("Request_free", EX_SITE, 1, req, 0, 0, NULL, 0); \
  } while (0)
#define LOG_WAIT(req, status)                                \
  do {                                                       \
    ex_snapshot_requests(1, req);                            \
    MPI_Wait(req, status);                                   \
    ex_log_requests("Wait", EX_SITE, 1, req, 0, 0, NULL, 0); \
  } while (0)
#define LOG_WAITALL(n, reqs, statuses)                           \
  do {                                                           \
    ex_snapshot_requests(n, reqs);                               \
    MPI_Waitall(n, reqs, statuses);                              \
    ex_log_requests("Waitall", EX_SITE, n, reqs, 0, 0, NULL, 0); \
  } while (0)
#define LOG_WAITANY(n, reqs, indexp, status)                             \
  do {                                                                   \
    ex_snapshot_requests(n, reqs);                                       \
    MPI_Waitany(n, reqs, indexp, status);                                \
    ex_log_requests("Waitany", EX_SITE, n, reqs, *(indexp), 0, NULL, 0); \
  } while (0)
#define LOG_WAITSOME(n, reqs, outcountp, indices, statuses)                     \
  do {                                                                          \
    ex_snapshot_requests(n, reqs);                                              \
    MPI_Waitsome(n, reqs, outcountp, indices, statuses);                        \
    ex_log_requests("Waitsome", EX_SITE, n, reqs, 0, *(outcountp), indices, 0); \
  } while (0)
#define LOG_TEST(req, flagp, status)                                \
  do {                                                              \
    ex_snapshot_requests(1, req);                                   \
    MPI_Test(req, flagp, status);                                   \
    ex_log_requests("Test", EX_SITE, 1, req, 0, 0, NULL, *(flagp)); \
  } while (0)
#define LOG_TESTALL(n, reqs, flagp, statuses)                           \
  do {                                                                  \
    ex_snapshot_requests(n, reqs);                                      \
    MPI_Testall(n, reqs, flagp, statuses);                              \
    ex_log_requests("Testall", EX_SITE, n, reqs, 0, 0, NULL, *(flagp)); \
  } while (0)
#define LOG_TESTANY(n, reqs, indexp, flagp, status)                             \
  do {                                                                          \
    ex_snapshot_requests(n, reqs);                                              \
    MPI_Testany(n, reqs, indexp, flagp, status);                                \
    ex_log_requests("Testany", EX_SITE, n, reqs, *(indexp), 0, NULL, *(flagp)); \
  } while (0)
#define LOG_TESTSOME(n, reqs, outcountp, indices, statuses)                     \
  do {                                                                          \
    ex_snapshot_requests(n, reqs);                                              \
    MPI_Testsome(n, reqs, outcountp, indices, statuses);                        \
    ex_log_requests("Testsome", EX_SITE, n, reqs, 0, *(outcountp), indices, 0); \
  } while (0)

/* ---------------------------------------------------------------- collectives
 * ex_log_coll(op, site, comm, root(-1: none), scount, sdt, rcount, rdt, redop, scounts, rcounts,
 *             created request or NULL) */
#define LOG_BARRIER(comm)                                                                           \
  do {                                                                                              \
    MPI_Barrier(comm);                                                                              \
    ex_log_coll("Barrier", EX_SITE, comm, -1, 0, MPI_BYTE, 0, MPI_BYTE, EX_NOOP, NULL, NULL, NULL); \
  } while (0)
#define LOG_BCAST(buf, n, dt, root, comm)                                               \
  do {                                                                                  \
    MPI_Bcast(buf, n, dt, root, comm);                                                  \
    ex_log_coll("Bcast", EX_SITE, comm, root, n, dt, n, dt, EX_NOOP, NULL, NULL, NULL); \
  } while (0)
#define LOG_REDUCE(sb, rb, n, dt, op, root, comm)                                   \
  do {                                                                              \
    MPI_Reduce(sb, rb, n, dt, op, root, comm);                                      \
    ex_log_coll("Reduce", EX_SITE, comm, root, n, dt, n, dt, op, NULL, NULL, NULL); \
  } while (0)
#define LOG_ALLREDUCE(sb, rb, n, dt, op, comm)                                       \
  do {                                                                               \
    MPI_Allreduce(sb, rb, n, dt, op, comm);                                          \
    ex_log_coll("Allreduce", EX_SITE, comm, -1, n, dt, n, dt, op, NULL, NULL, NULL); \
  } while (0)
#define LOG_SCAN(sb, rb, n, dt, op, comm)                                       \
  do {                                                                          \
    MPI_Scan(sb, rb, n, dt, op, comm);                                          \
    ex_log_coll("Scan", EX_SITE, comm, -1, n, dt, n, dt, op, NULL, NULL, NULL); \
  } while (0)
#define LOG_EXSCAN(sb, rb, n, dt, op, comm)                                       \
  do {                                                                            \
    MPI_Exscan(sb, rb, n, dt, op, comm);                                          \
    ex_log_coll("Exscan", EX_SITE, comm, -1, n, dt, n, dt, op, NULL, NULL, NULL); \
  } while (0)
#define LOG_GATHER(sb, sn, sdt, rb, rn, rdt, root, comm)                                     \
  do {                                                                                       \
    MPI_Gather(sb, sn, sdt, rb, rn, rdt, root, comm);                                        \
    ex_log_coll("Gather", EX_SITE, comm, root, sn, sdt, rn, rdt, EX_NOOP, NULL, NULL, NULL); \
  } while (0)
#define LOG_GATHERV(sb, sn, sdt, rb, rns, displs, rdt, root, comm)                          \
  do {                                                                                      \
    MPI_Gatherv(sb, sn, sdt, rb, rns, displs, rdt, root, comm);                             \
    ex_log_coll("Gatherv", EX_SITE, comm, root, sn, sdt, 0, rdt, EX_NOOP, NULL, rns, NULL); \
  } while (0)
#define LOG_SCATTER(sb, sn, sdt, rb, rn, rdt, root, comm)                                     \
  do {                                                                                        \
    MPI_Scatter(sb, sn, sdt, rb, rn, rdt, root, comm);                                        \
    ex_log_coll("Scatter", EX_SITE, comm, root, sn, sdt, rn, rdt, EX_NOOP, NULL, NULL, NULL); \
  } while (0)
#define LOG_SCATTERV(sb, sns, displs, sdt, rb, rn, rdt, root, comm)                          \
  do {                                                                                       \
    MPI_Scatterv(sb, sns, displs, sdt, rb, rn, rdt, root, comm);                             \
    ex_log_coll("Scatterv", EX_SITE, comm, root, 0, sdt, rn, rdt, EX_NOOP, sns, NULL, NULL); \
  } while (0)
#define LOG_ALLGATHER(sb, sn, sdt, rb, rn, rdt, comm)                                         \
  do {                                                                                        \
    MPI_Allgather(sb, sn, sdt, rb, rn, rdt, comm);                                            \
    ex_log_coll("Allgather", EX_SITE, comm, -1, sn, sdt, rn, rdt, EX_NOOP, NULL, NULL, NULL); \
  } while (0)
#define LOG_ALLGATHERV(sb, sn, sdt, rb, rns, displs, rdt, comm)                              \
  do {                                                                                       \
    MPI_Allgatherv(sb, sn, sdt, rb, rns, displs, rdt, comm);                                 \
    ex_log_coll("Allgatherv", EX_SITE, comm, -1, sn, sdt, 0, rdt, EX_NOOP, NULL, rns, NULL); \
  } while (0)
#define LOG_ALLTOALL(sb, sn, sdt, rb, rn, rdt, comm)                                         \
  do {                                                                                       \
    MPI_Alltoall(sb, sn, sdt, rb, rn, rdt, comm);                                            \
    ex_log_coll("Alltoall", EX_SITE, comm, -1, sn, sdt, rn, rdt, EX_NOOP, NULL, NULL, NULL); \
  } while (0)
#define LOG_ALLTOALLV(sb, sns, sdispls, sdt, rb, rns, rdispls, rdt, comm)                 \
  do {                                                                                    \
    MPI_Alltoallv(sb, sns, sdispls, sdt, rb, rns, rdispls, rdt, comm);                    \
    ex_log_coll("Alltoallv", EX_SITE, comm, -1, 0, sdt, 0, rdt, EX_NOOP, sns, rns, NULL); \
  } while (0)
#define LOG_REDUCE_SCATTER(sb, rb, rns, dt, op, comm)                                    \
  do {                                                                                   \
    MPI_Reduce_scatter(sb, rb, rns, dt, op, comm);                                       \
    ex_log_coll("Reduce_scatter", EX_SITE, comm, -1, 0, dt, 0, dt, op, NULL, rns, NULL); \
  } while (0)
#define LOG_REDUCE_SCATTER_BLOCK(sb, rb, rn, dt, op, comm)                                        \
  do {                                                                                            \
    MPI_Reduce_scatter_block(sb, rb, rn, dt, op, comm);                                           \
    ex_log_coll("Reduce_scatter_block", EX_SITE, comm, -1, rn, dt, rn, dt, op, NULL, NULL, NULL); \
  } while (0)

/* ---------------------------------------------------------------- nonblocking collectives */
#define LOG_IBARRIER(comm, req)                                                                     \
  do {                                                                                              \
    MPI_Ibarrier(comm, req);                                                                        \
    ex_log_coll("Ibarrier", EX_SITE, comm, -1, 0, MPI_BYTE, 0, MPI_BYTE, EX_NOOP, NULL, NULL, req); \
  } while (0)
#define LOG_IBCAST(buf, n, dt, root, comm, req)                                         \
  do {                                                                                  \
    MPI_Ibcast(buf, n, dt, root, comm, req);                                            \
    ex_log_coll("Ibcast", EX_SITE, comm, root, n, dt, n, dt, EX_NOOP, NULL, NULL, req); \
  } while (0)
#define LOG_IREDUCE(sb, rb, n, dt, op, root, comm, req)                             \
  do {                                                                              \
    MPI_Ireduce(sb, rb, n, dt, op, root, comm, req);                                \
    ex_log_coll("Ireduce", EX_SITE, comm, root, n, dt, n, dt, op, NULL, NULL, req); \
  } while (0)
#define LOG_IALLREDUCE(sb, rb, n, dt, op, comm, req)                                 \
  do {                                                                               \
    MPI_Iallreduce(sb, rb, n, dt, op, comm, req);                                    \
    ex_log_coll("Iallreduce", EX_SITE, comm, -1, n, dt, n, dt, op, NULL, NULL, req); \
  } while (0)
#define LOG_IALLGATHER(sb, sn, sdt, rb, rn, rdt, comm, req)                                   \
  do {                                                                                        \
    MPI_Iallgather(sb, sn, sdt, rb, rn, rdt, comm, req);                                      \
    ex_log_coll("Iallgather", EX_SITE, comm, -1, sn, sdt, rn, rdt, EX_NOOP, NULL, NULL, req); \
  } while (0)
#define LOG_IALLTOALL(sb, sn, sdt, rb, rn, rdt, comm, req)                                   \
  do {                                                                                       \
    MPI_Ialltoall(sb, sn, sdt, rb, rn, rdt, comm, req);                                      \
    ex_log_coll("Ialltoall", EX_SITE, comm, -1, sn, sdt, rn, rdt, EX_NOOP, NULL, NULL, req); \
  } while (0)
#define LOG_IGATHER(sb, sn, sdt, rb, rn, rdt, root, comm, req)                               \
  do {                                                                                       \
    MPI_Igather(sb, sn, sdt, rb, rn, rdt, root, comm, req);                                  \
    ex_log_coll("Igather", EX_SITE, comm, root, sn, sdt, rn, rdt, EX_NOOP, NULL, NULL, req); \
  } while (0)
#define LOG_ISCAN(sb, rb, n, dt, op, comm, req)                                 \
  do {                                                                          \
    MPI_Iscan(sb, rb, n, dt, op, comm, req);                                    \
    ex_log_coll("Iscan", EX_SITE, comm, -1, n, dt, n, dt, op, NULL, NULL, req); \
  } while (0)

/* ---------------------------------------------------------------- communicators */
#define LOG_COMM_DUP(comm, newcommp)                                     \
  do {                                                                   \
    MPI_Comm_dup(comm, newcommp);                                        \
    ex_log_comm_create("Comm_dup", EX_SITE, comm, *(newcommp), 0, 0, 0); \
  } while (0)
#define LOG_COMM_SPLIT(comm, color, key, newcommp)                               \
  do {                                                                           \
    MPI_Comm_split(comm, color, key, newcommp);                                  \
    ex_log_comm_create("Comm_split", EX_SITE, comm, *(newcommp), color, key, 0); \
  } while (0)
#define LOG_CART_CREATE(comm, ndims, dims, periods, reorder, newcommp)          \
  do {                                                                          \
    MPI_Cart_create(comm, ndims, dims, periods, reorder, newcommp);             \
    ex_log_comm_create("Cart_create", EX_SITE, comm, *(newcommp), 0, 0, ndims); \
  } while (0)
#define LOG_CART_SUB(comm, remain, newcommp)                             \
  do {                                                                   \
    MPI_Cart_sub(comm, remain, newcommp);                                \
    ex_log_comm_create("Cart_sub", EX_SITE, comm, *(newcommp), 0, 0, 0); \
  } while (0)
#define LOG_COMM_FREE(commp)   \
  do {                         \
    ex_forget_comm(*(commp));  \
    MPI_Comm_free(commp);      \
    ex_log_comm_free(EX_SITE); \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
