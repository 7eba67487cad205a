/*
 * mgpu-run: the bundled driver of libmgpurt. Runs a built-in workload on every
 * CPU core and GPU, checks the answers, compares scheduling modes, and prints
 * the effective configuration (--info).
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <pthread.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "decimal.h"
#include "mgpurt.h"
#include "mgpurt_kernels.h"
#include "hostcpu.h"
#include "multi.h"
#include "plot.h"

#ifdef MGPU_HAVE_PNG
#include <png.h>
#endif

#define EXIT_USAGE 2
#define MAX_ROUNDS 100 /* --rounds */
#define EXIT_FAIL 1

typedef struct {
  const char *workload;
  long long items;    /* -1: workload default */
  int size;           /* ntt/pipeline log2 length; sha256 message bytes; mandelbrot width */
  long long intensity;
  mgpu_sched_t mode;
  bool compare, verify, json, quiet, info, list, pinned;
  int repeat;
  int rounds;          /* --compare: the four modes run this many times in turn */
  unsigned long long seed;
  const char *output;  /* mandelbrot image */
  const char *plugin;  /* shared library adding workloads */
  const char *trace;   /* MGPU_TRACE file of the (steal) run */
  const char *plot;    /* SVG of the (steal) run */
  bool overlay;
  bool dtype_given;
  int ngpus_list;          /* --gpus: GPU counts to run in turn */
  int gpus_list[MGPU_MAX_DEVICES];
  multi_opts_t multi;      /* options of the split-array and collective workloads */
  mgpu_config_t cfg;
} opts_t;

static const char *prog = "mgpu-run";

static void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '%s --help'.\n", prog);
  va_end(ap);
  exit(EXIT_USAGE);
}

static void help(void) {
  printf(
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
      "\n"
      "Workload options:\n"
      "  -n, --items N        items in the batch (defaults: ntt and pipeline\n"
      "                       2^26 / 2^size polynomials (512 MiB), sha256 8388608,\n"
      "                       mandelbrot 4096 rows, saxpy 134217728, mulmod\n"
      "                       16777216; multi-GPU workloads: above), 1..2^40\n"
      "      --size S         ntt/pipeline: log2 length 10..16 (default 12);\n"
      "                       sha256: message bytes (default 64); mandelbrot: width\n"
      "                       (default 4096); matvec: columns (default 100000)\n"
      "      --intensity K    mulmod: multiplications per item (default 1000);\n"
      "                       mandelbrot: iteration limit per pixel (default 10000);\n"
      "                       a plugin's workload may read it, and -n and --size;\n"
      "                       1..10000000\n"
      "      --mode MODE      steal (default), static, cpu or gpu\n"
      "      --compare        run cpu, gpu, static and steal on the same inputs and\n"
      "                       compare them\n"
      "      --rounds N       with --compare: run the four modes N times in turn,\n"
      "                       1..100 (default 1), a runtime each time; each mode's\n"
      "                       figure is the median of all its timed runs, and E is\n"
      "                       also given round by round; --trace and --plot show\n"
      "                       the last round's steal run\n"
      "      --gpus LIST      run with the first N GPUs for each N of LIST in turn\n"
      "                       (distinct counts, e.g. 1,2,4), a runtime each: batch\n"
      "                       workloads add a scaling table (mode gpu unless --mode\n"
      "                       is given), multi-GPU workloads print a report per\n"
      "                       count; not with --compare or --devices\n"
      "      --split LIST     matvec, reduce: shares of the arrays, one per GPU,\n"
      "                       then optionally one for the host, e.g. 0.6,0.4 or\n"
      "                       1,1,0.5 (default: MGPU_TENSOR_SPLIT, else the\n"
      "                       workload's)\n"
      "      --dtype TYPE     reduce: element type, f32 (default) or f64\n"
      "      --min-bytes N    allreduce: smallest size in bytes (default 8)\n"
      "      --max-bytes N    allreduce: largest size in bytes (default 1G); sizes\n"
      "                       are multiples of 4 in 4..16G, with K, M, G suffixes\n"
      "      --repeat R       timed runs per mode, 1..1000 (default 3), after one\n"
      "                       warm-up run (nine in steal and static mode under\n"
      "                       the auto reserve, the default with a GPU); the\n"
      "                       median is reported, with the share of the busy\n"
      "                       CPU time the host took (steal time) where it\n"
      "                       reached 0.5%%\n"
      "      --seed S         seed of the random inputs (default 1)\n"
      "      --no-verify      do not check results against the CPU reference (else: the\n"
      "                       last run's, every item up to 4096, else one in n/2000;\n"
      "                       a failure names the first wrong item and its worker)\n"
      "      --pinned         put the arrays in pinned host memory (mgpu_host_alloc)\n"
      "  -o, --output FILE    mandelbrot: write the image (PNG when built with\n"
      "                       libpng, else PPM)\n"
      "      --plot FILE.svg  draw the run (the steal run with --compare): a\n"
      "                       timeline with a lane per worker and GPU stream, and\n"
      "                       items and busy time per worker\n"
      "      --trace FILE     write a Chrome/Perfetto trace of the run (of the steal\n"
      "                       run with --compare) to FILE, as MGPU_TRACE does\n"
      "      --plugin FILE    load workloads from a shared library (entry point\n"
      "                       mgpu_plugin_init, see mgpurt.h); name one as\n"
      "                       WORKLOAD, or the only one runs\n"
      "      --overlay        mandelbrot: tint each row by the worker that computed it\n"
      "\n"
      "Runtime options (each overrides its environment variable):\n"
      "  -t, --threads N      CPU workers (MGPU_NUM_THREADS), 0..4096\n"
      "      --reserve N|auto CPU workers kept out of batches that GPUs also run\n"
      "                       (MGPU_RESERVE_THREADS), 0..4096, fewer than the CPU\n"
      "                       workers; auto: 0, a quarter, half or (where they\n"
      "                       add under a fifth) all of them, whichever each\n"
      "                       kernel's timed batches find faster\n"
      "      --num-gpus N     GPUs to use (MGPU_NUM_GPUS), 0..64\n"
      "      --devices LIST   GPU indices, e.g. 0,2 (MGPU_DEVICES)\n"
      "      --ratio R        device-to-core ratio (MGPU_DEVICE_TO_CORE_RATIO), > 0\n"
      "      --max-batch N    items per GPU launch (MGPU_MAX_BATCH_SIZE)\n"
      "      --streams N      chunks in flight per GPU (MGPU_STREAMS_PER_GPU), 1..32\n"
      "\n"
      "Output:\n"
      "      --json           print the report as JSON on stdout\n"
      "  -q, --quiet          print only the result line (or the JSON); no progress\n"
      "                       bar (shown on a terminal for batches that run over a\n"
      "                       second)\n"
      "      --info           print every effective setting with its source, the\n"
      "                       usable cores and the GPUs, then exit\n"
      "      --list           list the workloads and built-in kernels, then exit\n"
      "  -h, --help           print this help and exit\n"
      "  -V, --version        print the version and exit\n"
      "\n"
      "Exit status: 0 success, 1 runtime error or failed verification, 2 usage error\n"
      "(bad option, value or environment variable, or GPUs asked for that the runtime\n"
      "does not see: nothing ran), 130 interrupted (SIGINT: the first stops the batch in\n"
      "flight at its next chunk and reports the runs completed; a second quits at once).\n");
}

static long long parse_ll_opt(const char *opt, const char *v, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi || (*v == '-' && lo >= 0))
    usage_error("%s '%s' is invalid: expected an integer in %lld..%lld", opt, v, lo, hi);
  return x;
}

static double parse_double_opt(const char *opt, const char *v, double lo, double hi) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!mgpu_is_decimal(v) || errno || end == v || *end || !isfinite(x) || x <= lo || x > hi)
    usage_error("%s '%s' is invalid: expected a number greater than %g and at most %g", opt, v, lo, hi);
  return x;
}

static mgpu_sched_t parse_mode(const char *v) {
  if (!strcasecmp(v, "steal")) return MGPU_SCHED_STEAL;
  if (!strcasecmp(v, "static")) return MGPU_SCHED_STATIC;
  if (!strcasecmp(v, "cpu")) return MGPU_SCHED_CPU;
  if (!strcasecmp(v, "gpu")) return MGPU_SCHED_GPU;
  usage_error("--mode '%s' is invalid: expected steal, static, cpu or gpu", v);
  return MGPU_SCHED_UNSET;
}

static const char *const workloads[] = {"ntt",    "sha256", "mandelbrot", "saxpy",          "mulmod",
                                        "pipeline", "matvec", "reduce",     "allreduce", "saxpy-resident", NULL};

/* A comma-separated list of numbers (shares) for --split. */
static int parse_split(const char *v, double *out) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", v);
  int n = 0;
  double sum = 0;
  char *save = NULL;
  if (!*v || *v == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
    usage_error("--split '%s' is invalid: expected shares such as 0.6,0.4 (one per GPU, then optionally the host)", v);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == MGPU_MAX_DEVICES + 1) usage_error("--split: more than %d entries", MGPU_MAX_DEVICES + 1);
    char *end;
    errno = 0;
    double x = strtod(t, &end);
    if (!mgpu_is_decimal(t) || errno || end == t || *end || !isfinite(x) || x < 0 || signbit(x) || x > 1e12)
      usage_error("--split entry '%s' is invalid: expected a number in 0..1e12", t);
    out[n++] = x;
    sum += x;
  }
  if (!(sum > 0)) usage_error("--split '%s' is invalid: every share is 0", v);
  return n;
}

static size_t parse_bytes_opt(const char *opt, const char *v) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  int shift = 0;
  if (*end == 'K') shift = 10, end++;
  else if (*end == 'M') shift = 20, end++;
  else if (*end == 'G') shift = 30, end++;
  if (errno || end == v || *end || *v == '-' || x > (1ULL << 34) >> shift || (x << shift) < 4 || (x << shift) % 4)
    usage_error("%s '%s' is invalid: expected a multiple of 4 bytes in 4..16G (K, M, G suffixes allowed)", opt, v);
  return (size_t)(x << shift);
}

/* A comma-separated list of distinct integers in lo..hi (--devices, --gpus). */
static int parse_list_opt(const char *opt, const char *v, long long lo, long long hi, const char *example,
                          int *out) {
  char buf[512], entry[64];
  snprintf(buf, sizeof buf, "%s", v);
  snprintf(entry, sizeof entry, "%s entry", opt);
  int n = 0;
  char *save = NULL;
  if (!*v || *v == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
    usage_error("%s '%s' is invalid: expected %s", opt, v, example);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == MGPU_MAX_DEVICES) usage_error("%s: more than %d entries", opt, MGPU_MAX_DEVICES);
    int k = (int)parse_ll_opt(entry, t, lo, hi);
    for (int i = 0; i < n; i++)
      if (out[i] == k) usage_error("%s '%s': %d is listed twice", opt, v, k);
    out[n++] = k;
  }
  return n;
}

static void check_writable(const char *opt, const char *path);

