/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * modes.c: what mgpu-run runs and how often: one mode, the four modes of
 * --compare (round by round with --rounds) and its sweep of fixed splits
 * (sweep.c), or the GPU counts of --gpus, each mode timed by run/measure.c; and
 * the data-parallel workloads (multi/), once or per GPU count.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/compare.h"

/* Rank 0's run, from its own trace, under an MPI launcher. */
static void plot_run(mgpu_runtime_t *rt, const opts_t *o, const result_t *r, const work_t *w) {
  if (ranks_rank() > 0) return;
  /* What was timed: the whole batch, or the prefix that --max-run-time chose. */
  char title[512];
  if (!r->ran)
    snprintf(title, sizeof title, "mgpu-run %s, %zu items, mode %s: no timed run (%s) (libmgpurt %s)", w->name,
             w->n, r->mode, r->skipped ? r->skipped : "SIGINT came first", mgpu_version());
  else if (r->prefix)
    snprintf(title, sizeof title, "mgpu-run %s, mode %s: timed on the first %zu of %zu items (--max-run-time %g s), "
             "median %.4f s (libmgpurt %s)", w->name, r->mode, r->prefix, w->n, o->max_run_s, r->wall_s,
             mgpu_version());
  else
    snprintf(title, sizeof title, "mgpu-run %s, mode %s: timed on the whole batch of %zu items, median %.4f s "
             "(libmgpurt %s)", w->name, r->mode, w->n, r->wall_s, mgpu_version());
  if (mgpu_run_plot(o->plot, rt, &r->st, title, r->timed_batch) != 0) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->plot, strerror(errno));
    exit(EXIT_FAIL);
  }
}

/* The multi-GPU workloads: once on base, or once per count of --gpus. */
int run_multi(mgpu_runtime_t *base, opts_t *o) {
  multi_opts_t *m = &o->multi;
  m->workload = o->workload;
  m->items = o->items;
  m->size = o->size;
  m->repeat = o->repeat;
  m->seed = o->seed;
  m->verify = o->verify;
  m->json = o->json;
  m->stop = &interrupted;
  int rc = 0, ngpu = mgpu_num_gpus(base);
  if (!o->ngpus_list && m->nshares && m->nshares != ngpu && m->nshares != ngpu + 1) {
    mgpu_finalize(base);
    usage_error("--split has %d entr%s but the runtime has %d GPU%s: expected %d (GPUs) or %d (GPUs, then the host)",
                m->nshares, m->nshares == 1 ? "y" : "ies", ngpu, ngpu == 1 ? "" : "s", ngpu, ngpu + 1);
  }
  if (!o->ngpus_list) {
    rc = multi_run(base, m);
  } else {
    if (o->json) printf("[\n");
    int printed = 0;
    for (int i = 0; i < o->ngpus_list && !interrupted; i++) {
      int k = o->gpus_list[i];
      if (k > ngpu) {
        fprintf(stderr, "%s: --gpus %d skipped: the runtime sees %d GPU%s\n", prog, k, ngpu, ngpu == 1 ? "" : "s");
        continue;
      }
      opts_t ok = *o;
      ok.cfg.num_gpus = k;
      mgpu_runtime_t *rt = start_runtime(&ok, o->mode, 0, false);
      if (o->json && printed) printf(",\n");
      else if (!o->json) printf("%s== %d GPU%s ==\n", printed ? "\n" : "", k, k == 1 ? "" : "s");
      printed++;
      fflush(stdout);
      rc |= multi_run(rt, m);
      fflush(stdout);
      mgpu_finalize(rt);
    }
    if (o->json) printf("]\n");
  }
  mgpu_finalize(base);
  return interrupted ? EXIT_INTERRUPTED : rc;
}

/* --gpus: mode scale_mode with the first N GPUs for each N, a runtime each. */
static void run_scaling(work_t *w, const opts_t *o, outcome_t *oc) {
  oc->sres = calloc((size_t)o->ngpus_list, sizeof *oc->sres);
  for (int i = 0; i < o->ngpus_list && !interrupted; i++) {
    result_t *r = &oc->sres[oc->nsres++];
    r->mode = mode_name(oc->scale_mode);
    if (o->gpus_list[i] > oc->ngpu) {
      r->skipped = "more GPUs than the runtime sees";
      continue;
    }
    opts_t ok = *o;
    ok.cfg.num_gpus = o->gpus_list[i];
    mgpu_runtime_t *rt = start_runtime(&ok, oc->scale_mode, 0, false);
    measure(rt, w, o, r, r->mode);
    finish_runtime(w, rt);
  }
  if (oc->nsres == 0) oc->sres[oc->nsres++].mode = mode_name(oc->scale_mode); /* interrupted before the first */
  /* The result line is of the largest count that ran (a count past the
   * GPUs the runtime sees is skipped). */
  int last = oc->nsres - 1;
  while (last > 0 && !oc->sres[last].ran) last--;
  oc->res[0] = oc->sres[last];
  oc->nres = 1;
}

