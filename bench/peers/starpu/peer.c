/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer.c: libmgpurt's built-in kernels run as StarPU codelets, so that the two
 * runtimes are compared on the same kernel functions on the same machine.
 *
 * The kernels come from the built libmgpurt (mgpu_kernel_* constructors); each
 * StarPU task fills an mgpu_chunk_t from its buffers and calls the kernel's
 * cpu function on a CPU worker, or its gpu function on a CUDA worker with the
 * worker's stream (the gpu function only enqueues, as libmgpurt's GPU worker
 * expects, so the codelet is STARPU_CUDA_ASYNC and StarPU waits on the stream).
 *
 * One batch: the input and output arrays (host memory, pageable or from
 * starpu_malloc) are registered as vector handles, partitioned into T equal
 * blocks (starpu_vector_filter_block), one task per block; the batch ends when
 * every task is done and the data are unpartitioned and unregistered, so the
 * outputs are back in the host arrays, as with mgpu_run. For each scheduler
 * and each T of the sweep the median of the timed batches is kept, and the
 * outputs of the last batch are checked against the kernel's CPU function on
 * a sample of items. --overhead measures StarPU's own costs on one CPU worker
 * as bench/mgpu-overhead measures libmgpurt's.
 *
 * Output: a text table, or JSON with --json (bench/peers/run.sh reads it).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "mgpurt.h"
#include "mgpurt_kernels.h"

#define EXIT_USAGE 2
#define MAX_LIST 32
#define MAX_SCHEDS 8

static const char *prog = "starpu-peer";

static void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '%s --help'.\n", prog);
  va_end(ap);
  exit(EXIT_USAGE);
}

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(EXIT_FAILURE);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ------------------------------------------------------------------ options */

typedef enum { MODE_ALL, MODE_GPU, MODE_CPU } peer_mode_t;
static const char *mode_names[] = {"all", "gpu", "cpu"};

typedef struct {
  const char *workload;          /* mulmod, sha256, ntt, mandelbrot; NULL with --overhead */
  long long items;               /* -1: the workload's default */
  long long size;                /* ntt log2 length, sha256 bytes, mandelbrot width; -1: default */
  long long intensity;           /* mulmod K, mandelbrot max_iter; -1: default */
  peer_mode_t mode;
  const char *scheds[MAX_SCHEDS];
  int nscheds;
  long long tasks[MAX_LIST];     /* task counts of the sweep */
  int ntasks;
  int repeat, warmup;
  int calibrate_max;             /* dmda: at most this many calibration batches per point */
  double calibrate_s;            /* dmda: and at most this long calibrating one point */
  bool pinned, json, overhead;
  double slow_factor;            /* stop a scheduler's sweep past this many times its best */
} opts_t;

/* A whole decimal number in [lo, hi], or a usage error naming the option. */
static long long parse_ll(const char *opt, const char *v, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi)
    usage_error("%s '%s' is invalid: expected a whole number in %lld..%lld", opt, v, lo, hi);
  return x;
}

static double parse_double(const char *opt, const char *v, double lo, double hi) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || *end || !(x >= lo && x <= hi))
    usage_error("%s '%s' is invalid: expected a number in %g..%g", opt, v, lo, hi);
  return x;
}

static void usage(void) {
  printf("Usage: %s WORKLOAD [OPTIONS]     run a built-in kernel of libmgpurt under StarPU\n"
         "       %s --overhead [OPTIONS]   StarPU's per-task overhead and one-task round trip on one CPU worker\n"
         "WORKLOAD: mulmod, chain, sha256, ntt or mandelbrot (the same items as mgpu-run's workloads).\n"
         "  -n, --items N        items (default: mulmod 2^24, sha256 2^23, ntt 2^26 >> size, mandelbrot 4096)\n"
         "      --size S         ntt log2 length 10..16 (12), sha256 message bytes (64), mandelbrot width (4096)\n"
         "      --intensity K    mulmod chain length (1000), chain mean length (20000),\n"
         "                       mandelbrot iteration cap (10000)\n"
         "      --mode M         all (CPU and CUDA workers, default), gpu (CUDA workers only), cpu (CPU workers only)\n"
         "      --sched LIST     StarPU schedulers to try, comma-separated (default lws,dmda,eager)\n"
         "      --tasks LIST     task counts of the sweep, comma-separated (default 4,16,64,256,1024)\n"
         "      --repeat R       timed batches per point, median kept (default 3)\n"
         "      --warmup W       untimed batches per point first (default 1)\n"
         "      --calibrate N,S  dmda: then untimed batches until its performance model is calibrated for the\n"
         "                       point's task size on every worker kind, at most N batches and S seconds\n"
         "                       (default 50,20)\n"
         "      --slow F         stop a scheduler's sweep once a point is F times slower than its best (default 4)\n"
         "      --pinned         inputs and outputs from starpu_malloc (pinned), not malloc\n"
         "      --json           print the results as JSON\n"
         "Environment: StarPU's own (STARPU_NCPU, STARPU_NCUDA, STARPU_HOME for the performance models, ...).\n",
         prog, prog);
}

static int split_list(char *s, char **out, int max, const char *opt) {
  int n = 0;
  for (char *save, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == max) usage_error("%s: more than %d entries", opt, max);
    out[n++] = t;
  }
  if (n == 0) usage_error("%s needs at least one entry", opt);
  return n;
}