static void parse_args(int argc, char **argv, opts_t *o) {
  enum { O_SIZE = 256, O_INT, O_MODE, O_COMPARE, O_REPEAT, O_SEED, O_NOVERIFY, O_JSON, O_INFO, O_LIST,
         O_NUMGPUS, O_DEVICES, O_RATIO, O_MAXB, O_STREAMS, O_RESERVE, O_PINNED, O_OVERLAY, O_PLUGIN, O_TRACE, O_PLOT,
         O_GPUS, O_SPLIT, O_DTYPE, O_MINB, O_MAXBYTES, O_ROUNDS };
  static const struct option longopts[] = {
      {"items", required_argument, 0, 'n'},   {"size", required_argument, 0, O_SIZE},
      {"intensity", required_argument, 0, O_INT}, {"mode", required_argument, 0, O_MODE},
      {"compare", no_argument, 0, O_COMPARE}, {"repeat", required_argument, 0, O_REPEAT},
      {"rounds", required_argument, 0, O_ROUNDS},
      {"seed", required_argument, 0, O_SEED}, {"no-verify", no_argument, 0, O_NOVERIFY},
      {"json", no_argument, 0, O_JSON},       {"quiet", no_argument, 0, 'q'},
      {"info", no_argument, 0, O_INFO},       {"list", no_argument, 0, O_LIST},
      {"help", no_argument, 0, 'h'},          {"version", no_argument, 0, 'V'},
      {"threads", required_argument, 0, 't'}, {"num-gpus", required_argument, 0, O_NUMGPUS},
      {"devices", required_argument, 0, O_DEVICES}, {"ratio", required_argument, 0, O_RATIO},
      {"max-batch", required_argument, 0, O_MAXB}, {"streams", required_argument, 0, O_STREAMS},
      {"reserve", required_argument, 0, O_RESERVE},
      {"pinned", no_argument, 0, O_PINNED},   {"output", required_argument, 0, 'o'},
      {"overlay", no_argument, 0, O_OVERLAY}, {"plugin", required_argument, 0, O_PLUGIN},
      {"trace", required_argument, 0, O_TRACE},
      {"plot", required_argument, 0, O_PLOT},
      {"gpus", required_argument, 0, O_GPUS}, {"split", required_argument, 0, O_SPLIT},
      {"dtype", required_argument, 0, O_DTYPE}, {"min-bytes", required_argument, 0, O_MINB},
      {"max-bytes", required_argument, 0, O_MAXBYTES},
      {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->items = -1;
  o->size = -1;
  o->verify = true;
  o->repeat = 3;
  o->rounds = 1;
  o->seed = 1;
  mgpu_config_init(&o->cfg);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":n:t:o:qhV", longopts, NULL)) != -1) {
    switch (c) {
    case 'n': o->items = parse_ll_opt("--items", optarg, 1, 1LL << 40); break;
    case O_SIZE: o->size = (int)parse_ll_opt("--size", optarg, 0, 1 << 20); break;
    case O_INT: o->intensity = parse_ll_opt("--intensity", optarg, 1, 10000000); break;
    case O_MODE: o->mode = parse_mode(optarg); break;
    case O_COMPARE: o->compare = true; break;
    case O_REPEAT: o->repeat = (int)parse_ll_opt("--repeat", optarg, 1, 1000); break;
    case O_ROUNDS: o->rounds = (int)parse_ll_opt("--rounds", optarg, 1, MAX_ROUNDS); break;
    case O_SEED: o->seed = (unsigned long long)parse_ll_opt("--seed", optarg, 0, LLONG_MAX); break;
    case O_NOVERIFY: o->verify = false; break;
    case O_JSON: o->json = true; break;
    case 'q': o->quiet = true; break;
    case O_INFO: o->info = true; break;
    case O_LIST: o->list = true; break;
    case 'h': help(); exit(0);
    case 'V': printf("mgpu-run (libmgpurt) %s\n", mgpu_version()); exit(0);
    case 't': o->cfg.num_threads = (int)parse_ll_opt("--threads", optarg, 0, 4096); break;
    case O_NUMGPUS: o->cfg.num_gpus = (int)parse_ll_opt("--num-gpus", optarg, 0, MGPU_MAX_DEVICES); break;
    case O_DEVICES:
      o->cfg.ndevices = parse_list_opt("--devices", optarg, 0, MGPU_MAX_DEVICES - 1, "a list such as 0,2",
                                       o->cfg.devices);
      break;
    case O_RATIO: o->cfg.device_to_core_ratio = parse_double_opt("--ratio", optarg, 0, 1e7); break;
    case O_MAXB: o->cfg.max_batch_size = parse_ll_opt("--max-batch", optarg, 1, 1LL << 40); break;
    case O_STREAMS: o->cfg.streams_per_gpu = (int)parse_ll_opt("--streams", optarg, 1, 32); break;
    case O_RESERVE:
      o->cfg.reserve_threads = strcasecmp(optarg, "auto") == 0 ? MGPU_RESERVE_AUTO
                                                            : (int)parse_ll_opt("--reserve", optarg, 0, 4096);
      break;
    case O_PINNED: o->pinned = true; break;
    case 'o': o->output = optarg; break;
    case O_OVERLAY: o->overlay = true; break;
    case O_PLUGIN: o->plugin = optarg; break;
    case O_TRACE:
      if (!*optarg) usage_error("--trace needs a file name");
      o->trace = optarg;
      break;
    case O_PLOT:
      if (!*optarg) usage_error("--plot needs a file name");
      /* The plot is SVG only: another extension would hold SVG under a wrong name. */
      if (strlen(optarg) < 5 || strcmp(optarg + strlen(optarg) - 4, ".svg"))
        usage_error("--plot '%s' is invalid: expected a file name ending in .svg (the plot is SVG)", optarg);
      o->plot = optarg;
      break;
    case O_GPUS:
      o->ngpus_list = parse_list_opt("--gpus", optarg, 1, MGPU_MAX_DEVICES, "distinct GPU counts such as 1,2,4",
                                     o->gpus_list);
      break;
    case O_SPLIT: o->multi.nshares = parse_split(optarg, o->multi.shares); break;
    case O_DTYPE:
      if (strcmp(optarg, "f32") && strcmp(optarg, "f64")) usage_error("--dtype '%s' is invalid: expected f32 or f64", optarg);
      o->multi.f64 = !strcmp(optarg, "f64");
      o->dtype_given = true;
      break;
    case O_MINB: o->multi.min_bytes = parse_bytes_opt("--min-bytes", optarg); break;
    case O_MAXBYTES: o->multi.max_bytes = parse_bytes_opt("--max-bytes", optarg); break;
    case ':': usage_error("option '%s' needs a value", argv[optind - 1]); break;
    default: usage_error("unknown option '%s'", argv[optind - 1]); break;
    }
  }
  if (optind < argc) o->workload = argv[optind++];
  if (optind < argc) usage_error("unexpected argument '%s'", argv[optind]);
  if (o->compare && o->mode) usage_error("--compare runs every mode: do not give --mode too");
  if (o->rounds > 1 && !o->compare) usage_error("--rounds is for --compare");
  if (o->compare && o->ngpus_list) usage_error("--gpus and --compare do not go together: run them separately");
  if (o->multi.min_bytes > (o->multi.max_bytes ? o->multi.max_bytes : (size_t)1 << 30))
    usage_error("--min-bytes is larger than --max-bytes (default 1G)");
  if (o->workload && multi_is_workload(o->workload) && (o->plot || o->trace || o->compare || o->output))
    usage_error("--plot, --trace, --compare and --output are for the batch workloads, not %s", o->workload);
  if (o->cfg.ndevices > 0 && o->ngpus_list)
    usage_error("--gpus picks the first N GPUs: do not give --devices too");
  if (!o->info && !o->list) {
    check_writable("--trace", o->trace);
    check_writable("--plot", o->plot);
    check_writable("--output", o->output);
  }
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

/* ------------------------------------------------------------ plugins */

enum { MAX_PLUGIN_WORKLOADS = 64 };
static mgpu_plugin_workload_t plugin_work[MAX_PLUGIN_WORKLOADS];
static int nplugin_work;

static int plugin_add(mgpu_plugin_registry_t *reg, const mgpu_plugin_workload_t *w) {
  (void)reg;
  if (!w || !w->name || !*w->name || !w->kernel.cpu) {
    fprintf(stderr, "%s: the plugin added a workload without a name or a CPU function\n", prog);
    return 1;
  }
  for (int i = 0; workloads[i]; i++)
    if (!strcmp(workloads[i], w->name)) {
      fprintf(stderr, "%s: the plugin's workload '%s' has the name of a built-in one\n", prog, w->name);
      return 1;
    }
  for (int i = 0; i < nplugin_work; i++)
    if (!strcmp(plugin_work[i].name, w->name)) {
      fprintf(stderr, "%s: the plugin added workload '%s' twice\n", prog, w->name);
      return 1;
    }
  if (nplugin_work == MAX_PLUGIN_WORKLOADS) {
    fprintf(stderr, "%s: the plugin added more than %d workloads\n", prog, MAX_PLUGIN_WORKLOADS);
    return 1;
  }
  plugin_work[nplugin_work++] = *w;
  return 0;
}

/* Read the ELF header of file fd into eh; 0 on success. */
static int read_ehdr(int fd, ElfW(Ehdr) *eh) {
  return pread(fd, eh, sizeof *eh, 0) == (ssize_t)sizeof *eh ? 0 : -1;
}

/* Refuse what dlopen cannot take safely: it blocks opening a FIFO, and it maps
 * a truncated library and dies of SIGBUS touching the missing part. So the file
 * must be regular, an ELF shared object of this build's class, byte order and
 * machine, with its headers and loaded segments within its size. */
static void check_plugin_file(const char *path, const char *shown) {
  struct stat sb;
  if (stat(path, &sb) != 0) usage_error("--plugin '%s': %s", shown, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    usage_error("--plugin '%s' is not a regular file (%s): expected a shared library", shown,
                S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO" : "a special file");
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) usage_error("--plugin '%s': %s", shown, strerror(errno));
  ElfW(Ehdr) eh, self;
  const char *why = NULL;
  unsigned long long size = (unsigned long long)sb.st_size;
  if (read_ehdr(fd, &eh) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) why = "it is not an ELF file";
  else if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32))
    why = "its ELF class (32 or 64 bits) is not this program's";
  else if (eh.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
    why = "its byte order is not this program's";
  else if (eh.e_type != ET_DYN) why = "it is not a shared object";
  else {
    int sfd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (sfd >= 0 && read_ehdr(sfd, &self) == 0 && self.e_machine != eh.e_machine)
      why = "it is built for another machine (ELF e_machine) than this program";
    if (sfd >= 0) close(sfd);
  }
  if (!why && (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 ||
               eh.e_phoff + (unsigned long long)eh.e_phnum * eh.e_phentsize > size))
    why = "its program headers lie outside the file (truncated?)";
  if (!why && eh.e_shnum && eh.e_shoff + (unsigned long long)eh.e_shnum * eh.e_shentsize > size)
    why = "its section headers lie outside the file (truncated?)";
  for (int i = 0; !why && i < eh.e_phnum; i++) {
    ElfW(Phdr) ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (unsigned long long)i * sizeof ph)) != (ssize_t)sizeof ph)
      why = "its program headers cannot be read";
    else if (ph.p_type == PT_LOAD && ph.p_offset + (unsigned long long)ph.p_filesz > size)
      why = "a loadable segment lies outside the file (truncated?)";
  }
  close(fd);
  if (why) usage_error("--plugin '%s' is not a loadable shared library: %s", shown, why);
}

/* The command line's sizes, for plugins (MGPU_PLUGIN_PARAMS in mgpurt.h). */
static mgpu_plugin_params_t plugin_params = {-1, -1, -1};
void mgpu_plugin_params(mgpu_plugin_params_t *p);
void mgpu_plugin_params(mgpu_plugin_params_t *p) {
  if (p) *p = plugin_params;
}

