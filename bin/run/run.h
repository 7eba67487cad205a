/* SPDX-License-Identifier: BSD-3-Clause */
/* run.h: a batch workload's instance and its runs (run/): the command line's
 * options (read by cli/), the workload and its arrays, one run of its batch,
 * the timed runs of a mode, their verification, the runtimes started, the
 * plugins, the progress bar and SIGINT. Grouped by the file that defines them. */
#ifndef MGPU_RUN_RUN_H
#define MGPU_RUN_RUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"
#include "mgpurt_plugin.h" /* the runtime (mgpurt.h) and the plugin interface */
#include "mgpurt_kernels.h"
#include "multi/multi.h"

#define MAX_ROUNDS 100 /* --rounds, --turns */
#define MAX_FIRST_RUNS 1000 /* --first-batch: runs, --repeat's most */

/* The command line, as cli/options.c reads it. */
typedef struct {
  const char *workload;
  long long items;    /* -1: workload default */
  int size;           /* ntt/pipeline log2 length; sha256 message bytes; mandelbrot width */
  long long intensity;
  mgpu_sched_t mode;
  bool compare, verify, json, quiet, info, list, pinned, ceiling;
  bool models;         /* --models: list the model store */
  bool models_clear;   /* --models-clear: empty it (of the kernel named as WORKLOAD, else all) */
  bool first_batch;    /* --first-batch: a fresh runtime's first batches, no warm-up */
  bool no_mpi;         /* --no-mpi: each process alone under a launcher */
  int repeat;
  bool repeat_given;
  int rounds;          /* --compare: the four modes run this many times in turn */
  int turns;           /* --compare: turns of steal and the best fixed split after it; -1: not given */
  double max_run_s;    /* --max-run-time: longer runs are timed on a prefix; 0: no bound */
  double compare_s;    /* --compare-time: --compare's whole bound; 0: the sum of its runs' limits */
  bool compare_s_given;
  unsigned long long seed;
  const char *output;  /* mandelbrot image */
  const char *plugin;  /* shared library adding workloads */
  const char *trace;   /* MGPU_TRACE file of the (steal) run: --trace, else MGPU_TRACE */
  bool trace_env;      /* trace is MGPU_TRACE's */
  const char *plot;    /* SVG of the (steal) run */
  bool overlay;
  bool dtype_given;
  int ngpus_list;          /* --gpus: GPU counts to run in turn */
  int gpus_list[MGPU_MAX_DEVICES];
  multi_opts_t multi;      /* options of the split-array and collective workloads */
  mgpu_config_t cfg;
} opts_t;

/* One workload instance: the kernel, the batch and how to check it. */
typedef struct {
  const char *name;
  mgpu_kernel_t k;
  mgpu_batch_t b;
  size_t n;
  size_t nrun;           /* items of the runs being made: the first nrun (n, or a prefix) */
  size_t ndone;          /* items the outputs hold, from the last completed run */
  double bytes_per_item; /* moved between host and device, for reports */
  union {
    mgpu_ntt_arg_t ntt;
    mgpu_sha256_arg_t sha;
    mgpu_mandelbrot_arg_t mandel;
    mgpu_saxpy_arg_t saxpy;
    mgpu_mulmod_arg_t mulmod;
    mgpu_chain_arg_t chain;
  } arg;
  void *in[MGPU_MAX_ARGS], *outs[MGPU_MAX_ARGS], *out;
  size_t in_bytes[MGPU_MAX_ARGS], out_bytes, outs_bytes[MGPU_MAX_ARGS];
  const void *argp; /* the batch's argument: &arg, or a plugin's */
  size_t arg_size;
  const mgpu_plugin_workload_t *plugin;
  int *row_worker; /* mandelbrot overlay */
  mgpu_kernel_fn ref_cpu;  /* the kernel's own CPU function, for verification */
  mgpu_kernel_t k_real;    /* the kernel before verification's recording wrappers */
  size_t vstep;            /* verification checks items 0, vstep, 2 vstep, ... of the last run */
  int *sample_worker;      /* the worker that computed each checked item in the last run */
  size_t sample_cap;       /* entries of sample_worker */
  bool started;            /* a run (or the ceiling) has begun */
  bool complete;           /* a run has completed: the outputs hold its results */
  /* pipeline */
  unsigned log_n;
  uint64_t key;
  unsigned shift;
  void *mid1, *mid2;
  uint64_t *K;             /* host copy of the pipeline's constant */
  mgpu_const_t *kconst;    /* the constant, on kconst_rt */
  mgpu_runtime_t *kconst_rt;
} work_t;

