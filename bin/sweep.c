/*
 * sweep.c: --compare's sweep of fixed splits. Static mode at 1/8, 1/4, 1/2,
 * 2, 4 and 8 times the static mode's ratio (the one that the cpu and gpu
 * modes measured, or --ratio), each point with a runtime of its own and timed
 * as the modes are (a warm-up, a prefix where the whole batch would take over
 * --max-run-time) but with SWEEP_RUNS timed runs; a point that comes out the
 * fastest is timed again as a mode is. With its ends, the cpu mode (no item
 * on the GPUs) and the gpu mode (every item on them), and the static mode
 * itself, it gives the best fixed split, against which steal is set.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "mgpu-run.h"

static const double factors[SWEEP_POINTS] = {0.125, 0.25, 0.5, 2, 4, 8};
static const char *const labels[SWEEP_POINTS] = {"static x1/8", "static x1/4", "static x1/2",
                                                 "static x2",   "static x4",   "static x8"};

/* The share of the items of r's last timed run that the GPUs computed. */
double gpu_share(const result_t *r) {
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

/* Point i of the sweep: a runtime of its own at its ratio, timed by o. */
static void run_point(work_t *w, opts_t *o, sweep_t *s, int i) {
  mgpu_runtime_t *rt = start_point(o, s->ratio * factors[i]);
  measure(rt, w, o, &s->pt[i], labels[i]);
  finish_runtime(w, rt);
  s->share[i] = gpu_share(&s->pt[i]);
}

/* The point of the sweep that is the best fixed split, or -1 (a mode is). */
static int best_point(const sweep_t *s) {
  if (!s->best_mode || strcmp(s->best_mode, "sweep")) return -1;
  for (int i = 0; i < SWEEP_POINTS; i++)
    if (s->pt[i].ran && s->ratio * s->factor[i] == s->best_ratio) return i;
  return -1;
}

/* The options of the sweep's points: o, but with the reserve that the static
 * mode's trials chose under MGPU_RESERVE_THREADS=auto, rather than try every
 * reserve again (every CPU worker in where they chose all out: the ratio then
 * sets the CPUs' share). */
static opts_t point_opts(const opts_t *o, const outcome_t *oc) {
  const result_t *st = &oc->res[2];
  opts_t ok = *o;
  if (st->reserve_auto) ok.cfg.reserve_threads = st->reserve < st->ncpu ? st->reserve : 0;
  return ok;
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
  opts_t ok = point_opts(o, oc);
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
  opts_t ok = point_opts(o, oc);
  ok.repeat = SWEEP_RUNS < o->repeat ? SWEEP_RUNS : o->repeat;
  for (int i = 0; i < SWEEP_POINTS && !interrupted; i++) {
    run_point(w, &ok, s, i);
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
    /* Its single run is dropped: it was picked for being fast. */
    r->runs = 0, r->nround = 0;
    r->steal = (stealacc_t){0};
    run_point(w, &ok, s, i);
    if (r->runs == 0) r->ran = 0; /* SIGINT before a timed run: the dropped run is not a figure */
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

/* One line of the sweep's table. */
static void sweep_row(const char *ratio, double share, const result_t *r, const char *what, bool best) {
  printf("  %10s", ratio);
  if (!r->ran) {
    printf("  skipped (%s)\n", r->skipped ? r->skipped : "interrupted");
    return;
  }
  printf(" %8.1f%% %13.4g", 100 * share, r->throughput);
  const char *sep = "  ";
  if (what) printf("%s%s", sep, what), sep = ", ";
  else if (r->runs > 1) printf("%stimed again, median of %d", sep, r->runs), sep = ", ";
  if (r->prefix) printf("%son the first %zu items", sep, r->prefix), sep = ", ";
  if (best) printf("%sbest", sep);
  printf("\n");
}

/* The text report's table of fixed splits, by ratio, and the best of them. */
void sweep_report(const opts_t *o, const outcome_t *oc) {
  const sweep_t *s = &oc->sweep;
  const result_t *res = oc->res;
  if (s->skipped) {
    printf("fixed splits: not swept (%s)\n", s->skipped);
    return;
  }
  if (!s->ran) return;
  int runs = SWEEP_RUNS < o->repeat ? SWEEP_RUNS : o->repeat;
  printf("fixed splits: static mode at 1/8 to 8 times its ratio %.4g, %d timed run%s each after a warm-up "
         "(the modes: %d%s",
         s->ratio, runs, runs == 1 ? "" : "s", o->repeat, o->rounds > 1 ? " per round" : "");
  if (o->repeat > runs) printf("; a point that comes out best is timed again with %d", o->repeat);
  printf("), between the cpu and gpu modes:\n");
  printf("  %10s %9s %13s\n", "ratio", "on GPUs", "items/s");
  const char *b = s->best_mode ? s->best_mode : "";
  sweep_row("cpu only", 0, &res[0], "mode cpu", !strcmp(b, "cpu"));
  char label[32];
  for (int i = 0; i < SWEEP_POINTS; i++) {
    if (i == SWEEP_POINTS / 2) {
      snprintf(label, sizeof label, "%.4g", s->ratio);
      sweep_row(label, s->static_share, &res[2], "mode static", !strcmp(b, "static"));
    }
    snprintf(label, sizeof label, "%.4g", s->ratio * s->factor[i]);
    sweep_row(label, s->share[i], &s->pt[i], NULL, !strcmp(b, "sweep") && s->best_ratio == s->ratio * s->factor[i]);
  }
  sweep_row("gpu only", 1, &res[1], "mode gpu", !strcmp(b, "gpu"));
  if (!s->best_mode) return;
  printf("best static: %.4g items/s, ", s->best_tp);
  if (!strcmp(b, "cpu")) printf("CPU workers only (mode cpu)\n");
  else if (!strcmp(b, "gpu")) printf("GPUs only (mode gpu)\n");
  else printf("at ratio %.4g (%.1f%% of the items on the GPUs)\n", s->best_ratio, 100 * s->best_share);
}

/* One point of the JSON sweep; factor and ratio < 0: null (all on the GPUs). */
static void json_point(const char *mode, double factor, double ratio, double share, const result_t *r, bool last) {
  printf("      {\"mode\": \"%s\", ", mode);
  if (factor < 0) printf("\"factor\": null, \"ratio\": null");
  else printf("\"factor\": %.4g, \"ratio\": %.6g", factor, ratio);
  printf(", \"ran\": %s", r->ran ? "true" : "false");
  if (r->ran) {
    printf(", \"runs\": %d, \"wall_s\": %.6f, \"items_per_s\": %.3f, \"gpu_share\": %.4f", r->runs, r->wall_s,
           r->throughput, share);
    if (r->prefix) printf(", \"prefix_items\": %zu", r->prefix);
  }
  printf("}%s\n", last ? "" : ",");
}

/* "static_sweep" of the JSON report. */
void sweep_json(const outcome_t *oc) {
  const sweep_t *s = &oc->sweep;
  const result_t *res = oc->res;
  if (s->skipped) {
    printf("  \"static_sweep\": {\"ran\": false, \"skipped\": \"%s\"},\n", s->skipped);
    return;
  }
  printf("  \"static_sweep\": {\"ran\": %s, \"ratio\": %.6g, \"points\": [\n", s->ran ? "true" : "false", s->ratio);
  json_point("cpu", 0, 0, 0, &res[0], false);
  for (int i = 0; i < SWEEP_POINTS; i++) {
    if (i == SWEEP_POINTS / 2) json_point("static", 1, s->ratio, s->static_share, &res[2], false);
    json_point("sweep", s->factor[i], s->ratio * s->factor[i], s->share[i], &s->pt[i], false);
  }
  json_point("gpu", -1, -1, 1, &res[1], true);
  printf("    ],\n    \"best\": ");
  if (!s->best_mode) printf("null");
  else if (s->best_ratio < 0) printf("{\"mode\": \"gpu\", \"ratio\": null");
  else printf("{\"mode\": \"%s\", \"ratio\": %.6g", s->best_mode, s->best_ratio);
  if (s->best_mode) printf(", \"gpu_share\": %.4f, \"items_per_s\": %.3f}", s->best_share, s->best_tp);
  printf("\n  },\n");
}