/* Load a plugin; bad files are usage errors (exit 2), a failing init is 1. */
static void load_plugin(const char *path) {
  /* dlopen searches the library path for a bare name: "./" keeps it a file. */
  char buf[4096];
  if (!strchr(path, '/')) snprintf(buf, sizeof buf, "./%s", path);
  else snprintf(buf, sizeof buf, "%s", path);
  check_plugin_file(buf, path);
  void *h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
  if (!h) usage_error("--plugin '%s' is not a loadable shared library: %s", path, dlerror());
  mgpu_plugin_init_fn init;
  *(void **)&init = dlsym(h, MGPU_PLUGIN_ENTRY);
  if (!init) usage_error("--plugin '%s' has no entry point %s() (see mgpurt.h, \"mgpu-run plugins\")", path,
                         MGPU_PLUGIN_ENTRY);
  mgpu_plugin_registry_t reg = {.abi = MGPU_PLUGIN_ABI, .add = plugin_add, .loader = NULL};
  int rc = init(&reg);
  if (rc != 0) {
    fprintf(stderr, "%s: plugin '%s': %s() returned %d\n", prog, path, MGPU_PLUGIN_ENTRY, rc);
    exit(EXIT_FAIL);
  }
  if (nplugin_work == 0) usage_error("--plugin '%s' added no workload", path);
}

static const mgpu_plugin_workload_t *find_plugin_workload(const char *name) {
  for (int i = 0; i < nplugin_work; i++)
    if (!strcmp(plugin_work[i].name, name)) return &plugin_work[i];
  return NULL;
}

/* After plugins are loaded: pick and check the workload. */
static const mgpu_plugin_workload_t *resolve_workload(opts_t *o) {
  if (!o->workload) o->workload = nplugin_work == 1 ? plugin_work[0].name : "ntt";
  const mgpu_plugin_workload_t *pw = find_plugin_workload(o->workload);
  bool known = pw != NULL;
  for (int i = 0; workloads[i]; i++) known |= !strcmp(workloads[i], o->workload);
  if (!known) {
    char names[1024] = "";
    for (int i = 0; workloads[i]; i++) {
      size_t len = strlen(names);
      snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", workloads[i]);
    }
    for (int i = 0; i < nplugin_work; i++) {
      size_t len = strlen(names);
      snprintf(names + len, sizeof names - len, ", %s", plugin_work[i].name);
    }
    usage_error("unknown workload '%s': expected one of %s", o->workload, names);
  }
  if (o->overlay && !o->output) usage_error("--overlay needs --output FILE");
  if (o->output && strcmp(o->workload, "mandelbrot")) usage_error("--output is for the mandelbrot workload");
  if (o->intensity && !pw && strcmp(o->workload, "mandelbrot") && strcmp(o->workload, "mulmod"))
    usage_error("--intensity is for the mulmod and mandelbrot workloads and plugins' workloads");
  return pw;
}

/* --intensity's defaults. At 2000 iterations a 4096-row image took 4 ms on
 * 4 x H200, most of it copying the rows back, which costs the same for every
 * row: the irregular case was not irregular there. At 10000 the middle rows'
 * cost rules (steal 1.29x static there, against 1.02x at 2000). */
#define MULMOD_INTENSITY_DEFAULT 1000
#define MANDEL_ITER_DEFAULT 10000

/* ------------------------------------------------------------ runtime start */

/* --plot without --trace records the trace in a file of its own, removed at exit. */
static char plot_trace[64];

static mgpu_runtime_t *start_runtime(const opts_t *o, mgpu_sched_t mode, double ratio, bool traced) {
  mgpu_config_t c = o->cfg;
  if (traced && o->trace) c.trace = o->trace;
  else if (traced && o->plot) c.trace = plot_trace;
  if (mode) c.sched = mode;
  if (ratio > 0 && c.device_to_core_ratio == 0) c.device_to_core_ratio = ratio;
  mgpu_runtime_t *rt;
  mgpu_status_t st = mgpu_init(&c, &rt);
  if (st != MGPU_OK) {
    /* The library has printed the reason; settings errors are usage errors. */
    if (mgpu_last_error()[0] && c.debug == 0) fprintf(stderr, "%s: %s\n", prog, mgpu_last_error());
    fprintf(stderr, "%s: cannot start the runtime (%s)\n", prog, mgpu_status_name(st));
    /* Asking for GPUs that the runtime does not see is a usage error, however
     * many the machine has (the man page's EXIT STATUS). */
    exit(st == MGPU_EINVAL || st == MGPU_ENODEV ? EXIT_USAGE : EXIT_FAIL);
  }
  return rt;
}

/* MGPU_RESERVE_THREADS of runtime rt, as --info shows it: a count of its
 * last CPU workers that take no item of a batch a GPU also runs, or "auto
 * (0, N or ALL per kernel)". */
static const char *reserve_setting(mgpu_runtime_t *rt) {
  static mgpu_setting_t s;
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++)
    if (!strcmp(s.name, "MGPU_RESERVE_THREADS")) return s.value;
  return "0";
}

static void print_info(mgpu_runtime_t *rt) {
  printf("libmgpurt %s\n\nSettings (value, source):\n", mgpu_version());
  mgpu_setting_t s;
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++)
    printf("  %-26s %-24s %-11s %s\n", s.name, s.value, s.source, s.doc);
  const char *how;
  int cores = mgpu_usable_cores(rt, &how);
  int nc = mgpu_num_cpu_workers(rt);
  printf("\nCPU: %d usable core%s (%s); %d CPU worker%s", cores, cores == 1 ? "" : "s", how, nc, nc == 1 ? "" : "s");
  /* Where the limit, not the cores, set the default count, say so. */
  bool derived = false;
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++) {
    if (!strcmp(s.name, "MGPU_NUM_THREADS")) derived = !strcmp(s.source, "derived");
    long limit = strtol(s.value, NULL, 10); /* "(unset)" reads as 0 */
    if (!strcmp(s.name, "OMP_THREAD_LIMIT") && derived && limit > 0 && limit < cores - mgpu_num_gpus(rt))
      printf(" (at most OMP_THREAD_LIMIT=%s)", s.value);
  }
  const char *reserve = reserve_setting(rt);
  int quarter, half = 0, all;
  if (sscanf(reserve, "auto (0, %d, %d or %d", &quarter, &half, &all) == 3 ||
      sscanf(reserve, "auto (0, %d or %d", &quarter, &all) == 2) {
    char ways[32];
    snprintf(ways, sizeof ways, half ? "%d or %d" : "%d", quarter, half);
    printf(", the last %s (or all %d, where they add under a fifth) kept out of a kernel's batches that GPUs also "
           "run where its timed batches find that faster (MGPU_RESERVE_THREADS=auto)", ways, all);
  }
  else if (atoi(reserve))
    printf(", the last %d kept out of batches that GPUs also run", atoi(reserve));
  printf("\n");
  int g = mgpu_num_gpus(rt);
  printf("GPUs: %d in use\n", g);
  for (int i = 0; i < g; i++) {
    mgpu_device_info_t d;
    mgpu_device_info(rt, i, &d);
    printf("  GPU %d: device %d, %s, %d SMs, compute capability %d.%d, %.1f GiB (%.1f GiB free), PCI %s%s\n", i,
           d.index, d.name, d.sm_count, d.cc_major, d.cc_minor, (double)d.total_mem / (1 << 30),
           (double)d.free_mem / (1 << 30), d.pci_bus_id, d.emulated ? " (emulated, tests only)" : "");
  }
  if (g > 1) {
    printf("  peer access (row can access column):\n       ");
    for (int j = 0; j < g; j++) printf(" GPU%-2d", j);
    printf("\n");
    for (int i = 0; i < g; i++) {
      printf("  GPU%-2d", i);
      for (int j = 0; j < g; j++) printf(" %5s", i == j ? "-" : mgpu_device_peer(rt, i, j) ? "yes" : "no");
      printf("\n");
    }
  }
}

/* ------------------------------------------------------------ inputs */

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static void *alloc_array(mgpu_runtime_t *base, const opts_t *o, size_t bytes) {
  void *p = o->pinned ? mgpu_host_alloc(base, bytes ? bytes : 1) : aligned_alloc(64, ((bytes ? bytes : 1) + 63) & ~(size_t)63);
  if (!p) {
    fprintf(stderr, "%s: cannot allocate %zu bytes of host memory\n", prog, bytes);
    exit(EXIT_FAIL);
  }
  return p;
}
static void free_array(mgpu_runtime_t *base, const opts_t *o, void *p) {
  if (o->pinned) mgpu_host_free(base, p);
  else free(p);
}

