/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep.c: --compare's sweep of fixed splits. Static mode at 1/8, 1/4, 1/2,
 * 2, 4 and 8 times the static mode's ratio (the one that the cpu and gpu
 * modes measured, or --ratio), each point with a runtime of its own and timed
 * as the modes are (a warm-up, a prefix where the whole batch would take over
 * --max-run-time, within the bounds of bound.c) but with SWEEP_RUNS timed
 * runs; a point that comes out the fastest is timed again as a mode is. With
 * its ends, the cpu mode (no item on the GPUs) and the gpu mode (every item
 * on them), and the static mode itself, it gives the best fixed split,
 * against which steal is set.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "compare/compare.h"

static const double factors[SWEEP_POINTS] = {0.125, 0.25, 0.5, 2, 4, 8};
static const char *const labels[SWEEP_POINTS] = {"static x1/8", "static x1/4", "static x1/2",
                                                 "static x2",   "static x4",   "static x8"};

/* The share of the items of r's last timed run that the GPUs computed. */
static double gpu_share(const result_t *r) {
  double gpu = 0, all = 0;
  for (int i = 0; i < r->nw && r->ws; i++) {
    all += (double)r->ws[i].items;
    if (r->ws[i].kind == MGPU_WORKER_GPU) gpu += (double)r->ws[i].items;
  }
  return all > 0 ? gpu / all : 0;
}

/* A static runtime at a point's ratio, with the points' options o. */
static mgpu_runtime_t *start_point(opts_t *o, double ratio) {
  o->cfg.device_to_core_ratio = ratio < 1e7 ? ratio : 1e7; /* MGPU_DEVICE_TO_CORE_RATIO's range */
  return start_runtime(o, MGPU_SCHED_STATIC, 0, false);
}

/* Point i of the sweep: a runtime of its own at its ratio, timed by o
 * within the bounds b; false where a bound stopped it. */
static bool run_point(work_t *w, opts_t *o, sweep_t *s, int i, bound_t *b) {
  result_t *r = &s->pt[i];
  const char *why = bound_reached(b) ? bound_end_why : NULL;
  if (!why) {
    mgpu_runtime_t *rt = start_point(o, s->ratio * factors[i]);
    why = bound_measure(rt, w, o, r, labels[i], b);
    finish_runtime(w, rt);
  }
  if (why) {
    s->bounded[i] = why;
    if (!r->ran) r->skipped = why;
    return false;
  }
  s->share[i] = gpu_share(r);
  return true;
}

/* The point of the sweep that is the best fixed split, or -1 (a mode is). */
static int best_point(const sweep_t *s) {
  if (!s->best_mode || strcmp(s->best_mode, "sweep")) return -1;
  for (int i = 0; i < SWEEP_POINTS; i++)
    if (s->pt[i].ran && s->ratio * s->factor[i] == s->best_ratio) return i;
  return -1;
}

/* A runtime of the best fixed split, set up as it was when it was timed:
 * the cpu, gpu or static mode, or a point of the sweep; NULL when none ran.
 * *from is its result. */
mgpu_runtime_t *start_best_split(const opts_t *o, const outcome_t *oc, const result_t **from) {
  const sweep_t *s = &oc->sweep;
  if (!s->best_mode) return NULL;
  if (!strcmp(s->best_mode, "cpu")) return *from = &oc->res[0], start_runtime(o, MGPU_SCHED_CPU, 0, false);
  if (!strcmp(s->best_mode, "gpu")) return *from = &oc->res[1], start_runtime(o, MGPU_SCHED_GPU, 0, false);
  if (!strcmp(s->best_mode, "static")) return *from = &oc->res[2], start_runtime(o, MGPU_SCHED_STATIC, s->ratio, false);
  int i = best_point(s);
  if (i < 0) return NULL;
  *from = &s->pt[i];
  opts_t ok = *o;
  return start_point(&ok, s->best_ratio);
}

/* Run the sweep, in the last round of --compare, after the static mode; skip
 * says why it cannot run (that of the static mode), or is NULL. */
void run_sweep(work_t *w, const opts_t *o, outcome_t *oc, const char *skip) {
  sweep_t *s = &oc->sweep;
  const result_t *st = &oc->res[2];
  for (int i = 0; i < SWEEP_POINTS; i++) s->factor[i] = factors[i], s->pt[i].mode = labels[i];
  if (!skip && (!oc->res[0].ran || !oc->res[1].ran || !st->ran || s->ratio <= 0))
    skip = "the cpu, gpu or static mode did not run";
  if (skip) {
    s->skipped = skip;
    return;
  }
  /* The static mode's settings: under MGPU_RESERVE_THREADS=auto a fixed
   * split keeps every CPU worker in, so the ratio alone sets its shares. */
  opts_t ok = *o;
  ok.repeat = SWEEP_RUNS < o->repeat ? SWEEP_RUNS : o->repeat;
  for (int i = 0; i < SWEEP_POINTS && !interrupted; i++) {
    run_point(w, &ok, s, i, &oc->bound);
    s->ran |= s->pt[i].ran;
  }
  /* The fastest of single runs is the luckiest one: a point that comes out
   * best is timed again, --repeat runs of a fresh runtime like a mode's, and
   * the best is chosen again, until it is a mode or a point so timed. */
  ok.repeat = o->repeat;
  for (;;) {
    sweep_best(oc);
    int i = best_point(s);
    if (i < 0 || s->pt[i].runs >= ok.repeat || interrupted) break;
    result_t *r = &s->pt[i];
    /* Past the comparison's end it keeps its single run, named bounded. */
    if (bound_reached(&oc->bound)) {
      s->bounded[i] = bound_end_why;
      break;
    }
    /* Its single run is dropped: it was picked for being fast. A bound
     * that stops its timing again leaves the point without a figure. */
    r->runs = 0, r->nround = 0;
    r->steal = (stealacc_t){0};
    if (!run_point(w, &ok, s, i, &oc->bound)) r->ran = 0, r->skipped = s->bounded[i];
    else if (r->runs == 0) r->ran = 0; /* SIGINT before a timed run: the dropped run is not a figure */
  }
}

/* The best fixed split among the cpu, gpu and static modes and the points. */
void sweep_best(outcome_t *oc) {
  sweep_t *s = &oc->sweep;
  const result_t *res = oc->res;
  s->best_mode = NULL;
  s->best_tp = 0;
  if (s->skipped || !s->ran) return;
  s->static_share = gpu_share(&res[2]);
  struct {
    const result_t *r;
    const char *mode;
    double ratio, share;
  } c[SWEEP_POINTS + 3] = {
      {&res[0], "cpu", 0, 0}, {&res[1], "gpu", -1, 1}, {&res[2], "static", s->ratio, s->static_share}};
  for (int i = 0; i < SWEEP_POINTS; i++) {
    c[3 + i].r = &s->pt[i], c[3 + i].mode = "sweep";
    c[3 + i].ratio = s->ratio * s->factor[i], c[3 + i].share = s->share[i];
  }
  for (int i = 0; i < SWEEP_POINTS + 3; i++) {
    if (!c[i].r->ran || c[i].r->throughput <= s->best_tp) continue;
    s->best_tp = c[i].r->throughput;
    s->best_mode = c[i].mode;
    s->best_ratio = c[i].ratio;
    s->best_share = c[i].share;
  }
}
