/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * options.c: mgpu-run's command line. One table holds every option: its
 * names, its value's name, its group and its help text. getopt's option list
 * and --help come from it, and tests/test-mgpu-help.sh checks the man page's
 * OPTIONS section against --help.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "base/base.h" /* lib/: the strict parsers */

typedef enum {
  O_ITEMS, O_SIZE, O_INTENSITY, O_MODE, O_COMPARE, O_CEILING, O_ROUNDS, O_TURNS, O_GPUS, O_SPLIT, O_DTYPE, O_MIN_BYTES, O_MAX_BYTES,
  O_FIRST_BATCH, O_REPEAT, O_MAX_RUN_TIME, O_COMPARE_TIME, O_SEED, O_NO_VERIFY, O_PINNED, O_OUTPUT, O_PLOT, O_TRACE, O_PLUGIN, O_OVERLAY, O_THREADS, O_RESERVE,
  O_NUM_GPUS, O_DEVICES, O_RATIO, O_MAX_BATCH, O_STREAMS, O_NO_MPI, O_JSON, O_QUIET, O_INFO, O_LIST, O_MODELS,
  O_MODELS_CLEAR, O_HELP, O_VERSION
} opt_id_t;

/* The groups of --help and of the man page's OPTIONS (its .SS headings). */
typedef enum { G_WORKLOAD, G_RUNTIME, G_OUTPUT, NGROUPS } opt_group_t;
static const char *const group_heading[NGROUPS] = {
    "Workload options:", "Runtime options (each overrides its environment variable):", "Output:"};

typedef struct {
  const char *name;  /* long name, without "--" */
  char short_name;   /* 0: none */
  const char *arg;   /* the value's name in --help and the man page; NULL: no value */
  opt_id_t id;
  opt_group_t group;
  const char *help;  /* lines of --help's second column */
} opt_desc_t;

