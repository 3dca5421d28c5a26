/* stencil3d_recursive: the 27-point 3D stencil of stencil3d, but the time loop is a recursion:
 * timestep(n) does one step (exchange + every -k K steps an Allreduce) and then calls
 * timestep(n-1). The stack of an MPI call grows by one frame per step, so only recursion
 * folding of call-site signatures (ScalaTrace paper, §3) makes the steps look alike.
 * The first level (called from main) has a different folded stack than the deeper levels:
 * its truth labels carry the context "#top". Built with -fno-optimize-sibling-calls (and the
 * call is not in tail position) so the compiler cannot turn the recursion into a loop. */
#include <stdlib.h>

#include "truth.h"

typedef struct {
  int dims[3], x, y, z;
  int face, edge, corner;
  char *sendbuf, *recvbuf;
  long every, compute_us;
  double residual;
} grid;

static long g_steps = 0;

static void exchange(grid* g) {
  MPI_Request reqs[52];
  int nreq = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dz = -1; dz <= 1; ++dz) {
          const int nx = g->x + dx, ny = g->y + dy, nz = g->z + dz;
          const int zeros = (dx == 0) + (dy == 0) + (dz == 0);
          if (zeros == 3) continue;
          if (nx < 0 || nx >= g->dims[0] || ny < 0 || ny >= g->dims[1] || nz < 0 || nz >= g->dims[2]) continue;
          const int peer = (nx * g->dims[1] + ny) * g->dims[2] + nz;
          const int slot = (dx + 1) * 9 + (dy + 1) * 3 + (dz + 1);
          const int count = zeros == 2 ? g->face : zeros == 1 ? g->edge : g->corner;
          if (pass == 0) {
            LOG_IRECV(g->recvbuf + (size_t)slot * g->face, count, MPI_BYTE, peer, 200 + (26 - slot), MPI_COMM_WORLD,
                      &reqs[nreq]);
          } else {
            LOG_ISEND(g->sendbuf + (size_t)slot * g->face, count, MPI_BYTE, peer, 200 + slot, MPI_COMM_WORLD,
                      &reqs[nreq]);
          }
          nreq++;
        }
  LOG_WAITALL(nreq, reqs, MPI_STATUSES_IGNORE);
}

static void timestep(grid* g, long n, long depth) {
  if (n <= 0) return;
  ex_set_context(depth == 1 ? "top" : NULL);
  ex_compute(g->compute_us);
  exchange(g);
  if ((depth % g->every) == 0) {
    double global = 0.0;
    g->residual *= 0.5;
    LOG_ALLREDUCE(&g->residual, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  timestep(g, n - 1, depth + 1);
  g_steps++; /* keeps the recursive call out of tail position */
}

int main(int argc, char** argv) {
  ex_args a;
  ex_args_init(&a, "stencil3d_recursive", 3, 512);
  ex_args_option(&a, 'k', 2, "Allreduce every K timesteps");
  ex_args_parse(&a, argc, argv);
  LOG_INIT(&argc, &argv, &a);
  const int rank = ex_rank(), size = ex_size();

  grid g = {{0, 0, 0}, 0, 0, 0, 0, 0, 8, NULL, NULL, 1, a.compute_us, 1.0};
  g.every = ex_opt(&a, 'k') > 0 ? ex_opt(&a, 'k') : 1;
  MPI_Dims_create(size, 3, g.dims);
  g.x = rank / (g.dims[1] * g.dims[2]);
  g.y = (rank / g.dims[2]) % g.dims[1];
  g.z = rank % g.dims[2];
  g.face = (int)a.bytes > 0 ? (int)a.bytes : 1;
  g.edge = g.face / 8 > 0 ? g.face / 8 : 1;
  g.sendbuf = calloc(27 * (size_t)g.face, 1);
  g.recvbuf = calloc(27 * (size_t)g.face, 1);

  timestep(&g, a.iters, 1);
  ex_set_context(NULL);

  free(g.sendbuf);
  free(g.recvbuf);
  LOG_FINALIZE();
  return g_steps == a.iters ? 0 : 1;
}
