/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * batch.c: one run of a batch workload on a runtime, on its first w->nrun
 * items (the whole batch, or a prefix): its outputs poisoned, the batch
 * submitted (the pipeline as dependent sub-batches), waited for under the
 * progress bar and SIGINT's watch, and timed, with the host's steal time over
 * the timed span; and the runs that stop early where they would take over
 * --max-run-time, with which measure.c sizes a mode's prefix. On a runtime across MPI ranks each
 * rank holds the results of its share: they are gathered on every rank after
 * the timed span (base/ranks.c), and the pipeline's stages run one after the
 * other, each reading what the last gathered.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/run.h"

void check_status(mgpu_status_t st, const char *what) {
  if (st == MGPU_OK) return;
  fprintf(stderr, "%s: %s failed: %s (%s)\n", prog, what, mgpu_status_name(st), flagname_apply(mgpu_last_error()));
  exit(st == MGPU_EINVAL ? EXIT_USAGE : EXIT_FAIL);
}

/* check_status for a call on w's kernel. A plugin's kernel, argument and item
 * sizes are the plugin's own, checked only when the library takes its batch:
 * one refused there is the plugin's error, not the command line's, so a
 * runtime error (exit 1) that names it. */
void check_work_status(const work_t *w, mgpu_status_t st, const char *what) {
  if (st == MGPU_EINVAL && w->plugin) {
    fprintf(stderr, "%s: plugin workload '%s': %s failed: %s (%s)\n", prog, w->plugin->name, what,
            mgpu_status_name(st), flagname_apply(mgpu_last_error()));
    exit(EXIT_FAIL);
  }
  check_status(st, what);
}

void steal_mark(stealacc_t *a, bool end) {
  if (!a || a->failed) return;
  hostcpu_t now;
  if (hostcpu_read("/proc/stat", &now) != 0) {
    a->failed = true;
    return;
  }
  if (!end) {
    a->at = now;
    return;
  }
  a->sum.busy += now.busy - a->at.busy;
  a->sum.steal += now.steal - a->at.steal;
}

/* The share of busy CPU time that the host took, or -1 when unknown. */
double steal_share(const stealacc_t *a) {
  return a->failed || a->sum.busy == 0 ? -1 : (double)a->sum.steal / (double)a->sum.busy;
}

static double seconds_between(const struct timespec *t0, const struct timespec *t1) {
  return (double)(t1->tv_sec - t0->tv_sec) + 1e-9 * (double)(t1->tv_nsec - t0->tv_nsec);
}

/* The ranks' shares of a batch across ranks (NULL for one process), in
 * s->rank when the caller asked for them, else in *own (freed by the caller). */
static mgpu_rank_stats_t *shares(mgpu_runtime_t *rt, mgpu_stats_t *s, mgpu_rank_stats_t **own) {
  *own = NULL;
  int n = mgpu_num_ranks(rt);
  if (n < 2) return NULL;
  s->size = sizeof *s; /* a layout with the ranks' fields */
  if (s->rank && s->rank_cap >= n) return s->rank;
  *own = calloc((size_t)n, sizeof **own);
  if (!*own) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  s->rank = *own;
  s->rank_cap = n;
  return *own;
}

/* Every output of the batch of n items at item `first` of the workload's
 * arrays, gathered from the ranks' shares (rs) on every rank. */
static void gather_outputs(mgpu_runtime_t *rt, const work_t *w, const mgpu_kernel_t *k, void *const *out,
                           const mgpu_rank_stats_t *rs) {
  if (!rs) return;
  for (int i = 0; i < k->nout; i++) ranks_gather(out[i], k->out_size[i], rs, mgpu_num_ranks(rt));
  (void)w;
}

/* One batch of the whole workload. */
static double run_single(mgpu_runtime_t *rt, work_t *w, mgpu_stats_t *st, stealacc_t *sa) {
  struct timespec t0, t1;
  mgpu_event_t *ev;
  mgpu_stats_t own = {0}, *s = st ? st : &own;
  mgpu_rank_stats_t *own_rs, *rs = shares(rt, s, &own_rs);
  steal_mark(sa, false);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  mgpu_batch_t b = w->b;
  b.n = w->nrun;
  check_work_status(w, mgpu_submit(rt, &b, 0, NULL, &ev), "submitting the batch");
  watch_events(&ev, 1);
  progress_begin(ev);
  mgpu_status_t st_ = mgpu_event_wait(ev, s);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  steal_mark(sa, true);
  progress_end();
  watch_events(NULL, 0);
  mgpu_event_release(ev);
  if (canceled(st_, s->items, w->nrun)) {
    free(own_rs);
    return -1;
  }
  check_work_status(w, st_, "the batch");
  gather_outputs(rt, w, b.kernel, b.out, rs);
  if (own_rs) s->rank = NULL, s->rank_cap = 0;
  free(own_rs);
  return seconds_between(&t0, &t1);
}

