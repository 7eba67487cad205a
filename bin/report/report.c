/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c: the text reports of a batch workload: the header line, a line
 * per mode with the per-worker table, the scaling table of --gpus, the fixed
 * splits (report_compare.c), E and the speedups of --compare, notes, and the
 * verification line; and --quiet's one line. Under an MPI launcher, rank 0
 * prints them, with a table of the ranks after a mode's workers.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "report/report.h"

/* Steal shown on a mode's line from STEAL_SHOW, and above STEAL_NOTE a note
 * that the host, not only the runtime, was measured: at such rates CPU chunks
 * stall for milliseconds (doc/tuning.md, "mgpu-run's defaults"). */
#define STEAL_SHOW 0.005
#define STEAL_NOTE 0.05

/* "LABEL V" and, over more than one round, " (by round: V1, V2, ...)". */
static void print_ratio(const char *label, double v, const double *by, int n, const char *unit) {
  printf("%s%.3f%s", label, v, unit);
  for (int k = 0; k < n && n > 1; k++) printf("%s%.3f%s", k ? ", " : " (by round: ", by[k], unit);
  printf("%s", n > 1 ? ")" : "");
}

/* The per-worker table of the mode's last timed run: the library's own. */
static void print_workers(const result_t *r, const work_t *w) {
  if (!strcmp(w->name, "pipeline"))
    printf("pipeline: items of the last run's three stages (%zu per stage), by worker:\n", r->prefix ? r->prefix : w->n);
  mgpu_stats_print(NULL, &r->st, stdout);
  /* The setting as the user gave it: --reserve, or the variable. */
  char text[64], set[64];
  if (r->reserve_auto) snprintf(text, sizeof text, "MGPU_RESERVE_THREADS=auto");
  else snprintf(text, sizeof text, "MGPU_RESERVE_THREADS=%d", r->reserve);
  snprintf(set, sizeof set, "%s", flagname_apply(text));
  if (r->reserve >= r->ncpu && r->reserve_auto)
    printf("Every CPU worker was kept out of the last run, which this kernel's trials found faster (%s)\n", set);
  else if (r->reserve > 0 && r->reserve_auto)
    printf("CPU workers %d..%d were kept out of the last run, which this kernel's trials found faster (%s)\n",
           r->ncpu - r->reserve, r->ncpu - 1, set);
  else if (r->reserve > 0)
    printf("CPU workers %d..%d are kept out of batches that GPUs also run (%s)\n", r->ncpu - r->reserve, r->ncpu - 1, set);
  if (r->st.gpus_out_batches)
    printf("Every GPU was kept out of the last run, which this kernel's trials found faster (%s)\n", set);
}

/* The ranks of the mode's last timed run, across MPI ranks. */
static void print_ranks(const result_t *r) {
  if (r->nranks < 2 || !r->rs) return;
  size_t n = 0;
  double busy = 0;
  for (int i = 0; i < r->nranks; i++) n += r->rs[i].share_count, busy += r->rs[i].busy_s;
  if (n == 0) return; /* the pipeline: its stages are batches of their own */
  printf("ranks of the last timed run (the table above is rank 0's workers):\n");
  printf("  %4s %4s %4s %12s %7s %12s %20s %20s %8s %12s\n", "rank", "cpus", "gpus", "share", "share%", "items",
         "steals in (items)", "steals out (items)", "busy s", "rate items/s");
  for (int i = 0; i < r->nranks; i++) {
    const mgpu_rank_stats_t *k = &r->rs[i];
    char in[32], out[32], rate[16];
    snprintf(in, sizeof in, "%llu (%llu)", (unsigned long long)k->steals_in, (unsigned long long)k->items_in);
    snprintf(out, sizeof out, "%llu (%llu)", (unsigned long long)k->steals_out, (unsigned long long)k->items_out);
    if (k->rate > 0) snprintf(rate, sizeof rate, "%.4g", k->rate);
    else snprintf(rate, sizeof rate, "-");
    printf("  %4d %4d %4d %12zu %6.1f%% %12llu %20s %20s %8.4f %12s%s%s\n", k->rank, k->ncpu, k->ngpus, k->share_count,
           n ? 100.0 * (double)k->share_count / (double)n : 0, (unsigned long long)k->items, in, out, k->busy_s, rate,
           k->status != MGPU_OK ? " " : "", k->status != MGPU_OK ? mgpu_status_name(k->status) : "");
  }
  printf("  total: %zu items on %d ranks in %.4f s, %.4g items/s; ranks busy %.1f%% of the time\n", n, r->nranks,
         r->wall_s, r->wall_s > 0 ? (double)n / r->wall_s : 0,
         r->wall_s > 0 ? 100 * busy / (r->wall_s * r->nranks) : 0);
}