/* One workload instance: the kernel, the batch and how to check it. */
typedef struct {
  const char *name;
  mgpu_kernel_t k;
  mgpu_batch_t b;
  size_t n;
  double bytes_per_item; /* moved between host and device, for reports */
  union {
    mgpu_ntt_arg_t ntt;
    mgpu_sha256_arg_t sha;
    mgpu_mandelbrot_arg_t mandel;
    mgpu_saxpy_arg_t saxpy;
    mgpu_mulmod_arg_t mulmod;
  } arg;
  void *in[MGPU_MAX_ARGS], *outs[MGPU_MAX_ARGS], *out;
  size_t in_bytes[MGPU_MAX_ARGS], out_bytes, outs_bytes[MGPU_MAX_ARGS];
  const void *argp; /* the batch's argument: &arg, or a plugin's */
  size_t arg_size;
  const mgpu_plugin_workload_t *plugin;
  int *row_worker; /* mandelbrot overlay */
  mgpu_kernel_fn ref_cpu;  /* the kernel's own CPU function, for verification */
  size_t vstep;            /* verification checks items 0, vstep, 2 vstep, ... */
  int *sample_worker;      /* the worker that computed each checked item in the last run */
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

/* The workload's --intensity as run, or 0 where it has none. */
static unsigned long long work_intensity(const work_t *w) {
  if (!strcmp(w->name, "mulmod")) return w->arg.mulmod.intensity;
  if (!strcmp(w->name, "mandelbrot")) return w->arg.mandel.max_iter;
  return 0;
}

/* Items checked: every one of a small batch, else about 2000 spread over it. */
static size_t verify_step(size_t n) { return n <= 4096 ? 1 : n / 2000; }

/* The kernel's functions wrapped to record which worker computed each checked
 * item, so that a wrong answer names its worker. */
static work_t *sample_target;
static mgpu_kernel_fn sample_cpu_fn, sample_gpu_fn;
static void sample_record(const mgpu_chunk_t *c) {
  size_t step = sample_target->vstep, i = (c->first + step - 1) / step * step;
  for (; i < c->first + c->count; i += step) sample_target->sample_worker[i / step] = c->worker;
}
static int sample_cpu_rec(const mgpu_chunk_t *c) {
  sample_record(c);
  return sample_cpu_fn(c);
}
static int sample_gpu_rec(const mgpu_chunk_t *c) {
  sample_record(c);
  return sample_gpu_fn(c);
}

static work_t *overlay_target;
static int mandel_cpu_rec(const mgpu_chunk_t *c);
static int mandel_gpu_rec(const mgpu_chunk_t *c);
static mgpu_kernel_fn mandel_cpu_fn, mandel_gpu_fn;

static int mandel_cpu_rec(const mgpu_chunk_t *c) {
  for (size_t j = 0; j < c->count; j++) overlay_target->row_worker[c->first + j] = c->worker;
  return mandel_cpu_fn(c);
}
/* The GPU function runs on the GPU's host thread, so it can record rows too. */
static int mandel_gpu_rec(const mgpu_chunk_t *c) {
  for (size_t j = 0; j < c->count; j++) overlay_target->row_worker[c->first + j] = c->worker;
  return mandel_gpu_fn(c);
}

static void check_status(mgpu_status_t st, const char *what) {
  if (st == MGPU_OK) return;
  fprintf(stderr, "%s: %s failed: %s (%s)\n", prog, what, mgpu_status_name(st), mgpu_last_error());
  exit(st == MGPU_EINVAL ? EXIT_USAGE : EXIT_FAIL);
}

static void setup(work_t *w, const opts_t *o, mgpu_runtime_t *base, const mgpu_plugin_workload_t *pw) {
  memset(w, 0, sizeof *w);
  w->name = o->workload;
  w->argp = &w->arg;
  w->arg_size = sizeof w->arg;
  uint64_t rng = o->seed * 0x2545F4914F6CDD1Dull + 1;
  const char *wl = o->workload;
  if (pw) {
    /* A plugin's workload: arrays from its kernel's item sizes. */
    w->plugin = pw;
    w->k = pw->kernel;
    w->n = o->items >= 0 ? (size_t)o->items : pw->default_items ? pw->default_items : (size_t)1 << 20;
    w->argp = pw->arg;
    w->arg_size = pw->arg_size;
    if (w->k.nin < 0 || w->k.nin > MGPU_MAX_ARGS || w->k.nout < 1 || w->k.nout > MGPU_MAX_ARGS) {
      fprintf(stderr, "%s: plugin workload '%s': nin must be 0..%d and nout 1..%d\n", prog, pw->name, MGPU_MAX_ARGS,
              MGPU_MAX_ARGS);
      exit(EXIT_FAIL);
    }
    for (int i = 0; i < w->k.nin; i++) {
      if (w->k.in_size[i] && w->n > SIZE_MAX / w->k.in_size[i]) usage_error("-n %zu: the arrays would overflow", w->n);
      w->in_bytes[i] = w->k.in_size[i] * w->n;
    }
    for (int i = 0; i < w->k.nout; i++) {
      if (w->k.out_size[i] && w->n > SIZE_MAX / w->k.out_size[i]) usage_error("-n %zu: the arrays would overflow", w->n);
      w->outs_bytes[i] = w->k.out_size[i] * w->n;
    }
    w->out_bytes = w->outs_bytes[0];
    double moved = 0;
    for (int i = 0; i < w->k.nin; i++) moved += (double)w->k.in_size[i];
    for (int i = 0; i < w->k.nout; i++) moved += (double)w->k.out_size[i];
    w->bytes_per_item = moved;
  } else if (!strcmp(wl, "ntt") || !strcmp(wl, "pipeline")) {
    int lg = o->size < 0 ? 12 : o->size;
    if (lg < MGPU_NTT_LOG_MIN || lg > MGPU_NTT_LOG_MAX) usage_error("--size %d is invalid for %s: expected 10..16", lg, wl);
    w->n = o->items < 0 ? ((size_t)1 << 26 >> lg) : (size_t)o->items; /* 512 MiB of input */
    w->log_n = (unsigned)lg;
    check_status(mgpu_kernel_ntt((unsigned)lg, &w->k), "mgpu_kernel_ntt");
    w->arg.ntt = (mgpu_ntt_arg_t){(uint32_t)lg, 0};
    size_t per = (size_t)8 << lg;
    w->in_bytes[0] = w->out_bytes = per * w->n;
    w->bytes_per_item = 2.0 * per;
  } else if (!strcmp(wl, "sha256")) {
    int len = o->size < 0 ? 64 : o->size;
    w->n = o->items < 0 ? (size_t)8 << 20 : (size_t)o->items;
    check_status(mgpu_kernel_sha256((size_t)len, &w->k), "mgpu_kernel_sha256");
    w->arg.sha.msg_len = (uint64_t)len;
    w->in_bytes[0] = (size_t)len * w->n;
    w->out_bytes = 32 * w->n;
    w->bytes_per_item = len + 32.0;
  } else if (!strcmp(wl, "mandelbrot")) {
    int width = o->size < 0 ? 4096 : o->size;
    w->n = o->items < 0 ? 4096 : (size_t)o->items;
    if (w->n > MGPU_MANDELBROT_MAX_DIM) usage_error("--items %zu is too many rows for mandelbrot: at most %u", w->n, MGPU_MANDELBROT_MAX_DIM);
    w->arg.mandel = (mgpu_mandelbrot_arg_t){(uint32_t)width, (uint32_t)(w->n ? w->n : 1),
                                     o->intensity ? (uint32_t)o->intensity : MANDEL_ITER_DEFAULT, 0, -2.2, -1.5, 1.0, 1.5};
    check_status(mgpu_kernel_mandelbrot(&w->arg.mandel, &w->k), "mgpu_kernel_mandelbrot");
    w->out_bytes = (size_t)width * 4 * w->n;
    w->bytes_per_item = width * 4.0;
    if (o->overlay) {
      w->row_worker = calloc(w->n ? w->n : 1, sizeof(int));
      overlay_target = w;
      mandel_cpu_fn = w->k.cpu;
      mandel_gpu_fn = w->k.gpu;
      w->k.cpu = mandel_cpu_rec;
      if (w->k.gpu) w->k.gpu = mandel_gpu_rec;
    }
  } else if (!strcmp(wl, "saxpy")) {
    w->n = o->items < 0 ? (size_t)1 << 27 : (size_t)o->items;
    check_status(mgpu_kernel_saxpy(&w->k), "mgpu_kernel_saxpy");
    w->arg.saxpy.a = 1.5f;
    w->in_bytes[0] = w->in_bytes[1] = w->out_bytes = 4 * w->n;
    w->bytes_per_item = 12;
  } else { /* mulmod */
    w->n = o->items < 0 ? (size_t)1 << 24 : (size_t)o->items;
    uint64_t k = o->intensity ? (uint64_t)o->intensity : MULMOD_INTENSITY_DEFAULT;
    check_status(mgpu_kernel_mulmod(k, &w->k), "mgpu_kernel_mulmod");
    w->arg.mulmod.intensity = k;
    w->in_bytes[0] = w->out_bytes = 8 * w->n;
    w->bytes_per_item = 16;
  }
  for (int i = 0; i < MGPU_MAX_ARGS; i++)
    if (w->in_bytes[i]) {
      w->in[i] = alloc_array(base, o, w->in_bytes[i]);
      if (pw && pw->init_input) {
        if (pw->init_input(i, w->in[i], w->n, o->seed) != 0) {
          fprintf(stderr, "%s: plugin workload '%s' could not fill input %d\n", prog, pw->name, i);
          exit(EXIT_FAIL);
        }
      } else if (!strcmp(wl, "saxpy")) {
        float *f = w->in[i];
        for (size_t j = 0; j < w->n; j++) f[j] = (float)(rng_next(&rng) >> 40) / (float)(1 << 24) - 0.5f;
      } else {
        uint64_t *u = w->in[i];
        for (size_t j = 0; j < w->in_bytes[i] / 8; j++) u[j] = rng_next(&rng) % MGPU_GOLDILOCKS_P;
        unsigned char *bytes = w->in[i];
        for (size_t j = w->in_bytes[i] / 8 * 8; j < w->in_bytes[i]; j++) bytes[j] = (unsigned char)rng_next(&rng);
      }
    }
  if (!pw) w->outs_bytes[0] = w->out_bytes;
  for (int i = 0; i < MGPU_MAX_ARGS; i++)
    if (w->outs_bytes[i]) w->outs[i] = alloc_array(base, o, w->outs_bytes[i]);
  w->out = w->outs[0];
  w->b = (mgpu_batch_t){.kernel = &w->k, .n = w->n, .arg = w->argp, .arg_size = w->arg_size};
  for (int i = 0; i < MGPU_MAX_ARGS; i++) w->b.in[i] = w->in[i], w->b.out[i] = w->outs[i];
  w->ref_cpu = mandel_cpu_fn && w->row_worker ? mandel_cpu_fn : w->k.cpu;
  w->vstep = verify_step(w->n);
  if (o->verify && strcmp(wl, "pipeline") != 0) {
    size_t nchecks = (w->n + w->vstep - 1) / w->vstep;
    w->sample_worker = malloc((nchecks ? nchecks : 1) * sizeof(int));
    for (size_t i = 0; i < nchecks; i++) w->sample_worker[i] = -1;
    sample_target = w;
    sample_cpu_fn = w->k.cpu;
    sample_gpu_fn = w->k.gpu;
    w->k.cpu = sample_cpu_rec;
    if (w->k.gpu) w->k.gpu = sample_gpu_rec;
  }
  if (!strcmp(wl, "pipeline")) {
    w->mid1 = alloc_array(base, o, w->out_bytes);
    w->mid2 = alloc_array(base, o, w->out_bytes);
    w->key = rng_next(&rng) % MGPU_GOLDILOCKS_P;
    w->shift = (unsigned)(rng_next(&rng) % (1u << w->log_n));
    /* K = NTT(e_shift), computed with the ntt kernel's CPU function. */
    size_t nn = (size_t)1 << w->log_n;
    uint64_t *e = calloc(nn, 8), *K = calloc(nn, 8);
    e[w->shift] = 1;
    const void *ins[1] = {e};
    void *outs[1] = {K};
    mgpu_ntt_arg_t a = {w->log_n, 0};
    mgpu_chunk_t ch = {.in = ins, .out = outs, .arg = &a, .first = 0, .count = 1};
    if (w->k.cpu(&ch) != 0) {
      fprintf(stderr, "%s: computing the pipeline constant failed\n", prog);
      exit(EXIT_FAIL);
    }
    w->K = K;
    free(e);
    w->bytes_per_item = 6.0 * (double)nn * 8;
  }
}

/* ------------------------------------------------------------ progress */

/* Set by the first SIGINT: the batches in flight are canceled (they stop at
 * their next chunk) and no further batch is submitted. */
static atomic_int interrupted;

/* The batches the main thread waits for, which the first SIGINT cancels. */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static mgpu_event_t *const *watched;
static size_t nwatched;

/* Watch ev[0..n) (NULL, 0: none; before the events are released). A SIGINT
 * that came before the call cancels them at once. */
static void watch_events(mgpu_event_t *const *ev, size_t n) {
  pthread_mutex_lock(&watch_lock);
  watched = ev;
  nwatched = n;
  for (size_t i = 0; i < n && atomic_load(&interrupted); i++) mgpu_event_cancel(ev[i]);
  pthread_mutex_unlock(&watch_lock);
}

/* The batch being waited for, for the progress thread. The main thread sets
 * and clears it under the lock, so the event is never released while read. */
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static mgpu_event_t *progress_ev;
static char progress_what[96]; /* which run: "mode steal, timed run 2 of 3" */
static double progress_t0;
static int progress_shown, progress_stop;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Draws "[#####.....]  45%  1.2e+06 items/s  3 s left" on stderr for batches
 * that have run for a second; erases it when the batch ends. */
static void progress_label(const char *mode, const char *what, int k, int n) {
  pthread_mutex_lock(&progress_lock);
  snprintf(progress_what, sizeof progress_what, "mode %s, %s %d of %d", mode, what, k, n);
  pthread_mutex_unlock(&progress_lock);
}

static void *progress_main(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&progress_lock);
    if (progress_stop) {
      pthread_mutex_unlock(&progress_lock);
      return NULL;
    }
    size_t done = 0, total = 0;
    double el = now_s() - progress_t0;
    if (progress_ev && el > 1.0 && mgpu_event_progress(progress_ev, &done, &total) == MGPU_OK && total) {
      double frac = (double)done / (double)total, rate = (double)done / el;
      char bar[31];
      int fill = (int)(frac * 30);
      for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
      bar[30] = '\0';
      fprintf(stderr, "\r%s [%s] %3.0f%%  %.3g items/s  ", progress_what, bar, 100 * frac, rate);
      if (rate > 0) fprintf(stderr, "%.0f s left ", (double)(total - done) / rate);
      else fprintf(stderr, "             ");
      fflush(stderr);
      progress_shown = 1;
    }
    pthread_mutex_unlock(&progress_lock);
  }
}

