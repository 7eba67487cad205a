/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report_compare.c: the text report's sections of --compare: the table of
 * fixed splits (compare/sweep.c), the line of the turns (compare/turns.c),
 * the ceiling with its host copy (compare/ceiling.c; --ceiling too), and the
 * comparison's bound with what met it (compare/bound.c).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "report/report.h"

/* The CPU workers' share of the items that a fixed split at ratio (a GPU
 * counting as that many CPU workers; < 0: every item on the GPUs) names, for
 * r's runtime of ngpu GPUs and the CPU workers its last run kept in. */
double named_cpu_share(double ratio, const result_t *r, int ngpu) {
  if (ratio < 0) return 0;
  double cpus = r->ncpu - r->reserve;
  return cpus > 0 ? cpus / (cpus + ngpu * ratio) : 0;
}

/* One line of the sweep's table: the CPU workers' share that its ratio names
 * and the one they computed in its last run (1 - gpu_share, from its stats). */
static void sweep_row(const char *label, double ratio, double share, const result_t *r, const char *what,
                      const char *bounded, bool best, int ngpu) {
  printf("  %10s", label);
  if (!r->ran) {
    printf("  skipped (%s)\n", r->skipped ? r->skipped : "interrupted");
    return;
  }
  printf(" %8.1f%% %8.1f%% %13.4g", 100 * named_cpu_share(ratio, r, ngpu), 100 * (1 - share), r->throughput);
  const char *sep = "  ";
  if (what) printf("%s%s", sep, what), sep = ", ";
  else if (r->runs > 1) printf("%stimed again, median of %d", sep, r->runs), sep = ", ";
  if (r->prefix) printf("%son the first %zu items", sep, r->prefix), sep = ", ";
  if (bounded) printf("%snot timed again (%s)", sep, bounded), sep = ", ";
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
  printf("), between the cpu and gpu modes; the CPU workers' share of the items, named by the ratio and given "
         "in the last timed run (its stats):\n");
  printf("  %10s %9s %9s %13s\n", "ratio", "CPU named", "CPU given", "items/s");
  const char *b = s->best_mode ? s->best_mode : "";
  int g = oc->ngpu;
  sweep_row("cpu only", 0, 0, &res[0], "mode cpu", NULL, !strcmp(b, "cpu"), g);
  char label[32];
  for (int i = 0; i < SWEEP_POINTS; i++) {
    double ratio = s->ratio * s->factor[i];
    if (i == SWEEP_POINTS / 2) {
      snprintf(label, sizeof label, "%.4g", s->ratio);
      sweep_row(label, s->ratio, s->static_share, &res[2], "mode static", NULL, !strcmp(b, "static"), g);
    }
    snprintf(label, sizeof label, "%.4g", ratio);
    sweep_row(label, ratio, s->share[i], &s->pt[i], NULL, s->pt[i].ran ? s->bounded[i] : NULL,
              !strcmp(b, "sweep") && s->best_ratio == ratio, g);
  }
  sweep_row("gpu only", -1, 1, &res[1], "mode gpu", NULL, !strcmp(b, "gpu"), g);
  if (!s->best_mode) return;
  printf("best static: %.4g items/s, ", s->best_tp);
  if (!strcmp(b, "cpu")) printf("CPU workers only (mode cpu)\n");
  else if (!strcmp(b, "gpu")) printf("GPUs only (mode gpu)\n");
  else printf("at ratio %.4g (%.1f%% of the items on the GPUs)\n", s->best_ratio, 100 * s->best_share);
}

/* The text report's line. */
void turns_report(const opts_t *o, const outcome_t *oc) {
  const turns_t *t = &oc->turns;
  if (o->turns <= 0) return;
  if (t->skipped) {
    printf("turns: not run (%s)\n", t->skipped);
    return;
  }
  const sweep_t *s = &oc->sweep;
  char what[64];
  if (!strcmp(s->best_mode, "sweep") || !strcmp(s->best_mode, "static"))
    snprintf(what, sizeof what, "static at ratio %.4g", s->best_ratio);
  else snprintf(what, sizeof what, "mode %s", s->best_mode);
  printf("turns: best static (%s) and steal, %d turn%s of a runtime and %d timed run%s each: %.4g and %.4g "
         "items/s; steal / best static = %.3fx", what, t->n, t->n == 1 ? "" : "s", o->repeat,
         o->repeat == 1 ? "" : "s", t->best.throughput, t->steal.throughput, t->ratio);
  for (int k = 0; k < t->n && t->n > 1; k++) printf("%s%.3f", k ? ", " : " (by turn: ", t->by_turn[k]);
  printf("%s\n", t->n > 1 ? ")" : "");
}

