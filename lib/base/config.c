/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c: turns mgpu_config_t fields (and for the settings for tests,
 * mgpu__testcfg_t fields) and MGPU_* environment variables into the runtime's
 * settings, strictly, once, at mgpu_init. One table describes every
 * setting; each is parsed by the parser of its kind and range-checked.
 */
#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { K_INT, K_DOUBLE, K_LL, K_BYTES, K_SCHED, K_LIST, K_BOOL, K_PATH, K_LEVEL, K_FAULT, K_RATIOS, K_DIR } kind_t;

typedef struct {
  const char *name;
  kind_t kind;
  long long lo, hi;   /* integer kinds */
  double dlo, dhi;    /* K_DOUBLE: lo exclusive when dlo_open */
  int dlo_open;
  const char *accepted; /* what the variable accepts, for messages */
  const char *doc;
  /* What the field accepts, where its values are not the variable's words
   * (an int 0 or 1 for yes/no, an enum's names); NULL: accepted. */
  const char *field_accepted;
} setting_t;

#define LL_MAX_ITEMS (1LL << 40)

static const setting_t settings[MGPU_SET_COUNT] = {
  [MGPU_SET_NUM_THREADS] = {"MGPU_NUM_THREADS", K_INT, 0, MGPU_THREADS_MAX, 0, 0, 0,
                            "an integer in 0..4096",
                            "CPU workers (default: usable cores minus GPUs used, at least 1, at most OMP_THREAD_LIMIT; 0 = GPUs only)"},
  [MGPU_SET_NUM_GPUS] = {"MGPU_NUM_GPUS", K_INT, 0, MGPU_MAX_DEVICES, 0, 0, 0, "an integer in 0..64",
                         "GPUs to use (default: all visible; 0 = CPU only)"},
  [MGPU_SET_DEVICES] = {"MGPU_DEVICES", K_LIST, 0, MGPU_MAX_DEVICES - 1, 0, 0, 0,
                        "a comma-separated list of distinct device indices in 0..63, e.g. 0,2",
                        "explicit GPU list (default: the first MGPU_NUM_GPUS visible)",
                        "ndevices in 1..64 and devices[0..ndevices) distinct indices in 0..63"},
  [MGPU_SET_RATIO] = {"MGPU_DEVICE_TO_CORE_RATIO", K_DOUBLE, 0, 0, 0, MGPU_RATIO_MAX, 1,
                      "a number greater than 0 and at most 1e7",
                      "how many CPU workers one GPU is worth; sets the first split (default: measured per kernel)"},
  [MGPU_SET_MAX_BATCH] = {"MGPU_MAX_BATCH_SIZE", K_LL, 1, LL_MAX_ITEMS, 0, 0, 0, "an integer in 1..1099511627776",
                          "most items per GPU launch (default: from free device memory)"},
  [MGPU_SET_STREAMS] = {"MGPU_STREAMS_PER_GPU", K_INT, 1, MGPU_STREAMS_MAX, 0, 0, 0, "an integer in 1..32",
                        "chunks in flight per GPU, to overlap copies and kernels (default 3)"},
  [MGPU_SET_SCHED] = {"MGPU_SCHED", K_SCHED, 0, 0, 0, 0, 0, "one of steal, static, cpu, gpu",
                      "steal (default), static (fixed split by ratio), cpu or gpu (restrict workers)",
                      "MGPU_SCHED_STEAL, MGPU_SCHED_STATIC, MGPU_SCHED_CPU or MGPU_SCHED_GPU"},
  [MGPU_SET_STATS] = {"MGPU_STATS", K_BOOL, 0, 1, 0, 0, 0, "0, 1, yes, no, on, off, true or false",
                      "print a per-worker table at mgpu_finalize (default 0)",
                      "0 or 1"},
  [MGPU_SET_TRACE] = {"MGPU_TRACE", K_PATH, 0, 0, 0, 0, 0, "a file path of 1..1023 characters, not blank, in which %r (the MPI rank), %p (the process id), %h (the host name) and %% (a %) are substituted", "write a trace to this file (default: none)"},
  [MGPU_SET_DEBUG] = {"MGPU_DEBUG", K_LEVEL, 0, MGPU_LOG_DEBUG, 0, 0, 0, "0..4 or none, error, warn, info, debug",
                      "log level on stderr; errors returned to the program are printed at info and above "
                      "(default warn)",
                      "0 (none), 1 (error), 2 (warn), 3 (info) or 4 (debug)"},
  [MGPU_SET_EMULATE_GPUS] = {"MGPU_EMULATE_GPUS", K_INT, 0, MGPU_MAX_DEVICES, 0, 0, 0, "an integer in 0..64",
                             "TESTS ONLY: replace GPUs by N emulated devices on host memory (default 0)"},
  [MGPU_SET_EMULATE_SPEED] = {"MGPU_EMULATE_SPEED", K_DOUBLE, 0, 0, 0, MGPU_EMULATE_SPEED_MAX, 0, "a number in 0..1e12",
                              "TESTS ONLY: items/s of an emulated device; 0 = as fast as the host (default 0)"},
  [MGPU_SET_EMULATE_MEM] = {"MGPU_EMULATE_MEM", K_BYTES, MGPU_EMULATE_MEM_MIN, MGPU_EMULATE_MEM_MAX, 0, 0, 0,
                            "a size in 1M..1T (bytes, or with a K, M, G or T suffix)",
                            "TESTS ONLY: memory of an emulated device (default 1G)",
                            "a number of bytes in 1048576..1099511627776"},
  [MGPU_SET_EMULATE_LATENCY] = {"MGPU_EMULATE_LATENCY", K_DOUBLE, 0, 0, 0, MGPU_EMULATE_LATENCY_MAX_S, 0, "a number of seconds in 0..10",
                                "TESTS ONLY: seconds each kernel launch of an emulated device takes on top of its "
                                "items' time (default 0)"},
  [MGPU_SET_EMULATE_WIDTH] = {"MGPU_EMULATE_WIDTH", K_LL, 0, LL_MAX_ITEMS, 0, 0, 0,
                              "an integer in 0..1099511627776 (0: no limit)",
                              "TESTS ONLY: items an emulated device runs at once; a launch takes whole rounds of "
                              "them (default 0: no limit)"},
  [MGPU_SET_EMULATE_OVERLAP] = {"MGPU_EMULATE_OVERLAP", K_BOOL, 0, 1, 0, 0, 0, "0, 1, yes, no, on, off, true or false",
                                "TESTS ONLY: launches of an emulated device on different streams run side by side, "
                                "sharing only its items' speed (default 0: one launch at a time)",
                                "0 or 1"},
  [MGPU_SET_FAULT_INJECT] = {"MGPU_FAULT_INJECT", K_FAULT, 0, 0, 0, 0, 0,
                             "a comma-separated list of launch:GPU:K|all, alloc:GPU:K, const:GPU:K, props:GPU:0, "
                             "hang:GPU:K, hangcoll:GPU:K, stall:GPU:K",
                             "TESTS ONLY: make chosen GPU operations fail or never end (default: none)"},
  [MGPU_SET_TENSOR_SPLIT] = {"MGPU_TENSOR_SPLIT", K_RATIOS, 0, 0, 0, MGPU_SHARE_MAX, 0,
                             "a comma-separated list of shares >= 0, one per GPU and optionally one more for the "
                             "host, not all 0, e.g. 0.6,0.4",
                             "default split of arrays across GPUs (and host) (default: equal shares of the GPUs)",
                             "ntensor_split in 1..65, with that many shares >= 0 in tensor_split, not all 0"},
  [MGPU_SET_RESERVE_THREADS] = {"MGPU_RESERVE_THREADS", K_INT, 0, MGPU_THREADS_MAX, 0, 0, 0,
                                "an integer in 0..4096, fewer than the CPU workers, or auto (MGPU_RESERVE_AUTO)",
                                "CPU workers kept out of batches that GPUs also run; auto: learned per kernel, 0, "
                                "a quarter, half or all of the workers, or every GPU out (default: auto with a "
                                "GPU and a default MGPU_NUM_THREADS, else 0)",
                                "an integer in 0..4096, fewer than the CPU workers, or MGPU_RESERVE_AUTO"},
  [MGPU_SET_TIMEOUT] = {"MGPU_TIMEOUT", K_DOUBLE, 0, 0, 0, MGPU_TIMEOUT_MAX_S, 0, "a number of seconds in 0..1e6 (0: off) or auto",
                        "seconds a GPU chunk or collective may take before the GPU counts as hung (retired) or "
                        "the collective fails; auto: 10 times the predicted time, at least 30 s (300 s with no "
                        "prediction); 0 = off (default auto)",
                        "a number of seconds in 0..1e6 (0: off) or MGPU_TIMEOUT_AUTO"},
  [MGPU_SET_MPI] = {"MGPU_MPI", K_BOOL, 0, 1, 0, 0, 0, "auto, off, 1, 0, yes, no, on, true or false",
                    "auto: where the program has initialised MPI, the runtime spans the ranks of its communicator "
                    "(MPI_COMM_WORLD unless given) when they are more than one; off: this process alone "
                    "(default auto)",
                    "1 (auto) or 0 (off)"},
  [MGPU_SET_MODEL_DIR] = {"MGPU_MODEL_DIR", K_DIR, 0, 0, 0, 0, 0,
                          "off, or a directory path of 1..1023 characters, not blank",
                          "where what the runtime learns about each named kernel is kept between processes; off: "
                          "nothing kept (default $XDG_CACHE_HOME/mgpurt, else $HOME/.cache/mgpurt)",
                          "NULL (unset), \"off\", or a path of 1..1023 characters, not blank"},
};