/* Why mode m of --compare cannot run here, or NULL; sets oc->note where the
 * report explains it. */
static const char *compare_skip(mgpu_sched_t m, bool has_gpu_fn, outcome_t *oc) {
  bool needs_gpu = m == MGPU_SCHED_GPU || m == MGPU_SCHED_STATIC;
  if (needs_gpu && oc->ngpu == 0) {
    oc->note = "no GPU is in use: only the CPU modes were compared, and no fixed split";
    return "no GPU";
  }
  if (needs_gpu && !has_gpu_fn) {
    oc->note = "the kernel has no GPU function: the CPU workers run every item, so gpu, static and the sweep of "
               "fixed splits were not run and E is not given";
    return "the kernel has no GPU function";
  }
  if (m == MGPU_SCHED_CPU && oc->ncpu == 0) return "no CPU worker";
  return NULL;
}

/* --compare: the same inputs, one runtime per mode. static uses the ratio
 * measured by the cpu and gpu runs, unless --ratio is given; in the last
 * round, the sweep of fixed splits around it runs before steal (so that the
 * steal run is the one traced and plotted). With --rounds the four modes run
 * in turn again, so that a machine whose speed drifts during the comparison
 * affects every mode alike. Then the turns of steal and the best fixed split
 * (turns.c), which end with steal: the run verified. Every run is within the
 * bounds of bound.c; trials: the reserve's trials run in steal mode. */
static void run_compare(work_t *w, const opts_t *o, bool has_gpu_fn, bool trials, outcome_t *oc) {
  static const mgpu_sched_t modes[4] = {MGPU_SCHED_CPU, MGPU_SCHED_GPU, MGPU_SCHED_STATIC, MGPU_SCHED_STEAL};
  result_t *res = oc->res;
  double ratio = 0;
  oc->nres = 4;
  bool runs[4];
  for (int m = 0; m < 4; m++) res[m].mode = mode_name(modes[m]), runs[m] = !compare_skip(modes[m], has_gpu_fn, oc);
  trials = trials && oc->ngpu > 0 && oc->ncpu > 0;
  bool ceiling = oc->ngpu > 0 && has_gpu_fn;
  bound_start(&oc->bound, o, runs, trials, ceiling);
  for (int round = 0; round < o->rounds && !interrupted; round++) {
    bool last = round == o->rounds - 1;
    for (int m = 0; m < 4 && !interrupted; m++) {
      result_t *r = &res[m];
      const char *skip = compare_skip(modes[m], has_gpu_fn, oc);
      if (modes[m] == MGPU_SCHED_STEAL && last)
        run_sweep(w, o, oc, compare_skip(MGPU_SCHED_STATIC, has_gpu_fn, oc));
      if (skip) {
        r->skipped = skip;
        continue;
      }
      if (modes[m] == MGPU_SCHED_STATIC && res[0].ran && res[1].ran && res[0].throughput > 0)
        ratio = (res[1].throughput / oc->ngpu) / (res[0].throughput / res[0].ncpu);
      if (modes[m] == MGPU_SCHED_STATIC)
        oc->sweep.ratio = o->cfg.device_to_core_ratio > 0 ? o->cfg.device_to_core_ratio : ratio;
      if (bound_reached(&oc->bound)) {
        oc->mode_bounded[m] = bound_end_why;
        if (!r->ran) r->skipped = bound_end_why;
        continue;
      }
      mgpu_runtime_t *rt = start_runtime(o, modes[m], modes[m] == MGPU_SCHED_STATIC ? ratio : 0,
                                         modes[m] == MGPU_SCHED_STEAL && last);
      const char *why = bound_measure(rt, w, o, r, r->mode, &oc->bound);
      if (why) {
        oc->mode_bounded[m] = why;
        if (!r->ran) r->skipped = why;
      }
      if (o->plot && modes[m] == MGPU_SCHED_STEAL && last) plot_run(rt, o, r, w);
      finish_runtime(w, rt);
    }
  }
  run_turns(w, o, oc);
}

/* --compare's figures: E = steal / (cpu + gpu) and steal / static, overall
 * (from the medians of every run) and round by round. */
static void compare_figures(outcome_t *oc) {
  const result_t *res = oc->res;
  if (res[0].ran && res[1].ran && res[3].ran) {
    oc->e = res[3].throughput / (res[0].throughput + res[1].throughput);
    oc->ne = ratio_by_round(&res[3], &res[0], &res[1], oc->e_round);
  }
  if (res[2].ran && res[3].ran) {
    oc->speedup = res[3].throughput / res[2].throughput;
    oc->nsp = ratio_by_round(&res[3], &res[2], NULL, oc->sp_round);
  }
  sweep_best(oc);
  if (res[3].ran && oc->sweep.best_tp > 0) oc->vs_best = res[3].throughput / oc->sweep.best_tp;
}

/* A kernel without a GPU function runs only on CPU workers: a "gpu" figure
 * would measure them, so what needs the GPU is not run (a usage error). */