/* The later stages' kernels and the stages' arguments, which the batches
 * point to until they end. */
typedef struct {
  mgpu_kernel_t kdec, kmul;
  mgpu_ntt_arg_t a1;
  mgpu_pipeline_arg_t a2;
} stages_t;

/* Across ranks a stage reads the outputs of the last one, which each rank
 * holds for its share only: the stages run one after the other, each
 * gathered on every rank before the next. */
static void pipeline_ranks(mgpu_runtime_t *rt, const mgpu_batch_t *const *stage, mgpu_status_t *st) {
  mgpu_rank_stats_t *rs = calloc((size_t)mgpu_num_ranks(rt), sizeof *rs);
  if (!rs) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  for (int i = 0; i < 3; i++) {
    mgpu_stats_t s = {.size = sizeof s, .rank = rs, .rank_cap = mgpu_num_ranks(rt)};
    st[i] = i && st[i - 1] != MGPU_OK ? MGPU_EDEP : mgpu_run(rt, stage[i], &s);
    if (st[i] == MGPU_OK) ranks_gather(stage[i]->out[0], stage[i]->kernel->out_size[0], rs, s.nranks);
  }
  free(rs);
}

/* Submit the pipeline's sub-batches of three dependent stages into ev, all up
 * front, so that the CPU-only middle stage of one overlaps the GPU stages of
 * others; returns their count (three per sub-batch). Across ranks they run
 * here, stage after stage (pipeline_ranks), and stat gets their outcomes. */
static size_t pipeline_submit(mgpu_runtime_t *rt, work_t *w, stages_t *sg, mgpu_event_t **ev, mgpu_status_t *stat) {
  sg->a1 = (mgpu_ntt_arg_t){w->log_n, 0};
  sg->a2 = (mgpu_pipeline_arg_t){w->log_n, 0, w->key};
  size_t per = (size_t)8 << w->log_n;
  size_t sub = w->nrun < 16 ? 1 : w->nrun / 16;
  size_t nsub = (w->nrun + sub - 1) / sub;
  for (size_t s = 0; s < nsub; s++) {
    size_t first = s * sub, cnt = first + sub > w->nrun ? w->nrun - first : sub;
    char *x = (char *)w->in[0] + first * per, *m1 = (char *)w->mid1 + first * per, *m2 = (char *)w->mid2 + first * per,
         *z = (char *)w->out + first * per;
    mgpu_batch_t b1 = {.kernel = &w->k, .n = cnt, .in = {x}, .out = {m1}, .arg = &sg->a1, .arg_size = sizeof sg->a1};
    mgpu_batch_t b2 = {.kernel = &sg->kdec, .n = cnt, .in = {m1}, .out = {m2}, .arg = &sg->a2, .arg_size = sizeof sg->a2};
    mgpu_batch_t b3 = {.kernel = &sg->kmul, .n = cnt, .in = {m2}, .out = {z}, .arg = &sg->a2, .arg_size = sizeof sg->a2,
                       .nconsts = 1, .consts = {w->kconst}};
    if (mgpu_num_ranks(rt) > 1) {
      const mgpu_batch_t *stage[3] = {&b1, &b2, &b3};
      pipeline_ranks(rt, stage, stat + 3 * s);
      continue;
    }
    check_status(mgpu_submit(rt, &b1, 0, NULL, &ev[3 * s]), "submitting stage 1");
    check_status(mgpu_submit(rt, &b2, 1, &ev[3 * s], &ev[3 * s + 1]), "submitting stage 2");
    check_status(mgpu_submit(rt, &b3, 1, &ev[3 * s + 1], &ev[3 * s + 2]), "submitting stage 3");
  }
  return 3 * nsub;
}

/* Per-worker figures of a pipeline run into st: the runtime's totals less
 * those before it. Items count every stage's (three per polynomial), so the
 * total is the sum of the workers' and the shares add up to 100%. */