/* In --help's order, which the man page's OPTIONS section follows. */
static const opt_desc_t options[] = {
  {"items", 'n', "N", O_ITEMS, G_WORKLOAD,
      "items in the batch (defaults: ntt and pipeline\n"
      "2^26 / 2^size polynomials (512 MiB), sha256 8388608,\n"
      "mandelbrot 4096 rows, saxpy 134217728, mulmod\n"
      "16777216, chain 65536; multi-GPU workloads: above),\n"
      "1..2^40"},
  {"size", 0, "S", O_SIZE, G_WORKLOAD,
      "ntt/pipeline: log2 length 10..16 (default 12);\n"
      "sha256: message bytes (default 64); mandelbrot: width\n"
      "(default 4096); matvec: columns (default 100000)"},
  {"intensity", 0, "K", O_INTENSITY, G_WORKLOAD,
      "mulmod: multiplications per item (default 1000);\n"
      "chain: mean chain length per item (default 20000);\n"
      "mandelbrot: iteration limit per pixel (default 10000);\n"
      "a plugin's workload may read it, and -n and --size;\n"
      "1..10000000"},
  {"mode", 0, "MODE", O_MODE, G_WORKLOAD,
      "steal (default), static, cpu or gpu"},
  {"compare", 0, NULL, O_COMPARE, G_WORKLOAD,
      "run cpu, gpu, static and steal on the same inputs,\n"
      "and static at 1/8 to 8 times the measured ratio,\n"
      "and compare them with the best fixed split; then\n"
      "the ceiling (--ceiling). Its runs are cancelled at\n"
      "--max-run-time (twice that once a prefix is sized),\n"
      "and the whole ends within --compare-time, or the\n"
      "sum of those limits over the runs it allows for\n"
      "where less, which the report states"},
  {"ceiling", 0, NULL, O_CEILING, G_WORKLOAD,
      "run only the ceiling: the whole batch as one launch\n"
      "on GPU 0, copied in and out in one piece from pinned\n"
      "memory; on pageable arrays, then the host copy of its\n"
      "inputs and outputs, which bounds a GPU fed from them"},
  {"rounds", 0, "N", O_ROUNDS, G_WORKLOAD,
      "with --compare: run the four modes N times in turn,\n"
      "1..100 (default 1), a runtime each time; each mode's\n"
      "figure is the median of all its timed runs, and E is\n"
      "also given round by round; --trace and --plot show\n"
      "the last round's steal run"},
  {"compare-time", 0, "T", O_COMPARE_TIME, G_WORKLOAD,
      "with --compare: the whole comparison ends within T\n"
      "seconds, 0..1e6 (default 60; 0: within the sum of\n"
      "its runs' limits); what the end stops is reported\n"
      "bounded. A T above 0 needs --max-run-time above 0\n"
      "(--max-run-time 0 lifts every bound)"},
  {"turns", 0, "N", O_TURNS, G_WORKLOAD,
      "with --compare: after steal, time the best fixed\n"
      "split and steal again N times in turn, 0..100\n"
      "(default 3; 0: not), a runtime each time, and give\n"
      "steal / best static from those runs: the sweep's\n"
      "best is the fastest of nine figures, so the\n"
      "luckiest"},
  {"gpus", 0, "LIST", O_GPUS, G_WORKLOAD,
      "run with the first N GPUs for each N of LIST in turn\n"
      "(distinct counts, e.g. 1,2,4), a runtime each: batch\n"
      "workloads add a scaling table (mode gpu unless --mode\n"
      "is given), multi-GPU workloads print a report per\n"
      "count; not with --compare or --devices"},
  {"split", 0, "LIST", O_SPLIT, G_WORKLOAD,
      "matvec, reduce: shares of the arrays, one per GPU,\n"
      "then optionally one for the host, e.g. 0.6,0.4 or\n"
      "1,1,0.5 (default: MGPU_TENSOR_SPLIT, else the\n"
      "workload's)"},
  {"dtype", 0, "TYPE", O_DTYPE, G_WORKLOAD,
      "reduce: element type, f32 (default) or f64"},
  {"min-bytes", 0, "N", O_MIN_BYTES, G_WORKLOAD,
      "allreduce: smallest size in bytes (default 8)"},
  {"max-bytes", 0, "N", O_MAX_BYTES, G_WORKLOAD,
      "allreduce: largest size in bytes (default 1G); sizes\n"
      "are multiples of 4 in 4..16G, with K, M, G suffixes"},
  {"first-batch", 0, NULL, O_FIRST_BATCH, G_WORKLOAD,
      "time what a process that runs one batch meets: a\n"
      "fresh runtime's first batches, none a warm-up,\n"
      "--repeat runs of the whole batch (default here 6, at\n"
      "least 3), giving the first one's seconds, the median\n"
      "of runs 3 on (the steady state) and their ratio, in\n"
      "one mode; not with --compare, --gpus or --ceiling"},
  {"repeat", 0, "R", O_REPEAT, G_WORKLOAD,
      "timed runs per mode, 1..1000 (default 3), after one\n"
      "warm-up run (nine in steal and static mode under\n"
      "the auto reserve, the default with a GPU; none, from\n"
      "3 runs, where the model store holds the kernel); the\n"
      "median is reported, with the share of the busy\n"
      "CPU time the host took (steal time) where it\n"
      "reached 0.5%"},
  {"max-run-time", 0, "T", O_MAX_RUN_TIME, G_WORKLOAD,
      "time a mode on a prefix of the batch where a run of\n"
      "the whole batch would take over T seconds, 0..1e6\n"
      "(default 3; 0: no bound): its first warm-up stops\n"
      "early, then runs of prefixes, each stopped at T,\n"
      "find the largest that runs within T, and the report\n"
      "says so; the ceiling too"},
  {"seed", 0, "S", O_SEED, G_WORKLOAD,
      "seed of the random inputs (default 1)"},
  {"no-verify", 0, NULL, O_NO_VERIFY, G_WORKLOAD,
      "do not check results against the CPU reference (else: the\n"
      "last run's, every item up to 4096, else one in n/2000;\n"
      "a failure names the first wrong item and its worker)"},
  {"pinned", 0, NULL, O_PINNED, G_WORKLOAD,
      "put the arrays in pinned host memory (mgpu_host_alloc)"},
  {"output", 'o', "FILE", O_OUTPUT, G_WORKLOAD,
      "mandelbrot: write the image (PNG when built with\n"
      "libpng, else PPM)"},
  {"plot", 0, "FILE.svg", O_PLOT, G_WORKLOAD,
      "draw the run (the steal run with --compare): a\n"
      "timeline with a lane per worker and GPU stream, and\n"
      "items and busy time per worker; not with --gpus or\n"
      "--ceiling"},
  {"trace", 0, "FILE", O_TRACE, G_WORKLOAD,
      "write a Chrome/Perfetto trace of the run (of the steal\n"
      "run with --compare) to FILE (%r, %p, %h: the MPI rank,\n"
      "process id, host name); not with --gpus or\n"
      "--ceiling; default: MGPU_TRACE, which traces the same\n"
      "run (and a multi-GPU workload's), no other runtime"},
  {"plugin", 0, "FILE", O_PLUGIN, G_WORKLOAD,
      "load workloads from a shared library (entry point\n"
      "mgpu_plugin_init, see mgpurt_plugin.h); name one as\n"
      "WORKLOAD, or the only one runs; one --plugin a run;\n"
      "a workload's name: up to 64 letters, digits, '-',\n"
      "'_' and '.', a letter or digit first"},
  {"overlay", 0, NULL, O_OVERLAY, G_WORKLOAD,
      "mandelbrot: tint each row by the worker that computed it"},
  {"threads", 't', "N", O_THREADS, G_RUNTIME,
      "CPU workers (MGPU_NUM_THREADS), 0..4096"},
  {"reserve", 0, "N|auto", O_RESERVE, G_RUNTIME,
      "CPU workers kept out of batches that GPUs also run\n"
      "(MGPU_RESERVE_THREADS), 0..4096, fewer than the CPU\n"
      "workers; auto: 0, a quarter, half or (where they\n"
      "add under a fifth) all of them, or (where the GPUs\n"
      "add under 30%) every GPU out, whichever each\n"
      "kernel's timed batches find faster"},
  {"num-gpus", 0, "N", O_NUM_GPUS, G_RUNTIME,
      "GPUs to use (MGPU_NUM_GPUS), 0..64"},
  {"devices", 0, "LIST", O_DEVICES, G_RUNTIME,
      "GPU indices, e.g. 0,2 (MGPU_DEVICES)"},
  {"ratio", 0, "R", O_RATIO, G_RUNTIME,
      "device-to-core ratio (MGPU_DEVICE_TO_CORE_RATIO), > 0"},
  {"max-batch", 0, "N", O_MAX_BATCH, G_RUNTIME,
      "items per GPU launch (MGPU_MAX_BATCH_SIZE)"},
  {"streams", 0, "N", O_STREAMS, G_RUNTIME,
      "chunks in flight per GPU (MGPU_STREAMS_PER_GPU), 1..32"},
  {"no-mpi", 0, NULL, O_NO_MPI, G_RUNTIME,
      "under an MPI launcher, each process runs alone\n"
      "(MGPU_MPI=off; else MPI is initialised and every\n"
      "batch runs once over all ranks, rank 0 reporting)"},
  {"json", 0, NULL, O_JSON, G_OUTPUT,
      "print the report as JSON on stdout (not with --info,\n"
      "--list, --models or --models-clear, which print text)"},
  {"quiet", 'q', NULL, O_QUIET, G_OUTPUT,
      "print only the result line (or the JSON); no progress\n"
      "bar (shown on a terminal for batches that run over a\n"
      "second)"},
  {"info", 0, NULL, O_INFO, G_OUTPUT,
      "print every effective setting with its source, the\n"
      "usable cores and the GPUs, then exit"},
  {"list", 0, NULL, O_LIST, G_OUTPUT,
      "list the workloads and built-in kernels, then exit"},
  {"models", 0, NULL, O_MODELS, G_OUTPUT,
      "list the model store (MGPU_MODEL_DIR): per kernel\n"
      "and worker class, the latency, rate, saturating size,\n"
      "samples and age; files that cannot be read, with the\n"
      "reason; then exit (no runtime is started)"},
  {"models-clear", 0, NULL, O_MODELS_CLEAR, G_OUTPUT,
      "remove the model store's files of the kernel named\n"
      "after it (mgpu-run --models-clear mulmod), or every\n"
      "file; say how many, then exit"},
  {"help", 'h', NULL, O_HELP, G_OUTPUT,
      "print this help and exit"},
  {"version", 'V', NULL, O_VERSION, G_OUTPUT,
      "print the version and exit"}
};
enum { NOPTIONS = sizeof options / sizeof options[0] };

