/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * measure.c: one mode's timed runs on its runtime: a warm-up, then --repeat
 * timed runs, whose median is reported. Where a run of the whole batch would
 * take over --max-run-time, the first warm-up is stopped early (batch.c) and
 * the mode is timed on the largest prefix of the batch that runs of prefixes
 * find to run within it: its figures are the prefix's. The warm-up is
 * skipped where the model store holds what it would teach (models.c). And
 * --first-batch's runs: a fresh runtime's first batches, none a warm-up.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"

warmup_log_t warmup_log;

/* The warm-up is skipped only where this many timed runs follow it or more:
 * the first of them then pays what a warm-up absorbs (buffers made, code
 * loaded), and their median is not that run's alone. */
#define SKIP_MIN_RUNS 3

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sizing a prefix. Items can differ in cost by position (mandelbrot's middle
 * rows are dearer than its first ones), so neither the rate of a run of the
 * whole batch nor one measured on items spread through it says how long the
 * first k items take: only a run of them does. So prefixes are run, each
 * stopped by the clock at the bound, and the largest that ran within it is
 * kept. A prefix is aimed at PREFIX_AIM of the bound, since runs of the same
 * items vary, and at most PREFIX_GROW times the last one run, since the items
 * it adds may cost more than those that set the rate; one that ran at least
 * PREFIX_ENOUGH of the bound is kept without trying a larger one. */
#define PREFIX_AIM 0.75
#define PREFIX_GROW 2.0
#define PREFIX_ENOUGH 0.5
#define PREFIX_TRIES 8

/* The prefix to try after a run of k items that computed done of them in t
 * seconds: as many as that run's rate computes in PREFIX_AIM of bound_s, at
 * most PREFIX_GROW k, or halfway between lo and hi where that is not strictly
 * between them (lo: the largest prefix known to run within the bound, 0 for
 * none; hi: the smallest known not to); 0 when no size is left between them. */
size_t prefix_next(size_t k, size_t done, double t, double bound_s, size_t lo, size_t hi) {
  double x = t > 0 ? (double)done / t * bound_s * PREFIX_AIM : 0;
  if (x > PREFIX_GROW * (double)k) x = PREFIX_GROW * (double)k;
  size_t next = x >= (double)hi ? hi : x < 1 ? 1 : (size_t)x;
  if (next <= lo || next >= hi) next = lo + (hi - lo) / 2;
  return next > lo && next < hi ? next : 0;
}

/* After the first warm-up, a run of the whole batch that ran t seconds and
 * computed done items: the whole batch where it completed within the bound,
 * else the prefix that runs of prefixes find (their runs are warm-ups too).
 * Across ranks every rank must run the same prefixes: rank 0's figures
 * decide. False when SIGINT stopped a run. */
static bool choose_prefix(mgpu_runtime_t *rt, const opts_t *o, work_t *w, result_t *r, double t, size_t done) {
  r->sized = true;
  t = ranks_bcast(t);
  done = (size_t)ranks_bcast((double)done);
  double bound = o->max_run_s;
  if (bound <= 0 || (done >= w->n && t <= bound)) return true;
  size_t lo = 0, hi = w->n, k = prefix_next(w->n, done, t, bound, lo, hi);
  for (int i = 0; i < PREFIX_TRIES && k > 0; i++) {
    progress_label(r->mode, "sizing run", i + 1, PREFIX_TRIES);
    size_t dk;
    double tk = run_bounded(rt, w, k, bound, false, &dk);
    if (tk < 0) return false;
    tk = ranks_bcast(tk);
    dk = (size_t)ranks_bcast((double)dk);
    bool within = dk >= k && tk <= bound;
    if (within) lo = k;
    else hi = k;
    if (within && tk >= bound * PREFIX_ENOUGH) break;
    k = prefix_next(k, dk, tk, bound, lo, hi);
  }
  /* No prefix ran within the bound: the last estimate, at least one item. */
  r->prefix = lo ? lo : k ? k : 1;
  return true;
}

uint64_t next_batch(mgpu_runtime_t *rt) {
  size_t n = mgpu_trace_events(rt, NULL, 0);
  mgpu_trace_event_t *ev = n ? calloc(n, sizeof *ev) : NULL;
  uint64_t next = 0;
  n = ev ? mgpu_trace_events(rt, ev, n) : 0;
  for (size_t i = 0; i < n; i++)
    if (ev[i].batch + 1 > next) next = ev[i].batch + 1;
  free(ev);
  return next;
}

