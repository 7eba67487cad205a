/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist_array.c: split arrays across MPI ranks: consecutive parts, one per rank,
 * in proportion to the ranks' GPUs (equal where none has one), each an array
 * of its own across its GPUs and host (array.c), numbered from the part's
 * first. Creating one and summing one are calls the ranks make together.
 */
#include "dist/dist_mpi.h"

#include <stdlib.h>
#include <string.h>

/* A rank's record of mgpu_array_create or mgpu_array_sum. */
typedef struct {
  int32_t check;     /* its own checks, or its sum's outcome */
  uint64_t n, elem;
  double sum;        /* mgpu_array_sum: this rank's part's sum */
  char why[400];
} array_rec_t;

/* Exchange the ranks' records; the first rank whose own part failed makes
 * the call fail on every rank. */
static mgpu_status_t agree(struct mgpu__dist *d, const char *fn, int op, const array_rec_t *mine, array_rec_t *all) {
  char *buf = malloc((size_t)d->size * MGPU_DIST_PAYLOAD);
  mgpu_status_t st = buf ? mgpu__dist_exchange(d, fn, op, mine, sizeof *mine, buf, mgpu__dist_deadline(d, 0))
                         : mgpu__dist_break(d, fn, "out of memory");
  for (int r = 0; r < d->size && st == MGPU_OK; r++) memcpy(&all[r], buf + (size_t)r * MGPU_DIST_PAYLOAD, sizeof *all);
  free(buf);
  for (int r = 0; r < d->size && st == MGPU_OK; r++) {
    if (all[r].check == MGPU_OK) continue;
    if (r == d->rank) return mgpu__fail_quiet((mgpu_status_t)all[r].check, "%s", all[r].why);
    return mgpu__fail((mgpu_status_t)all[r].check, "%s: rank %d failed: %s", fn, r, all[r].why);
  }
  return st;
}

mgpu_status_t mgpu__dist_array_create(mgpu_runtime_t *rt, size_t n, size_t elem_size, int nshares,
                                      const double *shares, mgpu_array_t **a_p) {
  struct mgpu__dist *d = rt->dist;
  const char *fn = "mgpu_array_create";
  mgpu_status_t st = mgpu__dist_thread_ok(d, fn);
  if (st != MGPU_OK) return st;
  array_rec_t mine = {.n = n, .elem = elem_size}, *all = calloc((size_t)d->size, sizeof *all);
  if (!a_p) mine.check = mgpu__fail(MGPU_EINVAL, "%s: a_p is NULL", fn);
  else if (elem_size == 0) mine.check = mgpu__fail(MGPU_EINVAL, "%s: elem_size is 0", fn);
  else if (n > SIZE_MAX / elem_size)
    mine.check = mgpu__fail(MGPU_EINVAL, "%s: %zu elements of %zu bytes overflow size_t", fn, n, elem_size);
  if (mine.check != MGPU_OK) snprintf(mine.why, sizeof mine.why, "%s", mgpu_last_error());
  MGPU_LOCK(&d->lock, MGPU_LK_DIST);
  mgpu__dist_close_open(d);
  st = all ? agree(d, fn, MGPU_DOP_ARRAY, &mine, all) : mgpu__dist_break(d, fn, "out of memory");
  for (int r = 1; r < d->size && st == MGPU_OK; r++) {
    if (all[r].n != all[0].n)
      st = mgpu__fail(MGPU_EINVAL, "%s: the ranks disagree on n: %llu elements on rank 0, %llu on rank %d", fn,
                      (unsigned long long)all[0].n, (unsigned long long)all[r].n, r);
    else if (all[r].elem != all[0].elem)
      st = mgpu__fail(MGPU_EINVAL, "%s: the ranks disagree on elem_size: %llu bytes on rank 0, %llu on rank %d", fn,
                      (unsigned long long)all[0].elem, (unsigned long long)all[r].elem, r);
  }
  MGPU_UNLOCK(&d->lock);
  free(all);
  if (st != MGPU_OK) return st;
  /* Rank r's part: [n * (w_0 + ... + w_{r-1}) / W, n * (w_0 + ... + w_r) / W), w its GPUs. */
  double w = 0, before = 0;
  for (int r = 0; r < d->size; r++) {
    double wr = d->gpu_total > 0 ? d->ngpus[r] : 1;
    if (r < d->rank) before += wr;
    w += wr;
  }
  double mine_w = d->gpu_total > 0 ? d->ngpus[d->rank] : 1;
  size_t first = (size_t)((double)n * before / w), last = (size_t)((double)n * (before + mine_w) / w);
  if (d->rank == d->size - 1) last = n;
  return mgpu__array_create(rt, last - first, first, elem_size, nshares, shares, a_p);
}

mgpu_status_t mgpu__dist_array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum) {
  mgpu_runtime_t *rt = mgpu__array_rt(a);
  struct mgpu__dist *d = rt->dist;
  const char *fn = "mgpu_array_sum";
  mgpu_status_t st = mgpu__dist_thread_ok(d, fn);
  if (st != MGPU_OK) return st;
  array_rec_t mine = {0}, *all = calloc((size_t)d->size, sizeof *all);
  MGPU_LOCK(&d->lock, MGPU_LK_DIST);
  mgpu__dist_close_open(d);
  mine.check = sum ? mgpu__array_sum(a, dt, &mine.sum) : mgpu__fail(MGPU_EINVAL, "%s: sum is NULL", fn);
  if (mine.check != MGPU_OK) snprintf(mine.why, sizeof mine.why, "%s", mgpu_last_error());
  st = all ? agree(d, fn, MGPU_DOP_ARRAY_SUM, &mine, all) : mgpu__dist_break(d, fn, "out of memory");
  MGPU_UNLOCK(&d->lock);
  /* In rank order, so that every rank gets the same sum. */
  double s = 0;
  for (int r = 0; r < d->size && st == MGPU_OK; r++) s += all[r].sum;
  free(all);
  if (st == MGPU_OK) *sum = s;
  return st;
}