/* Steal time over a mode's timed runs: /proc/stat read just before and just
 * after each run's timed span, the differences summed. */
typedef struct {
  hostcpu_t sum; /* over the timed spans */
  hostcpu_t at;  /* the reading at the current span's start */
  bool failed;   /* a read failed: no figure */
} stealacc_t;

/* One mode's (or GPU count's) timed runs. */
typedef struct {
  const char *mode;
  double wall_s; /* median */
  double throughput;
  mgpu_stats_t st;
  mgpu_worker_stats_t *ws;
  int ran;
  int runs; /* timed runs made (fewer than --repeat times --rounds after SIGINT) */
  double *times; /* their wall times, every round's */
  int nround;   /* rounds it ran in */
  double round_tp[MAX_ROUNDS]; /* throughput of each round (median of that round's runs) */
  int nw, ncpu; /* workers and CPU workers of the mode's runtime (with --gpus, counts differ) */
  int nranks;   /* ranks of its runtime (1: one process) */
  mgpu_rank_stats_t *rs; /* [nranks]: every rank's figures of the last timed run, across ranks */
  int reserve;  /* of those, kept out of the last timed run (a batch that GPUs also run) */
  bool reserve_auto; /* MGPU_RESERVE_THREADS=auto */
  stealacc_t steal; /* host steal time over the timed runs */
  const char *skipped;
  bool sized;       /* the first warm-ups have decided between the whole batch and a prefix */
  size_t prefix;    /* items of each timed run where a run of the whole batch would take over
                     * --max-run-time (the first ones of the batch); 0: the whole batch */
  uint64_t timed_batch; /* the first batch of the last measure()'s timed runs, in its runtime's
                         * trace (0 untraced): a plot marks those before it as warm-ups */
  bool warm_skipped;    /* its last measure() skipped the warm-up: a stored model (models.c) */
  bool stored;          /* --first-batch: the runtime had a stored model for every kind of the mode */
  double *seq;          /* --first-batch: every run's seconds in the order run */
  int nseq;
} result_t;

/* The warm-ups of this process's measure() calls, for the report. */
typedef struct {
  int runtimes;   /* measure() calls that warmed up a runtime or skipped it */
  int skipped;    /* of those, warm-ups skipped: a stored model */
  int sized;      /* a stored model, but a run of the whole batch took over --max-run-time:
                   * its first run was a warm-up that sized the prefix */
  char kernel[128];
} warmup_log_t;

/* What verification found: the first wrong item is the lowest checked one. */
typedef struct {
  size_t checked;
  long long bad;        /* checked items that are wrong, plus 1 for a failed round trip */
  long long first;      /* the first wrong item, or -1 */
  int worker;           /* the worker that computed it, or -1 when not known */
  bool roundtrip_bad;   /* ntt: inverse(forward(x)) != x */
  char what[256];       /* "output K bytes A..B: expected .., got .." of the first wrong item */
} verdict_t;

/* plugins.c */
extern const char *const workloads[];
void plugin_load(const char *path, const opts_t *o);
int plugin_count(void);
const mgpu_plugin_workload_t *plugin_workload(int i);
const mgpu_plugin_workload_t *resolve_workload(opts_t *o);

