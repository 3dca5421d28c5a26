/* Ground-truth logging and argument parsing for the example programs (see truth.h). */
#include "truth.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ================================================================== arguments */

void ex_args_init(ex_args* a, const char* prog, long iters, long bytes) {
  memset(a, 0, sizeof *a);
  a->prog = prog;
  a->iters = iters;
  a->bytes = bytes;
  a->compute_us = 20;
}

void ex_args_option(ex_args* a, char letter, long def, const char* help) {
  int k = letter - 'a';
  if (k < 0 || k >= 26) {
    fprintf(stderr, "%s: option letter must be a-z\n", a->prog);
    exit(2);
  }
  a->opt[k] = def;
  a->known[k] = 1;
  a->help[k] = help;
}

long ex_opt(const ex_args* a, char letter) {
  int k = letter - 'a';
  if (k < 0 || k >= 26 || !a->known[k]) {
    fprintf(stderr, "%s: internal error: option -%c not declared\n", a->prog, letter);
    exit(2);
  }
  return a->opt[k];
}

static void usage(const ex_args* a, FILE* out) {
  fprintf(out, "usage: %s [-i ITER] [-s BYTES] [-c MICROSECONDS] [-v] [--truth DIR]", a->prog);
  for (int k = 0; k < 26; ++k)
    if (a->known[k]) fprintf(out, " [-%c N]", 'a' + k);
  fprintf(out,
          "\n  -i ITER          iterations (default %ld)\n"
          "  -s BYTES         message size in bytes (default %ld)\n"
          "  -c MICROSECONDS  busy computation between MPI calls (default %ld)\n"
          "  -v               print per-op call counts of rank 0 at the end\n"
          "  --truth DIR      write DIR/truth-<rank>.jsonl, one JSON line per MPI call\n",
          a->iters, a->bytes, a->compute_us);
  for (int k = 0; k < 26; ++k)
    if (a->known[k]) fprintf(out, "  -%c N             %s (default %ld)\n", 'a' + k, a->help[k], a->opt[k]);
}

static long parse_long(const ex_args* a, const char* flag, const char* text) {
  char* end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0') {
    fprintf(stderr, "%s: %s expects an integer, got '%s'\n", a->prog, flag, text);
    usage(a, stderr);
    exit(2);
  }
  return v;
}

void ex_args_parse(ex_args* a, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      usage(a, stdout);
      exit(0);
    }
    if (strcmp(arg, "-v") == 0) {
      a->verbose = 1;
      continue;
    }
    if (strncmp(arg, "--truth=", 8) == 0) {
      a->truth_dir = arg + 8;
      continue;
    }
    const int needs_value =
        strcmp(arg, "--truth") == 0 || (arg[0] == '-' && arg[1] >= 'a' && arg[1] <= 'z' && arg[2] == '\0');
    if (!needs_value) {
      fprintf(stderr, "%s: unknown argument '%s'\n", a->prog, arg);
      usage(a, stderr);
      exit(2);
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: %s needs a value\n", a->prog, arg);
      exit(2);
    }
    const char* value = argv[++i];
    if (strcmp(arg, "--truth") == 0) {
      a->truth_dir = value;
    } else if (arg[1] == 'i') {
      a->iters = parse_long(a, arg, value);
    } else if (arg[1] == 's') {
      a->bytes = parse_long(a, arg, value);
    } else if (arg[1] == 'c') {
      a->compute_us = parse_long(a, arg, value);
    } else if (a->known[arg[1] - 'a']) {
      a->opt[arg[1] - 'a'] = parse_long(a, arg, value);
    } else {
      fprintf(stderr, "%s: unknown option '%s'\n", a->prog, arg);
      usage(a, stderr);
      exit(2);
    }
  }
  if (a->iters < 0 || a->bytes < 0 || a->compute_us < 0) {
    fprintf(stderr, "%s: -i, -s and -c must not be negative\n", a->prog);
    exit(2);
  }
}

