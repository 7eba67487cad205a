/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi.c: one batch over every rank of an MPI job, with libmgpurt.
 * Every rank runs this program; the runtime spans MPI_COMM_WORLD. */
#include <mgpurt.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#define N 1000000

static int square_cpu(const mgpu_chunk_t *c) {
  const double *x = c->in[0];
  double *y = c->out[0];
  for (size_t i = 0; i < c->count; i++) y[i] = x[i] * x[i]; /* x[i] is item c->first + i */
  return 0;
}

int main(int argc, char **argv) {
  int provided, rank, nranks;
  /* The runtime makes its MPI calls in this thread. */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  mgpu_runtime_t *rt;
  if (mgpu_init(NULL, &rt) != MGPU_OK) { /* every rank calls it */
    fprintf(stderr, "rank %d: %s\n", rank, mgpu_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  static const mgpu_kernel_t sq = {.size = sizeof sq, .name = "square", .cpu = square_cpu, .nin = 1, .nout = 1,
                                   .in_size = {8}, .out_size = {8}};
  /* Arrays of all N items on every rank, item i at index i: a rank reads and
   * writes only its share, and pages it never touches take no memory. */
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  mgpu_batch_t b = {.size = sizeof b, .kernel = &sq, .n = N, .in = {x}, .out = {y}};
  size_t first, count;
  mgpu_batch_plan(rt, &b, &first, &count); /* this rank's share of the next batch */
  for (size_t i = first; i < first + count; i++) x[i] = (double)i;
  mgpu_rank_stats_t *ranks = calloc((size_t)nranks, sizeof *ranks);
  mgpu_stats_t st = MGPU_STATS_INIT;
  st.rank = ranks;
  st.rank_cap = nranks;
  mgpu_status_t s = mgpu_run(rt, &b, &st); /* every rank submits the same batch */
  if (s != MGPU_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, mgpu_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* y holds this rank's share; gather every share on every rank, in place. */
  int *counts = malloc(sizeof *counts * (size_t)nranks), *displs = malloc(sizeof *displs * (size_t)nranks);
  for (int r = 0; r < nranks; r++) counts[r] = (int)ranks[r].share_count, displs[r] = (int)ranks[r].share_first;
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, y, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  long bad = 0;
  for (long i = 0; i < N; i++) bad += y[i] != (double)i * (double)i;
  if (rank == 0) {
    for (int r = 0; r < nranks; r++)
      printf("rank %d: share %zu items, computed %llu, took %llu from other ranks, gave %llu\n", r,
             ranks[r].share_count, (unsigned long long)ranks[r].items, (unsigned long long)ranks[r].items_in,
             (unsigned long long)ranks[r].items_out);
    printf("mpi example: %s (%d ranks)\n", bad ? "FAILED" : "ok", nranks);
  }
  free(counts);
  free(displs);
  free(ranks);
  free(x);
  free(y);
  mgpu_finalize(rt); /* before MPI_Finalize: the runtime frees its MPI objects */
  MPI_Finalize();
  return bad ? 1 : 0;
}