/* The verification line of the text report; r is the run whose outputs were checked. */
static void print_verdict(const work_t *w, const verdict_t *v, const result_t *r) {
  char scope[160];
  const char *how = !strcmp(w->name, "pipeline") ? "on the host" : "against the CPU function";
  const char *of = w->ndone < w->n ? " of the last run (a prefix of the batch)" : "";
  if (w->vstep == 1) snprintf(scope, sizeof scope, "all %zu items%s checked %s", v->checked, of, how);
  else
    snprintf(scope, sizeof scope, "%zu of %s%zu items%s, one in %zu, checked %s", v->checked, *of ? "the " : "",
             w->ndone, of, w->vstep, how);
  bool rt = !strcmp(w->name, "ntt");
  if (!v->bad) {
    printf("verification: ok (%s%s)\n", scope, rt ? ", plus an inverse round trip" : "");
    return;
  }
  printf("verification: FAILED: %lld wrong (%s)", v->bad - (v->roundtrip_bad ? 1 : 0), scope);
  if (v->first >= 0) {
    printf("; first wrong item %lld, ", v->first);
    if (v->worker >= 0 && r && r->ws && v->worker < r->nw) {
      const mgpu_worker_stats_t *s = &r->ws[v->worker];
      if (s->kind == MGPU_WORKER_GPU) printf("computed by worker %d (gpu%d): ", v->worker, s->device);
      else printf("computed by worker %d (cpu): ", v->worker);
    } else if (!strcmp(w->name, "pipeline")) printf("worker not recorded for the pipeline's stages: ");
    printf("%s", v->what);
  }
  if (v->roundtrip_bad) printf("; the inverse round trip does not give the input back");
  printf("\n");
}

void report_header(const work_t *w, mgpu_runtime_t *base, int ncpu, int ngpu) {
  printf("libmgpurt %s: %s, %zu items", mgpu_version(), w->name, w->n);
  if (work_intensity(w)) printf(", intensity %llu", work_intensity(w));
  if (mgpu_num_ranks(base) > 1) printf("; %d MPI ranks, rank 0 with ", mgpu_num_ranks(base));
  else printf("; ");
  printf("%d CPU worker%s, %d GPU%s", ncpu, ncpu == 1 ? "" : "s", ngpu, ngpu == 1 ? "" : "s");
  for (int g = 0; g < ngpu; g++) {
    mgpu_device_info_t d = MGPU_DEVICE_INFO_INIT;
    mgpu_device_info(base, g, &d);
    printf("%s%s", g ? ", " : " (", d.name);
    if (g == ngpu - 1) printf(")");
  }
  printf("\n");
  fflush(stdout);
}

/* The mode the quiet line reports: the last that ran (steal with --compare,
 * unless SIGINT came first). */
static const result_t *main_result(const outcome_t *oc) {
  if (oc->nres == 0) return &oc->res[0]; /* --ceiling: no mode ran */
  const result_t *r = &oc->res[oc->nres - 1];
  for (int i = oc->nres - 1; i > 0 && !r->ran; i--) r = &oc->res[i - 1];
  return r;
}

void report_quiet(const opts_t *o, const work_t *w, const outcome_t *oc) {
  /* Nothing checked where no run completed (SIGINT stopped the last). */
  const char *verdict = !o->verify ? "off" : !w->complete ? "none" : oc->vd.bad ? "FAILED" : "ok";
  size_t prefix = o->ceiling ? (oc->ceiling.skipped ? 0 : oc->ceiling.prefix)
                             : (main_result(oc)->ran ? main_result(oc)->prefix : 0);
  printf("%s: %zu items", w->name, w->n);
  if (prefix) printf(" (timed on the first %zu)", prefix);
  if (o->ceiling && oc->ceiling.skipped) {
    printf(", ceiling not measured (%s), verification %s\n", oc->ceiling.skipped, verdict);
    return;
  }
  if (o->ceiling) {
    printf(", ceiling %.4f s, %.4g items/s, verification %s\n", oc->ceiling.wall_s, oc->ceiling.throughput, verdict);
    return;
  }
  const result_t *r = main_result(oc);
  double first, steady, ratio;
  if (!r->ran) printf(", no run timed (%s), verification %s\n", r->skipped ? r->skipped : "interrupted", verdict);
  else if (o->first_batch && first_figures(r, &first, &steady, &ratio))
    printf(", first batch %.4f s, steady %.4f s, first / steady %.2fx, verification %s\n", first, steady, ratio,
           verdict);
  else printf(", %.4f s, %.4g items/s, verification %s\n", r->wall_s, r->throughput, verdict);
}