static bool gpu_mode_refused(const opts_t *o, const work_t *w, const outcome_t *oc) {
  if (w->k.gpu || oc->ngpu == 0 || (o->ngpus_list ? oc->scale_mode : o->mode) != MGPU_SCHED_GPU) return false;
  fprintf(stderr, "%s: nothing ran: workload '%s' has no GPU function, so mode gpu%s cannot run it: expected "
          "--mode cpu, steal or static\n", prog, w->name, o->ngpus_list && !o->mode ? " (the default of --gpus)" : "");
  return true;
}

static void free_outcome(outcome_t *oc) {
  int nres = oc->nres;
  if (oc->nsres) {
    for (int i = 0; i < oc->nsres; i++) free_result(&oc->sres[i]);
    nres = 0; /* res[0] is a copy of the last of them */
  }
  free(oc->sres);
  for (int i = 0; i < nres; i++) free_result(&oc->res[i]);
  for (int i = 0; i < SWEEP_POINTS; i++) free_result(&oc->sweep.pt[i]);
  free_result(&oc->turns.best);
  free_result(&oc->turns.steal);
}

/* A batch workload: set up, run in the modes asked for, verified, reported;
 * returns the exit status. */
int run_batch_workload(mgpu_runtime_t *base, opts_t *o, const mgpu_plugin_workload_t *pw) {
  outcome_t oc;
  memset(&oc, 0, sizeof oc);
  oc.ngpu = mgpu_num_gpus(base);
  oc.ncpu = mgpu_num_cpu_workers(base);
  oc.scale_mode = o->mode ? o->mode : MGPU_SCHED_GPU;
  progress_start(o);
  work_t w;
  work_setup(&w, o, base, pw);
  /* SIGINT stopped the filling: no run is made, and the report (JSON too)
   * shows each mode skipped. */
  if (atomic_load(&interrupted)) fprintf(stderr, "%s: interrupted while making the inputs: no run is made\n", prog);
  if (gpu_mode_refused(o, &w, &oc)) {
    work_free(&w, base, o);
    mgpu_finalize(base);
    return EXIT_USAGE;
  }
  /* The header comes first, so that a long or interrupted run says what it is. */
  if (!o->json && !o->quiet) report_header(&w, base, oc.ncpu, oc.ngpu);
  if (o->ngpus_list) run_scaling(&w, o, &oc);
  else if (o->compare) run_compare(&w, o, w.k.gpu != NULL, !strncmp(reserve_setting(base), "auto", 4), &oc);
  else if (o->ceiling) {
    ceiling_run(o, &w, oc.ngpu, 0, &oc.ceiling, NULL);
    if (oc.ceiling.skipped && !interrupted) {
      fprintf(stderr, "%s: nothing ran: the ceiling cannot be measured: %s\n", prog, oc.ceiling.skipped);
      work_free(&w, base, o);
      mgpu_finalize(base);
      return EXIT_USAGE;
    }
  } else {
    /* Without --mode, the runtime's (MGPU_SCHED from the environment). */
    mgpu_sched_t mode = runtime_sched(base);
    if (!w.k.gpu && oc.ngpu > 0 && mode != MGPU_SCHED_CPU)
      oc.note = "the kernel has no GPU function: the CPU workers ran every item";
    measure(base, &w, o, &oc.res[0], mode_name(mode));
    if (o->plot) plot_run(base, o, &oc.res[0], &w);
    oc.nres = 1;
  }
  progress_finish();
  oc.vd = (verdict_t){.first = -1, .worker = -1};
  bool checked = o->verify && w.complete;
  if (checked) verify(&w, base, &oc.vd); /* the last run's results are in w.out */
  if (o->compare && !interrupted)
    ceiling_run(o, &w, oc.ngpu, oc.res[1].ran ? oc.res[1].prefix : 0, &oc.ceiling, &oc.bound);
  if (o->compare) bound_finish(&oc.bound);
  /* The last run cancelled at its bound: the ceiling's results, where it
   * made some, are those checked. */
  if (o->verify && !checked && w.complete) verify(&w, base, &oc.vd);
  if (o->output) write_image(&w, o, oc.ncpu);
  if (o->compare) compare_figures(&oc);
  if (o->json) report_json(o, &w, &oc, base);
  else if (o->quiet) report_quiet(o, &w, &oc);
  else report_text(o, &w, &oc);
  long long bad = oc.vd.bad;
  bool started = w.started;
  free_outcome(&oc);
  work_free(&w, base, o);
  /* The trace is written here: a run whose trace is lost fails. */
  finalize_runtime(base);
  if (trace_lost) bad = bad ? bad : 1;
  if (interrupted) {
    fprintf(stderr, "%s: interrupted: %s\n", prog,
            started ? "the report covers the runs made before SIGINT" : "no run was made");
    return EXIT_INTERRUPTED;
  }
  return bad ? EXIT_FAIL : 0;
}
