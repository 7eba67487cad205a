/*
 * measure.c: one mode's timed runs on its runtime: a warm-up, then --repeat
 * timed runs, whose median is reported. Where a run of the whole batch would
 * take over --max-run-time, the first warm-up is stopped early (batch.c) and
 * the mode is timed on a prefix of the batch sized to run about that long:
 * its figures are the prefix's.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgpu-run.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Decide from the first warm-up, which ran t seconds and computed done items,
 * whether the mode is timed on the whole batch or on its first r->prefix
 * items: a prefix where the whole batch would take over the bound, of as many
 * items as the warm-up's rate computes in the bound. */
static void choose_prefix(const opts_t *o, const work_t *w, result_t *r, double t, size_t done) {
  r->sized = true;
  /* Across ranks every rank must run the same prefix: rank 0's choice. */
  t = ranks_bcast(t);
  done = (size_t)ranks_bcast((double)done);
  if (o->max_run_s <= 0 || (done >= w->n && t <= o->max_run_s) || done == 0 || t <= 0) return;
  double rate = (double)done / t, k = rate * o->max_run_s;
  if (k >= (double)w->n) return;
  r->prefix = k >= 1 ? (size_t)k : 1;
  r->whole_s = (double)w->n / rate;
}

/* The mode's warm-up runs (its first round's first one bounded), on the
 * whole batch or the prefix chosen; false when SIGINT stopped one. */
static bool warm_up(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, int warm) {
  int i = 0;
  if (!r->sized) {
    progress_label(r->mode, "warm-up", 1, warm);
    size_t done;
    double t = run_bounded(rt, w, o->max_run_s, &done);
    if (t < 0) return false;
    choose_prefix(o, w, r, t, done);
    i = 1;
  }
  w->nrun = r->prefix ? r->prefix : w->n;
  for (; i < warm && !interrupted; i++) {
    progress_label(r->mode, "warm-up", i + 1, warm);
    if (run_once(rt, w, NULL, NULL) < 0) return false;
  }
  return !interrupted;
}

/* Time o->repeat runs of the workload on rt, after its warm-up, and add them to
 * r: with --rounds, r gathers every round's runs, and its figures are the
 * median of all of them (each round's own median is kept for E by round). */
void measure(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, const char *mode) {
  int nw = mgpu_num_workers(rt);
  r->mode = mode;
  if (r->ws && r->nw != nw) free(r->ws), r->ws = NULL;
  if (!r->ws) r->ws = calloc((size_t)nw, sizeof *r->ws);
  r->nw = nw;
  r->ncpu = mgpu_num_cpu_workers(rt);
  int nranks = mgpu_num_ranks(rt);
  if (r->rs && r->nranks != nranks) free(r->rs), r->rs = NULL;
  if (!r->rs && nranks > 1) r->rs = calloc((size_t)nranks, sizeof *r->rs);
  r->nranks = nranks;
  r->reserve_auto = !strncmp(reserve_setting(rt), "auto", 4);
  double *all = realloc(r->times, sizeof *all * (size_t)(r->runs + o->repeat + 1));
  if (!all || !r->ws || (nranks > 1 && !r->rs)) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  r->times = all;
  double *times = all + r->runs;
  mgpu_stats_t st = {.size = sizeof st, .worker = r->ws, .worker_cap = nw, .rank = r->rs, .rank_cap = nranks > 1 ? nranks : 0};
  /* Warm-up: the speed model learns, buffers are made; under
   * MGPU_RESERVE_THREADS=auto, the trials of the reserve as well. */
  bool mixed = (!strcmp(mode, "steal") || !strcmp(mode, "static")) && mgpu_num_gpus(rt) > 0 && r->ncpu > 0;
  int warm = r->reserve_auto && mixed ? MGPU_RESERVE_TRIALS : 1;
  bool warmed = warm_up(rt, w, o, r, warm);
  /* SIGINT cancels the run in flight (it stops at its next chunk): the report
   * then covers the runs completed, and a mode with none is skipped. */
  int done = 0;
  for (int i = 0; i < o->repeat && warmed && !interrupted; i++) {
    progress_label(mode, "timed run", i + 1, o->repeat);
    double t = run_once(rt, w, &st, &r->steal);
    if (t < 0) break;
    times[done++] = t;
  }
  if (done == 0) return;
  double items = (double)w->nrun;
  qsort(times, (size_t)done, sizeof *times, cmp_double);
  if (r->nround < MAX_ROUNDS) r->round_tp[r->nround++] = times[done / 2] > 0 ? items / times[done / 2] : 0;
  r->runs += done;
  qsort(all, (size_t)r->runs, sizeof *all, cmp_double);
  r->wall_s = all[r->runs / 2];
  r->throughput = r->wall_s > 0 ? items / r->wall_s : 0;
  r->st = st;
  r->reserve = st.reserve_workers;
  r->ran = 1;
}

void free_result(result_t *r) {
  free(r->ws);
  free(r->times);
  free(r->rs);
  r->ws = NULL;
  r->times = NULL;
  r->rs = NULL;
}