static void progress_begin(mgpu_event_t *ev) {
  pthread_mutex_lock(&progress_lock);
  progress_ev = ev;
  progress_t0 = now_s();
  pthread_mutex_unlock(&progress_lock);
}

static void progress_end(void) {
  pthread_mutex_lock(&progress_lock);
  progress_ev = NULL;
  if (progress_shown) fputs("\r\033[K", stderr);
  progress_shown = 0;
  pthread_mutex_unlock(&progress_lock);
}

/* Steal time over a mode's timed runs: /proc/stat read just before and just
 * after each run's timed span, the differences summed. */
typedef struct {
  hostcpu_t sum; /* over the timed spans */
  hostcpu_t at;  /* the reading at the current span's start */
  bool failed;   /* a read failed: no figure */
} stealacc_t;

static void steal_mark(stealacc_t *a, bool end) {
  if (!a || a->failed) return;
  hostcpu_t now;
  if (hostcpu_read("/proc/stat", &now) != 0) {
    a->failed = true;
    return;
  }
  if (!end) {
    a->at = now;
    return;
  }
  a->sum.busy += now.busy - a->at.busy;
  a->sum.steal += now.steal - a->at.steal;
}

/* Steal shown on a mode's line from STEAL_SHOW, and above STEAL_NOTE a note
 * that the host, not only the runtime, was measured. The lent 4 x H200
 * virtual machines lost 13-19% of their busy time with 60 of 64 vCPUs busy
 * and 2% with 34, and CPU chunks stalled for 3-8 ms at the higher rates. */
#define STEAL_SHOW 0.005
#define STEAL_NOTE 0.05

/* The share of busy CPU time that the host took, or -1 when unknown. */
static double steal_share(const stealacc_t *a) {
  return a->failed || a->sum.busy == 0 ? -1 : (double)a->sum.steal / (double)a->sum.busy;
}

/* A run's batch that SIGINT canceled: says what it had done; true when so. */
static bool canceled(mgpu_status_t s, size_t computed, size_t n) {
  if (!atomic_load(&interrupted) || (s != MGPU_ECANCELED && s != MGPU_EDEP)) return false;
  pthread_mutex_lock(&progress_lock);
  fprintf(stderr, "%s: interrupted in %s: %zu of %zu items computed, the run not counted\n", prog, progress_what,
          computed, n);
  pthread_mutex_unlock(&progress_lock);
  return true;
}

/* Run the workload once on rt; returns wall seconds and fills stats (and,
 * unless NULL, the steal time sa); -1 when SIGINT canceled the run. */
static double run_once(mgpu_runtime_t *rt, work_t *w, const opts_t *o, mgpu_stats_t *st, stealacc_t *sa) {
  /* Poison the outputs: every item must be written again. */
  w->complete = false;
  for (int i = 0; i < MGPU_MAX_ARGS; i++)
    if (w->outs[i]) memset(w->outs[i], 0xA5, w->outs_bytes[i]);
  if (strcmp(w->name, "pipeline") != 0) {
    struct timespec t0, t1;
    mgpu_event_t *ev;
    steal_mark(sa, false);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check_status(mgpu_submit(rt, &w->b, 0, NULL, &ev), "submitting the batch");
    watch_events(&ev, 1);
    progress_begin(ev);
    mgpu_stats_t own = {0};
    mgpu_status_t s = mgpu_event_wait(ev, st ? st : &own);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    steal_mark(sa, true);
    progress_end();
    watch_events(NULL, 0);
    mgpu_event_release(ev);
    if (canceled(s, (st ? st : &own)->items, w->n)) return -1;
    check_status(s, "the batch");
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  }
  /* Pipeline: sub-batches of three dependent stages, all submitted up front so
   * the CPU-only middle stage of one overlaps the GPU stages of others. */
  mgpu_kernel_t kdec, kmul;
  check_status(mgpu_kernel_pipeline_decompose(w->log_n, &kdec), "mgpu_kernel_pipeline_decompose");
  check_status(mgpu_kernel_pipeline_mul_intt(w->log_n, &kmul), "mgpu_kernel_pipeline_mul_intt");
  size_t per = (size_t)8 << w->log_n;
  size_t sub = w->n < 16 ? 1 : w->n / 16;
  size_t nsub = (w->n + sub - 1) / sub;
  mgpu_event_t **ev = calloc(3 * (nsub ? nsub : 1), sizeof *ev);
  mgpu_ntt_arg_t a1 = {w->log_n, 0};
  mgpu_pipeline_arg_t a2 = {w->log_n, 0, w->key};
  /* One constant per runtime, made once: later runs reuse its device copies. */
  if (w->kconst_rt != rt) {
    if (w->kconst) mgpu_const_destroy(w->kconst);
    check_status(mgpu_const_create(rt, w->K, per, &w->kconst), "mgpu_const_create");
    w->kconst_rt = rt;
  }
  /* The runtime's totals before this run, so that the figures are this run's. */
  mgpu_stats_t before = {0};
  if (st) {
    before.worker_cap = st->worker_cap;
    before.worker = calloc((size_t)(st->worker_cap > 0 ? st->worker_cap : 1), sizeof *before.worker);
    if (before.worker) mgpu_runtime_stats(rt, &before);
  }
  struct timespec t0, t1;
  steal_mark(sa, false);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (size_t s = 0; s < nsub; s++) {
    size_t first = s * sub, cnt = first + sub > w->n ? w->n - first : sub;
    char *x = (char *)w->in[0] + first * per, *m1 = (char *)w->mid1 + first * per, *m2 = (char *)w->mid2 + first * per,
         *z = (char *)w->out + first * per;
    mgpu_batch_t b1 = {.kernel = &w->k, .n = cnt, .in = {x}, .out = {m1}, .arg = &a1, .arg_size = sizeof a1};
    mgpu_batch_t b2 = {.kernel = &kdec, .n = cnt, .in = {m1}, .out = {m2}, .arg = &a2, .arg_size = sizeof a2};
    mgpu_batch_t b3 = {.kernel = &kmul, .n = cnt, .in = {m2}, .out = {z}, .arg = &a2, .arg_size = sizeof a2,
                       .nconsts = 1, .consts = {w->kconst}};
    check_status(mgpu_submit(rt, &b1, 0, NULL, &ev[3 * s]), "submitting stage 1");
    check_status(mgpu_submit(rt, &b2, 1, &ev[3 * s], &ev[3 * s + 1]), "submitting stage 2");
    check_status(mgpu_submit(rt, &b3, 1, &ev[3 * s + 1], &ev[3 * s + 2]), "submitting stage 3");
  }
  watch_events(ev, 3 * nsub);
  mgpu_status_t stage_st[3 * nsub];
  size_t finished = 0;
  for (size_t s = 0; s < 3 * nsub; s++) {
    mgpu_stats_t one = {0};
    stage_st[s] = mgpu_event_wait(ev[s], &one);
    finished += s % 3 == 2 ? one.items : 0;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  steal_mark(sa, true);
  watch_events(NULL, 0);
  for (size_t s = 0; s < 3 * nsub; s++) mgpu_event_release(ev[s]);
  free(ev);
  bool stopped = false;
  for (size_t s = 0; s < 3 * nsub; s++)
    if (stage_st[s] != MGPU_OK && !(stopped |= canceled(stage_st[s], finished, w->n)))
      check_status(stage_st[s], "a pipeline stage");
  if (stopped) {
    free(before.worker);
    return -1;
  }
  /* Per-worker figures of this run: the runtime's totals less those before it.
   * Items count every stage's (three per polynomial), so the total is the sum
   * of the workers' and the shares add up to 100%. */
  if (st) {
    mgpu_runtime_stats(rt, st);
    int nw = st->nworkers < st->worker_cap ? st->nworkers : st->worker_cap;
    st->items = 0;
    for (int i = 0; i < nw && before.worker; i++) {
      mgpu_worker_stats_t *a = &st->worker[i];
      const mgpu_worker_stats_t *b = &before.worker[i];
      a->items -= b->items, a->chunks -= b->chunks, a->steals -= b->steals, a->retries -= b->retries;
      a->busy_s -= b->busy_s, a->staged_bytes -= b->staged_bytes;
    }
    for (int i = 0; i < nw; i++) st->items += st->worker[i].items;
    st->chunks -= before.chunks, st->steals -= before.steals, st->retries -= before.retries;
    st->batches -= before.batches;
    st->wall_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    free(before.worker);
  }
  (void)o;
  return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

/* What verification found: the first wrong item is the lowest checked one. */
typedef struct {
  size_t checked;
  long long bad;        /* checked items that are wrong, plus 1 for a failed round trip */
  long long first;      /* the first wrong item, or -1 */
  int worker;           /* the worker that computed it, or -1 when not known */
  bool roundtrip_bad;   /* ntt: inverse(forward(x)) != x */
  char what[256];       /* "output K bytes A..B: expected .., got .." of the first wrong item */
} verdict_t;

/* "expected .., got .." of up to 8 bytes in hex from the first that differs. */
static void describe_diff(char *buf, size_t len, int k, const unsigned char *want, const unsigned char *got,
                          size_t size) {
  size_t at = 0;
  while (at < size && want[at] == got[at]) at++;
  if (at == size) at = 0;
  size_t end = at + 8 < size ? at + 8 : size;
  int pos = snprintf(buf, len, "output %d bytes %zu..%zu: expected ", k, at, end - 1);
  for (size_t j = at; j < end && pos < (int)len; j++) pos += snprintf(buf + pos, len - (size_t)pos, "%02x", want[j]);
  if (pos < (int)len) pos += snprintf(buf + pos, len - (size_t)pos, ", got ");
  for (size_t j = at; j < end && pos < (int)len; j++) pos += snprintf(buf + pos, len - (size_t)pos, "%02x", got[j]);
}

/* Check results: every item for small runs, a sample of about 2000 spread over
 * the batch otherwise, against the kernel's CPU function run here; ntt also
 * round-trips. */
static void verify(work_t *w, mgpu_runtime_t *rt, verdict_t *v) {
  size_t n = w->n, step = w->vstep;
  memset(v, 0, sizeof *v);
  v->first = -1;
  v->worker = -1;
  long long bad = 0, first = -1;
  if (!strcmp(w->name, "pipeline")) {
    size_t nn = (size_t)1 << w->log_n;
    const uint64_t *x = w->in[0], *z = w->out;
    for (size_t i = 0; i < n; i += step, v->checked++)
      for (size_t c = 0; c < nn; c++) {
        uint64_t xv = x[i * nn + ((c + nn - w->shift) % nn)];
        uint64_t want = (uint64_t)(((unsigned __int128)xv * w->key) % MGPU_GOLDILOCKS_P);
        if (z[i * nn + c] != want) {
          if (bad++ == 0) {
            v->first = (long long)i;
            snprintf(v->what, sizeof v->what, "coefficient %zu: expected %llu, got %llu", c, (unsigned long long)want,
                     (unsigned long long)z[i * nn + c]);
          }
          break;
        }
      }
    v->bad = bad;
    return;
  }
  size_t refbytes = 0;
  for (int k = 0; k < w->k.nout; k++) refbytes += w->k.out_size[k];
  mgpu_kernel_fn cpu = w->ref_cpu;
  /* On as many threads as the runtime has CPU workers, each passing its own
   * worker index as a run would (a kernel may keep scratch per worker): a
   * full mandelbrot image at a high iteration limit is minutes on one core. */
  const long long nchecks = (long long)((n + step - 1) / step);
  const int nthreads = rt && mgpu_num_cpu_workers(rt) > 0 ? mgpu_num_cpu_workers(rt) : 1;
#pragma omp parallel num_threads(nthreads) reduction(+ : bad)
  {
    int me = 0;
#ifdef _OPENMP
    me = omp_get_thread_num();
#endif
    unsigned char *ref = malloc(refbytes ? refbytes : 1);
    if (!ref) {
      fprintf(stderr, "%s: out of memory verifying the results\n", prog);
      exit(EXIT_FAIL);
    }
#pragma omp for schedule(dynamic, 1)
    for (long long j = 0; j < nchecks; j++) {
      size_t i = (size_t)j * step;
      const void *ins[MGPU_MAX_ARGS];
      void *outs[MGPU_MAX_ARGS];
      for (int k = 0; k < w->k.nin; k++) ins[k] = (const char *)w->in[k] + i * w->k.in_size[k];
      size_t at = 0;
      for (int k = 0; k < w->k.nout; k++) outs[k] = ref + at, at += w->k.out_size[k];
      mgpu_chunk_t ch = {.in = ins, .out = outs, .arg = w->argp, .first = i, .count = 1, .worker = me};
      int rc = cpu(&ch);
      int wrong = rc != 0 ? -2 : -1; /* the output that differs; -2: the CPU function failed */
      for (int k = 0; k < w->k.nout && wrong == -1; k++)
        if (memcmp(outs[k], (char *)w->outs[k] + i * w->k.out_size[k], w->k.out_size[k]) != 0) wrong = k;
      if (wrong != -1) {
        bad++;
#pragma omp critical(mgpu_verify_first)
        if (first < 0 || (long long)i < first) {
          first = (long long)i;
          if (wrong == -2) snprintf(v->what, sizeof v->what, "the CPU function returned %d on it", rc);
          else describe_diff(v->what, sizeof v->what, wrong, outs[wrong],
                             (unsigned char *)w->outs[wrong] + i * w->k.out_size[wrong], w->k.out_size[wrong]);
        }
      }
    }
    free(ref);
  }
  v->checked = (size_t)nchecks;
  v->first = first;
  if (first >= 0 && w->sample_worker) v->worker = w->sample_worker[(size_t)first / step];
  if (!strcmp(w->name, "ntt") && n > 0) {
    /* Round trip on the runtime: inverse(forward(x)) == x. */
    mgpu_ntt_arg_t inv = {w->log_n, 1};
    void *back = malloc(w->out_bytes);
    mgpu_batch_t b = {.kernel = &w->k, .n = n, .in = {w->out}, .out = {back}, .arg = &inv, .arg_size = sizeof inv};
    check_status(mgpu_run(rt, &b, NULL), "the inverse ntt");
    if (memcmp(back, w->in[0], w->out_bytes) != 0) bad++, v->roundtrip_bad = true;
    free(back);
  }
  v->bad = bad;
}

/* ------------------------------------------------------------ images */

static void write_image(const work_t *w, const opts_t *o, int nworkers, int ncpu) {
  uint32_t wd = w->arg.mandel.width, ht = (uint32_t)w->n, maxit = w->arg.mandel.max_iter;
  unsigned char *rgb = malloc((size_t)wd * ht * 3);
  const uint32_t *it = w->out;
  static const unsigned char palette[][3] = {{230, 80, 60},  {60, 160, 230}, {90, 200, 90}, {230, 190, 60},
                                             {180, 90, 220}, {60, 210, 200}, {240, 130, 40}, {150, 150, 150}};
  for (uint32_t y = 0; y < ht; y++)
    for (uint32_t x = 0; x < wd; x++) {
      uint32_t v = it[(size_t)y * wd + x];
      double t = v >= maxit ? 0 : sqrt((double)v / maxit);
      unsigned char g = (unsigned char)(255 * t);
      unsigned char *p = rgb + ((size_t)y * wd + x) * 3;
      if (o->overlay) {
        int wk = w->row_worker[y];
        const unsigned char *c = wk >= ncpu ? palette[(wk - ncpu) % 4 + 4] : palette[wk % 4];
        for (int k = 0; k < 3; k++) p[k] = (unsigned char)(0.55 * g + 0.45 * c[k] * (0.35 + 0.65 * t));
      } else {
        p[0] = g, p[1] = (unsigned char)(g * 0.8), p[2] = (unsigned char)(80 + 175 * t);
      }
    }
  (void)nworkers;
  FILE *f = fopen(o->output, "wb");
  if (!f) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->output, strerror(errno));
    exit(EXIT_FAIL);
  }
#ifdef MGPU_HAVE_PNG
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    fprintf(stderr, "%s: libpng failed writing %s\n", prog, o->output);
    exit(EXIT_FAIL);
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, wd, ht, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (uint32_t y = 0; y < ht; y++) png_write_row(png, rgb + (size_t)y * wd * 3);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
#else
  fprintf(f, "P6\n%u %u\n255\n", wd, ht);
  fwrite(rgb, 3, (size_t)wd * ht, f);
#endif
  fclose(f);
  free(rgb);
}