void ex_compute(long us) {
  if (us <= 0) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile double x = 1.0;
  do {
    for (int k = 0; k < 64; ++k) x = x * 1.0000001 + 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000L < us);
}

unsigned long long ex_rand(unsigned long long* state) {
  unsigned long long z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* ================================================================== truth state */

static int g_rank = -1, g_size = 0;
static FILE* g_out = NULL;
static long g_line = 0; /* index of the next truth line */
static int g_verbose = 0;
static const char* g_prog = "";
static char g_context[128] = "";

int ex_rank(void) { return g_rank; }
int ex_size(void) { return g_size; }

void ex_set_context(const char* context) { snprintf(g_context, sizeof g_context, "%s", context ? context : ""); }

/* ---- per-op counts (for -v) */
#define EX_MAX_OPS 64
static struct {
  const char* op;
  long n;
} g_counts[EX_MAX_OPS];
static int g_nops = 0;

static void count_op(const char* op) {
  for (int k = 0; k < g_nops; ++k)
    if (strcmp(g_counts[k].op, op) == 0) {
      g_counts[k].n++;
      return;
    }
  if (g_nops < EX_MAX_OPS) {
    g_counts[g_nops].op = op;
    g_counts[g_nops].n = 1;
    g_nops++;
  }
}

/* ---- communicator members (world ranks in comm-rank order), cached per handle */
#define EX_MAX_COMMS 64
static struct {
  MPI_Comm comm;
  int n;
  int* members;
} g_comms[EX_MAX_COMMS];
static int g_ncomms = 0;

static int comm_members(MPI_Comm comm, const int** members) {
  for (int k = 0; k < g_ncomms; ++k)
    if (g_comms[k].comm == comm) {
      *members = g_comms[k].members;
      return g_comms[k].n;
    }
  int n = 0;
  PMPI_Comm_size(comm, &n);
  int* m = malloc(sizeof(int) * (size_t)(n ? n : 1));
  int* idx = malloc(sizeof(int) * (size_t)(n ? n : 1));
  MPI_Group g, wg;
  PMPI_Comm_group(comm, &g);
  PMPI_Comm_group(MPI_COMM_WORLD, &wg);
  for (int r = 0; r < n; ++r) idx[r] = r;
  PMPI_Group_translate_ranks(g, n, idx, wg, m);
  PMPI_Group_free(&g);
  PMPI_Group_free(&wg);
  free(idx);
  if (g_ncomms == EX_MAX_COMMS) {
    fprintf(stderr, "truth: too many live communicators\n");
    PMPI_Abort(MPI_COMM_WORLD, 3);
  }
  g_comms[g_ncomms].comm = comm;
  g_comms[g_ncomms].n = n;
  g_comms[g_ncomms].members = m;
  g_ncomms++;
  *members = m;
  return n;
}

static int g_freed_n = 0;
static int* g_freed_members = NULL;

void ex_forget_comm(MPI_Comm comm) {
  const int* m;
  int n = comm_members(comm, &m);
  free(g_freed_members);
  g_freed_members = malloc(sizeof(int) * (size_t)(n ? n : 1));
  memcpy(g_freed_members, m, sizeof(int) * (size_t)n);
  g_freed_n = n;
  for (int k = 0; k < g_ncomms; ++k)
    if (g_comms[k].comm == comm) {
      free(g_comms[k].members);
      g_comms[k] = g_comms[g_ncomms - 1];
      g_ncomms--;
      break;
    }
}

/* ---- requests: the truth line that created the request stored at an address */
#define EX_MAX_REQS 4096
static struct {
  const void* addr;
  long line;
} g_reqs[EX_MAX_REQS];
static int g_nreqs = 0;
static long g_snapshot[EX_MAX_REQS];
static int g_nsnapshot = 0;

static void remember_request(const void* addr, long line) {
  for (int k = 0; k < g_nreqs; ++k)
    if (g_reqs[k].addr == addr) {
      g_reqs[k].line = line;
      return;
    }
  if (g_nreqs == EX_MAX_REQS) {
    fprintf(stderr, "truth: too many request variables\n");
    PMPI_Abort(MPI_COMM_WORLD, 3);
  }
  g_reqs[g_nreqs].addr = addr;
  g_reqs[g_nreqs].line = line;
  g_nreqs++;
}

static long request_line(const void* addr) {
  for (int k = 0; k < g_nreqs; ++k)
    if (g_reqs[k].addr == addr) return g_reqs[k].line;
  return -2; /* a request the truth never saw being created */
}

void ex_snapshot_requests(int n, const MPI_Request* reqs) {
  if (n > EX_MAX_REQS) n = EX_MAX_REQS;
  for (int k = 0; k < n; ++k) g_snapshot[k] = reqs[k] == MPI_REQUEST_NULL ? -1 : request_line(&reqs[k]);
  g_nsnapshot = n;
}

/* ---- JSON line builder */
static char g_buf[1 << 16];
static size_t g_len = 0;
static unsigned g_have = 0; /* which always-present keys were written */
enum { K_COMM = 1, K_PEER = 2, K_TAG = 4, K_BYTES = 8, K_ROOT = 16, K_NREQ = 32 };

static void put(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(g_buf + g_len, sizeof g_buf - g_len, fmt, ap);
  va_end(ap);
  if (w > 0) g_len += (size_t)w;
  if (g_len >= sizeof g_buf) g_len = sizeof g_buf - 1;
}

static const char* base_name(const char* path) {
  const char* s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static void rec_begin(const char* op, const char* file, int line) {
  g_len = 0;
  g_have = 0;
  put("{\"i\":%ld,\"op\":\"%s\",\"label\":\"%s:%d%s%s\"", g_line, op, base_name(file), line, g_context[0] ? "#" : "",
      g_context);
  count_op(op);
}

static void rec_int(const char* key, long long v) { put(",\"%s\":%lld", key, v); }

static void rec_members(const char* key, const int* m, int n) {
  put(",\"%s\":[", key);
  for (int k = 0; k < n; ++k) put(k ? ",%d" : "%d", m[k]);
  put("]");
}

static void rec_comm(MPI_Comm comm) {
  const int* m;
  int n = comm_members(comm, &m);
  rec_members("comm", m, n);
  g_have |= K_COMM;
}

/* key "peer" or "peer2": the rank in comm and the world rank, or sentinels */
static void rec_peer(const char* key, MPI_Comm comm, int peer) {
  if (peer == MPI_ANY_SOURCE) {
    put(",\"%s\":\"any\",\"%s_world\":\"any\"", key, key);
  } else if (peer == MPI_PROC_NULL) {
    put(",\"%s\":\"proc_null\",\"%s_world\":\"proc_null\"", key, key);
  } else {
    const int* m;
    int n = comm_members(comm, &m);
    put(",\"%s\":%d,\"%s_world\":%d", key, peer, key, peer >= 0 && peer < n ? m[peer] : -1);
  }
  if (strcmp(key, "peer") == 0) g_have |= K_PEER;
}

static void rec_tag(const char* key, int tag) {
  if (tag == MPI_ANY_TAG)
    put(",\"%s\":\"any\"", key);
  else
    put(",\"%s\":%d", key, tag);
  if (strcmp(key, "tag") == 0) g_have |= K_TAG;
}

static int type_size(MPI_Datatype dt) {
  int s = 0;
  PMPI_Type_size(dt, &s);
  return s;
}

static void rec_bytes(const char* key, const char* dtkey, long long count, MPI_Datatype dt) {
  int s = type_size(dt);
  put(",\"%s\":%lld,\"%s\":%d", key, count * s, dtkey, s);
  if (strcmp(key, "bytes") == 0) g_have |= K_BYTES;
}

static void rec_end(void) {
  if (!(g_have & K_COMM)) put(",\"comm\":null");
  if (!(g_have & K_PEER)) put(",\"peer\":null,\"peer_world\":null");
  if (!(g_have & K_TAG)) put(",\"tag\":null");
  if (!(g_have & K_BYTES)) put(",\"bytes\":null");
  if (!(g_have & K_ROOT)) put(",\"root\":null");
  if (!(g_have & K_NREQ)) put(",\"nreq\":null");
  put("}\n");
  if (g_out) fputs(g_buf, g_out);
  g_line++;
}

/* ================================================================== hooks */

static void make_dirs(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s", dir);
  for (char* p = path + 1; *p; ++p)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0777);
      *p = '/';
    }
  mkdir(path, 0777);
}