static void parse_args(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.items = -1, .size = -1, .intensity = -1, .mode = MODE_ALL, .repeat = 3, .warmup = 1,
                .calibrate_max = 50, .calibrate_s = 20, .slow_factor = 4};
  static const char *def_scheds[] = {"lws", "dmda", "eager"};
  static const long long def_tasks[] = {4, 16, 64, 256, 1024};
  for (int i = 0; i < 3; i++) o->scheds[i] = def_scheds[i];
  o->nscheds = 3;
  memcpy(o->tasks, def_tasks, sizeof def_tasks);
  o->ntasks = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
#define VALUE() (i + 1 < argc ? argv[++i] : (usage_error("%s needs a value", a), ""))
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage();
      exit(0);
    } else if (!strcmp(a, "-n") || !strcmp(a, "--items")) {
      o->items = parse_ll(a, VALUE(), 1, 1LL << 40);
    } else if (!strcmp(a, "--size")) {
      o->size = parse_ll(a, VALUE(), 0, 1 << 20);
    } else if (!strcmp(a, "--intensity")) {
      o->intensity = parse_ll(a, VALUE(), 1, (long long)MGPU_MULMOD_MAX_INTENSITY);
    } else if (!strcmp(a, "--mode")) {
      const char *v = VALUE();
      int m = -1;
      for (int k = 0; k < 3; k++)
        if (!strcmp(v, mode_names[k])) m = k;
      if (m < 0) usage_error("--mode '%s' is invalid: expected all, gpu or cpu", v);
      o->mode = (peer_mode_t)m;
    } else if (!strcmp(a, "--sched")) {
      char *v = strdup(VALUE()), *parts[MAX_SCHEDS];
      o->nscheds = split_list(v, parts, MAX_SCHEDS, a);
      for (int k = 0; k < o->nscheds; k++) {
        bool known = false;
        for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); *p; p++)
          if (!strcmp((*p)->policy_name, parts[k])) known = true;
        if (!known) usage_error("--sched: '%s' is not a StarPU scheduler (try lws, dmda, eager, ws, dm, prio)", parts[k]);
        o->scheds[k] = parts[k];
      }
    } else if (!strcmp(a, "--tasks")) {
      char *v = strdup(VALUE()), *parts[MAX_LIST];
      o->ntasks = split_list(v, parts, MAX_LIST, a);
      for (int k = 0; k < o->ntasks; k++) o->tasks[k] = parse_ll("--tasks entry", parts[k], 1, 1 << 20);
    } else if (!strcmp(a, "--repeat")) {
      o->repeat = (int)parse_ll(a, VALUE(), 1, 1000);
    } else if (!strcmp(a, "--warmup")) {
      o->warmup = (int)parse_ll(a, VALUE(), 0, 100);
    } else if (!strcmp(a, "--calibrate")) {
      const char *v = VALUE(), *comma = strchr(v, ',');
      if (!comma) usage_error("--calibrate '%s' is invalid: expected N,S (batches, seconds), e.g. 50,20", v);
      char nbuf[32];
      snprintf(nbuf, sizeof nbuf, "%.*s", (int)(comma - v), v);
      o->calibrate_max = (int)parse_ll("--calibrate batches", nbuf, 0, 10000);
      o->calibrate_s = parse_double("--calibrate seconds", comma + 1, 0, 1e6);
    } else if (!strcmp(a, "--slow")) {
      o->slow_factor = parse_double(a, VALUE(), 1, 1e9);
    } else if (!strcmp(a, "--pinned")) {
      o->pinned = true;
    } else if (!strcmp(a, "--json")) {
      o->json = true;
    } else if (!strcmp(a, "--overhead")) {
      o->overhead = true;
    } else if (a[0] == '-') {
      usage_error("unknown option '%s'", a);
    } else if (!o->workload) {
      o->workload = a;
    } else {
      usage_error("unexpected argument '%s' (one workload at a time)", a);
    }
#undef VALUE
  }
  if (o->overhead && o->workload) usage_error("--overhead takes no workload");
  if (!o->overhead && !o->workload) usage_error("no workload given: expected mulmod, chain, sha256, ntt or mandelbrot");
}

/* ----------------------------------------------------------------- workload */

typedef struct {
  const char *name;
  mgpu_kernel_t k;
  union {
    mgpu_mulmod_arg_t mulmod;
    mgpu_chain_arg_t chain;
    mgpu_sha256_arg_t sha;
    mgpu_ntt_arg_t ntt;
    mgpu_mandelbrot_arg_t mandel;
  } arg;
  size_t n;
  unsigned long long intensity; /* for the report: mulmod K, mandelbrot cap; 0 otherwise */
  long long size;               /* for the report */
  void *in, *out;               /* the batch's arrays (nin is 0 or 1, nout 1) */
  void *in_master;              /* the input values, copied into `in` where it is reallocated */
  size_t in_bytes, out_bytes;
} work_t;

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void check_status(mgpu_status_t st, const char *what) {
  if (st != MGPU_OK) usage_error("%s: %s (%s)", what, mgpu_status_name(st), mgpu_last_error());
}