/* Warm-ups from+1..warm, on the whole batch or the prefix chosen; false when
 * SIGINT stopped one. */
static bool warm_rest(mgpu_runtime_t *rt, work_t *w, result_t *r, int from, int warm) {
  w->nrun = r->prefix ? r->prefix : w->n;
  for (int i = from; i < warm && !interrupted; i++) {
    progress_label(r->mode, "warm-up", i + 1, warm);
    if (run_once(rt, w, NULL, NULL) < 0) return false;
  }
  return !interrupted;
}

/* The mode's warm-up runs (its first round's first one bounded, then those
 * that size its prefix), on the whole batch or the prefix chosen; false
 * when SIGINT stopped one. */
static bool warm_up(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, int warm) {
  int i = 0;
  if (interrupted) return false; /* before the first run, or between modes */
  if (!r->sized) {
    progress_label(r->mode, "warm-up", 1, warm);
    size_t done;
    double t = run_bounded(rt, w, w->n, o->max_run_s, true, &done);
    if (t < 0 || !choose_prefix(rt, o, w, r, t, done)) return false;
    i = 1;
  }
  return warm_rest(rt, w, r, i, warm);
}

/* A timed run's figures kept in r: its time, steal, stats and the workers'
 * and ranks' tables (from the scratch arrays run_ws and run_rs). */
static void keep_run(result_t *r, double t, const stealacc_t *steal, mgpu_stats_t *st, const mgpu_stats_t *run_st,
                     const mgpu_worker_stats_t *run_ws, const mgpu_rank_stats_t *run_rs, double *times, int *done) {
  r->steal = *steal;
  times[(*done)++] = t;
  *st = *run_st;
  st->worker = r->ws, st->rank = r->rs;
  memcpy(r->ws, run_ws, sizeof *run_ws * (size_t)r->nw);
  if (run_rs) memcpy(r->rs, run_rs, sizeof *run_rs * (size_t)r->nranks);
}

/* A mode whose warm-up is skipped: where its prefix is not known yet, its
 * first timed run is of the whole batch, stopped as the first warm-up is
 * where it runs past --max-run-time; one that completed within it is timed
 * run 1 (true in *timed), one that did not was the first warm-up after all,
 * and the prefix is sized as then. False when SIGINT stopped a run. */
static bool skip_warm_up(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, mgpu_stats_t *run_st,
                         stealacc_t *steal, double *t, bool *timed) {
  *timed = false;
  if (interrupted) return false;
  if (r->sized || o->max_run_s <= 0) {
    r->sized = true;
    w->nrun = r->prefix ? r->prefix : w->n;
    return true;
  }
  progress_label(r->mode, "timed run", 1, o->repeat);
  size_t done;
  *t = run_bounded_timed(rt, w, o->max_run_s, run_st, steal, &done);
  if (*t < 0 || !choose_prefix(rt, o, w, r, *t, done)) return false;
  if (r->prefix == 0) {
    *timed = true;
    return true;
  }
  r->warm_skipped = false;
  warmup_log.skipped--, warmup_log.sized++;
  return warm_rest(rt, w, r, 1, 1);
}

/* Time o->repeat runs of the workload on rt, after its warm-up, and add them to
 * r: with --rounds, r gathers every round's runs, and its figures are the
 * median of all of them (each round's own median is kept for E by round).
 * With --first-batch: no warm-up, the whole batch, and every run's time also
 * kept in the order run (r->seq). */