const char *mgpu__config_name(int id) { return settings[id].name; }
const char *mgpu__config_doc(int id) { return settings[id].doc; }
const char *mgpu__config_source_name(int src) {
  static const char *const names[] = {"default", "environment", "argument", "derived"};
  return names[src];
}

/* Every field "unset". */
static void config_unset(mgpu_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
  cfg->num_threads = -1;
  cfg->reserve_threads = -1;
  cfg->num_gpus = -1;
  cfg->ndevices = -1;
  cfg->device_to_core_ratio = 0;
  cfg->max_batch_size = 0;
  cfg->streams_per_gpu = -1;
  cfg->sched = MGPU_SCHED_UNSET;
  cfg->stats = -1;
  cfg->trace = NULL;
  cfg->debug = -1;
  cfg->ntensor_split = -1;
  cfg->ignore_env = 0;
  cfg->timeout = -1;
  cfg->mpi = -1;
  cfg->mpi_comm = NULL;
  cfg->mpi_comm_size = 0;
  cfg->model_dir = NULL;
}

/* The caller's sizeof, not the library's: a program built against an older
 * header has fewer fields, and nothing past them is written. */
MGPU_API void mgpu_config_init_size(mgpu_config_t *cfg, size_t size) {
  if (!cfg || size < sizeof cfg->size) return;
  mgpu_config_t unset;
  config_unset(&unset);
  mgpu__abi_out(cfg, size, &unset, sizeof unset);
  if (size > sizeof unset) memset((char *)cfg + sizeof unset, 0, size - sizeof unset);
  cfg->size = size;
}

void mgpu__testcfg_init(mgpu__testcfg_t *t) {
  memset(t, 0, sizeof *t);
  t->emulate_gpus = -1;
  t->emulate_speed = -1;
  t->emulate_mem = 0;
  t->emulate_latency = -1;
  t->emulate_width = -1;
  t->emulate_overlap = -1;
  t->fault_inject = NULL;
}