/* The kernel and input values of the workload, as mgpu-run sets them up. */
static void setup(work_t *w, const opts_t *o) {
  memset(w, 0, sizeof *w);
  w->name = o->workload;
  const char *wl = o->workload;
  size_t in_item = 0, out_item = 0;
  if (!strcmp(wl, "mulmod")) {
    w->n = o->items < 0 ? (size_t)1 << 24 : (size_t)o->items;
    uint64_t k = o->intensity < 0 ? 1000 : (uint64_t)o->intensity;
    check_status(mgpu_kernel_mulmod(k, &w->k), "mgpu_kernel_mulmod");
    w->arg.mulmod.intensity = k;
    w->intensity = k;
    in_item = out_item = 8;
  } else if (!strcmp(wl, "chain")) {
    w->n = o->items < 0 ? (size_t)1 << 16 : (size_t)o->items;
    uint64_t len = o->intensity < 0 ? 20000 : (uint64_t)o->intensity;
    check_status(mgpu_kernel_chain(len, &w->k), "mgpu_kernel_chain");
    w->arg.chain.length = len;
    w->intensity = len;
    in_item = out_item = 8;
  } else if (!strcmp(wl, "sha256")) {
    long long len = o->size < 0 ? 64 : o->size;
    if (len < 1) usage_error("--size 0 is invalid for sha256 here: expected 1..%llu bytes",
                             (unsigned long long)MGPU_SHA256_MAX_LEN);
    w->n = o->items < 0 ? (size_t)8 << 20 : (size_t)o->items;
    check_status(mgpu_kernel_sha256((size_t)len, &w->k), "mgpu_kernel_sha256");
    w->arg.sha.msg_len = (uint64_t)len;
    w->size = len;
    in_item = (size_t)len, out_item = 32;
  } else if (!strcmp(wl, "ntt")) {
    long long lg = o->size < 0 ? 12 : o->size;
    if (lg < MGPU_NTT_LOG_MIN || lg > MGPU_NTT_LOG_MAX) usage_error("--size %lld is invalid for ntt: expected 10..16", lg);
    w->n = o->items < 0 ? ((size_t)1 << 26 >> lg) : (size_t)o->items;
    check_status(mgpu_kernel_ntt((unsigned)lg, &w->k), "mgpu_kernel_ntt");
    w->arg.ntt = (mgpu_ntt_arg_t){(uint32_t)lg, 0};
    w->size = lg;
    in_item = out_item = (size_t)8 << lg;
  } else if (!strcmp(wl, "mandelbrot")) {
    long long width = o->size < 0 ? 4096 : o->size;
    w->n = o->items < 0 ? 4096 : (size_t)o->items;
    if (w->n > MGPU_MANDELBROT_MAX_DIM) usage_error("-n %zu is too many rows for mandelbrot: at most %u", w->n,
                                                    MGPU_MANDELBROT_MAX_DIM);
    uint32_t iter = o->intensity < 0 ? 10000 : (uint32_t)o->intensity;
    w->arg.mandel = (mgpu_mandelbrot_arg_t){(uint32_t)width, (uint32_t)w->n, iter, 0, -2.2, -1.5, 1.0, 1.5};
    check_status(mgpu_kernel_mandelbrot(&w->arg.mandel, &w->k), "mgpu_kernel_mandelbrot");
    w->intensity = iter;
    w->size = width;
    out_item = (size_t)width * 4;
  } else {
    usage_error("unknown workload '%s': expected mulmod, chain, sha256, ntt or mandelbrot", wl);
  }
  if (w->k.nin > 1 || w->k.nout != 1) fail("kernel %s has %d inputs and %d outputs: this program handles 0..1 and 1",
                                           w->k.name, w->k.nin, w->k.nout);
  if (w->k.nin == 1 && w->k.in_size[0] != in_item) fail("kernel %s: unexpected input item size", w->k.name);
  if (w->k.out_size[0] != out_item) fail("kernel %s: unexpected output item size", w->k.name);
  if ((in_item && w->n > SIZE_MAX / in_item) || w->n > SIZE_MAX / out_item) usage_error("-n %zu: the arrays would overflow", w->n);
  w->in_bytes = w->k.nin ? in_item * w->n : 0;
  w->out_bytes = out_item * w->n;
  if (w->in_bytes) {
    w->in_master = malloc(w->in_bytes);
    if (!w->in_master) fail("out of memory for %zu input bytes", w->in_bytes);
    uint64_t s = 42;
    uint64_t *u = w->in_master;
    for (size_t j = 0; j < w->in_bytes / 8; j++) u[j] = rng_next(&s) % MGPU_GOLDILOCKS_P;
    unsigned char *b = w->in_master;
    for (size_t j = w->in_bytes / 8 * 8; j < w->in_bytes; j++) b[j] = (unsigned char)rng_next(&s);
  }
}

/* ------------------------------------------------------------------ codelet */

/* What a task's codelet needs beyond its buffers. */
typedef struct {
  const work_t *w;
  size_t first; /* global index of the block's first item */
} task_arg_t;

static atomic_int kernel_failures;
static atomic_int first_failure_rc;
static atomic_ullong items_on[2]; /* items computed by CPU workers, by CUDA workers */
static atomic_ullong tasks_on[2];
/* Time CPU workers spent in the kernel and the items they computed: the cost
 * of one item on one CPU worker, which the sweep uses to skip task sizes that
 * would leave the batch waiting for one CPU worker's task. */
static atomic_ullong cpu_kernel_ns, cpu_kernel_items;

static void note_failure(int rc) {
  int zero = 0;
  atomic_compare_exchange_strong(&first_failure_rc, &zero, rc);
  atomic_fetch_add(&kernel_failures, 1);
}

/* Fills the chunk from the task's buffers: vector blocks of the in and out
 * arrays, host pointers on a CPU worker and device pointers on a CUDA worker. */
