/* mgpu-run.h: the driver's internal types and functions, grouped by the file
 * that defines them; every file of mgpu-run but hostcpu, multi, plot and
 * rawnccl includes it. */
#ifndef MGPU_RUN_H
#define MGPU_RUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostcpu.h"
#include "mgpurt_plugin.h" /* the runtime (mgpurt.h) and the plugin interface */
#include "mgpurt_kernels.h"
#include "multi.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130
#define MAX_ROUNDS 100 /* --rounds, --turns */
#define TURNS_DEFAULT 3 /* --turns with --compare */
/* --max-run-time's default: a mode whose run would take longer is timed on a
 * prefix, so that --compare (four modes, six fixed splits and the ceiling,
 * each a warm-up and --repeat runs) stays within a minute or so. */
#define MAX_RUN_S_DEFAULT 3.0

/* The command line, as options.c reads it. */
typedef struct {
  const char *workload;
  long long items;    /* -1: workload default */
  int size;           /* ntt/pipeline log2 length; sha256 message bytes; mandelbrot width */
  long long intensity;
  mgpu_sched_t mode;
  bool compare, verify, json, quiet, info, list, pinned, ceiling;
  bool no_mpi;         /* --no-mpi: each process alone under a launcher */
  int repeat;
  int rounds;          /* --compare: the four modes run this many times in turn */
  int turns;           /* --compare: turns of steal and the best fixed split after it; -1: not given */
  double max_run_s;    /* --max-run-time: longer runs are timed on a prefix; 0: no bound */
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
} result_t;

/* What verification found: the first wrong item is the lowest checked one. */
typedef struct {
  size_t checked;
  long long bad;        /* checked items that are wrong, plus 1 for a failed round trip */
  long long first;      /* the first wrong item, or -1 */
  int worker;           /* the worker that computed it, or -1 when not known */
  bool roundtrip_bad;   /* ntt: inverse(forward(x)) != x */
  char what[256];       /* "output K bytes A..B: expected .., got .." of the first wrong item */
} verdict_t;

/* The ceiling of a batch workload (ceiling.c), and the host copy that bounds
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
} ceiling_t;

/* The sweep of fixed splits of --compare (sweep.c): static mode at factors of
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
  double static_share;  /* that of the static mode */
  /* The best fixed split: the fastest of cpu, gpu, static and the points. */
  const char *best_mode; /* "cpu", "gpu", "static" (the static mode) or "sweep"; NULL: none ran */
  double best_ratio;     /* 0 for cpu; -1 for gpu (all on the GPUs) */
  double best_tp, best_share;
} sweep_t;

/* The best fixed split and steal timed in turns after the sweep (turns.c):
 * the sweep picks the fastest of nine figures, so its own figure is biased
 * up; a fresh runtime of each in turn measures the two alike. */
typedef struct {
  const char *skipped;  /* why they were not run, or NULL */
  int n;                /* turns completed: both ran */
  result_t best, steal; /* every turn's timed runs: a round each */
  double ratio;         /* median over all timed runs, steal over best */
  double by_turn[MAX_ROUNDS];
} turns_t;

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
} outcome_t;

/* prog.c */
extern const char *const prog;
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* options.c */
void options_parse(int argc, char **argv, opts_t *o);

/* parse.c: the library's rules for settings (lib/config.c), for flags. */
long long parse_ll_opt(const char *opt, const char *v, long long lo, long long hi);
double parse_double_opt(const char *opt, const char *v, double lo, double hi);
double parse_seconds_opt(const char *opt, const char *v, double hi);
bool parse_keyword(const char *v, const char *word);
mgpu_sched_t parse_mode(const char *v);
int parse_split(const char *v, double *out);
size_t parse_bytes_opt(const char *opt, const char *v);
int parse_list_opt(const char *opt, const char *v, long long lo, long long hi, const char *example, int *out);

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
double run_bounded(mgpu_runtime_t *rt, work_t *w, size_t k, double bound_s, bool project, size_t *done);
size_t verify_step(size_t n);
double steal_share(const stealacc_t *a);

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
void measure(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, const char *mode);
size_t prefix_next(size_t k, size_t done, double t, double bound_s, size_t lo, size_t hi);
void free_result(result_t *r);
int ratio_by_round(const result_t *num, const result_t *den, const result_t *den2, double *out);

/* sweep.c */
void run_sweep(work_t *w, const opts_t *o, outcome_t *oc, const char *skip);
void sweep_best(outcome_t *oc);
double gpu_share(const result_t *r);
mgpu_runtime_t *start_best_split(const opts_t *o, const outcome_t *oc, const result_t **from);

/* turns.c */
void run_turns(work_t *w, const opts_t *o, outcome_t *oc);

/* modes.c */
int run_multi(mgpu_runtime_t *base, opts_t *o);
int run_batch_workload(mgpu_runtime_t *base, opts_t *o, const mgpu_plugin_workload_t *pw);

/* report.c */
void report_header(const work_t *w, mgpu_runtime_t *base, int ncpu, int ngpu);
void print_prefix_note(const opts_t *o, const work_t *w, const outcome_t *oc);
void report_text(const opts_t *o, const work_t *w, const outcome_t *oc);
void report_quiet(const opts_t *o, const work_t *w, const outcome_t *oc);
const result_t *main_result(const outcome_t *oc);

/* report_compare.c */
void sweep_report(const opts_t *o, const outcome_t *oc);
void turns_report(const opts_t *o, const outcome_t *oc);
void ceiling_report(const ceiling_t *c, const result_t *gpu);

/* ceiling.c */
void ceiling_run(const opts_t *o, work_t *w, int ngpu, size_t start, ceiling_t *c);

/* report_json.c */
void report_json(const opts_t *o, const work_t *w, const outcome_t *oc, mgpu_runtime_t *base);

/* image.c */
void write_image(const work_t *w, const opts_t *o, int ncpu);

/* ranks.c (ranks_none.c without MPI): under an MPI launcher. */
/* Initialise MPI where a launcher started this process, unless no_mpi;
 * ranks past 0 print nothing on stdout. */
void ranks_init(bool no_mpi);
void ranks_finalize(void);
int ranks_rank(void); /* 0 alone */
int ranks_size(void); /* 1 alone */
/* After a batch across ranks whose item 0 of an array is at base (items of
 * item_bytes): the shares of every rank (rs, from mgpu_stats_t.rank),
 * gathered in place on every rank. */
void ranks_gather(void *base, size_t item_bytes, const mgpu_rank_stats_t *rs, int nranks);
/* Over all ranks: the sum, the least; rank 0's value. */
long long ranks_sum(long long v);
long long ranks_min(long long v);
double ranks_bcast(double v);

#endif