/* ------------------------------------------------------------ reports */

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
  int reserve;  /* of those, kept out of the last timed run (a batch that GPUs also run) */
  bool reserve_auto; /* MGPU_RESERVE_THREADS=auto */
  stealacc_t steal; /* host steal time over the timed runs */
  const char *skipped;
} result_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}


/* Set when a runtime's trace could not be written at finalize: the run fails. */
static bool trace_lost;

/* Finalize a runtime of one mode (or GPU count), with the constant made on it. */
/* Release what setup() made. */
static void free_work(work_t *w, mgpu_runtime_t *base, const opts_t *o) {
  if (w->kconst) mgpu_const_destroy(w->kconst);
  for (int i = 0; i < MGPU_MAX_ARGS; i++) {
    if (w->in[i]) free_array(base, o, w->in[i]);
    if (w->outs[i]) free_array(base, o, w->outs[i]);
  }
  if (w->mid1) free_array(base, o, w->mid1), free_array(base, o, w->mid2);
  free(w->row_worker);
  free(w->sample_worker);
  free(w->K);
}

static void finish_runtime(work_t *w, mgpu_runtime_t *rt) {
  if (w->kconst_rt == rt) {
    mgpu_const_destroy(w->kconst);
    w->kconst = NULL;
    w->kconst_rt = NULL;
  }
  if (mgpu_finalize_checked(rt) != MGPU_OK) trace_lost = true;
}

static void plot_run(mgpu_runtime_t *rt, const opts_t *o, const result_t *r, const work_t *w) {
  char title[256];
  snprintf(title, sizeof title, "mgpu-run %s, %zu items, mode %s: %.4f s (libmgpurt %s)", w->name, w->n, r->mode,
           r->wall_s, mgpu_version());
  if (mgpu_run_plot(o->plot, rt, &r->st, title) != 0) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->plot, strerror(errno));
    exit(EXIT_FAIL);
  }
}

/* Time o->repeat runs of the workload on rt, after its warm-up, and add them to
 * r: with --rounds, r gathers every round's runs, and its figures are the
 * median of all of them (each round's own median is kept for E by round). */
static void measure(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, const char *mode) {
  int nw = mgpu_num_workers(rt);
  r->mode = mode;
  if (r->ws && r->nw != nw) free(r->ws), r->ws = NULL;
  if (!r->ws) r->ws = calloc((size_t)nw, sizeof *r->ws);
  r->nw = nw;
  r->ncpu = mgpu_num_cpu_workers(rt);
  r->reserve_auto = !strncmp(reserve_setting(rt), "auto", 4);
  double *all = realloc(r->times, sizeof *all * (size_t)(r->runs + o->repeat + 1));
  if (!all || !r->ws) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  r->times = all;
  double *times = all + r->runs;
  mgpu_stats_t st = {.worker = r->ws, .worker_cap = nw};
  /* Warm-up: the speed model learns, buffers are made; under
   * MGPU_RESERVE_THREADS=auto, the trials of the reserve as well. */
  bool mixed = (!strcmp(mode, "steal") || !strcmp(mode, "static")) && mgpu_num_gpus(rt) > 0 && r->ncpu > 0;
  int warm = r->reserve_auto && mixed ? MGPU_RESERVE_TRIALS : 1;
  for (int i = 0; i < warm && !interrupted; i++) {
    progress_label(mode, "warm-up", i + 1, warm);
    if (run_once(rt, w, o, NULL, NULL) < 0) break;
    w->complete = true;
  }
  /* SIGINT cancels the run in flight (it stops at its next chunk): the report
   * then covers the runs completed, and a mode with none is skipped. */
  int done = 0;
  for (int i = 0; i < o->repeat && !interrupted; i++) {
    progress_label(mode, "timed run", i + 1, o->repeat);
    double t = run_once(rt, w, o, &st, &r->steal);
    if (t < 0) break;
    times[done++] = t;
    w->complete = true;
  }
  if (done == 0) return;
  qsort(times, (size_t)done, sizeof *times, cmp_double);
  if (r->nround < MAX_ROUNDS) r->round_tp[r->nround++] = times[done / 2] > 0 ? (double)w->n / times[done / 2] : 0;
  r->runs += done;
  qsort(all, (size_t)r->runs, sizeof *all, cmp_double);
  r->wall_s = all[r->runs / 2];
  r->throughput = r->wall_s > 0 ? (double)w->n / r->wall_s : 0;
  r->st = st;
  r->reserve = st.reserve_workers;
  r->ran = 1;
}

/* Round by round, num's throughput over den's (plus den2's unless NULL), into
 * out; returns the rounds that all of them ran. */
static int ratio_by_round(const result_t *num, const result_t *den, const result_t *den2, double *out) {
  int n = num->nround < den->nround ? num->nround : den->nround;
  if (den2 && den2->nround < n) n = den2->nround;
  for (int k = 0; k < n; k++) {
    double d = den->round_tp[k] + (den2 ? den2->round_tp[k] : 0);
    out[k] = d > 0 ? num->round_tp[k] / d : 0;
  }
  return n;
}

/* "LABEL V" and, over more than one round, " (by round: V1, V2, ...)". */
static void print_ratio(const char *label, double v, const double *by, int n, const char *unit) {
  printf("%s%.3f%s", label, v, unit);
  for (int k = 0; k < n && n > 1; k++) printf("%s%.3f%s", k ? ", " : " (by round: ", by[k], unit);
  printf("%s\n", n > 1 ? ")" : "");
}