static void fill_chunk(void *buffers[], const task_arg_t *ta, const void **in, void **out, mgpu_chunk_t *c) {
  const work_t *w = ta->w;
  int b = 0;
  size_t count = STARPU_VECTOR_GET_NX(buffers[0]);
  if (w->k.nin == 1) in[0] = (const void *)STARPU_VECTOR_GET_PTR(buffers[b++]);
  out[0] = (void *)STARPU_VECTOR_GET_PTR(buffers[b]);
  *c = (mgpu_chunk_t){.in = in, .out = out, .arg = &w->arg, .first = ta->first, .count = count,
                      .worker = starpu_worker_get_id()};
}

static void cpu_func(void *buffers[], void *cl_arg) {
  const void *in[1] = {NULL};
  void *out[1];
  mgpu_chunk_t c;
  const task_arg_t *ta = cl_arg;
  fill_chunk(buffers, ta, in, out, &c);
  double t0 = now();
  int rc = ta->w->k.cpu(&c);
  atomic_fetch_add(&cpu_kernel_ns, (unsigned long long)((now() - t0) * 1e9));
  atomic_fetch_add(&cpu_kernel_items, c.count);
  if (rc) note_failure(rc);
  atomic_fetch_add(&items_on[0], c.count);
  atomic_fetch_add(&tasks_on[0], 1);
}

#ifdef STARPU_USE_CUDA
static void cuda_func(void *buffers[], void *cl_arg) {
  const void *in[1] = {NULL};
  void *out[1];
  mgpu_chunk_t c;
  const task_arg_t *ta = cl_arg;
  fill_chunk(buffers, ta, in, out, &c);
  c.stream = starpu_cuda_get_local_stream();
  int rc = ta->w->k.gpu(&c);
  if (rc) note_failure(rc);
  atomic_fetch_add(&items_on[1], c.count);
  atomic_fetch_add(&tasks_on[1], 1);
}
#endif

static struct starpu_perfmodel model = {.type = STARPU_HISTORY_BASED};

static struct starpu_codelet codelet = {
    .cpu_funcs = {cpu_func},
#ifdef STARPU_USE_CUDA
    .cuda_funcs = {cuda_func},
    /* The gpu function only enqueues on the stream: StarPU waits for it. */
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
};

/* --------------------------------------------------------------- one batch */

/* Runs the whole batch as ntasks tasks; returns its wall time, or -1 when a
 * task could not be submitted (the message says why). */
static double run_batch(work_t *w, size_t ntasks) {
  task_arg_t *args = malloc(ntasks * sizeof *args);
  if (!args) fail("out of memory for %zu task arguments", ntasks);
  starpu_data_handle_t hin = NULL, hout;
  struct starpu_data_filter f = {.filter_func = starpu_vector_filter_block, .nchildren = (unsigned)ntasks};
  double t0 = now();
  if (w->k.nin) {
    starpu_vector_data_register(&hin, STARPU_MAIN_RAM, (uintptr_t)w->in, w->n, w->k.in_size[0]);
    starpu_data_partition(hin, &f);
  }
  starpu_vector_data_register(&hout, STARPU_MAIN_RAM, (uintptr_t)w->out, w->n, w->k.out_size[0]);
  starpu_data_partition(hout, &f);
  size_t first = 0;
  int err = 0;
  for (size_t t = 0; t < ntasks; t++) {
    starpu_data_handle_t cout = starpu_data_get_sub_data(hout, 1, (unsigned)t);
    args[t] = (task_arg_t){.w = w, .first = first};
    first += starpu_vector_get_nx(cout);
    struct starpu_task *task = starpu_task_create();
    task->cl = &codelet;
    int b = 0;
    if (w->k.nin) task->handles[b++] = starpu_data_get_sub_data(hin, 1, (unsigned)t);
    task->handles[b] = cout;
    task->cl_arg = &args[t];
    task->cl_arg_size = sizeof args[t];
    int rc = starpu_task_submit(task);
    if (rc) {
      fprintf(stderr, "%s: starpu_task_submit: %s\n", prog, rc == -ENODEV ? "no worker can run the task" : strerror(-rc));
      task->destroy = 0;
      starpu_task_destroy(task);
      err = 1;
      break;
    }
  }
  starpu_task_wait_for_all();
  starpu_data_unpartition(hout, STARPU_MAIN_RAM);
  starpu_data_unregister(hout);
  if (w->k.nin) {
    starpu_data_unpartition(hin, STARPU_MAIN_RAM);
    starpu_data_unregister(hin);
  }
  double t = now() - t0;
  free(args);
  if (!err && first != w->n) fail("the %zu blocks hold %zu items, not %zu", ntasks, first, w->n);
  return err ? -1 : t;
}

/* Checks a sample of about 2000 items (all of at most 4096) against the CPU
 * function; returns the number of wrong items. */
static size_t verify(const work_t *w, size_t *checked_p) {
  size_t step = w->n <= 4096 ? 1 : w->n / 2000, bad = 0, checked = 0;
  size_t osz = w->k.out_size[0];
  unsigned char *ref = malloc(osz);
  if (!ref) fail("out of memory for the reference");
  for (size_t i = 0; i < w->n; i += step) {
    const void *in[1] = {w->k.nin ? (const char *)w->in + i * w->k.in_size[0] : NULL};
    void *out[1] = {ref};
    mgpu_chunk_t c = {.in = in, .out = out, .arg = &w->arg, .first = i, .count = 1};
    if (w->k.cpu(&c) != 0) fail("the reference CPU function failed on item %zu", i);
    if (memcmp(ref, (const char *)w->out + i * osz, osz) != 0) {
      if (bad == 0) fprintf(stderr, "%s: %s: item %zu is wrong\n", prog, w->name, i);
      bad++;
    }
    checked++;
  }
  free(ref);
  *checked_p = checked;
  return bad;
}