void ex_after_init(const ex_args* a, const char* file, int line, const char* op) {
  PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_verbose = a->verbose;
  g_prog = a->prog;
  if (a->truth_dir && a->truth_dir[0]) {
    make_dirs(a->truth_dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/truth-%d.jsonl", a->truth_dir, g_rank);
    g_out = fopen(path, "w");
    if (!g_out) {
      fprintf(stderr, "%s: cannot write %s: %s\n", a->prog, path, strerror(errno));
      PMPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  rec_begin(op, file, line);
  rec_comm(MPI_COMM_WORLD);
  rec_end();
}

void ex_before_finalize(const char* file, int line) {
  rec_begin("Finalize", file, line);
  rec_comm(MPI_COMM_WORLD);
  rec_end();
  if (g_out) fflush(g_out);
}

void ex_after_finalize(void) {
  if (g_out) {
    fclose(g_out);
    g_out = NULL;
  }
  if (g_verbose && g_rank == 0) {
    long total = 0;
    printf("%s rank 0 calls:", g_prog);
    for (int k = 0; k < g_nops; ++k) {
      printf(" %s=%ld", g_counts[k].op, g_counts[k].n);
      total += g_counts[k].n;
    }
    printf(" total=%ld\n", total);
    fflush(stdout);
  }
}

void ex_log_p2p(const char* op, const char* file, int line, int count, MPI_Datatype dt, int peer, int tag,
                MPI_Comm comm, MPI_Request* created) {
  rec_begin(op, file, line);
  rec_comm(comm);
  rec_peer("peer", comm, peer);
  rec_tag("tag", tag);
  rec_bytes("bytes", "dtsize", count, dt);
  if (created) remember_request(created, g_line);
  rec_end();
}

void ex_log_sendrecv(const char* file, int line, int scount, MPI_Datatype sdt, int dest, int stag, int rcount,
                     MPI_Datatype rdt, int source, int rtag, MPI_Comm comm) {
  rec_begin("Sendrecv", file, line);
  rec_comm(comm);
  rec_peer("peer", comm, dest);
  rec_tag("tag", stag);
  rec_bytes("bytes", "dtsize", scount, sdt);
  rec_peer("peer2", comm, source);
  rec_tag("tag2", rtag);
  rec_bytes("bytes2", "dtsize2", rcount, rdt);
  rec_end();
}

void ex_log_probe(const char* op, const char* file, int line, int source, int tag, MPI_Comm comm, int flag) {
  rec_begin(op, file, line);
  rec_comm(comm);
  rec_peer("peer", comm, source);
  rec_tag("tag", tag);
  if (strcmp(op, "Iprobe") == 0) rec_int("flag", flag);
  rec_end();
}

void ex_log_requests(const char* op, const char* file, int line, int n, const MPI_Request* reqs, int index,
                     int outcount, const int* indices, int flag) {
  (void)reqs;
  rec_begin(op, file, line);
  rec_int("nreq", n);
  g_have |= K_NREQ;
  put(",\"requests\":[");
  for (int k = 0; k < g_nsnapshot; ++k) {
    if (k) put(",");
    if (g_snapshot[k] == -1)
      put("null");
    else
      put("%ld", g_snapshot[k]);
  }
  put("]");
  if (strcmp(op, "Waitany") == 0 || strcmp(op, "Testany") == 0) {
    if (index == MPI_UNDEFINED)
      put(",\"index\":\"undefined\"");
    else
      rec_int("index", index);
  }
  if (strcmp(op, "Waitsome") == 0 || strcmp(op, "Testsome") == 0) {
    if (outcount == MPI_UNDEFINED) {
      put(",\"outcount\":\"undefined\",\"indices\":[]");
    } else {
      rec_int("outcount", outcount);
      rec_members("indices", indices, outcount);
    }
  }
  if (strncmp(op, "Test", 4) == 0 && strcmp(op, "Testsome") != 0) rec_int("flag", flag);
  rec_end();
}

static int redop_code(MPI_Op op) {
  if (op == MPI_OP_NULL) return 0;
  if (op == MPI_SUM) return 1;
  if (op == MPI_PROD) return 2;
  if (op == MPI_MAX) return 3;
  if (op == MPI_MIN) return 4;
  if (op == MPI_LAND) return 5;
  if (op == MPI_LOR) return 6;
  if (op == MPI_LXOR) return 7;
  if (op == MPI_BAND) return 8;
  if (op == MPI_BOR) return 9;
  if (op == MPI_BXOR) return 10;
  if (op == MPI_MAXLOC) return 11;
  if (op == MPI_MINLOC) return 12;
  if (op == MPI_REPLACE) return 13;
  if (op == MPI_NO_OP) return 14;
  return 15;
}

void ex_log_coll(const char* op, const char* file, int line, MPI_Comm comm, int root, int scount, MPI_Datatype sdt,
                 int rcount, MPI_Datatype rdt, MPI_Op redop, const int* scounts, const int* rcounts,
                 MPI_Request* created) {
  rec_begin(op, file, line);
  rec_comm(comm);
  if (root >= 0) {
    rec_int("root", root);
    g_have |= K_ROOT;
  }
  const int* m;
  const int n = comm_members(comm, &m);
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  rec_bytes("bytes", "dtsize", scount, sdt);
  rec_bytes("bytes2", "dtsize2", rcount, rdt);
  if (redop != MPI_OP_NULL) rec_int("redop", redop_code(redop));
  /* v-collective arrays, in bytes, only where MPI says they are significant */
  const int is_root = root < 0 || root == me;
  if (scounts && is_root) {
    int s = type_size(sdt);
    put(",\"sendcounts\":[");
    for (int k = 0; k < n; ++k) put(k ? ",%lld" : "%lld", (long long)scounts[k] * s);
    put("]");
  }
  if (rcounts && is_root) {
    int s = type_size(rdt);
    put(",\"recvcounts\":[");
    for (int k = 0; k < n; ++k) put(k ? ",%lld" : "%lld", (long long)rcounts[k] * s);
    put("]");
  }
  if (created) remember_request(created, g_line);
  rec_end();
}

void ex_log_comm_create(const char* op, const char* file, int line, MPI_Comm comm, MPI_Comm newcomm, int color, int key,
                        int ndims) {
  rec_begin(op, file, line);
  rec_comm(comm);
  if (newcomm == MPI_COMM_NULL) {
    put(",\"newcomm\":null");
  } else {
    const int* m;
    int n = comm_members(newcomm, &m);
    rec_members("newcomm", m, n);
  }
  if (strcmp(op, "Comm_split") == 0) {
    if (color == MPI_UNDEFINED)
      put(",\"color\":\"undefined\"");
    else
      rec_int("color", color);
    rec_int("key", key);
  }
  if (strcmp(op, "Cart_create") == 0) rec_int("ndims", ndims);
  rec_end();
}

void ex_log_comm_free(const char* file, int line) {
  rec_begin("Comm_free", file, line);
  rec_members("comm", g_freed_members, g_freed_n);
  g_have |= K_COMM;
  rec_end();
}