/* The per-worker table of the mode's last timed run: the library's own. */
static void print_workers(const result_t *r, const work_t *w) {
  if (!strcmp(w->name, "pipeline"))
    printf("pipeline: items of the last run's three stages (%zu per stage), by worker:\n", w->n);
  mgpu_stats_print(NULL, &r->st, stdout);
  if (r->reserve >= r->ncpu && r->reserve_auto)
    printf("Every CPU worker was kept out of the last run, which this kernel's trials found faster "
           "(MGPU_RESERVE_THREADS=auto)\n");
  else if (r->reserve > 0 && r->reserve_auto)
    printf("CPU workers %d..%d were kept out of the last run, which this kernel's trials found faster "
           "(MGPU_RESERVE_THREADS=auto)\n", r->ncpu - r->reserve, r->ncpu - 1);
  else if (r->reserve > 0)
    printf("CPU workers %d..%d are kept out of batches that GPUs also run (MGPU_RESERVE_THREADS=%d)\n",
           r->ncpu - r->reserve, r->ncpu - 1, r->reserve);
}

static const char *mode_name(mgpu_sched_t m) {
  switch (m) {
  case MGPU_SCHED_STATIC: return "static";
  case MGPU_SCHED_CPU: return "cpu";
  case MGPU_SCHED_GPU: return "gpu";
  default: return "steal";
  }
}

static void json_result(const result_t *r, bool last) {
  int nw = r->nw;
  printf("    {\"mode\": \"%s\", \"ran\": %s", r->mode, r->ran ? "true" : "false");
  if (!r->ran) {
    printf(", \"skipped\": \"%s\"}%s\n", r->skipped ? r->skipped : "", last ? "" : ",");
    return;
  }
  printf(", \"runs\": %d, \"wall_s\": %.6f, \"items_per_s\": %.3f, \"cpu_workers\": %d, \"reserve_workers\": %d, "
         "\"reserve_auto\": %s, \"chunks\": %llu, \"steals\": %llu, \"retries\": %llu, \"host_steal\": ",
         r->runs, r->wall_s, r->throughput, r->ncpu, r->reserve, r->reserve_auto ? "true" : "false", (unsigned long long)r->st.chunks, (unsigned long long)r->st.steals,
         (unsigned long long)r->st.retries);
  double sh = steal_share(&r->steal);
  if (sh >= 0) printf("%.4f, \"workers\": [", sh);
  else printf("null, \"workers\": [");
  for (int i = 0; i < nw; i++) {
    const mgpu_worker_stats_t *s = &r->ws[i];
    printf("%s{\"kind\": \"%s\", \"device\": %d, \"items\": %llu, \"chunks\": %llu, \"steals\": %llu, \"retries\": %llu, "
           "\"busy_s\": %.6f, \"batch_cap\": %zu, \"staged_bytes\": %llu}",
           i ? ", " : "", s->kind == MGPU_WORKER_GPU ? "gpu" : "cpu", s->device, (unsigned long long)s->items,
           (unsigned long long)s->chunks, (unsigned long long)s->steals, (unsigned long long)s->retries, s->busy_s,
           s->batch_cap, (unsigned long long)s->staged_bytes);
  }
  printf("]}%s\n", last ? "" : ",");
}

/* The verification line of the text report; r is the run whose outputs were checked. */
static void print_verdict(const work_t *w, const verdict_t *v, const result_t *r) {
  char scope[160];
  const char *how = !strcmp(w->name, "pipeline") ? "on the host" : "against the CPU function";
  if (w->vstep == 1) snprintf(scope, sizeof scope, "all %zu items checked %s", v->checked, how);
  else snprintf(scope, sizeof scope, "%zu of %zu items, one in %zu, checked %s", v->checked, w->n, w->vstep, how);
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

/* SIGINT is blocked in every thread and taken here, where the library may be
 * called: the first cancels the batches in flight (each stops at its next
 * chunk), the second ends the process at once. */
static void *sigint_main(void *arg) {
  const sigset_t *set = arg;
  for (;;) {
    int sig;
    if (sigwait(set, &sig) != 0) continue;
    if (atomic_exchange(&interrupted, 1)) _exit(130);
    static const char msg[] = "\nmgpu-run: SIGINT: stopping at the next chunk (again to quit now)\n";
    ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)rc;
    pthread_mutex_lock(&watch_lock);
    for (size_t i = 0; i < nwatched; i++) mgpu_event_cancel(watched[i]);
    pthread_mutex_unlock(&watch_lock);
  }
  return NULL;
}