/* The options that set a runtime setting, with its variable: the library's
 * messages name the variable, and base/flagname.c names the flag instead where
 * the flag was given. */
static const struct {
  opt_id_t id;
  const char *flag, *var;
} option_vars[] = {
  {O_THREADS, "--threads", "MGPU_NUM_THREADS"},     {O_RESERVE, "--reserve", "MGPU_RESERVE_THREADS"},
  {O_NUM_GPUS, "--num-gpus", "MGPU_NUM_GPUS"},      {O_DEVICES, "--devices", "MGPU_DEVICES"},
  {O_RATIO, "--ratio", "MGPU_DEVICE_TO_CORE_RATIO"}, {O_MAX_BATCH, "--max-batch", "MGPU_MAX_BATCH_SIZE"},
  {O_STREAMS, "--streams", "MGPU_STREAMS_PER_GPU"}, {O_NO_MPI, "--no-mpi", "MGPU_MPI"},
  {O_MODE, "--mode", "MGPU_SCHED"},                 {O_TRACE, "--trace", "MGPU_TRACE"}};

/* --help: the second column starts here. */
#define HELP_COLUMN 23

static const char help_intro[] =
    "Usage: mgpu-run [WORKLOAD] [OPTIONS]\n"
    "Run a batch of work on every CPU core and GPU with libmgpurt, check the answers\n"
    "(all of up to 4096 items, else about 2000 spread over the batch), and report\n"
    "how the work was shared. With no WORKLOAD, runs ntt.\n"
    "\n"
    "Batch workloads (the runtime splits the items between CPUs and GPUs):\n"
    "  ntt         forward NTT over the Goldilocks field, one polynomial per item\n"
    "  sha256      SHA-256 of one message per item\n"
    "  mandelbrot  one image row per item (irregular cost; --intensity: the\n"
    "              iteration limit)\n"
    "  saxpy       r = a*x + y on floats (transfer-bound)\n"
    "  mulmod      chained 64-bit modular multiplications (--intensity: the cost)\n"
    "  chain       latency-bound: one dependent chain per item, of a length that\n"
    "              varies from item to item (--intensity: the mean length)\n"
    "  pipeline    ntt -> CPU-only decomposition -> product and inverse ntt, as\n"
    "              dependent sub-batches\n"
    "\n"
    "Multi-GPU workloads (data split across the GPUs by shares, collectives):\n"
    "  matvec          y = W x on floats, W row-split across the GPUs (and the\n"
    "                  host with --split): -n rows (default 10000), --size\n"
    "                  columns (default 100000); per-GPU bandwidth against the\n"
    "                  GPU's device-to-device copy bandwidth\n"
    "  reduce          sum of -n elements (default 100000000) split across the\n"
    "                  GPUs and the host (default shares: 1 per GPU, and 0.1 for\n"
    "                  the host when there are CPU workers), of type --dtype;\n"
    "                  reproducibility and error against a long double sum\n"
    "  allreduce       bus bandwidth of mgpu_allreduce on sizes doubling from\n"
    "                  --min-bytes to --max-bytes, against a raw NCCL loop in the\n"
    "                  same run (needs a GPU)\n"
    "  saxpy-resident  r = a*x + y on arrays resident on the GPUs (-n default\n"
    "                  2^28 per GPU), against the device-to-device copy\n"
    "                  bandwidth (needs a GPU)\n"
    "\n";

