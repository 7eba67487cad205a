/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bound.c: --compare's bounds. A runtime is timed as run/measure.c times a
 * mode: a warm-up (skipped where the model store holds the kernel, as
 * there), stopped early where the whole batch would pass --max-run-time, up
 * to SIZING_RUNS runs of prefixes, each cancelled at --max-run-time
 * (mgpu_event_cancel: it stops at its next chunk), to find the largest that
 * runs within it, then its other warm-ups (the reserve's trials where it
 * steals under the auto reserve) and timed runs, each cancelled at GRACE
 * times --max-run-time. The comparison as a whole ends within its bound,
 * --compare-time or the sum of those limits over the runs it allows for
 * (count_runs) where less: past that end nothing starts and a run still
 * going is cancelled (the pipeline's runs, three dependent stages, run to
 * their end). A mode, a point of the
 * sweep, a turn or the ceiling whose timed run was cancelled, or that the
 * end stopped, is reported bounded, and the runs its runtime made then give
 * no figure.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compare/compare.h"

#define SIZING_RUNS 8 /* run/measure.c's PREFIX_TRIES */
/* Runs of the same items vary (a shared machine's stalls make a run of a
 * prefix that ran within --max-run-time take half as long again): the runs
 * on the prefix chosen are cancelled at this many times it, which tells a
 * run gone astray from the noise. */
#define GRACE 2
/* run/measure.c's: a stored model skips the warm-up only where this many
 * timed runs follow it or more. */
#define SKIP_MIN_RUNS 3
#define PREFIX_ENOUGH 0.5 /* as run/measure.c: a prefix that ran this share of the bound is kept */

const char *const bound_end_why = "bounded: the comparison reached its bound";
static const char *const timed_cut_why = "bounded: a timed run passed twice --max-run-time and was cancelled";

/* The thread that cancels the run in flight at its deadline: the main thread
 * waits on the run's event as run/batch.c does, so that the time it measures
 * ends when the batch does. */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  pthread_t thread;
  bool running, stop;
  mgpu_event_t *ev; /* the run in flight, cancelled at `at`; NULL: none */
  double at;
} cutter = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *cutter_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&cutter.lock);
  while (!cutter.stop) {
    if (!cutter.ev) {
      pthread_cond_wait(&cutter.cv, &cutter.lock);
      continue;
    }
    double left = cutter.at - now_s();
    if (left <= 0) {
      mgpu_event_cancel(cutter.ev); /* returns at once */
      cutter.ev = NULL;
      continue;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)left;
    ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&cutter.cv, &cutter.lock, &ts);
  }
  pthread_mutex_unlock(&cutter.lock);
  return NULL;
}

static void cutter_arm(mgpu_event_t *ev, double at) {
  pthread_mutex_lock(&cutter.lock);
  cutter.ev = ev;
  cutter.at = at;
  pthread_cond_signal(&cutter.cv);
  pthread_mutex_unlock(&cutter.lock);
}

static void cutter_start(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* now_s()'s clock */
  pthread_cond_init(&cutter.cv, &a);
  pthread_condattr_destroy(&a);
  cutter.stop = false;
  cutter.ev = NULL;
  if (pthread_create(&cutter.thread, NULL, cutter_main, NULL) != 0) {
    fprintf(stderr, "%s: cannot start a thread\n", prog);
    exit(EXIT_FAIL);
  }
  cutter.running = true;
}

static void cutter_stop(void) {
  if (!cutter.running) return;
  pthread_mutex_lock(&cutter.lock);
  cutter.stop = true;
  pthread_cond_signal(&cutter.cv);
  pthread_mutex_unlock(&cutter.lock);
  pthread_join(cutter.thread, NULL);
  pthread_cond_destroy(&cutter.cv);
  cutter.running = false;
}

/* The runs the comparison allows for, into b: where a runtime sizes a prefix
 * (the first round's modes, the sweep's points), its first warm-up and
 * SIZING_RUNS runs of prefixes, each within --max-run-time (b->sizing); and
 * its other warm-ups (the reserve's MGPU_RESERVE_TRIALS where it steals
 * under the auto reserve, less the first where it sized one) and its timed
 * runs, each within GRACE times it (b->runs), as the ceiling's passes.
 * mode[m]: whether mode m (cpu, gpu, static, steal) runs; the sweep and the
 * turns run where they all do; ceiling: whether it is measured. */