static void pipeline_stats(mgpu_runtime_t *rt, const mgpu_stats_t *before, mgpu_stats_t *st, double wall_s) {
  mgpu_runtime_stats(rt, st);
  int nw = st->nworkers < st->worker_cap ? st->nworkers : st->worker_cap;
  st->items = 0;
  for (int i = 0; i < nw && before->worker; i++) {
    mgpu_worker_stats_t *a = &st->worker[i];
    const mgpu_worker_stats_t *b = &before->worker[i];
    a->items -= b->items, a->chunks -= b->chunks, a->steals -= b->steals, a->retries -= b->retries;
    a->busy_s -= b->busy_s, a->staged_bytes -= b->staged_bytes;
  }
  for (int i = 0; i < nw; i++) st->items += st->worker[i].items;
  st->chunks -= before->chunks, st->steals -= before->steals, st->retries -= before->retries;
  st->batches -= before->batches;
  st->wall_s = wall_s;
}

static double run_pipeline(mgpu_runtime_t *rt, work_t *w, mgpu_stats_t *st, stealacc_t *sa) {
  stages_t sg;
  check_status(mgpu_kernel_pipeline_decompose(w->log_n, &sg.kdec), "mgpu_kernel_pipeline_decompose");
  check_status(mgpu_kernel_pipeline_mul_intt(w->log_n, &sg.kmul), "mgpu_kernel_pipeline_mul_intt");
  size_t per = (size_t)8 << w->log_n;
  size_t sub = w->nrun < 16 ? 1 : w->nrun / 16;
  size_t nsub = (w->nrun + sub - 1) / sub;
  mgpu_event_t **ev = calloc(3 * (nsub ? nsub : 1), sizeof *ev);
  /* One constant per runtime, made once: later runs reuse its device copies. */
  if (w->kconst_rt != rt) {
    if (w->kconst) mgpu_const_destroy(w->kconst);
    check_status(mgpu_const_create(rt, w->K, per, &w->kconst), "mgpu_const_create");
    w->kconst_rt = rt;
  }
  /* The runtime's totals before this run, so that the figures are this run's. */
  mgpu_stats_t before = {0};
  if (st) {
    before.worker_cap = st->worker_cap;
    before.worker = calloc((size_t)(st->worker_cap > 0 ? st->worker_cap : 1), sizeof *before.worker);
    if (before.worker) mgpu_runtime_stats(rt, &before);
  }
  struct timespec t0, t1;
  steal_mark(sa, false);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  mgpu_status_t stage_st[3 * (nsub ? nsub : 1)];
  size_t nev = pipeline_submit(rt, w, &sg, ev, stage_st);
  bool ranks = mgpu_num_ranks(rt) > 1;
  watch_events(ev, ranks ? 0 : nev);
  size_t finished = 0;
  for (size_t s = 0; s < nev; s++) {
    mgpu_stats_t one = {0};
    if (!ranks) stage_st[s] = mgpu_event_wait(ev[s], &one);
    else if (stage_st[s] == MGPU_OK) one.items = w->nrun - s / 3 * sub < sub ? w->nrun - s / 3 * sub : sub;
    finished += s % 3 == 2 ? one.items : 0;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  steal_mark(sa, true);
  watch_events(NULL, 0);
  for (size_t s = 0; s < nev && !ranks; s++) mgpu_event_release(ev[s]);
  free(ev);
  bool stopped = false;
  for (size_t s = 0; s < nev; s++)
    if (stage_st[s] != MGPU_OK && !(stopped |= canceled(stage_st[s], finished, w->nrun)))
      check_status(stage_st[s], "a pipeline stage");
  if (!stopped && st) pipeline_stats(rt, &before, st, seconds_between(&t0, &t1));
  free(before.worker);
  return stopped ? -1 : seconds_between(&t0, &t1);
}

/* Items checked by verification: every one of a small run, else about 2000
 * spread over it. */
size_t verify_step(size_t n) { return n <= 4096 ? 1 : n / 2000; }

void run_prepare(work_t *w) {
  w->started = true;
  w->complete = false;
  for (int i = 0; i < MGPU_MAX_ARGS; i++)
    if (w->outs[i]) memset(w->outs[i], 0xA5, w->outs_bytes[i] / w->n * w->nrun);
  w->vstep = verify_step(w->nrun);
  for (size_t i = 0; i < w->sample_cap; i++) w->sample_worker[i] = -1;
}

/* Run the workload once on rt, on its first w->nrun items; returns wall
 * seconds and fills stats (and, unless NULL, the steal time sa); -1 when
 * SIGINT canceled the run. */
double run_once(mgpu_runtime_t *rt, work_t *w, mgpu_stats_t *st, stealacc_t *sa) {
  run_prepare(w);
  double t = strcmp(w->name, "pipeline") != 0 ? run_single(rt, w, st, sa) : run_pipeline(rt, w, st, sa);
  if (t >= 0) w->complete = true, w->ndone = w->nrun;
  return t;
}

/* Whether a batch that has run el seconds and computed done of its total
 * items should stop. By its rate (project): once it has run half the bound,
 * where its rate so far says that it would run past the bound (at the bound
 * where nothing is done). By the clock: at the bound. */
static bool past_bound(double el, size_t done, size_t total, double bound_s, bool project) {
  if (!project) return el >= bound_s;
  if (el < bound_s / 2) return false;
  return done == 0 ? el >= bound_s : el * (double)total / (double)done > bound_s;
}

/* A run of the first k items (w->nrun = k), stopped at its next chunk once
 * past_bound says that it runs too long (bound_s 0: never). Returns the
 * seconds it ran and sets *done to the items it computed (k where it
 * completed, the outputs then holding them); -1 when SIGINT canceled it. The
 * pipeline's stages run to their end. st (may be NULL) gets the batch's
 * figures, and sa (may be NULL) the host's steal time; a run that completed
 * is timed by the library (mgpu_stats_t.wall_s), not by the polls that watch
 * it. */
static double bounded(mgpu_runtime_t *rt, work_t *w, size_t k, double bound_s, bool project, size_t *done,
                      mgpu_stats_t *st, stealacc_t *sa) {
  w->nrun = k;
  *done = k;
  if (bound_s <= 0 || !strcmp(w->name, "pipeline")) return run_once(rt, w, st, sa);
  run_prepare(w);
  mgpu_event_t *ev;
  mgpu_batch_t b = w->b;
  b.n = k;
  steal_mark(sa, false);
  double t0 = now_s();
  check_work_status(w, mgpu_submit(rt, &b, 0, NULL, &ev), "submitting the batch");
  watch_events(&ev, 1);
  progress_begin(ev);
  bool stopped = false;
  while (mgpu_event_test(ev) == MGPU_ESTATE) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    size_t d = 0, total = 0;
    if (!stopped && mgpu_event_progress(ev, &d, &total) == MGPU_OK &&
        past_bound(now_s() - t0, d, total, bound_s, project))
      stopped = mgpu_event_cancel(ev) == MGPU_OK;
  }
  mgpu_stats_t own = {0}, *s = st ? st : &own;
  mgpu_rank_stats_t *own_rs, *rs = shares(rt, s, &own_rs);
  mgpu_status_t stat = mgpu_event_wait(ev, s);
  double t = now_s() - t0;
  steal_mark(sa, true);
  progress_end();
  watch_events(NULL, 0);
  mgpu_event_release(ev);
  /* Across ranks: the items of every rank, and a stop by any rank (each
   * judges the bound by its own share) stops all. */
  size_t items = s->items;
  if (rs) items = 0;
  for (int r = 0; rs && r < mgpu_num_ranks(rt); r++) items += rs[r].items;
  if (canceled(stat, items, k)) {
    free(own_rs);
    return -1;
  }
  if (stat == MGPU_ECANCELED && (stopped || rs)) {
    *done = items;
    if (own_rs) s->rank = NULL, s->rank_cap = 0;
    free(own_rs);
    return t;
  }
  check_work_status(w, stat, "the batch");
  gather_outputs(rt, w, b.kernel, b.out, rs);
  if (own_rs) s->rank = NULL, s->rank_cap = 0;
  free(own_rs);
  w->complete = true, w->ndone = k;
  return st && s->wall_s > 0 ? s->wall_s : t;
}

double run_bounded(mgpu_runtime_t *rt, work_t *w, size_t k, double bound_s, bool project, size_t *done) {
  return bounded(rt, w, k, bound_s, project, done, NULL, NULL);
}

/* A run of the whole batch that is timed as run_once's are, but stopped as
 * the first warm-up is (by its rate, past bound_s): a mode's first timed run
 * where its warm-up is skipped and its prefix is not known yet. */
double run_bounded_timed(mgpu_runtime_t *rt, work_t *w, double bound_s, mgpu_stats_t *st, stealacc_t *sa,
                         size_t *done) {
  return bounded(rt, w, w->n, bound_s, true, done, st, sa);
}