/* ------------------------------------------------------------------ sweeps */

typedef struct {
  const char *sched;
  size_t tasks;
  int runs;
  double wall_s, items_per_s;
  double gpu_item_share; /* of the last timed batch */
  size_t checked, bad;
  const char *skipped;
  int calib_batches;     /* dmda: untimed batches run to calibrate the model (-1: no model) */
  bool calibrated;       /* dmda: the model was calibrated before the timed batches */
} point_t;

static int ncpu_workers, ncuda_workers;

static int start_starpu(const char *sched, peer_mode_t mode, bool with_model, const char *symbol) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.sched_policy_name = sched;
  conf.nopencl = 0;
  conf.nmic = 0;
  if (mode == MODE_GPU) conf.ncpus = 0;
  if (mode == MODE_CPU) conf.ncuda = 0;
  codelet.model = with_model ? &model : NULL;
  model.symbol = symbol;
  int rc = starpu_init(&conf);
  if (rc == -ENODEV) return -1;
  if (rc) fail("starpu_init (scheduler %s): %s", sched, strerror(-rc));
  ncpu_workers = (int)starpu_cpu_worker_get_count();
  ncuda_workers = (int)starpu_cuda_worker_get_count();
  return 0;
}

/* The host arrays, for one starpu_init..starpu_shutdown: starpu_malloc pins
 * them only once StarPU runs with CUDA workers, so --pinned allocates them
 * after starpu_init. */
static void alloc_arrays(work_t *w, bool pinned) {
  if (pinned) {
    if ((w->in_bytes && starpu_malloc(&w->in, w->in_bytes)) || starpu_malloc(&w->out, w->out_bytes))
      fail("starpu_malloc of %zu bytes failed", w->in_bytes + w->out_bytes);
  } else {
    w->in = w->in_bytes ? malloc(w->in_bytes) : NULL;
    w->out = malloc(w->out_bytes);
    if ((w->in_bytes && !w->in) || !w->out) fail("out of memory for %zu bytes", w->in_bytes + w->out_bytes);
  }
  if (w->in_bytes) memcpy(w->in, w->in_master, w->in_bytes);
  memset(w->out, 0, w->out_bytes);
}

static void free_arrays(work_t *w, bool pinned) {
  if (pinned) {
    if (w->in) starpu_free_flags(w->in, w->in_bytes, STARPU_MALLOC_PINNED);
    starpu_free_flags(w->out, w->out_bytes, STARPU_MALLOC_PINNED);
  } else {
    free(w->in);
    free(w->out);
  }
  w->in = w->out = NULL;
}

/* Whether the codelet's history-based model (dmda's) is calibrated for the
 * tasks of a batch of ntasks tasks on every worker that can run them. StarPU
 * keeps one history entry per task footprint (here the block's size) and
 * worker kind, and counts an entry calibrated from STARPU_CALIBRATE_MINIMUM
 * measurements on (10 by default); until then starpu_task_expected_length
 * is NaN, and dmda places such tasks to measure them rather than by the model.
 * starpu_vector_filter_block makes blocks of two sizes at most, the first
 * and the last block's. */
static bool model_calibrated(work_t *w, size_t ntasks) {
  starpu_data_handle_t hin = NULL, hout;
  struct starpu_data_filter f = {.filter_func = starpu_vector_filter_block, .nchildren = (unsigned)ntasks};
  if (w->k.nin) {
    starpu_vector_data_register(&hin, STARPU_MAIN_RAM, (uintptr_t)w->in, w->n, w->k.in_size[0]);
    starpu_data_partition(hin, &f);
  }
  starpu_vector_data_register(&hout, STARPU_MAIN_RAM, (uintptr_t)w->out, w->n, w->k.out_size[0]);
  starpu_data_partition(hout, &f);
  bool ok = true;
  unsigned blocks[2] = {0, (unsigned)ntasks - 1};
  for (int i = 0; i < (ntasks > 1 ? 2 : 1) && ok; i++) {
    struct starpu_task *task = starpu_task_create();
    task->cl = &codelet;
    task->destroy = 0;
    int b = 0;
    if (w->k.nin) task->handles[b++] = starpu_data_get_sub_data(hin, 1, blocks[i]);
    task->handles[b] = starpu_data_get_sub_data(hout, 1, blocks[i]);
    for (unsigned wid = 0; wid < starpu_worker_get_count() && ok; wid++) {
      if (!starpu_worker_can_execute_task(wid, task, 0)) continue;
      /* STARPU_NMAX_SCHED_CTXS: the worker's own kind, whatever its context. */
      struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype((int)wid, STARPU_NMAX_SCHED_CTXS);
      if (isnan(starpu_task_expected_length(task, arch, 0))) ok = false;
    }
    starpu_task_destroy(task);
  }
  starpu_data_unpartition(hout, STARPU_MAIN_RAM);
  starpu_data_unregister(hout);
  if (w->k.nin) {
    starpu_data_unpartition(hin, STARPU_MAIN_RAM);
    starpu_data_unregister(hin);
  }
  return ok;
}