static void count_runs(bound_t *b, const opts_t *o, const bool mode[4], bool trials, bool ceiling) {
  int steal_warm = trials ? MGPU_RESERVE_TRIALS : 1;
  for (int round = 0; round < o->rounds; round++)
    for (int m = 0; m < 4; m++) {
      if (!mode[m]) continue;
      int sizing = round == 0 ? 1 + SIZING_RUNS : 0;
      b->sizing += sizing;
      b->runs += (m == 3 ? steal_warm : 1) - (sizing ? 1 : 0) + o->repeat;
    }
  if (mode[0] && mode[1] && mode[2]) {
    int point = SWEEP_RUNS < o->repeat ? SWEEP_RUNS : o->repeat;
    b->sizing += SWEEP_POINTS * (1 + SIZING_RUNS);
    b->runs += SWEEP_POINTS * point;
    if (o->repeat > point) b->runs += 1 + o->repeat; /* a point timed again */
    if (mode[3]) b->runs += o->turns * ((1 + o->repeat) + (steal_warm + o->repeat));
  }
  if (ceiling) b->runs += 1 + o->repeat;
}

void bound_start(bound_t *b, const opts_t *o, const bool mode[4], bool trials, bool ceiling) {
  memset(b, 0, sizeof *b);
  b->run_s = o->max_run_s;
  b->grace = GRACE;
  count_runs(b, o, mode, trials, ceiling);
  b->sum_s = b->run_s * (b->sizing + GRACE * b->runs);
  b->limit_s = o->compare_s;
  b->total_s = b->limit_s > 0 && b->limit_s < b->sum_s ? b->limit_s : b->sum_s;
  b->start = now_s();
  b->end = b->start + b->total_s;
  if (b->run_s > 0) cutter_start();
}

void bound_finish(bound_t *b) {
  b->took_s = now_s() - b->start;
  cutter_stop();
}

/* Seconds the next run may take: grace times --max-run-time, or less where
 * the comparison's end comes sooner; 0 without bounds; -1 past the end.
 * Rank 0's clock decides for every rank. */
static double run_limit(const bound_t *b, double grace) {
  if (b->run_s <= 0) return 0;
  double left = ranks_bcast(b->end - now_s());
  if (left <= 0) return -1;
  return left < grace * b->run_s ? left : grace * b->run_s;
}

bool bound_reached(const bound_t *b) { return b->run_s > 0 && ranks_bcast(b->end - now_s()) <= 0; }

/* Why a timed run was cancelled: the comparison's end, or its own bound. */
static const char *cut_why(const bound_t *b) { return bound_reached(b) ? bound_end_why : timed_cut_why; }

/* A run of w's first w->nrun items, cancelled once it has run limit seconds
 * (0: never; the pipeline's stages always run to their end): its seconds,
 * with its figures in st and sa (NULL: not wanted); -1 where SIGINT canceled
 * it. *cut: the limit cancelled it, and the outputs are partial. */
static double cut_run(mgpu_runtime_t *rt, work_t *w, double limit, mgpu_stats_t *st, stealacc_t *sa, bool *cut) {
  *cut = false;
  if (limit <= 0 || !strcmp(w->name, "pipeline")) return run_once(rt, w, st, sa);
  run_prepare(w);
  int nranks = mgpu_num_ranks(rt);
  mgpu_stats_t own = {0}, *s = st ? st : &own;
  mgpu_rank_stats_t *own_rs = NULL;
  if (nranks > 1 && (!s->rank || s->rank_cap < nranks)) {
    own_rs = calloc((size_t)nranks, sizeof *own_rs);
    if (!own_rs) {
      fprintf(stderr, "%s: out of memory\n", prog);
      exit(EXIT_FAIL);
    }
    s->rank = own_rs;
    s->rank_cap = nranks;
  }
  if (nranks > 1) s->size = sizeof *s;
  mgpu_batch_t b = w->b;
  b.n = w->nrun;
  mgpu_event_t *ev;
  steal_mark(sa, false);
  double t0 = now_s();
  check_work_status(w, mgpu_submit(rt, &b, 0, NULL, &ev), "submitting the batch");
  cutter_arm(ev, t0 + limit);
  watch_events(&ev, 1);
  progress_begin(ev);
  mgpu_status_t rc = mgpu_event_wait(ev, s);
  double t = now_s() - t0;
  steal_mark(sa, true);
  cutter_arm(NULL, 0);
  progress_end();
  watch_events(NULL, 0);
  mgpu_event_release(ev);
  size_t items = s->items;
  if (nranks > 1) {
    items = 0;
    for (int r = 0; r < nranks; r++) items += s->rank[r].items;
  }
  bool stopped = canceled(rc, items, w->nrun);
  if (!stopped && rc == MGPU_ECANCELED) *cut = true;
  else if (!stopped) {
    check_work_status(w, rc, "the batch");
    for (int i = 0; nranks > 1 && i < b.kernel->nout; i++)
      ranks_gather(b.out[i], b.kernel->out_size[i], s->rank, nranks);
    w->complete = true, w->ndone = w->nrun;
  }
  if (own_rs) s->rank = NULL, s->rank_cap = 0;
  free(own_rs);
  return stopped ? -1 : t;
}