/* --first-batch's lines of a mode: the first run, the steady state (the
 * median of runs 3 on) and their ratio, every run in order, and whether the
 * runtime started from a stored model. */
static void print_first(const opts_t *o, const result_t *r) {
  double first, steady, ratio;
  if (!first_figures(r, &first, &steady, &ratio)) {
    printf("mode %-6s %d of %d runs made: too few for a steady state (runs 3 on)\n", r->mode, r->nseq, o->repeat);
    return;
  }
  printf("mode %-6s first batch %.4f s, steady state %.4f s (median of runs 3..%d), first / steady %.2fx\n", r->mode,
         first, steady, r->nseq, ratio);
  printf("runs of a fresh runtime, no warm-up (s):");
  for (int i = 0; i < r->nseq; i++) printf(" %.4g", r->seq[i]);
  printf("\n");
  char dir[1024];
  const char *how;
  bool on = models_dir(dir, sizeof dir, &how) == 0;
  if (r->stored) printf("stored model: yes, for each kind of worker of the mode (%s)\n", dir);
  else if (on)
    printf("stored model: no, not for each kind of worker of the mode (%s)\n", dir);
  else printf("stored model: no, the model store is off\n");
}

/* Where measure() skipped warm-ups (a stored model), or found a stored
 * model but ran the warm-up that sized a prefix, a line says so. */
static void print_warmups(const opts_t *o) {
  const warmup_log_t *l = &warmup_log;
  if (!l->skipped && !l->sized) return;
  char dir[1024];
  const char *how;
  if (models_dir(dir, sizeof dir, &how) != 0) snprintf(dir, sizeof dir, "MGPU_MODEL_DIR");
  if (l->skipped && l->runtimes == 1) printf("warm-up skipped: stored model of %s (%s)\n", l->kernel, dir);
  else if (l->skipped)
    printf("warm-up skipped in %d of %d runtimes, those with a stored model of %s for each kind of worker of "
           "their mode (%s)\n", l->skipped, l->runtimes, l->kernel, dir);
  if (l->sized)
    printf("note: %d runtime%s had a stored model of the kernel (%s) but ran the warm-up: a run of the whole batch "
           "takes over --max-run-time %g s, and the warm-up sizes the prefix\n", l->sized, l->sized == 1 ? "" : "s",
           dir, o->max_run_s);
}

/* A line per mode, and the per-worker table of the last (of each with one
 * mode); returns the largest share of steal time, or -1. */
static double report_modes(const opts_t *o, const work_t *w, const outcome_t *oc) {
  double worst_steal = -1;
  for (int i = 0; i < oc->nres; i++) {
    const result_t *r = &oc->res[i];
    if (!r->ran) {
      printf("mode %-6s skipped (%s)\n", r->mode, r->skipped ? r->skipped : "interrupted");
      continue;
    }
    if (o->first_batch) {
      print_first(o, r);
      print_workers(r, w), print_ranks(r);
      continue;
    }
    printf("mode %-6s %.4f s (median of %d", r->mode, r->wall_s, r->runs);
    if (r->nround > 1) printf(" in %d rounds", r->nround);
    if (r->prefix) printf(" on the first %zu items", r->prefix);
    printf("), %.4g items/s, %.3g GB/s moved", r->throughput, r->throughput * w->bytes_per_item / 1e9);
    if (r->ncpu != oc->ncpu) printf(", %d CPU worker%s", r->ncpu, r->ncpu == 1 ? "" : "s");
    double sh = steal_share(&r->steal);
    if (sh >= STEAL_SHOW) printf(", host steal %.0f%%", 100 * sh);
    if (sh > worst_steal) worst_steal = sh;
    printf("\n");
    if (!o->compare || i == oc->nres - 1) print_workers(r, w), print_ranks(r);
  }
  return worst_steal;
}