int main(int argc, char **argv) {
  opts_t o;
  parse_args(argc, argv, &o);
  if (o.plugin) {
    plugin_params = (mgpu_plugin_params_t){o.items, o.size, o.intensity ? o.intensity : -1};
    load_plugin(o.plugin);
  }
  if (o.list) {
    printf("Workloads:");
    for (int i = 0; workloads[i]; i++) printf(" %s", workloads[i]);
    printf("\nBuilt-in kernels:\n");
    for (int i = 0; i < mgpu_builtin_count(); i++) printf("  %-20s %s\n", mgpu_builtin_name(i), mgpu_builtin_doc(i));
    if (nplugin_work) printf("Plugin workloads (%s):\n", o.plugin);
    for (int i = 0; i < nplugin_work; i++)
      printf("  %-20s %s\n", plugin_work[i].name, plugin_work[i].doc ? plugin_work[i].doc : "");
    return 0;
  }
  const mgpu_plugin_workload_t *pw = o.info ? NULL : resolve_workload(&o);
  /* Before any runtime: its threads inherit the blocked SIGINT. */
  static sigset_t sigint_set;
  sigemptyset(&sigint_set);
  sigaddset(&sigint_set, SIGINT);
  pthread_t sigint_thread;
  if (pthread_sigmask(SIG_BLOCK, &sigint_set, NULL) != 0 ||
      pthread_create(&sigint_thread, NULL, sigint_main, &sigint_set) != 0) {
    fprintf(stderr, "%s: cannot start the SIGINT thread\n", prog);
    return EXIT_FAIL;
  }
  pthread_detach(sigint_thread);
  if (o.plot && !o.trace) {
    snprintf(plot_trace, sizeof plot_trace, "/tmp/mgpu-run-trace-XXXXXX");
    int fd = mkstemp(plot_trace);
    if (fd < 0) {
      fprintf(stderr, "%s: cannot make a temporary trace file for --plot: %s\n", prog, strerror(errno));
      return EXIT_FAIL;
    }
    close(fd);
  }
  mgpu_runtime_t *base = start_runtime(&o, o.mode, 0, !o.compare);
  if (o.info) {
    print_info(base);
    mgpu_finalize(base);
    return 0;
  }
  int ngpu = mgpu_num_gpus(base), ncpu = mgpu_num_cpu_workers(base);
  if (o.cfg.reserve_threads > 0 && ngpu == 0)
    fprintf(stderr, "%s: warning: --reserve %d has no effect: no GPU is in use, so every batch runs on all %d CPU "
            "worker%s\n", prog, o.cfg.reserve_threads, ncpu, ncpu == 1 ? "" : "s");
  if (o.ngpus_list) {
    /* Every count above the GPUs seen: nothing would run, so nothing is reported. */
    int runnable = 0;
    for (int i = 0; i < o.ngpus_list; i++) runnable += o.gpus_list[i] <= ngpu;
    if (!runnable) {
      char list[256] = "";
      for (int i = 0; i < o.ngpus_list; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", o.gpus_list[i]);
      }
      if (ngpu == 0)
        fprintf(stderr, "%s: nothing ran: --gpus %s needs GPUs and the runtime sees none\n", prog, list);
      else
        fprintf(stderr, "%s: nothing ran: --gpus %s asks for more GPUs than the runtime sees: expected counts in "
                "1..%d\n", prog, list, ngpu);
      mgpu_finalize(base);
      if (plot_trace[0]) unlink(plot_trace);
      return EXIT_USAGE;
    }
  }
  if (multi_is_workload(o.workload)) {
    multi_opts_t *m = &o.multi;
    m->workload = o.workload;
    m->items = o.items;
    m->size = o.size;
    m->repeat = o.repeat;
    m->seed = o.seed;
    m->verify = o.verify;
    m->json = o.json;
    m->stop = &interrupted;
    int rc = 0;
    if (!o.ngpus_list) {
      rc = multi_run(base, m);
    } else {
      if (o.json) printf("[\n");
      int printed = 0;
      for (int i = 0; i < o.ngpus_list && !interrupted; i++) {
        if (o.gpus_list[i] > ngpu) {
          fprintf(stderr, "%s: --gpus %d skipped: the runtime sees %d GPU%s\n", prog, o.gpus_list[i], ngpu,
                  ngpu == 1 ? "" : "s");
          continue;
        }
        opts_t ok = o;
        ok.cfg.num_gpus = o.gpus_list[i];
        mgpu_runtime_t *rt = start_runtime(&ok, o.mode, 0, false);
        if (o.json && printed) printf(",\n");
        else if (!o.json) printf("%s== %d GPU%s ==\n", printed ? "\n" : "", o.gpus_list[i], o.gpus_list[i] == 1 ? "" : "s");
        printed++;
        fflush(stdout);
        rc |= multi_run(rt, m);
        fflush(stdout);
        mgpu_finalize(rt);
      }
      if (o.json) printf("]\n");
    }
    mgpu_finalize(base);
    return interrupted ? 130 : rc;
  }
  if (o.multi.nshares || o.multi.min_bytes || o.multi.max_bytes || o.dtype_given)
    usage_error("--split, --dtype, --min-bytes and --max-bytes are for the matvec, reduce, allreduce and "
                "saxpy-resident workloads");
  /* A progress bar only for a person watching a terminal. */
  pthread_t progress_thread;
  bool progress = !o.quiet && !o.json && isatty(STDERR_FILENO) &&
                  pthread_create(&progress_thread, NULL, progress_main, NULL) == 0;
  work_t w;
  setup(&w, &o, base, pw);

  /* A kernel without a GPU function runs only on CPU workers: a "gpu" figure
   * would measure them, so what needs the GPU is not run. */
  bool has_gpu_fn = w.k.gpu != NULL;
  mgpu_sched_t scale_mode = o.mode ? o.mode : MGPU_SCHED_GPU;
  if (!has_gpu_fn && ngpu > 0 && (o.ngpus_list ? scale_mode : o.mode) == MGPU_SCHED_GPU) {
    fprintf(stderr, "%s: nothing ran: workload '%s' has no GPU function, so mode gpu%s cannot run it: expected "
            "--mode cpu, steal or static\n", prog, w.name, o.ngpus_list && !o.mode ? " (the default of --gpus)" : "");
    free_work(&w, base, &o);
    mgpu_finalize(base);
    return EXIT_USAGE;
  }
  if (!o.json && !o.quiet) {
    /* The header comes first, so that a long or interrupted run says what it is. */
    printf("libmgpurt %s: %s, %zu items", mgpu_version(), w.name, w.n);
    if (work_intensity(&w)) printf(", intensity %llu", work_intensity(&w));
    printf("; %d CPU worker%s, %d GPU%s", ncpu, ncpu == 1 ? "" : "s", ngpu, ngpu == 1 ? "" : "s");
    for (int g = 0; g < ngpu; g++) {
      mgpu_device_info_t d;
      mgpu_device_info(base, g, &d);
      printf("%s%s", g ? ", " : " (", d.name);
      if (g == ngpu - 1) printf(")");
    }
    printf("\n");
    fflush(stdout);
  }
  result_t res[4];
  memset(res, 0, sizeof res);
  int nres = 0;
  const char *note = NULL;
  result_t *sres = NULL; /* --gpus: one result per GPU count */
  int nsres = 0;
  if (o.ngpus_list) {
    sres = calloc((size_t)o.ngpus_list, sizeof *sres);
    for (int i = 0; i < o.ngpus_list && !interrupted; i++) {
      result_t *r = &sres[nsres++];
      r->mode = mode_name(scale_mode);
      if (o.gpus_list[i] > ngpu) {
        r->skipped = "more GPUs than the runtime sees";
        continue;
      }
      opts_t ok = o;
      ok.cfg.num_gpus = o.gpus_list[i];
      mgpu_runtime_t *rt = start_runtime(&ok, scale_mode, 0, false);
      measure(rt, &w, &o, r, r->mode);
      finish_runtime(&w, rt);
    }
    if (nsres == 0) sres[nsres++].mode = mode_name(scale_mode); /* interrupted before the first */
    res[0] = sres[nsres - 1];
    nres = 1;
  } else if (!o.compare) {
    if (!has_gpu_fn && ngpu > 0 && o.mode != MGPU_SCHED_CPU)
      note = "the kernel has no GPU function: the CPU workers ran every item";
    measure(base, &w, &o, &res[0], mode_name(o.mode));
    if (o.plot) plot_run(base, &o, &res[0], &w);
    nres = 1;
  } else {
    /* Same inputs, one runtime per mode. static uses the ratio measured by the
     * cpu and gpu runs: the best a fixed split can do. */
    mgpu_sched_t modes[4] = {MGPU_SCHED_CPU, MGPU_SCHED_GPU, MGPU_SCHED_STATIC, MGPU_SCHED_STEAL};
    double ratio = 0;
    nres = 4;
    for (int m = 0; m < 4; m++) res[m].mode = mode_name(modes[m]);
    /* With --rounds the four modes run in turn again, so that a machine whose
     * speed drifts during the comparison affects every mode alike. */
    for (int round = 0; round < o.rounds && !interrupted; round++) {
      bool last = round == o.rounds - 1;
      for (int m = 0; m < 4 && !interrupted; m++) {
        result_t *r = &res[m];
        if ((modes[m] == MGPU_SCHED_GPU || modes[m] == MGPU_SCHED_STATIC) && ngpu == 0) {
          r->skipped = "no GPU";
          note = "no GPU is in use: only the CPU modes were compared";
          continue;
        }
        if ((modes[m] == MGPU_SCHED_GPU || modes[m] == MGPU_SCHED_STATIC) && !has_gpu_fn) {
          r->skipped = "the kernel has no GPU function";
          note = "the kernel has no GPU function: the CPU workers run every item, so gpu and static were not run "
                 "and E is not given";
          continue;
        }
        if (modes[m] == MGPU_SCHED_CPU && ncpu == 0) {
          r->skipped = "no CPU worker";
          continue;
        }
        if (modes[m] == MGPU_SCHED_STATIC && res[0].ran && res[1].ran && res[0].throughput > 0)
          ratio = (res[1].throughput / ngpu) / (res[0].throughput / res[0].ncpu);
        mgpu_runtime_t *rt = start_runtime(&o, modes[m], modes[m] == MGPU_SCHED_STATIC ? ratio : 0,
                                           modes[m] == MGPU_SCHED_STEAL && last);
        measure(rt, &w, &o, r, r->mode);
        if (o.plot && modes[m] == MGPU_SCHED_STEAL && last) plot_run(rt, &o, r, &w);
        finish_runtime(&w, rt);
      }
    }
  }

  if (progress) {
    pthread_mutex_lock(&progress_lock);
    progress_stop = 1;
    pthread_mutex_unlock(&progress_lock);
    pthread_join(progress_thread, NULL);
  }
  verdict_t vd = {.first = -1, .worker = -1};
  if (o.verify && w.complete) verify(&w, base, &vd); /* the last run's results are in w.out */
  size_t checked = vd.checked;
  long long bad = vd.bad;
  if (o.output) write_image(&w, &o, mgpu_num_workers(base), ncpu);

  /* The mode the quiet line reports: the last that ran (steal with --compare,
   * unless SIGINT came first). */
  const result_t *main_r = &res[nres - 1];
  for (int i = nres - 1; i > 0 && !main_r->ran; i--) main_r = &res[i - 1];
  double e = 0, speedup = 0;
  if (o.compare && res[0].ran && res[1].ran && res[3].ran) e = res[3].throughput / (res[0].throughput + res[1].throughput);
  if (o.compare && res[2].ran && res[3].ran) speedup = res[3].throughput / res[2].throughput;
  /* E and the speedup of each round, from that round's medians. */
  double e_round[MAX_ROUNDS], sp_round[MAX_ROUNDS];
  int ne = 0, nsp = 0;
  if (o.compare && res[0].ran && res[1].ran && res[3].ran) ne = ratio_by_round(&res[3], &res[0], &res[1], e_round);
  if (o.compare && res[2].ran && res[3].ran) nsp = ratio_by_round(&res[3], &res[2], NULL, sp_round);

  if (o.json) {
    printf("{\n  \"version\": \"%s\",\n  \"workload\": \"%s\",\n  \"items\": %zu,\n  \"repeat\": %d,\n", mgpu_version(),
           w.name, w.n, o.repeat);
    if (o.compare) printf("  \"rounds\": %d,\n", o.rounds);
    if (work_intensity(&w)) printf("  \"intensity\": %llu,\n", work_intensity(&w));
    printf("  \"config\": {");
    mgpu_setting_t s;
    for (int i = 0; mgpu_info_setting(base, i, &s) == MGPU_OK; i++)
      printf("%s\"%s\": {\"value\": \"%s\", \"source\": \"%s\"}", i ? ", " : "", s.name, s.value, s.source);
    printf("},\n  \"devices\": [");
    for (int g = 0; g < ngpu; g++) {
      mgpu_device_info_t d;
      mgpu_device_info(base, g, &d);
      printf("%s{\"index\": %d, \"name\": \"%s\", \"sm_count\": %d, \"memory\": %zu, \"emulated\": %s}", g ? ", " : "",
             d.index, d.name, d.sm_count, d.total_mem, d.emulated ? "true" : "false");
    }
    printf("],\n  \"cpu_workers\": %d,\n  \"results\": [\n", ncpu);
    for (int i = 0; i < nres; i++) json_result(&res[i], i == nres - 1);
    printf("  ],\n");
    if (o.compare) {
      printf("  \"efficiency\": %.4f,\n  \"speedup_vs_static\": %.4f,\n  \"efficiency_by_round\": [", e, speedup);
      for (int k = 0; k < ne; k++) printf("%s%.4f", k ? ", " : "", e_round[k]);
      printf("],\n  \"speedup_vs_static_by_round\": [");
      for (int k = 0; k < nsp; k++) printf("%s%.4f", k ? ", " : "", sp_round[k]);
      printf("],\n");
    }
    if (nsres) {
      printf("  \"scaling\": [");
      const result_t *r0 = NULL;
      int k0 = 0;
      for (int i = 0; i < nsres; i++) {
        const result_t *r = &sres[i];
        if (!r0 && r->ran) r0 = r, k0 = o.gpus_list[i];
        double sp = r0 && r->ran && r0->throughput > 0 ? r->throughput / r0->throughput : 0;
        printf("%s{\"gpus\": %d, \"ran\": %s, \"wall_s\": %.6f, \"items_per_s\": %.3f, \"speedup\": %.4f, "
               "\"efficiency\": %.4f}",
               i ? ", " : "", o.gpus_list[i], r->ran ? "true" : "false", r->wall_s, r->throughput, sp,
               k0 ? sp / ((double)o.gpus_list[i] / k0) : 0);
      }
      printf("],\n");
    }
    printf("  \"verification\": {\"enabled\": %s, \"checked\": %zu, \"failed\": %lld}\n}\n", o.verify ? "true" : "false",
           checked, bad);
  } else if (o.quiet) {
    printf("%s: %zu items, %.4f s, %.4g items/s, verification %s\n", w.name, w.n, main_r->wall_s, main_r->throughput,
           !o.verify ? "off" : bad ? "FAILED" : "ok");
  } else {
    double worst_steal = -1;
    for (int i = 0; i < nres; i++) {
      const result_t *r = &res[i];
      if (!r->ran) {
        printf("mode %-6s skipped (%s)\n", r->mode, r->skipped ? r->skipped : "interrupted");
        continue;
      }
      printf("mode %-6s %.4f s (median of %d", r->mode, r->wall_s, r->runs);
      if (r->nround > 1) printf(" in %d rounds", r->nround);
      printf("), %.4g items/s, %.3g GB/s moved", r->throughput, r->throughput * w.bytes_per_item / 1e9);
      if (r->ncpu != ncpu) printf(", %d CPU worker%s", r->ncpu, r->ncpu == 1 ? "" : "s");
      double sh = steal_share(&r->steal);
      if (sh >= STEAL_SHOW) printf(", host steal %.0f%%", 100 * sh);
      if (sh > worst_steal) worst_steal = sh;
      printf("\n");
      if (!o.compare || i == nres - 1) print_workers(r, &w);
    }
    if (nsres) {
      printf("scaling with the GPU count (mode %s, inputs in host memory):\n", mode_name(scale_mode));
      printf("  %5s %10s %14s %8s %10s\n", "gpus", "time s", "items/s", "speedup", "efficiency");
      const result_t *r0 = NULL;
      int k0 = 0;
      for (int i = 0; i < nsres; i++) {
        const result_t *r = &sres[i];
        if (!r->ran) {
          printf("  %5d skipped (%s)\n", o.gpus_list[i], r->skipped ? r->skipped : "interrupted");
          continue;
        }
        if (!r0) r0 = r, k0 = o.gpus_list[i];
        double sp = r0->throughput > 0 ? r->throughput / r0->throughput : 0;
        printf("  %5d %10.4f %14.4g %7.3fx %9.1f%%\n", o.gpus_list[i], r->wall_s, r->throughput, sp,
               100 * sp / ((double)o.gpus_list[i] / k0));
      }
    }
    if (o.compare) {
      if (e > 0) print_ratio("heterogeneous efficiency E = steal / (cpu + gpu) = ", e, e_round, ne, "");
      if (speedup > 0) print_ratio("steal vs static: ", speedup, sp_round, nsp, "x");
    }
    if (note) printf("note: %s\n", note);
    if (worst_steal >= STEAL_NOTE)
      printf("note: the host took up to %.0f%% of the busy CPU time (steal time in /proc/stat): this "
             "machine's CPUs are shared by its hypervisor, CPU chunks stall while it runs something else, and "
             "figures vary between runs (doc/tuning.md, \"Shared virtual CPUs\")\n",
             100 * worst_steal);
    if (o.verify && !w.complete)
      printf("verification: none (%s)\n", interrupted ? "SIGINT stopped the last run" : "no run completed");
    else if (o.verify) print_verdict(&w, &vd, main_r);
    else printf("verification: off\n");
  }
  if (nsres) {
    for (int i = 0; i < nsres; i++) free(sres[i].ws), free(sres[i].times);
    nres = 0; /* res[0] is a copy of the last of them */
  }
  free(sres);
  for (int i = 0; i < nres; i++) free(res[i].ws), free(res[i].times);
  free_work(&w, base, &o);
  /* The trace is written here: a run whose trace is lost fails (the library logs why). */
  if (mgpu_finalize_checked(base) != MGPU_OK || trace_lost) bad = bad ? bad : 1;
  if (plot_trace[0]) unlink(plot_trace);
  if (interrupted) {
    fprintf(stderr, "%s: interrupted: the report covers the runs made before SIGINT\n", prog);
    return 130;
  }
  return bad ? EXIT_FAIL : 0;
}