/* startup.c */
extern bool trace_lost;
int plot_trace_make(void);
mgpu_runtime_t *start_runtime(const opts_t *o, mgpu_sched_t mode, double ratio, bool traced);
void finish_runtime(work_t *w, mgpu_runtime_t *rt);
bool finalize_runtime(mgpu_runtime_t *rt);
const char *reserve_setting(mgpu_runtime_t *rt);
/* The mode runtime rt runs batches in (MGPU_SCHED, from --mode or the
 * environment). */
mgpu_sched_t runtime_sched(mgpu_runtime_t *rt);
const char *mode_name(mgpu_sched_t m);
void print_info(mgpu_runtime_t *rt);
void print_list(const char *plugin);

/* workload.c */
void work_setup(work_t *w, const opts_t *o, mgpu_runtime_t *base, const mgpu_plugin_workload_t *pw);
void work_free(work_t *w, mgpu_runtime_t *base, const opts_t *o);
unsigned long long work_intensity(const work_t *w);

/* batch.c */
void check_status(mgpu_status_t st, const char *what);
void check_work_status(const work_t *w, mgpu_status_t st, const char *what);
double run_once(mgpu_runtime_t *rt, work_t *w, mgpu_stats_t *st, stealacc_t *sa);
/* Before a run: its outputs poisoned (every item must be written again), and
 * the items whose worker is recorded for verification chosen. */
void run_prepare(work_t *w);
double run_bounded(mgpu_runtime_t *rt, work_t *w, size_t k, double bound_s, bool project, size_t *done);
double run_bounded_timed(mgpu_runtime_t *rt, work_t *w, double bound_s, mgpu_stats_t *st, stealacc_t *sa,
                         size_t *done);
size_t verify_step(size_t n);
double steal_share(const stealacc_t *a);
/* Mark the start (end false) or the end of a timed span in a (NULL: none). */
void steal_mark(stealacc_t *a, bool end);
/* The submission number of the next batch on rt, from its trace: one past
 * the highest that its events name (0 when it records none). A plot marks
 * the batches before it as warm-ups. */
uint64_t next_batch(mgpu_runtime_t *rt);

/* verify.c */
void verify(work_t *w, mgpu_runtime_t *rt, verdict_t *v);

/* progress.c */
extern atomic_int interrupted;
int sigint_start(void);
void watch_events(mgpu_event_t *const *ev, size_t n);
bool progress_start(const opts_t *o);
void progress_finish(void);
void progress_label(const char *mode, const char *what, int k, int n);
double now_s(void);
void progress_begin(mgpu_event_t *ev);
void progress_end(void);
bool canceled(mgpu_status_t s, size_t computed, size_t n);

/* measure.c */
extern warmup_log_t warmup_log;
/* With --first-batch: o->repeat runs of the whole batch on rt (a fresh
 * runtime), none a warm-up, also kept in the order run (r->seq). */
void measure(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, const char *mode);
bool first_figures(const result_t *r, double *first_s, double *steady_s, double *ratio);
size_t prefix_next(size_t k, size_t done, double t, double bound_s, size_t lo, size_t hi);
void free_result(result_t *r);
int ratio_by_round(const result_t *num, const result_t *den, const result_t *den2, double *out);

/* models.c: the model store (MGPU_MODEL_DIR). */
/* The store's directory as a runtime would take it (MGPU_MODEL_DIR, else the
 * default) into out, and in *how where it comes from: 0, 1 where the store
 * is off (*how says why), -1 (said on stderr) where MGPU_MODEL_DIR is invalid. */
int models_dir(char *out, size_t len, const char **how);
/* --models and --models-clear (kernel NULL: every file), without a runtime:
 * each returns the exit status. */
int models_list(void);
int models_clear(const char *kernel);
/* Whether rt's store holds a fresh model of w's kernel for every kind of worker
 * that mode runs it on (across MPI ranks: on every rank). */
bool warmup_stored(mgpu_runtime_t *rt, const work_t *w, const char *mode);

#endif