/* --gpus: time, throughput, speedup and efficiency against the first count run. */
static void report_scaling(const opts_t *o, const outcome_t *oc) {
  printf("scaling with the GPU count (mode %s, inputs in host memory):\n", mode_name(oc->scale_mode));
  printf("  %5s %10s %14s %8s %10s\n", "gpus", "time s", "items/s", "speedup", "efficiency");
  const result_t *r0 = NULL;
  int k0 = 0;
  for (int i = 0; i < oc->nsres; i++) {
    const result_t *r = &oc->sres[i];
    if (!r->ran) {
      printf("  %5d skipped (%s)\n", o->gpus_list[i], r->skipped ? r->skipped : "interrupted");
      continue;
    }
    if (!r0) r0 = r, k0 = o->gpus_list[i];
    double sp = r0->throughput > 0 ? r->throughput / r0->throughput : 0;
    printf("  %5d %10.4f %14.4g %7.3fx %9.1f%%", o->gpus_list[i], r->wall_s, r->throughput, sp,
           100 * sp / ((double)o->gpus_list[i] / k0));
    if (r->prefix) printf("  on the first %zu items", r->prefix);
    printf("\n");
  }
}

/* The note that names the runs timed on a prefix of the batch, where a run of
 * the whole batch would have taken over --max-run-time. */
static void print_prefix_note(const opts_t *o, const work_t *w, const outcome_t *oc) {
  const result_t *rs = oc->nsres ? oc->sres : oc->res;
  char name[4 + SWEEP_POINTS + MGPU_MAX_DEVICES][32];
  int n = 0;
  for (int i = 0; i < (oc->nsres ? oc->nsres : oc->nres); i++) {
    if (!rs[i].prefix || !rs[i].ran) continue; /* a mode that SIGINT stopped first shows no figure */
    if (oc->nsres) snprintf(name[n], sizeof name[n], "%d GPU%s", o->gpus_list[i], o->gpus_list[i] == 1 ? "" : "s");
    else snprintf(name[n], sizeof name[n], "mode %s", rs[i].mode);
    n++;
  }
  for (int i = 0; i < SWEEP_POINTS; i++)
    if (oc->sweep.pt[i].prefix && oc->sweep.pt[i].ran)
      snprintf(name[n], sizeof name[n], "%s", oc->sweep.pt[i].mode), n++;
  if (!n && !oc->ceiling.prefix) return;
  printf("note: timed on the first items of the batch (as many as shown above), as a run of all %zu would take over "
         "--max-run-time %g s: ", w->n, o->max_run_s);
  for (int i = 0; i < n; i++)
    printf("%s%s", i == 0 ? "" : i == n - 1 && !oc->ceiling.prefix ? " and " : ", ", name[i]);
  if (oc->ceiling.prefix) printf("%sthe ceiling", n ? " and " : "");
  printf("; %s items/s are those of that prefix (--max-run-time 0 times the whole batch)\n",
         n + (oc->ceiling.prefix ? 1 : 0) > 1 ? "their" : "its");
}

void report_text(const opts_t *o, const work_t *w, const outcome_t *oc) {
  double worst_steal = report_modes(o, w, oc);
  if (oc->nsres) report_scaling(o, oc);
  if (o->compare) {
    sweep_report(o, oc);
    if (oc->e > 0) print_ratio("heterogeneous efficiency E = steal / (cpu + gpu) = ", oc->e, oc->e_round, oc->ne, "");
    if (oc->vs_best > 0) printf("%ssteal / best static = %.3fx", oc->e > 0 ? "; " : "", oc->vs_best);
    if (oc->e > 0 || oc->vs_best > 0) printf("\n");
    if (oc->speedup > 0) print_ratio("steal vs static: ", oc->speedup, oc->sp_round, oc->nsp, "x"), printf("\n");
    turns_report(o, oc);
  }
  if (oc->ceiling.asked) ceiling_report(&oc->ceiling, o->compare ? &oc->res[1] : NULL);
  if (o->compare) bound_report(oc);
  if (oc->note) printf("note: %s\n", oc->note);
  print_warmups(o);
  print_prefix_note(o, w, oc);
  if (worst_steal >= STEAL_NOTE)
    printf("note: the host took up to %.0f%% of the busy CPU time (steal time in /proc/stat): this "
           "machine's CPUs are shared by its hypervisor, CPU chunks stall while it runs something else, and "
           "figures vary between runs (doc/tuning.md, \"Shared virtual CPUs\")\n",
           100 * worst_steal);
  /* Without SIGINT, a --compare that started runs and holds no complete
   * one had its last cancelled at a bound (compare/bound.c). */
  const char *cut = o->compare && w->started ? "the last run was cancelled at its bound" : "no run completed";
  if (o->verify && !w->complete)
    printf("verification: none (%s)\n", !interrupted ? cut
                                        : !w->started ? "no run was made: SIGINT came before the first"
                                        : o->ceiling ? "SIGINT came during the ceiling"
                                        : "SIGINT stopped the last run");
  else if (o->verify) print_verdict(w, &oc->vd, main_result(oc));
  else printf("verification: off\n");
}