/* One scheduler: every task count of the sweep, fewest items per task first,
 * until a point is slow_factor times slower than the best so far. */
static int sweep(work_t *w, const opts_t *o, const char *sched, point_t *pts, int *npts, bool *any_bad) {
  /* The schedulers that place tasks by a performance model get one; the
   * others run without, so that timing each task costs them nothing. */
  bool dmda_like = strncmp(sched, "dm", 2) == 0 || !strcmp(sched, "pheft");
  char symbol[96];
  snprintf(symbol, sizeof symbol, "mgpu_peer_%s_%llu_%lld", w->k.name, w->intensity, w->size);
  if (start_starpu(sched, o->mode, dmda_like, symbol) != 0) return -1;
  if (o->mode != MODE_CPU && ncuda_workers == 0) {
    starpu_shutdown();
    return -1;
  }
  alloc_arrays(w, o->pinned);
  atomic_store(&cpu_kernel_ns, 0), atomic_store(&cpu_kernel_items, 0);
  /* Largest task count first: the most tasks, the smallest each. */
  long long order[MAX_LIST];
  int n = o->ntasks;
  memcpy(order, o->tasks, sizeof order);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (order[j] > order[i]) {
        long long t = order[i];
        order[i] = order[j], order[j] = t;
      }
  double best = 0;
  bool stop = false;
  for (int i = 0; i < n; i++) {
    point_t *p = &pts[(*npts)++];
    *p = (point_t){.sched = sched, .tasks = (size_t)order[i], .calib_batches = dmda_like ? 0 : -1};
    if ((size_t)order[i] > w->n) {
      p->skipped = "more tasks than items";
      continue;
    }
    if (stop) {
      p->skipped = "a smaller task size was already slower than the best";
      continue;
    }
    /* Where CPU workers take tasks, one task on one of them lasts this long;
     * past slow_factor times the best batch, the batch cannot be competitive
     * (lws and eager give CPU workers tasks, and dmda's calibration does too). */
    unsigned long long cn = atomic_load(&cpu_kernel_ns), ci = atomic_load(&cpu_kernel_items);
    double cpu_task_s = ci ? 1e-9 * (double)cn / (double)ci * (double)(w->n / p->tasks) : 0;
    if (ncpu_workers > 0 && best > 0 && cpu_task_s > o->slow_factor * best) {
      p->skipped = "one task on one CPU worker would take longer than the slow factor times the best batch";
      stop = true;
      continue;
    }
    double t = 0;
    bool slow = false;
    for (int k = 0; k < o->warmup && !slow; k++) {
      if ((t = run_batch(w, p->tasks)) < 0) fail("scheduler %s, %zu tasks: a warm-up batch failed", sched, p->tasks);
      slow = best > 0 && t > o->slow_factor * best;
    }
    /* dmda's model is kept per task size and worker kind: until it is
     * calibrated, dmda places tasks to measure them, not to finish early.
     * More untimed batches calibrate it, within the bounds. */
    if (dmda_like && !slow) {
      double t_cal = now();
      while (!(p->calibrated = model_calibrated(w, p->tasks)) && p->calib_batches < o->calibrate_max &&
             now() - t_cal < o->calibrate_s && !slow) {
        if ((t = run_batch(w, p->tasks)) < 0)
          fail("scheduler %s, %zu tasks: a calibration batch failed", sched, p->tasks);
        p->calib_batches++;
        slow = best > 0 && t > o->slow_factor * best;
      }
      if (!p->calibrated && !o->json)
        fprintf(stderr, "  %-6s %7zu tasks: the model is not calibrated after %d batches (%.1f s)\n", sched, p->tasks,
                p->calib_batches, now() - t_cal);
    }
    if (slow) {
      p->skipped = "a warm-up batch took longer than the slow factor times the best batch";
      stop = true;
      continue;
    }
    double times[1000];
    for (int k = 0; k < o->repeat; k++) {
      /* Stale results of an earlier batch cannot pass the check. */
      memset(w->out, 0xA5, w->out_bytes);
      atomic_store(&items_on[0], 0), atomic_store(&items_on[1], 0);
      times[k] = run_batch(w, p->tasks);
      if (times[k] < 0) fail("scheduler %s, %zu tasks: a batch failed", sched, p->tasks);
      p->runs++;
      /* A point far slower than the best needs no more runs to be ruled out. */
      if (best > 0 && times[k] > o->slow_factor * best) break;
    }
    if (atomic_load(&kernel_failures))
      fail("scheduler %s, %zu tasks: %d kernel calls failed (first return code %d)%s", sched, p->tasks,
           atomic_load(&kernel_failures), atomic_load(&first_failure_rc),
           ncuda_workers ? ": is libmgpurt built with CUDA? (a build without it has no GPU functions)" : "");
    qsort(times, (size_t)p->runs, sizeof *times, cmp_double);
    p->wall_s = times[p->runs / 2];
    p->items_per_s = (double)w->n / p->wall_s;
    unsigned long long ic = atomic_load(&items_on[0]), ig = atomic_load(&items_on[1]);
    p->gpu_item_share = ic + ig ? (double)ig / (double)(ic + ig) : 0;
    p->bad = verify(w, &p->checked);
    if (p->bad) *any_bad = true;
    if (best == 0 || p->wall_s < best) best = p->wall_s;
    if (p->wall_s > o->slow_factor * best) stop = true;
    if (!o->json)
      fprintf(stderr, "  %-6s %-4s %7zu tasks (%zu items each): %.4f s, %.4g items/s, GPU share %.2f, %s%s\n", sched,
              mode_names[o->mode], p->tasks, w->n / p->tasks, p->wall_s, p->items_per_s, p->gpu_item_share,
              p->bad ? "WRONG" : "verified",
              p->calib_batches < 0 ? "" : p->calibrated ? ", model calibrated" : ", model NOT calibrated");
  }
  free_arrays(w, o->pinned);
  starpu_shutdown();
  return 0;
}