void ceiling_report(const ceiling_t *c, const result_t *gpu) {
  if (c->skipped) {
    printf("ceiling: not measured (%s)\n", c->skipped);
    return;
  }
  char what[64] = "the batch";
  if (c->prefix) snprintf(what, sizeof what, "its first %zu items", c->prefix);
  printf("ceiling  %.4f s, %.4g items/s: %s as one launch on GPU 0, copied in and out in one piece from "
         "pinned memory (best of the timed runs)",
         c->wall_s, c->throughput, what);
  if (c->wall_s > 0) printf("; copies %.0f%% of its time", 100 * c->copy_s / c->wall_s);
  if (gpu && gpu->ran && c->throughput > 0) printf("; gpu mode reaches %.0f%% of it", 100 * gpu->throughput / c->throughput);
  printf("\n");
  if (c->differs) printf("ceiling: its results differ from the batch's\n");
  if (c->host_skipped) {
    printf("host copy: not measured (%s)\n", c->host_skipped);
  } else if (c->host_s > 0) {
    double bound = (double)c->items / c->host_s;
    printf("host copy %.3g s, %.3g GB/s: %s inputs and outputs (%.4g MB) between the pageable arrays and pinned "
           "memory on %d CPU worker%s (best of the timed runs), which bounds a GPU fed from them to %.4g items/s",
           c->host_s, (double)c->host_bytes / c->host_s / 1e9, c->prefix ? "the ceiling's items'" : "the batch's",
           (double)c->host_bytes / 1e6, c->host_threads, c->host_threads == 1 ? "" : "s", bound);
    if (gpu && gpu->ran && bound > 0) printf("; gpu mode reaches %.0f%% of it", 100 * gpu->throughput / bound);
    printf("\n");
  }
}

/* One piece of the comparison that met a bound, in the "bounded:" line. */
static void bounded_item(int *n, const char *what, const char *why) {
  if (!why) return;
  printf("%s%s (%s)", (*n)++ ? "; " : "bounded: ", what, why + strlen("bounded: "));
}

/* The comparison's bound, what it took, and what met a bound. */
void bound_report(const outcome_t *oc) {
  const bound_t *b = &oc->bound;
  if (b->run_s <= 0) {
    printf("bound: none (--max-run-time 0: no run is cancelled, and the comparison has no bound); it took %.3g s\n",
           b->took_s);
    return;
  }
  printf("bound: %.4g s for the comparison", b->total_s);
  if (b->total_s < b->sum_s) printf(" (--compare-time), under the %.4g s its runs' limits sum to", b->sum_s);
  printf(", its runs cancelled at their limits: --max-run-time %g s for each of the %d that size a prefix, %g times "
         "that for each of the %d others (warm-ups, timed runs, the ceiling's passes); it took %.3g s",
         b->run_s, b->sizing, b->grace, b->runs, b->took_s);
  bool one = b->warm_cut == 1;
  if (b->warm_cut)
    printf("; %d warm-up%s cancelled at %g s, %s runtime%s going on to %s timed runs", b->warm_cut,
           one ? " was" : "s were", b->grace * b->run_s, one ? "its" : "their", one ? "" : "s", one ? "its" : "their");
  printf("\n");
  int n = 0;
  for (int m = 0; m < 4; m++) {
    char what[32];
    snprintf(what, sizeof what, "mode %s", oc->res[m].mode);
    bounded_item(&n, what, oc->mode_bounded[m]);
  }
  for (int i = 0; i < SWEEP_POINTS; i++) bounded_item(&n, oc->sweep.pt[i].mode, oc->sweep.bounded[i]);
  bounded_item(&n, "the turns", oc->turns.bounded);
  bounded_item(&n, "the ceiling", oc->ceiling.bounded);
  if (n) printf("\n");
}