void measure(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, const char *mode) {
  bool first = o->first_batch;
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
  /* Each run's figures go to scratch arrays first: a run that SIGINT cancels
   * fills them too, and the report shows the last run that completed. */
  mgpu_worker_stats_t *run_ws = calloc((size_t)nw, sizeof *run_ws);
  mgpu_rank_stats_t *run_rs = nranks > 1 ? calloc((size_t)nranks, sizeof *run_rs) : NULL;
  if (!run_ws || (nranks > 1 && !run_rs)) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  mgpu_stats_t st = {.size = sizeof st, .worker = r->ws, .worker_cap = nw, .rank = r->rs, .rank_cap = nranks > 1 ? nranks : 0};
  mgpu_stats_t run_st = st;
  run_st.worker = run_ws, run_st.rank = run_rs;
  /* Warm-up: the speed model learns, buffers are made; under
   * MGPU_RESERVE_THREADS=auto, the trials of the reserve as well. With a
   * fresh stored model of the kernel for each kind of worker the mode uses,
   * the runtime starts from what it would learn, and the warm-up is skipped. */
  bool mixed = (!strcmp(mode, "steal") || !strcmp(mode, "static")) && mgpu_num_gpus(rt) > 0 && r->ncpu > 0;
  int warm = r->reserve_auto && mixed ? MGPU_RESERVE_TRIALS : 1;
  bool stored = warmup_stored(rt, w, mode);
  r->stored = first && stored;
  r->warm_skipped = !first && o->repeat >= SKIP_MIN_RUNS && stored;
  warmup_log.runtimes += !first;
  if (r->warm_skipped) {
    warmup_log.skipped++;
    snprintf(warmup_log.kernel, sizeof warmup_log.kernel, "%s", w->b.kernel->name);
  }
  int done = 0;
  bool warmed, first_timed = false;
  double t_first = 0;
  stealacc_t steal_first = r->steal;
  if (first) {
    r->sized = true;
    w->nrun = w->n;
    warmed = !interrupted;
  } else if (r->warm_skipped) {
    r->timed_batch = next_batch(rt);
    warmed = skip_warm_up(rt, w, o, r, &run_st, &steal_first, &t_first, &first_timed);
  } else {
    warmed = warm_up(rt, w, o, r, warm);
  }
  /* SIGINT cancels the run in flight (it stops at its next chunk): the report
   * then covers the runs completed, and a mode with none is skipped. */
  if (warmed && !first_timed) r->timed_batch = next_batch(rt);
  if (first_timed) keep_run(r, t_first, &steal_first, &st, &run_st, run_ws, run_rs, times, &done);
  for (int i = done; i < o->repeat && warmed && !interrupted; i++) {
    progress_label(mode, first ? "batch" : "timed run", i + 1, o->repeat);
    stealacc_t steal = r->steal;
    double t = run_once(rt, w, &run_st, &steal);
    if (t < 0) break;
    keep_run(r, t, &steal, &st, &run_st, run_ws, run_rs, times, &done);
  }
  free(run_ws);
  free(run_rs);
  if (done == 0) return;
  if (first) {
    free(r->seq);
    r->seq = malloc(sizeof *r->seq * (size_t)done);
    if (!r->seq) {
      fprintf(stderr, "%s: out of memory\n", prog);
      exit(EXIT_FAIL);
    }
    memcpy(r->seq, times, sizeof *r->seq * (size_t)done);
    r->nseq = done;
  }
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
  /* --first-batch: the mode's figure is the steady state's. */
  double f, steady, ratio;
  if (first && first_figures(r, &f, &steady, &ratio)) {
    r->wall_s = steady;
    r->throughput = steady > 0 ? items / steady : 0;
  }
}

/* --first-batch's figures of r: the first run's seconds, the median of runs
 * 3.. (the steady state; of the runs made past the second), and their ratio;
 * false where fewer than three runs were made. */
bool first_figures(const result_t *r, double *first_s, double *steady_s, double *ratio) {
  if (r->nseq < 3) return false;
  double tail[MAX_FIRST_RUNS];
  int n = 0;
  for (int i = 2; i < r->nseq && n < MAX_FIRST_RUNS; i++) tail[n++] = r->seq[i];
  qsort(tail, (size_t)n, sizeof *tail, cmp_double);
  *first_s = r->seq[0];
  *steady_s = n % 2 ? tail[n / 2] : (tail[n / 2 - 1] + tail[n / 2]) / 2;
  *ratio = *steady_s > 0 ? *first_s / *steady_s : 0;
  return true;
}

/* Round by round, num's throughput over den's (plus den2's unless NULL), into
 * out; returns the rounds that all of them ran. */
int ratio_by_round(const result_t *num, const result_t *den, const result_t *den2, double *out) {
  int n = num->nround < den->nround ? num->nround : den->nround;
  if (den2 && den2->nround < n) n = den2->nround;
  for (int k = 0; k < n; k++) {
    double d = den->round_tp[k] + (den2 ? den2->round_tp[k] : 0);
    out[k] = d > 0 ? num->round_tp[k] / d : 0;
  }
  return n;
}

void free_result(result_t *r) {
  free(r->ws);
  free(r->times);
  free(r->rs);
  free(r->seq);
  r->seq = NULL;
  r->ws = NULL;
  r->times = NULL;
  r->rs = NULL;
}