/* ---------------------------------------------------------------- overhead */

static void empty_func(void *buffers[], void *cl_arg) {
  (void)buffers, (void)cl_arg;
}

static atomic_ullong busy_ns;

/* About `ns` nanoseconds of waiting per item, as bench/mgpu-overhead's spin. */
static void spin_func(void *buffers[], void *cl_arg) {
  (void)buffers;
  const double *a = cl_arg; /* {ns per item, items} */
  double t_start = now();
  volatile double x = 1;
  for (size_t i = 0; i < (size_t)a[1]; i++) {
    double t0 = now();
    while ((now() - t0) * 1e9 < a[0]) x = x * 1.0000001;
  }
  atomic_fetch_add(&busy_ns, (unsigned long long)((now() - t_start) * 1e9));
}

typedef struct {
  const char *sched;
  double rt_median_us, rt_p90_us;    /* synchronous one-task round trip */
  double empty_us;                   /* wall time per empty task, many in flight */
  double chunk_overhead_us;          /* (wall * workers - busy) / tasks, tasks of 250 x 2 us */
  size_t spin_tasks;
} overhead_t;

static void measure_overhead(const char *sched, overhead_t *r) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.sched_policy_name = sched;
  conf.ncpus = 1;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.nmic = 0;
  codelet.model = NULL;
  int rc = starpu_init(&conf);
  if (rc) fail("starpu_init (scheduler %s, one CPU worker): %s", sched, strerror(-rc));
  static struct starpu_codelet empty = {.cpu_funcs = {empty_func}, .nbuffers = 0, .name = "empty"};
  static struct starpu_codelet spin = {.cpu_funcs = {spin_func}, .nbuffers = 0, .name = "spin"};
  enum { N = 20000, WARM = 1000, NEMPTY = 100000 };
  static double lat[N];
  for (int i = 0; i < WARM + N; i++) {
    struct starpu_task *t = starpu_task_create();
    t->cl = &empty;
    t->synchronous = 1;
    double t0 = now();
    if ((rc = starpu_task_submit(t)) != 0) fail("starpu_task_submit: %s", strerror(-rc));
    if (i >= WARM) lat[i - WARM] = now() - t0;
  }
  qsort(lat, N, sizeof *lat, cmp_double);
  r->sched = sched;
  r->rt_median_us = 1e6 * lat[N / 2];
  r->rt_p90_us = 1e6 * lat[N * 9 / 10];

  double t0 = now();
  for (int i = 0; i < NEMPTY; i++) {
    struct starpu_task *t = starpu_task_create();
    t->cl = &empty;
    if ((rc = starpu_task_submit(t)) != 0) fail("starpu_task_submit: %s", strerror(-rc));
  }
  starpu_task_wait_for_all();
  r->empty_us = 1e6 * (now() - t0) / NEMPTY;

  /* bench/mgpu-overhead's batch: 400000 items of 2 us, here as tasks of 250
   * items (0.5 ms, the chunk size libmgpurt's CPU workers aim at). */
  static const double arg[2] = {2000, 250};
  size_t ntasks = 400000 / 250;
  /* A small difference of two large times: the median of three passes, after
   * one that warms up. */
  double per[3];
  for (int pass = 0; pass < 4; pass++) {
    atomic_store(&busy_ns, 0);
    t0 = now();
    for (size_t i = 0; i < ntasks; i++) {
      struct starpu_task *t = starpu_task_create();
      t->cl = &spin;
      t->cl_arg = (void *)arg;
      t->cl_arg_size = sizeof arg;
      if ((rc = starpu_task_submit(t)) != 0) fail("starpu_task_submit: %s", strerror(-rc));
    }
    starpu_task_wait_for_all();
    double wall = now() - t0;
    if (pass > 0) per[pass - 1] = 1e6 * (wall - 1e-9 * (double)atomic_load(&busy_ns)) / (double)ntasks;
  }
  qsort(per, 3, sizeof *per, cmp_double);
  r->chunk_overhead_us = per[1];
  r->spin_tasks = ntasks;
  starpu_shutdown();
}

/* --------------------------------------------------------------------- main */

static void print_json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') putchar('\\');
    if ((unsigned char)*s >= 0x20) putchar(*s);
  }
  putchar('"');
}