/* The prefix to time after the first warm-up, which ran t seconds and
 * computed done items, as run/measure.c sizes it: the whole batch where it
 * completed within --max-run-time, else the largest prefix that runs of
 * prefixes find to run within it (at most SIZING_RUNS of them). Returns 0, 1
 * where the comparison's end stopped it (*why), -1 on SIGINT. */
static int size_prefix(mgpu_runtime_t *rt, work_t *w, result_t *r, double t, size_t done, const bound_t *b,
                       const char **why) {
  t = ranks_bcast(t);
  done = (size_t)ranks_bcast((double)done);
  double bound = b->run_s;
  if (bound <= 0 || (done >= w->n && t <= bound)) return r->sized = true, 0;
  size_t lo = 0, hi = w->n, k = prefix_next(w->n, done, t, bound, lo, hi);
  for (int i = 0; i < SIZING_RUNS && k > 0; i++) {
    progress_label(r->mode, "sizing run", i + 1, SIZING_RUNS);
    double lim = run_limit(b, 1);
    if (lim < 0) return *why = bound_end_why, 1;
    size_t dk;
    double tk = run_bounded(rt, w, k, lim, false, &dk);
    if (tk < 0) return -1;
    tk = ranks_bcast(tk);
    dk = (size_t)ranks_bcast((double)dk);
    if (dk < k && lim < bound) return *why = bound_end_why, 1;
    bool within = dk >= k && tk <= bound;
    if (within) lo = k;
    else hi = k;
    if (within && tk >= bound * PREFIX_ENOUGH) break;
    k = prefix_next(k, dk, tk, bound, lo, hi);
  }
  /* No prefix ran within the bound: the last estimate, at least one item. */
  r->prefix = lo ? lo : k ? k : 1;
  r->sized = true;
  return 0;
}

/* The warm-ups: the first (bounded by its rate: it stops once past half of
 * --max-run-time where its rate says it would pass it) and those that size
 * the prefix, unless r is sized already, then the rest of warm. A warm-up
 * cancelled at its limit still warms (the model learns from the chunks that
 * ran): the runtime goes on, and b counts it. Returns 0, 1 where the
 * comparison's end stopped them (*why), -1 on SIGINT. */
