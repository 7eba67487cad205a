/* SPDX-License-Identifier: BSD-3-Clause */
/* report.h: what a batch workload's report shows (outcome_t, with the
 * sweep, the turns and the ceiling that compare/ measures) and the reports
 * (report/): text, --quiet's line, JSON, the SVG of --plot and the mandelbrot
 * image. */
#ifndef MGPU_RUN_REPORT_H
#define MGPU_RUN_REPORT_H

#include "run/run.h"

/* The ceiling of a batch workload (compare/ceiling.c), and the host copy that bounds
 * a GPU fed from pageable arrays. */
typedef struct {
  bool asked;
  const char *skipped;  /* why it was not measured, or NULL */
  double wall_s;        /* best pass: copies in, one launch, copies out */
  double copy_s;        /* of that pass, its copies in and out */
  double throughput;
  bool differs;         /* its outputs differ from the last run's */
  size_t prefix;        /* items of the launch where the whole batch would take over --max-run-time; 0: all */
  size_t items;         /* items of the launch */
  const char *host_skipped; /* why the host copy was not measured, or NULL */
  double host_s;        /* best host copy of the launch's items: inputs in, outputs out */
  size_t host_bytes;    /* bytes it copies */
  int host_threads;     /* CPU workers that copy */
  const char *bounded;  /* --compare: why its passes stopped at the comparison's bound, or NULL */
} ceiling_t;

/* The sweep of fixed splits of --compare (compare/sweep.c): static mode at factors of
 * the static mode's ratio; its ends are the cpu and gpu modes. */
#define SWEEP_POINTS 6
#define SWEEP_RUNS 1 /* timed runs of each point */
typedef struct {
  const char *skipped;  /* why it was not run, or NULL */
  bool ran;             /* at least one point ran */
  double ratio;         /* the static mode's ratio, at which the factors apply */
  double factor[SWEEP_POINTS];
  result_t pt[SWEEP_POINTS];
  double share[SWEEP_POINTS]; /* share of the items the GPUs computed in the point's last run */
  const char *bounded[SWEEP_POINTS]; /* why a point met a bound (compare/bound.c), or NULL */
  double static_share;  /* that of the static mode */
  /* The best fixed split: the fastest of cpu, gpu, static and the points. */
  const char *best_mode; /* "cpu", "gpu", "static" (the static mode) or "sweep"; NULL: none ran */
  double best_ratio;     /* 0 for cpu; -1 for gpu (all on the GPUs) */
  double best_tp, best_share;
} sweep_t;

/* The best fixed split and steal timed in turns after the sweep (compare/turns.c):
 * the sweep picks the fastest of nine figures, so its own figure is biased
 * up; a fresh runtime of each in turn measures the two alike. */
typedef struct {
  const char *skipped;  /* why they were not run, or NULL */
  int n;                /* turns completed: both ran */
  result_t best, steal; /* every turn's timed runs: a round each */
  double ratio;         /* median over all timed runs, steal over best */
  double by_turn[MAX_ROUNDS];
  const char *bounded;  /* why a turn met a bound (compare/bound.c), or NULL */
} turns_t;

/* --compare's bounds (compare/bound.c): a run that sizes a prefix is
 * cancelled at run_s, another at grace * run_s, and nothing runs past end,
 * total_s after the start. */
typedef struct {
  double run_s;         /* --max-run-time; 0: no bound at all */
  double grace;
  int sizing;           /* the runs the comparison allows for that size a prefix */
  int runs;             /* and the others */
  double sum_s;         /* run_s * (sizing + grace * runs) */
  double limit_s;       /* --compare-time (0: none) */
  double total_s;       /* the lesser of sum_s and limit_s */
  double start, end;    /* now_s() at the start, and start + total_s */
  double took_s;        /* from the start to the ceiling's end */
  int warm_cut;         /* warm-ups cancelled at run_s (their runtimes went on) */
} bound_t;

/* Everything a batch workload's report shows: the modes run, the scaling
 * table, the comparison's figures and the verification. */
typedef struct {
  result_t res[4];  /* one mode, or cpu, gpu, static and steal with --compare */
  int nres;
  result_t *sres;   /* --gpus: one result per GPU count (res[0] copies the last) */
  int nsres;
  mgpu_sched_t scale_mode;
  const char *note;
  int ngpu, ncpu;   /* of the base runtime */
  double e, speedup; /* --compare: steal / (cpu + gpu), steal / static; 0: not run */
  double vs_best;    /* --compare: steal / the best fixed split of the sweep; 0: not known */
  sweep_t sweep;     /* --compare */
  turns_t turns;     /* --compare with --turns above 0 */
  double e_round[MAX_ROUNDS], sp_round[MAX_ROUNDS];
  int ne, nsp;
  verdict_t vd;
  ceiling_t ceiling; /* --compare or --ceiling */
  bound_t bound;     /* --compare */
  const char *mode_bounded[4]; /* --compare: why a mode met a bound, or NULL */
} outcome_t;

/* report.c */
void report_header(const work_t *w, mgpu_runtime_t *base, int ncpu, int ngpu);
void report_text(const opts_t *o, const work_t *w, const outcome_t *oc);
void report_quiet(const opts_t *o, const work_t *w, const outcome_t *oc);

/* report_compare.c: report.c's sections of --compare and --ceiling. */
void sweep_report(const opts_t *o, const outcome_t *oc);
void turns_report(const opts_t *o, const outcome_t *oc);
void ceiling_report(const ceiling_t *c, const result_t *gpu);
void bound_report(const outcome_t *oc);
double named_cpu_share(double ratio, const result_t *r, int ngpu);

/* report_json.c */
void report_json(const opts_t *o, const work_t *w, const outcome_t *oc, mgpu_runtime_t *base);

/* image.c */
void write_image(const work_t *w, const opts_t *o, int ncpu);

/* plot.c: write a self-contained SVG under 2 MB: a timeline (a lane per
 * worker and per GPU stream, chunks coloured by batch, copies and steals
 * visible, events within a pixel merged) below a strip of the runtime's
 * batches, those from timed_batch on marked as the timed runs and those
 * before as warm-ups, and bars of items and busy time per worker (st).
 * Returns 0, or -1 with errno set. */
int mgpu_run_plot(const char *path, mgpu_runtime_t *rt, const mgpu_stats_t *st, const char *title,
                  uint64_t timed_batch);

#endif