int main(int argc, char **argv) {
  opts_t o;
  parse_args(argc, argv, &o);
  /* StarPU's greeting and warnings go to stderr; a JSON reader wants stdout clean. */
  if (o.json) setenv("STARPU_SILENT", "1", 0);

  if (o.overhead) {
    overhead_t r[MAX_SCHEDS];
    for (int i = 0; i < o.nscheds; i++) measure_overhead(o.scheds[i], &r[i]);
    if (o.json) {
      printf("{\n  \"starpu_version\": \"%d.%d.%d\",\n  \"cpu_workers\": 1,\n  \"results\": [\n", STARPU_MAJOR_VERSION,
             STARPU_MINOR_VERSION, STARPU_RELEASE_VERSION);
      for (int i = 0; i < o.nscheds; i++)
        printf("    {\"sched\": \"%s\", \"round_trip_median_us\": %.3f, \"round_trip_p90_us\": %.3f, "
               "\"empty_task_us\": %.3f, \"per_task_overhead_us\": %.3f, \"spin_tasks\": %zu}%s\n",
               r[i].sched, r[i].rt_median_us, r[i].rt_p90_us, r[i].empty_us, r[i].chunk_overhead_us, r[i].spin_tasks,
               i == o.nscheds - 1 ? "" : ",");
      printf("  ]\n}\n");
    } else {
      printf("StarPU %d.%d.%d on one CPU worker\n", STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION, STARPU_RELEASE_VERSION);
      printf("%-8s %22s %22s %18s %26s\n", "sched", "round trip median us", "round trip p90 us", "empty task us",
             "overhead per 0.5 ms task us");
      for (int i = 0; i < o.nscheds; i++)
        printf("%-8s %22.2f %22.2f %18.2f %26.2f\n", r[i].sched, r[i].rt_median_us, r[i].rt_p90_us, r[i].empty_us,
               r[i].chunk_overhead_us);
    }
    return 0;
  }

  work_t w;
  setup(&w, &o);
  codelet.nbuffers = w.k.nin + w.k.nout;
  int b = 0;
  if (w.k.nin) codelet.modes[b++] = STARPU_R;
  codelet.modes[b] = STARPU_W;
  codelet.name = w.k.name;
#ifdef STARPU_USE_CUDA
  if (!w.k.gpu) codelet.cuda_funcs[0] = NULL;
#endif

  point_t pts[MAX_SCHEDS * MAX_LIST];
  int npts = 0;
  bool any_bad = false;
  const char *skipped = NULL;
  for (int s = 0; s < o.nscheds; s++) {
    if (!o.json) fprintf(stderr, "%s: %s, %zu items, scheduler %s, mode %s\n", prog, w.name, w.n, o.scheds[s],
                         mode_names[o.mode]);
    if (sweep(&w, &o, o.scheds[s], pts, &npts, &any_bad) != 0) {
      skipped = o.mode == MODE_CPU ? "StarPU found no CPU worker" : "StarPU found no CUDA worker";
      break;
    }
  }
  const point_t *best = NULL;
  for (int i = 0; i < npts; i++)
    if (!pts[i].skipped && (!best || pts[i].items_per_s > best->items_per_s)) best = &pts[i];

  if (o.json) {
    printf("{\n  \"starpu_version\": \"%d.%d.%d\",\n  \"workload\": ", STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION,
           STARPU_RELEASE_VERSION);
    print_json_string(w.name);
    printf(",\n  \"items\": %zu,\n  \"intensity\": %llu,\n  \"size\": %lld,\n  \"mode\": \"%s\",\n  \"pinned\": %s,\n"
           "  \"repeat\": %d,\n  \"cpu_workers\": %d,\n  \"cuda_workers\": %d,\n",
           w.n, w.intensity, w.size, mode_names[o.mode], o.pinned ? "true" : "false", o.repeat, skipped ? 0 : ncpu_workers,
           skipped ? 0 : ncuda_workers);
    if (skipped) printf("  \"skipped\": \"%s\",\n", skipped);
    printf("  \"points\": [\n");
    for (int i = 0; i < npts; i++) {
      const point_t *p = &pts[i];
      printf("    {\"sched\": \"%s\", \"tasks\": %zu", p->sched, p->tasks);
      if (p->calib_batches >= 0)
        printf(", \"calibration_batches\": %d, \"calibrated\": %s", p->calib_batches, p->calibrated ? "true" : "false");
      if (p->skipped) printf(", \"skipped\": \"%s\"}", p->skipped);
      else
        printf(", \"runs\": %d, \"wall_s\": %.6f, \"items_per_s\": %.3f, \"gpu_item_share\": %.4f, \"checked\": %zu, "
               "\"wrong\": %zu}", p->runs, p->wall_s, p->items_per_s, p->gpu_item_share, p->checked, p->bad);
      printf("%s\n", i == npts - 1 ? "" : ",");
    }
    printf("  ],\n  \"best\": ");
    if (best) {
      printf("{\"sched\": \"%s\", \"tasks\": %zu, \"wall_s\": %.6f, \"items_per_s\": %.3f", best->sched, best->tasks,
             best->wall_s, best->items_per_s);
      if (best->calib_batches >= 0) printf(", \"calibrated\": %s", best->calibrated ? "true" : "false");
      printf("}");
    } else {
      printf("null");
    }
    printf(",\n  \"verified\": %s\n}\n", any_bad ? "false" : "true");
  } else {
    if (skipped) printf("%s: %s mode not run: %s\n", w.name, mode_names[o.mode], skipped);
    if (best)
      printf("%s (%zu items), mode %s, %d CPU + %d CUDA workers: StarPU's best is %s with %zu tasks: %.4g items/s "
             "(%.4f s); verification %s\n",
             w.name, w.n, mode_names[o.mode], ncpu_workers, ncuda_workers, best->sched, best->tasks, best->items_per_s,
             best->wall_s, any_bad ? "FAILED" : "ok");
  }
  free(w.in_master);
  return any_bad ? EXIT_FAILURE : 0;
}