static const char help_exit[] =
    "Exit status: 0 success, 1 runtime error or failed verification, 2 usage error\n"
    "(bad option, value or environment variable; GPUs asked for that the runtime\n"
    "does not see, or a GPU-only workload where it sees none: nothing ran), 130\n"
    "interrupted (SIGINT: the first stops the batch in flight at its next chunk and\n"
    "reports the runs completed; a second quits at once).\n";

/* One option of --help: "  -n, --items N" padded to the column, then its
 * text, each further line indented to the column. */
static void help_option(const opt_desc_t *d) {
  char col[64];
  int len = snprintf(col, sizeof col, "  %c%c%s--%s%s%s", d->short_name ? '-' : ' ', d->short_name ? d->short_name : ' ',
                     d->short_name ? ", " : "  ", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
  printf("%s%*s", col, len < HELP_COLUMN - 1 ? HELP_COLUMN - len : 1, "");
  for (const char *p = d->help; *p;) {
    const char *nl = strchr(p, '\n');
    int n = nl ? (int)(nl - p) : (int)strlen(p);
    printf("%.*s\n", n, p);
    if (!nl) break;
    p = nl + 1;
    printf("%*s", HELP_COLUMN, "");
  }
}

static void help(void) {
  fputs(help_intro, stdout);
  for (opt_group_t g = 0; g < NGROUPS; g++) {
    printf("%s\n", group_heading[g]);
    for (int i = 0; i < NOPTIONS; i++)
      if (options[i].group == g) help_option(&options[i]);
    printf("\n");
  }
  fputs(help_exit, stdout);
}

/* An output file that cannot be written is a usage error found before any
 * run, so that a long run is not lost to it. A file made here is removed. */
static void check_writable(const char *opt, const char *path) {
  if (!path) return;
  struct stat sb;
  bool existed = stat(path, &sb) == 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  if (fd < 0) usage_error("%s '%s': cannot write it: %s", opt, path, strerror(errno));
  close(fd);
  if (!existed) unlink(path);
}

/* The options of the workloads and what they run. */
static void apply_workload_option(opts_t *o, opt_id_t id, const char *v) {
  switch (id) {
  case O_ITEMS: o->items = parse_ll_opt("--items", v, 1, 1LL << 40); break;
  case O_SIZE: o->size = (int)parse_ll_opt("--size", v, 0, 1 << 20); break;
  case O_INTENSITY: o->intensity = parse_ll_opt("--intensity", v, 1, 10000000); break;
  case O_MODE: o->mode = parse_mode(v); break;
  case O_COMPARE: o->compare = true; break;
  case O_CEILING: o->ceiling = true; break;
  case O_ROUNDS: o->rounds = (int)parse_ll_opt("--rounds", v, 1, MAX_ROUNDS); break;
  case O_TURNS: o->turns = (int)parse_ll_opt("--turns", v, 0, MAX_ROUNDS); break;
  case O_GPUS:
    o->ngpus_list = parse_list_opt("--gpus", v, 1, MGPU_MAX_DEVICES, "distinct GPU counts such as 1,2,4", o->gpus_list);
    break;
  case O_SPLIT: o->multi.nshares = parse_split(v, o->multi.shares); break;
  case O_DTYPE:
    if (!parse_keyword(v, "f32") && !parse_keyword(v, "f64")) usage_error("--dtype '%s' is invalid: expected f32 or f64", v);
    o->multi.f64 = parse_keyword(v, "f64");
    o->dtype_given = true;
    break;
  case O_MIN_BYTES: o->multi.min_bytes = parse_bytes_opt("--min-bytes", v); break;
  case O_MAX_BYTES: o->multi.max_bytes = parse_bytes_opt("--max-bytes", v); break;
  case O_FIRST_BATCH: o->first_batch = true; break;
  case O_REPEAT:
    o->repeat = (int)parse_ll_opt("--repeat", v, 1, MAX_FIRST_RUNS);
    o->repeat_given = true;
    break;
  case O_MAX_RUN_TIME: o->max_run_s = parse_seconds_opt("--max-run-time", v, 1e6, "no bound"); break;
  case O_COMPARE_TIME:
    o->compare_s = parse_seconds_opt("--compare-time", v, 1e6, "the sum of its runs' limits");
    o->compare_s_given = true;
    break;
  case O_SEED: o->seed = (unsigned long long)parse_ll_opt("--seed", v, 0, LLONG_MAX); break;
  case O_NO_VERIFY: o->verify = false; break;
  case O_PINNED: o->pinned = true; break;
  case O_OUTPUT: o->output = v; break;
  case O_PLOT:
    if (!*v) usage_error("--plot needs a file name");
    /* The plot is SVG only: another extension would hold SVG under a wrong name. */
    if (strlen(v) < 5 || strcmp(v + strlen(v) - 4, ".svg"))
      usage_error("--plot '%s' is invalid: expected a file name ending in .svg (the plot is SVG)", v);
    o->plot = v;
    break;
  case O_TRACE:
    if (!*v) usage_error("--trace needs a file name");
    /* A blank name would reach the library, whose message names its struct field. */
    if (strspn(v, " \t\n\v\f\r") == strlen(v)) usage_error("--trace needs a file name: '%s' is blank", v);
    char why[64];
    if (!mgpu__trace_pattern_ok(v, why, sizeof why))
      usage_error("--trace '%s': %s: expected %%r (the MPI rank), %%p (the process id), %%h (the host name) or %%%% "
                  "(a %%) after a %%", v, why);
    o->trace = v;
    break;
  case O_PLUGIN:
    if (!*v || strspn(v, " \t\n\v\f\r") == strlen(v)) usage_error("--plugin needs a file name: '%s' is blank", v);
    if (o->plugin) usage_error("--plugin is given twice ('%s', then '%s'): mgpu-run loads one plugin", o->plugin, v);
    o->plugin = v;
    break;
  case O_OVERLAY: o->overlay = true; break;
  default: break;
  }
}

/* The runtime's settings (each that of an MGPU_* variable) and the output. */
static void apply_runtime_option(opts_t *o, opt_id_t id, const char *v) {
  mgpu_config_t *c = &o->cfg;
  switch (id) {
  case O_THREADS: c->num_threads = (int)parse_ll_opt("--threads", v, 0, 4096); break;
  case O_RESERVE:
    c->reserve_threads = parse_keyword(v, "auto") ? MGPU_RESERVE_AUTO : (int)parse_ll_opt("--reserve", v, 0, 4096);
    break;
  case O_NUM_GPUS: c->num_gpus = (int)parse_ll_opt("--num-gpus", v, 0, MGPU_MAX_DEVICES); break;
  case O_DEVICES:
    c->ndevices = parse_list_opt("--devices", v, 0, MGPU_MAX_DEVICES - 1, "a list such as 0,2", c->devices);
    break;
  case O_RATIO: c->device_to_core_ratio = parse_double_opt("--ratio", v, 0, 1e7); break;
  case O_MAX_BATCH: c->max_batch_size = parse_ll_opt("--max-batch", v, 1, 1LL << 40); break;
  case O_STREAMS: c->streams_per_gpu = (int)parse_ll_opt("--streams", v, 1, 32); break;
  case O_NO_MPI:
    o->no_mpi = true;
    c->mpi = 0;
    break;
  case O_JSON: o->json = true; break;
  case O_QUIET: o->quiet = true; break;
  case O_INFO: o->info = true; break;
  case O_LIST: o->list = true; break;
  case O_MODELS: o->models = true; break;
  case O_MODELS_CLEAR: o->models_clear = true; break;
  case O_HELP: help(); exit(0);
  case O_VERSION: printf("mgpu-run (libmgpurt) %s\n", mgpu_version()); exit(0);
  default: apply_workload_option(o, id, v); break;
  }
}

/* The absolute path of p's folder and p's last name (p need not exist):
 * false where the folder cannot be resolved. */
static bool resolve(const char *p, char *out, size_t cap) {
  char dir[PATH_MAX], real[PATH_MAX];
  const char *slash = strrchr(p, '/'), *name = slash ? slash + 1 : p;
  size_t len = slash ? (size_t)(slash - p) : 0;
  if (len >= sizeof dir) return false;
  if (slash) memcpy(dir, p, len), dir[len] = 0;
  if (!realpath(slash ? (len ? dir : "/") : ".", real)) return false;
  return snprintf(out, cap, "%s/%s", real, name) < (int)cap;
}

/* Whether two paths name one file: the same text, the same folder and name,
 * or one existing file (links). */
static bool same_file(const char *a, const char *b) {
  if (!strcmp(a, b)) return true;
  char ra[2 * PATH_MAX], rb[2 * PATH_MAX];
  if (resolve(a, ra, sizeof ra) && resolve(b, rb, sizeof rb) && !strcmp(ra, rb)) return true;
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* MGPU_TRACE names the file of the run that --trace records, and --trace wins
 * over it. Every runtime reads the environment, so mgpu-run takes the
 * variable over (it gives the file to the traced runtime alone): left set,
 * each runtime it starts would write its own trace to the same file, and the
 * last to stop (not the run traced) would be the one left there. A blank or
 * overlong value, or one with a % that starts no substitution, is left for
 * the library to refuse; --info shows the
 * variable as set. */
static void trace_from_env(opts_t *o) {
  const char *v = getenv("MGPU_TRACE");
  if (!v || o->info || o->list || o->models || o->models_clear) return;
  static char path[PATH_MAX];
  if (strlen(v) >= sizeof path) return;
  const char *t = mgpu__parse_trim(v, path, sizeof path);
  char why[64];
  if (!*t || !mgpu__trace_pattern_ok(t, why, sizeof why)) return;
  if (!o->trace) o->trace = t, o->trace_env = true;
  unsetenv("MGPU_TRACE");
}

/* Options that do not go together, or that need a file written. */
static void check_combinations(const opts_t *o) {
  if (o->models && o->models_clear) usage_error("--models and --models-clear do not go together: run them separately");
  if (o->models && o->workload)
    usage_error("--models lists the whole model store: unexpected argument '%s'", o->workload);
  if (o->json && (o->info || o->list || o->models || o->models_clear))
    usage_error("--json is for the report of a run: %s prints text",
                o->info ? "--info" : o->list ? "--list" : o->models ? "--models" : "--models-clear");
  if (o->first_batch && (o->compare || o->ngpus_list || o->ceiling))
    usage_error("--first-batch times one mode's runtime: not with %s",
                o->compare ? "--compare" : o->ngpus_list ? "--gpus" : "--ceiling");
  if (o->first_batch && o->repeat < 3)
    usage_error("--first-batch needs --repeat of at least 3 (its steady state is the median of runs 3 on): got %d",
                o->repeat);
  if (o->first_batch && o->workload && multi_is_workload(o->workload))
    usage_error("--first-batch is for the batch workloads, not %s", o->workload);
  if (o->compare && o->mode) usage_error("--compare runs every mode: do not give --mode too");
  if (o->ceiling && (o->compare || o->mode || o->ngpus_list))
    usage_error("--ceiling runs only the ceiling: not with --compare, --mode or --gpus");
  if (o->rounds > 1 && !o->compare) usage_error("--rounds is for --compare");
  if (o->turns >= 0 && !o->compare) usage_error("--turns is for --compare");
  if (o->compare_s_given && !o->compare) usage_error("--compare-time is for --compare");
  if (o->compare_s_given && o->compare_s > 0 && o->max_run_s <= 0)
    usage_error("--compare-time %g needs --max-run-time above 0: only then are runs cancelled at a bound", o->compare_s);
  if (o->compare && o->ngpus_list) usage_error("--gpus and --compare do not go together: run them separately");
  if (o->multi.min_bytes > (o->multi.max_bytes ? o->multi.max_bytes : (size_t)1 << 30))
    usage_error(o->multi.max_bytes ? "--min-bytes is larger than --max-bytes" : "--min-bytes is larger than --max-bytes's default, 1G");
  if (o->workload && multi_is_workload(o->workload) &&
      (o->plot || (o->trace && !o->trace_env) || o->compare || o->output || o->ceiling || o->mode))
    usage_error("--plot, --trace, --compare, --output, --ceiling and --mode are for the batch workloads, not %s",
                o->workload);
  /* Shares fit a count of GPUs: N or N + 1 (the host's last). */
  for (int i = 0; o->multi.nshares && i < o->ngpus_list; i++)
    if (o->multi.nshares != o->gpus_list[i] && o->multi.nshares != o->gpus_list[i] + 1)
      usage_error("--split has %d entr%s, which does not fit --gpus %d: expected %d (GPUs) or %d (GPUs, then the host)",
                  o->multi.nshares, o->multi.nshares == 1 ? "y" : "ies", o->gpus_list[i], o->gpus_list[i],
                  o->gpus_list[i] + 1);
  if (o->cfg.ndevices > 0 && o->ngpus_list) usage_error("--gpus picks the first N GPUs: do not give --devices too");
  if ((o->plot || (o->trace && !o->trace_env)) && (o->ngpus_list || o->ceiling))
    usage_error("--plot and --trace record one mode's run, or --compare's steal run: not with %s",
                o->ngpus_list ? "--gpus" : "--ceiling");
  if (o->trace_env && (o->ngpus_list || o->ceiling))
    usage_error("MGPU_TRACE='%s' records one run, as --trace does (a mode's, --compare's steal run or a multi-GPU "
                "workload's): not with %s: unset it", o->trace, o->ngpus_list ? "--gpus" : "--ceiling");
  /* Each output its own file: one written after another would leave only the last. */
  const char *trace_name = o->trace_env ? "MGPU_TRACE" : "--trace";
  const char *const file[3] = {o->output, o->plot, o->trace}, *const flag[3] = {"--output", "--plot", trace_name};
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      if (file[i] && file[j] && same_file(file[i], file[j]))
        usage_error("%s and %s name the same file '%s': give each its own", flag[i], flag[j], file[j]);
  if (!o->info && !o->list && !o->models && !o->models_clear) {
    /* A path with substitutions is the library's to expand and check, at mgpu_init. */
    if (o->trace && !strchr(o->trace, '%')) check_writable(trace_name, o->trace);
    check_writable("--plot", o->plot);
    check_writable("--output", o->output);
  }
}

void options_parse(int argc, char **argv, opts_t *o) {
  /* getopt's lists from the table: a long option without a short name
   * returns 256 + its index. */
  static struct option longopts[NOPTIONS + 1];
  char shortopts[2 * NOPTIONS + 2] = ":";
  for (int i = 0; i < NOPTIONS; i++) {
    const opt_desc_t *d = &options[i];
    longopts[i] = (struct option){d->name, d->arg ? required_argument : no_argument, NULL,
                                  d->short_name ? d->short_name : 256 + i};
    if (d->short_name) {
      size_t len = strlen(shortopts);
      shortopts[len] = d->short_name;
      shortopts[len + 1] = d->arg ? ':' : '\0';
      shortopts[len + 2] = '\0';
    }
  }
  memset(o, 0, sizeof *o);
  o->items = -1;
  o->size = -1;
  o->verify = true;
  o->repeat = 3;
  o->max_run_s = MAX_RUN_S_DEFAULT;
  o->compare_s = COMPARE_S_DEFAULT;
  o->rounds = 1;
  o->turns = -1;
  o->seed = 1;
  mgpu_config_init(&o->cfg);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    int k = c >= 256 ? c - 256 : -1;
    for (int i = 0; i < NOPTIONS && k < 0; i++)
      if (options[i].short_name && options[i].short_name == c) k = i;
    /* getopt's optopt names a short option (argv[optind - 1] is its whole
     * cluster, or the next word) and a long one given a value it takes none of. */
    const char *word = argv[optind - 1];
    bool is_long = !strncmp(word, "--", 2);
    if (c == ':') {
      if (!is_long && optopt > 0 && optopt < 256) usage_error("option '-%c' needs a value", optopt);
      usage_error("option '%s' needs a value", word);
    }
    if (k < 0) {
      for (int i = 0; i < NOPTIONS; i++)
        if (optopt && optopt == longopts[i].val && !options[i].arg)
          usage_error("option '--%s' takes no value: '%s'", options[i].name, word);
      if (!is_long && optopt > 0 && optopt < 256) usage_error("unknown option '-%c'", optopt);
      usage_error("unknown or ambiguous option '%s'", word);
    }
    apply_runtime_option(o, options[k].id, optarg);
    for (size_t i = 0; i < sizeof option_vars / sizeof option_vars[0]; i++)
      if (option_vars[i].id == options[k].id) flagname_set(option_vars[i].var, option_vars[i].flag);
  }
  if (optind < argc) o->workload = argv[optind++];
  if (optind < argc) usage_error("unexpected argument '%s'", argv[optind]);
  if (o->first_batch && !o->repeat_given) o->repeat = FIRST_BATCH_RUNS;
  trace_from_env(o);
  check_combinations(o);
  if (o->turns < 0) o->turns = TURNS_DEFAULT;
}