static int parse_bool(const char *s, int *out) {
  char buf[32];
  if (strlen(s) >= sizeof buf) return -1;
  const char *t = mgpu__parse_trim(s, buf, sizeof buf);
  static const char *const yes[] = {"1", "yes", "on", "true"}, *const no[] = {"0", "no", "off", "false"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    if (strcasecmp(t, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(t, no[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

static int parse_sched(const char *s, mgpu_sched_t *out) {
  char buf[32];
  if (strlen(s) >= sizeof buf) return -1;
  const char *t = mgpu__parse_trim(s, buf, sizeof buf);
  static const char *const names[] = {"", "steal", "static", "cpu", "gpu"};
  for (int i = MGPU_SCHED_STEAL; i <= MGPU_SCHED_GPU; i++)
    if (strcasecmp(t, names[i]) == 0) return *out = (mgpu_sched_t)i, 0;
  return -1;
}

static int parse_level(const char *s, int *out) {
  char buf[32];
  if (strlen(s) >= sizeof buf) return -1;
  const char *t = mgpu__parse_trim(s, buf, sizeof buf);
  static const char *const names[] = {"none", "error", "warn", "info", "debug"};
  for (int i = MGPU_LOG_NONE; i <= MGPU_LOG_DEBUG; i++)
    if (strcasecmp(t, names[i]) == 0) return *out = i, 0;
  if (strcasecmp(t, "warning") == 0) return *out = MGPU_LOG_WARN, 0;
  long long v;
  if (mgpu__parse_ll(t, MGPU_LOG_NONE, MGPU_LOG_DEBUG, &v) == 0) return *out = (int)v, 0;
  return -1;
}

static const char *sched_name(mgpu_sched_t s) {
  static const char *const names[] = {"unset", "steal", "static", "cpu", "gpu"};
  return names[s];
}
static const char *level_text(int l) {
  static const char *const names[] = {"none", "error", "warn", "info", "debug"};
  return names[l];
}

/* ------------------------------------------------------------ the table walk */

static mgpu_status_t bad_env(int id, const char *value, const char *why) {
  const setting_t *s = &settings[id];
  return mgpu__fail(MGPU_EINVAL, "%s='%s' is invalid%s%s: expected %s", s->name, value, why && *why ? ": " : "",
                    why ? why : "", s->accepted);
}

/* How a message names a field: of mgpu_init's cfg, or of mgpu__testcfg_t for
 * the settings for tests. */
static const char *field_of(int id) {
  bool test = id == MGPU_SET_EMULATE_GPUS || id == MGPU_SET_EMULATE_SPEED || id == MGPU_SET_EMULATE_MEM ||
              id == MGPU_SET_EMULATE_LATENCY || id == MGPU_SET_EMULATE_WIDTH || id == MGPU_SET_EMULATE_OVERLAP ||
              id == MGPU_SET_FAULT_INJECT;
  return test ? "mgpu__testcfg_t." : "cfg->";
}

static mgpu_status_t bad_arg(int id, const char *field, const char *value) {
  const setting_t *s = &settings[id];
  return mgpu__fail(MGPU_EINVAL, "mgpu_init: %s%s = %s is invalid (the field of %s): expected %s, or leave it unset",
                    field_of(id), field, value, s->name, s->field_accepted ? s->field_accepted : s->accepted);
}

/* A path setting's text with the blanks around it trimmed, into buf (len
 * bytes): NULL, with why, where it is empty or too long. */
static const char *text_path(const char *value, char *buf, size_t len, char *why, size_t whylen) {
  if (strlen(value) >= len) {
    snprintf(why, whylen, "the path is too long (at most %zu characters)", len - 1);
    return NULL;
  }
  const char *t = mgpu__parse_trim(value, buf, len);
  if (!*t) {
    snprintf(why, whylen, "the path is empty");
    return NULL;
  }
  return t;
}

/* MGPU_TRACE's text: a path whose %s are substitutions. 0, or -1 with why. */
static int text_trace(const char *value, mgpu__config_t *c, char *why, size_t whylen) {
  char buf[sizeof c->trace_path];
  const char *t = text_path(value, buf, sizeof buf, why, whylen);
  if (!t || !mgpu__trace_pattern_ok(t, why, whylen)) return -1;
  snprintf(c->trace_path, sizeof c->trace_path, "%s", t);
  c->v.trace = c->trace_path;
  return 0;
}

/* MGPU_FAULT_INJECT's text: a fault plan (fault.c). 0, or -1 with why. */
static int text_fault(const char *value, mgpu__config_t *c, char *why, size_t whylen) {
  mgpu__fault_plan_t plan;
  if (strlen(value) >= sizeof c->fault_spec) {
    snprintf(why, whylen, "the plan is too long");
    return -1;
  }
  if (mgpu__fault_parse(value, &plan, why, whylen) != 0) return -1;
  snprintf(c->fault_spec, sizeof c->fault_spec, "%s", value);
  c->test.fault_inject = c->fault_spec;
  return 0;
}

/* One environment value of a setting for tests into c->test. 0, or -1 (with
 * why where the parser gives one). */
static int text_test(int id, const char *value, mgpu__config_t *c, char *why, size_t whylen) {
  const setting_t *s = &settings[id];
  mgpu__testcfg_t *tc = &c->test;
  long long ll;
  double d;
  int rc = -1;
  switch (id) {
  case MGPU_SET_EMULATE_GPUS:
    if ((rc = mgpu__parse_ll(value, s->lo, s->hi, &ll)) == 0) tc->emulate_gpus = (int)ll;
    break;
  case MGPU_SET_EMULATE_SPEED:
    if ((rc = mgpu__parse_double(value, s->dlo, s->dhi, &d)) == 0) tc->emulate_speed = d;
    break;
  case MGPU_SET_EMULATE_MEM:
    if ((rc = mgpu__parse_bytes(value, s->lo, s->hi, &ll)) == 0) tc->emulate_mem = ll;
    break;
  case MGPU_SET_EMULATE_LATENCY:
    if ((rc = mgpu__parse_double(value, s->dlo, s->dhi, &d)) == 0) tc->emulate_latency = d;
    break;
  case MGPU_SET_EMULATE_WIDTH:
    if ((rc = mgpu__parse_ll(value, s->lo, s->hi, &ll)) == 0) tc->emulate_width = ll;
    break;
  case MGPU_SET_EMULATE_OVERLAP: rc = parse_bool(value, &tc->emulate_overlap); break;
  case MGPU_SET_FAULT_INJECT: rc = text_fault(value, c, why, whylen); break;
  }
  return rc;
}

/* MGPU_MODEL_DIR's value: "off", or a path. 0, or -1 with why. */
static int parse_model_dir(const char *value, mgpu__config_t *c, char *why, size_t whylen) {
  char buf[sizeof c->model_dir];
  const char *t = text_path(value, buf, sizeof buf, why, whylen);
  if (!t) return -1;
  if (mgpu__parse_keyword(t, "off")) c->model_dir[0] = 0;
  else snprintf(c->model_dir, sizeof c->model_dir, "%s", t);
  c->v.model_dir = c->model_dir[0] ? c->model_dir : NULL;
  return 0;
}

/* Parse one environment value into the resolved config. */
static mgpu_status_t from_text(int id, const char *value, mgpu__config_t *c) {
  const setting_t *s = &settings[id];
  mgpu_config_t *v = &c->v;
  long long ll;
  double d;
  char why[256] = "";
  int rc = -1;
  switch (id) {
  case MGPU_SET_NUM_THREADS:
    if ((rc = mgpu__parse_ll(value, s->lo, s->hi, &ll)) == 0) v->num_threads = (int)ll;
    break;
  case MGPU_SET_RESERVE_THREADS:
    if (mgpu__parse_keyword(value, "auto")) v->reserve_threads = MGPU_RESERVE_AUTO, rc = 0;
    else if ((rc = mgpu__parse_ll(value, s->lo, s->hi, &ll)) == 0) v->reserve_threads = (int)ll;
    break;
  case MGPU_SET_NUM_GPUS:
    if ((rc = mgpu__parse_ll(value, s->lo, s->hi, &ll)) == 0) v->num_gpus = (int)ll;
    break;
  case MGPU_SET_DEVICES:
    rc = mgpu__parse_int_list(value, (int)s->lo, (int)s->hi, v->devices, MGPU_MAX_DEVICES, &v->ndevices, why,
                              sizeof why);
    break;
  case MGPU_SET_RATIO:
    if ((rc = mgpu__parse_double(value, s->dlo, s->dhi, &d)) == 0 && d <= 0) rc = -1;
    if (rc == 0) v->device_to_core_ratio = d;
    break;
  case MGPU_SET_MAX_BATCH:
    if ((rc = mgpu__parse_ll(value, s->lo, s->hi, &ll)) == 0) v->max_batch_size = ll;
    break;
  case MGPU_SET_STREAMS:
    if ((rc = mgpu__parse_ll(value, s->lo, s->hi, &ll)) == 0) v->streams_per_gpu = (int)ll;
    break;
  case MGPU_SET_SCHED: rc = parse_sched(value, &v->sched); break;
  case MGPU_SET_STATS: rc = parse_bool(value, &v->stats); break;
  case MGPU_SET_MPI:
    if (mgpu__parse_keyword(value, "auto")) v->mpi = 1, rc = 0;
    else rc = parse_bool(value, &v->mpi);
    break;
  case MGPU_SET_TRACE: rc = text_trace(value, c, why, sizeof why); break;
  case MGPU_SET_MODEL_DIR: rc = parse_model_dir(value, c, why, sizeof why); break;
  case MGPU_SET_DEBUG: rc = parse_level(value, &v->debug); break;
  case MGPU_SET_TIMEOUT:
    if (mgpu__parse_keyword(value, "auto")) v->timeout = MGPU_TIMEOUT_AUTO, rc = 0;
    else if ((rc = mgpu__parse_double(value, s->dlo, s->dhi, &d)) == 0) v->timeout = d;
    break;
  case MGPU_SET_TENSOR_SPLIT:
    rc = mgpu__parse_ratios(value, v->tensor_split, MGPU_MAX_DEVICES + 1, &v->ntensor_split, why, sizeof why);
    break;
  default: rc = text_test(id, value, c, why, sizeof why); break;
  }
  return rc == 0 ? MGPU_OK : bad_env(id, value, why);
}

/* A long long field, `unset` when not set, into *to where in its setting's
 * range. */
static mgpu_status_t arg_ll(int id, const char *field, long long x, long long unset, long long *to, bool *set) {
  const setting_t *s = &settings[id];
  if (x == unset) return MGPU_OK;
  if (x < s->lo || x > s->hi) {
    char num[64];
    snprintf(num, sizeof num, "%lld", x);
    return bad_arg(id, field, num);
  }
  *to = x;
  *set = true;
  return MGPU_OK;
}

/* A double field, -1 when not set, into *to where in 0..its setting's dhi
 * (-0 refused, like a negative). */
static mgpu_status_t arg_nonneg(int id, const char *field, double x, double *to, bool *set) {
  const setting_t *s = &settings[id];
  if (x == -1) return MGPU_OK;
  if (!(x >= 0 && !signbit(x) && x <= s->dhi)) {
    char num[64];
    snprintf(num, sizeof num, "%g", x);
    return bad_arg(id, field, num);
  }
  *to = x;
  *set = true;
  return MGPU_OK;
}

static mgpu_status_t arg_devices(const mgpu_config_t *a, mgpu_config_t *v, bool *set) {
  char num[64];
  if (a->ndevices == -1) return MGPU_OK;
  if (a->ndevices < 1 || a->ndevices > MGPU_MAX_DEVICES) {
    snprintf(num, sizeof num, "%d", a->ndevices);
    return bad_arg(MGPU_SET_DEVICES, "ndevices", num);
  }
  for (int i = 0; i < a->ndevices; i++) {
    if (a->devices[i] < 0 || a->devices[i] >= MGPU_MAX_DEVICES) {
      snprintf(num, sizeof num, "%d (entry %d)", a->devices[i], i);
      return bad_arg(MGPU_SET_DEVICES, "devices", num);
    }
    for (int j = 0; j < i; j++)
      if (a->devices[j] == a->devices[i]) {
        snprintf(num, sizeof num, "%d (listed twice)", a->devices[i]);
        return bad_arg(MGPU_SET_DEVICES, "devices", num);
      }
  }
  v->ndevices = a->ndevices;
  memcpy(v->devices, a->devices, sizeof v->devices);
  *set = true;
  return MGPU_OK;
}

static mgpu_status_t arg_ratio(const mgpu_config_t *a, mgpu_config_t *v, bool *set) {
  if (a->device_to_core_ratio == 0) return MGPU_OK;
  if (!(a->device_to_core_ratio > 0 && a->device_to_core_ratio <= settings[MGPU_SET_RATIO].dhi)) {
    char num[64];
    snprintf(num, sizeof num, "%g", a->device_to_core_ratio);
    return bad_arg(MGPU_SET_RATIO, "device_to_core_ratio", num);
  }
  v->device_to_core_ratio = a->device_to_core_ratio;
  *set = true;
  return MGPU_OK;
}

static mgpu_status_t arg_sched(const mgpu_config_t *a, mgpu_config_t *v, bool *set) {
  if (a->sched == MGPU_SCHED_UNSET) return MGPU_OK;
  if ((int)a->sched < MGPU_SCHED_STEAL || (int)a->sched > MGPU_SCHED_GPU) {
    char num[64];
    snprintf(num, sizeof num, "%d", (int)a->sched);
    return bad_arg(MGPU_SET_SCHED, "sched", num);
  }
  v->sched = a->sched;
  *set = true;
  return MGPU_OK;
}

static mgpu_status_t arg_trace(const mgpu_config_t *a, mgpu__config_t *c, bool *set) {
  if (!a->trace) return MGPU_OK;
  if (strlen(a->trace) >= sizeof c->trace_path) {
    char num[64];
    snprintf(num, sizeof num, "(a path of %zu characters)", strlen(a->trace));
    return bad_arg(MGPU_SET_TRACE, "trace", num);
  }
  if (strspn(a->trace, " \t\n\v\f\r") == strlen(a->trace))
    return bad_arg(MGPU_SET_TRACE, "trace", "\"\" (a blank path)");
  char why[64], shown[sizeof c->trace_path + 80];
  if (!mgpu__trace_pattern_ok(a->trace, why, sizeof why)) {
    snprintf(shown, sizeof shown, "\"%s\" (%s)", a->trace, why);
    return bad_arg(MGPU_SET_TRACE, "trace", shown);
  }
  snprintf(c->trace_path, sizeof c->trace_path, "%s", a->trace);
  c->v.trace = c->trace_path;
  *set = true;
  return MGPU_OK;
}

static mgpu_status_t arg_fault(const mgpu__testcfg_t *ta, mgpu__config_t *c, bool *set) {
  if (!ta->fault_inject) return MGPU_OK;
  mgpu__fault_plan_t plan;
  char why[256];
  if (strlen(ta->fault_inject) >= sizeof c->fault_spec ||
      mgpu__fault_parse(ta->fault_inject, &plan, why, sizeof why) != 0)
    return bad_arg(MGPU_SET_FAULT_INJECT, "fault_inject", ta->fault_inject);
  snprintf(c->fault_spec, sizeof c->fault_spec, "%s", ta->fault_inject);
  c->test.fault_inject = c->fault_spec;
  *set = true;
  return MGPU_OK;
}

static mgpu_status_t arg_tensor_split(const mgpu_config_t *a, mgpu_config_t *v, bool *set) {
  if (a->ntensor_split == -1) return MGPU_OK;
  char why[256];
  if (a->ntensor_split < 1 || a->ntensor_split > MGPU_MAX_DEVICES + 1) {
    char num[64];
    snprintf(num, sizeof num, "%d", a->ntensor_split);
    return bad_arg(MGPU_SET_TENSOR_SPLIT, "ntensor_split", num);
  }
  if (mgpu__check_ratios(a->tensor_split, a->ntensor_split, why, sizeof why) != 0)
    return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->tensor_split (the field of MGPU_TENSOR_SPLIT) is invalid: %s",
                      why);
  v->ntensor_split = a->ntensor_split;
  memcpy(v->tensor_split, a->tensor_split, sizeof v->tensor_split);
  *set = true;
  return MGPU_OK;
}

/* Take a field set in the caller's mgpu_config_t, or for the settings for
 * tests in *ta, checking its range. */
/* mgpu_config_t.model_dir: NULL (unset), "off", or a path. */
static mgpu_status_t arg_model_dir(const mgpu_config_t *a, mgpu__config_t *c, bool *set) {
  if (!a->model_dir) return MGPU_OK;
  char num[64], why[96], shown[sizeof c->model_dir + 120];
  if (strlen(a->model_dir) >= sizeof c->model_dir) {
    snprintf(num, sizeof num, "(a path of %zu characters)", strlen(a->model_dir));
    return bad_arg(MGPU_SET_MODEL_DIR, "model_dir", num);
  }
  if (parse_model_dir(a->model_dir, c, why, sizeof why) != 0) {
    snprintf(shown, sizeof shown, "\"%s\" (%s)", a->model_dir, why);
    return bad_arg(MGPU_SET_MODEL_DIR, "model_dir", shown);
  }
  *set = true;
  return MGPU_OK;
}

static mgpu_status_t from_arg(int id, const mgpu_config_t *a, const mgpu__testcfg_t *ta, mgpu__config_t *c,
                              bool *set) {
  const setting_t *s = &settings[id];
  mgpu_config_t *v = &c->v;
  mgpu__testcfg_t *tc = &c->test;
  char num[64];
  *set = false;
#define INT_FIELD(field) INT_FIELD_OF(a, v, field)
#define INT_FIELD_OF(from, to, field)                                      \
  if ((from)->field == -1) return MGPU_OK;                                 \
  if ((from)->field < s->lo || (from)->field > s->hi) {                    \
    snprintf(num, sizeof num, "%lld", (long long)(from)->field);           \
    return bad_arg(id, #field, num);                                       \
  }                                                                        \
  (to)->field = (from)->field;                                             \
  *set = true;                                                             \
  return MGPU_OK
  switch (id) {
  case MGPU_SET_NUM_THREADS: INT_FIELD(num_threads);
  case MGPU_SET_RESERVE_THREADS:
    if (a->reserve_threads == MGPU_RESERVE_AUTO) {
      v->reserve_threads = MGPU_RESERVE_AUTO;
      *set = true;
      return MGPU_OK;
    }
    INT_FIELD(reserve_threads);
  case MGPU_SET_NUM_GPUS: INT_FIELD(num_gpus);
  case MGPU_SET_STREAMS: INT_FIELD(streams_per_gpu);
  case MGPU_SET_EMULATE_GPUS: INT_FIELD_OF(ta, tc, emulate_gpus);
  case MGPU_SET_EMULATE_OVERLAP: INT_FIELD_OF(ta, tc, emulate_overlap);
  case MGPU_SET_STATS: INT_FIELD(stats);
  case MGPU_SET_MPI: INT_FIELD(mpi);
  case MGPU_SET_DEBUG: INT_FIELD(debug);
  case MGPU_SET_DEVICES: return arg_devices(a, v, set);
  case MGPU_SET_RATIO: return arg_ratio(a, v, set);
  case MGPU_SET_MAX_BATCH: return arg_ll(id, "max_batch_size", a->max_batch_size, 0, &v->max_batch_size, set);
  case MGPU_SET_SCHED: return arg_sched(a, v, set);
  case MGPU_SET_TRACE: return arg_trace(a, c, set);
  case MGPU_SET_MODEL_DIR: return arg_model_dir(a, c, set);
  case MGPU_SET_EMULATE_SPEED: return arg_nonneg(id, "emulate_speed", ta->emulate_speed, &tc->emulate_speed, set);
  case MGPU_SET_TIMEOUT:
    if (a->timeout == MGPU_TIMEOUT_AUTO) {
      v->timeout = MGPU_TIMEOUT_AUTO;
      *set = true;
      return MGPU_OK;
    }
    return arg_nonneg(id, "timeout", a->timeout, &v->timeout, set);
  case MGPU_SET_EMULATE_MEM: return arg_ll(id, "emulate_mem", ta->emulate_mem, 0, &tc->emulate_mem, set);
  case MGPU_SET_EMULATE_LATENCY:
    return arg_nonneg(id, "emulate_latency", ta->emulate_latency, &tc->emulate_latency, set);
  case MGPU_SET_EMULATE_WIDTH: return arg_ll(id, "emulate_width", ta->emulate_width, -1, &tc->emulate_width, set);
  case MGPU_SET_FAULT_INJECT: return arg_fault(ta, c, set);
  case MGPU_SET_TENSOR_SPLIT: return arg_tensor_split(a, v, set);
  }
#undef INT_FIELD
#undef INT_FIELD_OF
  return MGPU_OK;
}

/* *out with every setting at its default where that does not depend on the
 * machine, "unset" where it does. */
static void set_defaults(mgpu__config_t *out) {
  memset(out, 0, sizeof *out);
  config_unset(&out->v);
  out->v.streams_per_gpu = MGPU_STREAMS_DEFAULT;
  out->v.sched = MGPU_SCHED_STEAL;
  out->v.stats = 0;
  out->v.debug = MGPU_LOG_WARN;
  out->test.emulate_gpus = 0;
  out->test.emulate_speed = 0;
  out->test.emulate_mem = MGPU_EMULATE_MEM_DEFAULT;
  out->test.emulate_latency = 0;
  out->test.emulate_width = 0;
  out->test.emulate_overlap = 0;
  out->test.fault_inject = NULL;
  out->v.timeout = MGPU_TIMEOUT_AUTO;
  out->v.mpi = 1;
}

mgpu_status_t mgpu__config_parse(const mgpu_config_t *user, const mgpu__testcfg_t *test, mgpu__config_t *out) {
  /* The caller's fields over "unset" for those its layout lacks. */
  mgpu_config_t a;
  config_unset(&a);
  if (user) {
    size_t bytes;
    mgpu_status_t st = mgpu__abi_size("mgpu_init", "cfg->size", "mgpu_config_t", user->size, MGPU__CONFIG_SIZE_V1,
                                      sizeof a, _Alignof(mgpu_config_t), true, &bytes);
    if (st != MGPU_OK) return st;
    mgpu__abi_in(&a, sizeof a, user, bytes);
    a.size = sizeof a;
  }
  /* A flag, with no variable of its own to be unset by: only 0 and 1 mean
   * something. */
  if (a.ignore_env != 0 && a.ignore_env != 1)
    return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->ignore_env = %d is invalid: expected 0 (the MGPU_* variables "
                                   "count, the default) or 1 (they are ignored)", a.ignore_env);
  const mgpu_config_t *arg = &a;
  mgpu__testcfg_t test_unset;
  mgpu__testcfg_init(&test_unset);
  if (!test) test = &test_unset;
  set_defaults(out);
  /* Read by the ranks' layer at mgpu_init (dist.c), which checks them. */
  out->v.mpi_comm = arg->mpi_comm;
  out->v.mpi_comm_size = arg->mpi_comm_size;
  out->v.ignore_env = arg->ignore_env;
  out->thread_limit = omp_get_thread_limit();
  /* A runtime that ignores the environment reads no directory from it. */
  if (arg->ignore_env || mgpu__store_default_dir(out->model_dir, sizeof out->model_dir) != 0) out->model_dir[0] = 0;
  out->v.model_dir = out->model_dir[0] ? out->model_dir : NULL;

  for (int id = 0; id < MGPU_SET_COUNT; id++) {
    bool set;
    mgpu_status_t st = from_arg(id, arg, test, out, &set);
    if (st != MGPU_OK) return st;
    if (set) {
      out->source[id] = MGPU_SRC_ARG;
      continue;
    }
    const char *env = arg->ignore_env ? NULL : getenv(settings[id].name);
    if (env) {
      st = from_text(id, env, out);
      if (st != MGPU_OK) return st;
      out->source[id] = MGPU_SRC_ENV;
    }
  }
  return MGPU_OK;
}

/* With a GPU and MGPU_NUM_THREADS derived, the reserve is auto: the GPUs' host
 * side (staging copies, the driver's threads) can need more than the one core
 * per GPU left out, and no fixed count is right on every machine. Reserve
 * workers stay workers: they run kernels without a GPU function and help with
 * the staging copies. */
int mgpu__default_reserve(int gpus, bool threads_derived) {
  return threads_derived && gpus >= 1 ? MGPU_RESERVE_AUTO : 0;
}

/* The reserve that auto tries against none: a quarter of the CPU workers,
 * leaving at least one; 0 (nothing to try) with fewer than two workers. */
int mgpu__auto_reserve(int threads) { return threads >= 2 ? MGPU_MAX(1, threads / 4) : 0; }

/* Auto's third way: half of the CPU workers, more than the quarter and
 * fewer than all; 0 where no count lies between (fewer than three workers).
 * It pays where busy virtual CPUs are taken from the process at times. */
int mgpu__auto_reserve_half(int threads) {
  int q = mgpu__auto_reserve(threads), h = MGPU_MAX(q + 1, threads / 2);
  return q > 0 && h < threads ? h : 0;
}

/* How messages name the GPUs: emulated or not. */
static const char *gpus_word(const mgpu__config_t *c) { return c->test.emulate_gpus > 0 ? "emulated GPUs" : "GPUs"; }

/* The GPUs: an explicit list, a count, or every visible one. */
static mgpu_status_t resolve_gpus(mgpu__config_t *c, int visible_gpus) {
  mgpu_config_t *v = &c->v;
  const char *gpu_what = gpus_word(c);
  if (v->ndevices > 0) {
    if (v->num_gpus >= 0 && v->num_gpus != v->ndevices)
      return mgpu__fail(MGPU_EINVAL, "MGPU_NUM_GPUS=%d conflicts with MGPU_DEVICES, which lists %d devices", v->num_gpus,
                        v->ndevices);
    for (int i = 0; i < v->ndevices; i++)
      if (v->devices[i] >= visible_gpus) {
        if (visible_gpus == 0)
          return mgpu__fail(MGPU_ENODEV, "MGPU_DEVICES lists device %d but no %s are usable on this machine",
                            v->devices[i], gpu_what);
        return mgpu__fail(MGPU_EINVAL, "MGPU_DEVICES: device %d does not exist: expected indices in 0..%d (%d %s visible)",
                          v->devices[i], visible_gpus - 1, visible_gpus, gpu_what);
      }
    v->num_gpus = v->ndevices;
    if (c->source[MGPU_SET_NUM_GPUS] == MGPU_SRC_DEFAULT) c->source[MGPU_SET_NUM_GPUS] = MGPU_SRC_DERIVED;
  } else if (v->num_gpus >= 0) {
    if (v->num_gpus > visible_gpus) {
      if (visible_gpus == 0)
        return mgpu__fail(MGPU_ENODEV, "MGPU_NUM_GPUS=%d but no %s are usable on this machine (no device, no driver, "
                                       "or a build without CUDA)", v->num_gpus, gpu_what);
      return mgpu__fail(MGPU_EINVAL, "MGPU_NUM_GPUS=%d is more than the %d %s visible: expected 0..%d", v->num_gpus,
                        visible_gpus, gpu_what, visible_gpus);
    }
    v->ndevices = v->num_gpus;
    for (int i = 0; i < v->num_gpus; i++) v->devices[i] = i;
  } else {
    v->num_gpus = MGPU_MIN(visible_gpus, MGPU_MAX_DEVICES);
    v->ndevices = v->num_gpus;
    for (int i = 0; i < v->num_gpus; i++) v->devices[i] = i;
    c->source[MGPU_SET_NUM_GPUS] = MGPU_SRC_DERIVED;
  }
  if (c->source[MGPU_SET_DEVICES] == MGPU_SRC_DEFAULT) c->source[MGPU_SET_DEVICES] = MGPU_SRC_DERIVED;
  return MGPU_OK;
}

/* A fault plan names the runtime's GPU numbers: one past them would never fire
 * and the test that set it would pass without testing anything. */
static mgpu_status_t check_fault_gpus(const mgpu__config_t *c) {
  const char *spec = c->test.fault_inject;
  if (!spec) return MGPU_OK;
  mgpu__fault_plan_t plan;
  char why[256];
  if (mgpu__fault_parse(spec, &plan, why, sizeof why) != 0 ||
      mgpu__fault_check_gpus(&plan, c->v.num_gpus, why, sizeof why) != 0)
    return mgpu__fail(MGPU_EINVAL, "MGPU_FAULT_INJECT='%s' is invalid: %s", spec, why);
  return MGPU_OK;
}

/* CPU workers: undersubscribe by one core per GPU host thread. They are one
 * OpenMP team, which OMP_THREAD_LIMIT caps (the team's first thread included).
 * *derived_p: the count is the default's. */
static mgpu_status_t resolve_threads(mgpu__config_t *c, int usable_cores, bool *derived_p) {
  mgpu_config_t *v = &c->v;
  int limit = c->thread_limit > 0 ? c->thread_limit : INT_MAX;
  bool derived = *derived_p = v->num_threads < 0;
  if (derived) {
    v->num_threads = MGPU_MAX(1, MGPU_MIN(usable_cores - v->num_gpus, limit));
    c->source[MGPU_SET_NUM_THREADS] = MGPU_SRC_DERIVED;
  } else if (v->num_threads > limit) {
    return mgpu__fail(MGPU_EINVAL, "MGPU_NUM_THREADS=%d is more than OMP_THREAD_LIMIT=%d allows (the CPU workers are "
                                   "one OpenMP team): expected 0..%d, or raise OMP_THREAD_LIMIT",
                      v->num_threads, limit, limit);
  }
  if (limit < INT_MAX)
    snprintf(c->thread_limit_text, sizeof c->thread_limit_text, "%d", limit);
  else
    snprintf(c->thread_limit_text, sizeof c->thread_limit_text, "(unset)");
  if (v->num_threads == 0 && v->num_gpus == 0)
    return mgpu__fail(MGPU_EINVAL, "MGPU_NUM_THREADS=0 leaves no worker: it needs at least one GPU, and none is used");
  return MGPU_OK;
}

/* A policy that leaves no worker for any batch it governs would only fail
 * every submit later. */
static mgpu_status_t check_sched(const mgpu__config_t *c) {
  const mgpu_config_t *v = &c->v;
  if (v->sched == MGPU_SCHED_CPU && v->num_threads == 0)
    return mgpu__fail(MGPU_EINVAL, "MGPU_SCHED=cpu runs every batch on the CPU workers, and MGPU_NUM_THREADS=0 leaves "
                                   "none: expected MGPU_NUM_THREADS of at least 1, or MGPU_SCHED=steal, static or gpu");
  if (v->sched == MGPU_SCHED_GPU && v->num_gpus == 0) {
    if (c->source[MGPU_SET_NUM_GPUS] == MGPU_SRC_DERIVED)
      return mgpu__fail(MGPU_ENODEV, "MGPU_SCHED=gpu runs kernels with a GPU function on GPUs only, and no %s are "
                                     "usable on this machine (no device, no driver, or a build without CUDA)",
                        gpus_word(c));
    return mgpu__fail(MGPU_EINVAL, "MGPU_SCHED=gpu runs kernels with a GPU function on GPUs only, and MGPU_NUM_GPUS=0 "
                                   "leaves none: expected MGPU_NUM_GPUS of at least 1, or MGPU_SCHED=steal, static or cpu");
  }
  return MGPU_OK;
}

/* Default shares of split arrays: one per GPU, then perhaps one for the
 * host. Any other count fits no array the runtime could create. */
static mgpu_status_t check_tensor_split(const mgpu_config_t *v) {
  int nsplit = v->ntensor_split, g = v->num_gpus;
  if (nsplit > 0 && nsplit != g + 1 && !(nsplit == g && g > 0)) {
    char expected[64];
    if (g == 0) snprintf(expected, sizeof expected, "1 (the host)");
    else snprintf(expected, sizeof expected, "%d (GPUs) or %d (GPUs, then the host)", g, g + 1);
    return mgpu__fail(MGPU_EINVAL, "MGPU_TENSOR_SPLIT has %d entr%s but the runtime uses %d GPU%s: expected %s", nsplit,
                      nsplit == 1 ? "y" : "ies", g, g == 1 ? "" : "s", expected);
  }
  return MGPU_OK;
}

/* The reserve: a thread count of the user's own is taken as it is, with no
 * reserve unless asked; with fewer than two CPU workers auto has nothing to
 * try. */
static mgpu_status_t resolve_reserve(mgpu__config_t *c, bool threads_derived) {
  mgpu_config_t *v = &c->v;
  if (v->reserve_threads == -1) {
    v->reserve_threads = mgpu__default_reserve(v->num_gpus, threads_derived);
    c->source[MGPU_SET_RESERVE_THREADS] = MGPU_SRC_DERIVED;
  } else if (v->reserve_threads > 0 && v->reserve_threads >= v->num_threads) {
    char most[32] = "0";
    if (v->num_threads > 1) snprintf(most, sizeof most, "0..%d", v->num_threads - 1);
    return mgpu__fail(MGPU_EINVAL, "MGPU_RESERVE_THREADS=%d leaves no CPU worker for batches that GPUs also run: "
                                   "expected %s with %d CPU workers (MGPU_NUM_THREADS)",
                      v->reserve_threads, most, v->num_threads);
  }
  if (v->reserve_threads == MGPU_RESERVE_AUTO && mgpu__auto_reserve(v->num_threads) == 0) v->reserve_threads = 0;
  return MGPU_OK;
}

/* Text of the effective value of each public setting, for mgpu_info_setting. */
static void texts_public(mgpu__config_t *c) {
  const mgpu_config_t *v = &c->v;
  const size_t len = sizeof c->text[0];
  snprintf(c->text[MGPU_SET_NUM_THREADS], len, "%d", v->num_threads);
  if (v->reserve_threads == MGPU_RESERVE_AUTO) {
    char ways[32];
    int half = mgpu__auto_reserve_half(v->num_threads);
    snprintf(ways, sizeof ways, half ? "%d, %d" : "%d", mgpu__auto_reserve(v->num_threads), half);
    snprintf(c->text[MGPU_SET_RESERVE_THREADS], len, "auto (0, %s or %d per kernel)", ways, v->num_threads);
  } else
    snprintf(c->text[MGPU_SET_RESERVE_THREADS], len, "%d", v->reserve_threads);
  snprintf(c->text[MGPU_SET_NUM_GPUS], len, "%d", v->num_gpus);
  char *t = c->text[MGPU_SET_DEVICES];
  t[0] = '\0';
  for (int i = 0; i < v->ndevices; i++) snprintf(t + strlen(t), len - strlen(t), "%s%d", i ? "," : "", v->devices[i]);
  if (v->ndevices == 0) snprintf(t, len, "(none)");
  if (v->device_to_core_ratio > 0) snprintf(c->text[MGPU_SET_RATIO], len, "%g", v->device_to_core_ratio);
  else snprintf(c->text[MGPU_SET_RATIO], len, "measured per kernel");
  if (v->max_batch_size > 0) snprintf(c->text[MGPU_SET_MAX_BATCH], len, "%lld", v->max_batch_size);
  else snprintf(c->text[MGPU_SET_MAX_BATCH], len, "from free device memory");
  snprintf(c->text[MGPU_SET_STREAMS], len, "%d", v->streams_per_gpu);
  snprintf(c->text[MGPU_SET_SCHED], len, "%s", sched_name(v->sched));
  snprintf(c->text[MGPU_SET_STATS], len, "%d", v->stats);
  snprintf(c->text[MGPU_SET_TRACE], len, "%s", v->trace ? v->trace : "(off)");
  snprintf(c->text[MGPU_SET_MODEL_DIR], len, "%s", v->model_dir ? v->model_dir : "off");
  snprintf(c->text[MGPU_SET_DEBUG], len, "%s", level_text(v->debug));
  t = c->text[MGPU_SET_TENSOR_SPLIT];
  t[0] = '\0';
  for (int i = 0; i < v->ntensor_split; i++)
    snprintf(t + strlen(t), len - strlen(t), "%s%g", i ? "," : "", v->tensor_split[i]);
  if (v->ntensor_split <= 0) snprintf(t, len, "equal shares of the GPUs");
  /* The ranks' layer (dist.c) says what auto found, once it knows. */
  snprintf(c->text[MGPU_SET_MPI], len, "%s", v->mpi ? "auto" : "off");
  if (v->timeout == MGPU_TIMEOUT_AUTO)
    snprintf(c->text[MGPU_SET_TIMEOUT], len, "auto (%g x predicted, at least %g s; %g s unpredicted)",
             MGPU_TIMEOUT_FACTOR, MGPU_TIMEOUT_FLOOR_S, MGPU_TIMEOUT_FIRST_S);
  else if (v->timeout == 0)
    snprintf(c->text[MGPU_SET_TIMEOUT], len, "0 (off)");
  else
    snprintf(c->text[MGPU_SET_TIMEOUT], len, "%g s", v->timeout);
}

/* Text of the effective value of each setting for tests. */
static void texts_test(mgpu__config_t *c) {
  const mgpu__testcfg_t *tc = &c->test;
  const size_t len = sizeof c->text[0];
  snprintf(c->text[MGPU_SET_EMULATE_GPUS], len, "%d", tc->emulate_gpus);
  if (tc->emulate_speed > 0) snprintf(c->text[MGPU_SET_EMULATE_SPEED], len, "%g", tc->emulate_speed);
  else snprintf(c->text[MGPU_SET_EMULATE_SPEED], len, "unlimited");
  snprintf(c->text[MGPU_SET_EMULATE_MEM], len, "%lld", tc->emulate_mem);
  snprintf(c->text[MGPU_SET_EMULATE_LATENCY], len, "%g s", tc->emulate_latency);
  if (tc->emulate_width > 0) snprintf(c->text[MGPU_SET_EMULATE_WIDTH], len, "%lld", tc->emulate_width);
  else snprintf(c->text[MGPU_SET_EMULATE_WIDTH], len, "no limit");
  snprintf(c->text[MGPU_SET_EMULATE_OVERLAP], len, "%d", tc->emulate_overlap);
  snprintf(c->text[MGPU_SET_FAULT_INJECT], len, "%s", tc->fault_inject ? tc->fault_inject : "(none)");
}

mgpu_status_t mgpu__config_resolve(mgpu__config_t *c, int usable_cores, int visible_gpus) {
  bool threads_derived;
  mgpu_status_t st;
  if ((st = resolve_gpus(c, visible_gpus)) != MGPU_OK || (st = check_fault_gpus(c)) != MGPU_OK ||
      (st = resolve_threads(c, usable_cores, &threads_derived)) != MGPU_OK || (st = check_sched(c)) != MGPU_OK ||
      (st = check_tensor_split(&c->v)) != MGPU_OK || (st = resolve_reserve(c, threads_derived)) != MGPU_OK)
    return st;
  texts_public(c);
  texts_test(c);
  return MGPU_OK;
}

double mgpu__deadline_s(double timeout, double predicted_s) {
  if (timeout == 0) return 0;
  if (timeout > 0) return timeout;
  if (!(predicted_s > 0)) return MGPU_TIMEOUT_FIRST_S;
  return MGPU_MAX(MGPU_TIMEOUT_FLOOR_S, MGPU_TIMEOUT_FACTOR * predicted_s);
}

void mgpu__config_warn_unknown(char **envp) {
  /* Variables read elsewhere than the settings table (none yet). */
  static const char *const extra[] = {NULL};
  for (char **e = envp; e && *e; e++) {
    if (strncmp(*e, "MGPU_", strlen("MGPU_")) != 0) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    char name[128];
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, *e, len);
    name[len] = '\0';
    bool known = false;
    for (int id = 0; id < MGPU_SET_COUNT && !known; id++) known = strcmp(name, settings[id].name) == 0;
    for (int i = 0; extra[i] && !known; i++) known = strcmp(name, extra[i]) == 0;
    if (known) continue;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (int id = 0; id < MGPU_SET_COUNT; id++) {
      size_t d = mgpu__edit_distance(name, settings[id].name);
      if (d < best_d) best_d = d, best = settings[id].name;
    }
    mgpu__log(MGPU_LOG_WARN, "unknown environment variable %s is ignored; the nearest known one is %s", name, best);
  }
}