static int warm_up(mgpu_runtime_t *rt, work_t *w, result_t *r, int warm, bound_t *b, const char **why) {
  int i = 0;
  if (interrupted) return -1;
  if (!r->sized) {
    progress_label(r->mode, "warm-up", 1, warm);
    double lim = run_limit(b, 1);
    if (lim < 0) return *why = bound_end_why, 1;
    size_t done;
    double t = run_bounded(rt, w, w->n, lim, lim == b->run_s, &done);
    if (t < 0) return -1;
    if (done < w->n && lim < b->run_s) return *why = bound_end_why, 1;
    int rc = size_prefix(rt, w, r, t, done, b, why);
    if (rc) return rc;
    i = 1;
  }
  w->nrun = r->prefix ? r->prefix : w->n;
  for (; i < warm; i++) {
    if (interrupted) return -1;
    progress_label(r->mode, "warm-up", i + 1, warm);
    double lim = run_limit(b, GRACE);
    if (lim < 0) return *why = bound_end_why, 1;
    bool cut;
    if (cut_run(rt, w, lim, NULL, NULL, &cut) < 0) return -1;
    if (cut && bound_reached(b)) return *why = bound_end_why, 1;
    b->warm_cut += cut;
  }
  return interrupted ? -1 : 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void *alloc_or_die(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  return p;
}

/* A runtime's timed runs before they go to r: each run's figures in the
 * scratch arrays (run_*), those of the last that completed within its bound
 * in last_*. */
typedef struct {
  int nw, nranks, done;
  double *times;
  mgpu_worker_stats_t *run_ws, *last_ws;
  mgpu_rank_stats_t *run_rs, *last_rs;
  mgpu_stats_t last;
  stealacc_t steal;
} runs_t;

static void runs_make(runs_t *k, int nw, int nranks, int repeat, const stealacc_t *steal) {
  memset(k, 0, sizeof *k);
  k->nw = nw, k->nranks = nranks;
  k->times = alloc_or_die((size_t)repeat, sizeof *k->times);
  k->run_ws = alloc_or_die((size_t)nw, sizeof *k->run_ws);
  k->last_ws = alloc_or_die((size_t)nw, sizeof *k->last_ws);
  k->run_rs = nranks > 1 ? alloc_or_die((size_t)nranks, sizeof *k->run_rs) : NULL;
  k->last_rs = nranks > 1 ? alloc_or_die((size_t)nranks, sizeof *k->last_rs) : NULL;
  k->steal = *steal;
}

static void runs_free(runs_t *k) {
  free(k->times);
  free(k->run_ws);
  free(k->last_ws);
  free(k->run_rs);
  free(k->last_rs);
}

/* The figures of a run into the scratch arrays. */
static mgpu_stats_t runs_stats(const runs_t *k) {
  return (mgpu_stats_t){.size = sizeof(mgpu_stats_t), .worker = k->run_ws, .worker_cap = k->nw, .rank = k->run_rs,
                        .rank_cap = k->nranks > 1 ? k->nranks : 0};
}

/* A run that completed within its bound, t seconds, its figures in st. */
static void runs_keep(runs_t *k, double t, const mgpu_stats_t *st, const stealacc_t *sa) {
  k->steal = *sa;
  k->times[k->done++] = t;
  k->last = *st;
  memcpy(k->last_ws, k->run_ws, sizeof *k->run_ws * (size_t)k->nw);
  if (k->run_rs) memcpy(k->last_rs, k->run_rs, sizeof *k->run_rs * (size_t)k->nranks);
}

/* The timed runs of k added to r, of w->nrun items each, as measure() adds
 * them: with --rounds, r gathers every round's runs (its figures the median
 * of all) and keeps each round's own median. */
static void runs_add(const runs_t *k, const work_t *w, result_t *r) {
  int done = k->done;
  double *all = realloc(r->times, sizeof *all * (size_t)(r->runs + done + 1));
  if (!all) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  r->times = all;
  memcpy(all + r->runs, k->times, sizeof *k->times * (size_t)done);
  double items = (double)w->nrun;
  qsort(k->times, (size_t)done, sizeof *k->times, cmp_double);
  if (r->nround < MAX_ROUNDS) r->round_tp[r->nround++] = k->times[done / 2] > 0 ? items / k->times[done / 2] : 0;
  r->runs += done;
  qsort(all, (size_t)r->runs, sizeof *all, cmp_double);
  r->wall_s = all[r->runs / 2];
  r->throughput = r->wall_s > 0 ? items / r->wall_s : 0;
  memcpy(r->ws, k->last_ws, sizeof *k->last_ws * (size_t)k->nw);
  if (k->last_rs) memcpy(r->rs, k->last_rs, sizeof *k->last_rs * (size_t)k->nranks);
  r->st = k->last;
  r->st.worker = r->ws, r->st.rank = r->rs;
  r->reserve = k->last.reserve_workers;
  r->steal = k->steal;
  r->ran = 1;
}

/* Where a stored model skips the warm-up, as run/measure.c does: a runtime
 * whose prefix is not known yet makes its first timed run of the whole
 * batch, stopped by its rate as the first warm-up is; one that completed
 * within --max-run-time is timed run 1 (kept in k), one that did not was the
 * first warm-up after all, and sizes the prefix. Returns as warm_up. */
static int skip_warm_up(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, runs_t *k, const bound_t *b,
                        const char **why) {
  if (interrupted) return -1;
  if (r->sized || b->run_s <= 0) {
    r->sized = true;
    w->nrun = r->prefix ? r->prefix : w->n;
    return 0;
  }
  progress_label(r->mode, "timed run", 1, o->repeat);
  double lim = run_limit(b, 1);
  if (lim < 0) return *why = bound_end_why, 1;
  mgpu_stats_t st = runs_stats(k);
  stealacc_t sa = k->steal;
  size_t done;
  double t = run_bounded_timed(rt, w, lim, &st, &sa, &done);
  if (t < 0) return -1;
  if (done < w->n && lim < b->run_s) return *why = bound_end_why, 1;
  int rc = size_prefix(rt, w, r, t, done, b, why);
  if (rc) return rc;
  if (r->prefix == 0) {
    w->nrun = w->n;
    runs_keep(k, t, &st, &sa);
    return 0;
  }
  r->warm_skipped = false;
  warmup_log.skipped--, warmup_log.sized++;
  w->nrun = r->prefix;
  return 0;
}

/* Time o->repeat runs of w on rt after its warm-ups, as measure() does (the
 * warm-ups skipped where the model store holds the kernel), each run within
 * the bounds of b, and add them to r; returns why a bound stopped them (a
 * timed run cancelled, or the comparison's end: r then keeps only what
 * earlier calls added), or NULL. */
const char *bound_measure(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, const char *mode, bound_t *b) {
  int nw = mgpu_num_workers(rt), nranks = mgpu_num_ranks(rt);
  r->mode = mode;
  if (r->ws && r->nw != nw) free(r->ws), r->ws = NULL;
  if (!r->ws) r->ws = alloc_or_die((size_t)nw, sizeof *r->ws);
  r->nw = nw;
  r->ncpu = mgpu_num_cpu_workers(rt);
  if (r->rs && r->nranks != nranks) free(r->rs), r->rs = NULL;
  if (!r->rs && nranks > 1) r->rs = alloc_or_die((size_t)nranks, sizeof *r->rs);
  r->nranks = nranks;
  r->reserve_auto = !strncmp(reserve_setting(rt), "auto", 4);
  /* The reserve's trials run where the runtime steals: a fixed split is the
   * one its ratio names, which the runtime keeps under the auto reserve. */
  bool trials = r->reserve_auto && runtime_sched(rt) == MGPU_SCHED_STEAL && mgpu_num_gpus(rt) > 0 && r->ncpu > 0;
  r->warm_skipped = o->repeat >= SKIP_MIN_RUNS && warmup_stored(rt, w, mode);
  warmup_log.runtimes++;
  if (r->warm_skipped) {
    warmup_log.skipped++;
    snprintf(warmup_log.kernel, sizeof warmup_log.kernel, "%s", w->b.kernel->name);
  }
  runs_t k;
  runs_make(&k, nw, nranks, o->repeat, &r->steal);
  uint64_t timed_batch = next_batch(rt);
  const char *why = NULL;
  int rc = r->warm_skipped ? skip_warm_up(rt, w, o, r, &k, b, &why)
                           : warm_up(rt, w, r, trials ? MGPU_RESERVE_TRIALS : 1, b, &why);
  if (!rc && k.done == 0) timed_batch = next_batch(rt); /* after the warm-ups */
  for (int i = k.done; !rc && i < o->repeat && !interrupted; i++) {
    progress_label(mode, "timed run", i + 1, o->repeat);
    double lim = run_limit(b, GRACE);
    if (lim < 0) {
      why = bound_end_why;
      break;
    }
    mgpu_stats_t st = runs_stats(&k);
    stealacc_t sa = k.steal;
    bool cut;
    double t = cut_run(rt, w, lim, &st, &sa, &cut);
    if (t < 0) break;
    if (cut) {
      why = cut_why(b);
      break;
    }
    runs_keep(&k, t, &st, &sa);
  }
  if (!rc && !why && k.done > 0) {
    runs_add(&k, w, r);
    r->timed_batch = timed_batch;
  }
  runs_free(&k);
  return why;
}
