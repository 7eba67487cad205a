/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * startup.c: the runtimes mgpu-run starts (one per mode or GPU count, with
 * the trace that --trace and --plot ask for) and what it prints about them
 * without running anything: --info and --list.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/run.h"

/* --plot without --trace records the trace in a file of its own in $TMPDIR
 * (or /tmp), removed at exit (atexit: every way out of mgpu-run but a second
 * SIGINT's _exit). */
static char plot_trace[4096];

/* Set when a runtime's trace could not be written at finalize: the run fails. */
bool trace_lost;

static void plot_trace_remove(void) {
  if (plot_trace[0]) unlink(plot_trace);
}

int plot_trace_make(void) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  if (snprintf(plot_trace, sizeof plot_trace, "%s/mgpu-run-trace-XXXXXX", dir) >= (int)sizeof plot_trace) {
    plot_trace[0] = 0;
    fprintf(stderr, "%s: cannot make a temporary trace file for --plot: TMPDIR is too long (%zu bytes)\n", prog,
            strlen(dir));
    return -1;
  }
  int fd = mkstemp(plot_trace);
  if (fd < 0) {
    fprintf(stderr, "%s: cannot make a temporary trace file for --plot in '%s': %s\n", prog, dir, strerror(errno));
    plot_trace[0] = 0;
    return -1;
  }
  close(fd);
  atexit(plot_trace_remove);
  return 0;
}

/* Whether the trace's path names a file per process (MGPU_TRACE's %r or %p). */
static bool trace_per_process(const char *path) {
  for (const char *q = path; *q; q++) {
    if (*q != '%') continue;
    if (*++q == 'r' || *q == 'p') return true;
    if (!*q) break; /* a lone % at the end, which the library refuses */
  }
  return false;
}

mgpu_runtime_t *start_runtime(const opts_t *o, mgpu_sched_t mode, double ratio, bool traced) {
  mgpu_config_t c = o->cfg;
  /* Under an MPI launcher each rank writes its own trace: FILE.rankN past
   * rank 0, unless FILE names one per rank itself. */
  static char rank_trace[1100];
  const char *trace = traced && o->trace ? o->trace : traced && o->plot ? plot_trace : NULL;
  if (trace && trace == o->trace && ranks_rank() > 0 && !trace_per_process(trace)) {
    snprintf(rank_trace, sizeof rank_trace, "%s.rank%d", trace, ranks_rank());
    trace = rank_trace;
  }
  if (trace) c.trace = trace;
  if (mode) c.sched = mode;
  if (ratio > 0 && c.device_to_core_ratio == 0) c.device_to_core_ratio = ratio;
  mgpu_runtime_t *rt;
  mgpu_status_t st = mgpu_init(&c, &rt);
  if (st != MGPU_OK) {
    /* The library gives the reason in mgpu_last_error (it prints errors it
     * returns only at MGPU_DEBUG=info); settings errors are usage errors. */
    fprintf(stderr, "%s: %s\n", prog, mgpu_last_error()[0] ? flagname_apply(mgpu_last_error()) : mgpu_strerror(st));
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
const char *reserve_setting(mgpu_runtime_t *rt) {
  static mgpu_setting_t s;
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++)
    if (!strcmp(s.name, "MGPU_RESERVE_THREADS")) return s.value;
  return "0";
}

mgpu_sched_t runtime_sched(mgpu_runtime_t *rt) {
  mgpu_setting_t s = MGPU_SETTING_INIT;
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++) {
    if (strcmp(s.name, "MGPU_SCHED")) continue;
    if (!strcmp(s.value, "static")) return MGPU_SCHED_STATIC;
    if (!strcmp(s.value, "cpu")) return MGPU_SCHED_CPU;
    if (!strcmp(s.value, "gpu")) return MGPU_SCHED_GPU;
  }
  return MGPU_SCHED_STEAL;
}

const char *mode_name(mgpu_sched_t m) {
  switch (m) {
  case MGPU_SCHED_STATIC: return "static";
  case MGPU_SCHED_CPU: return "cpu";
  case MGPU_SCHED_GPU: return "gpu";
  default: return "steal";
  }
}

/* Why rt uses no GPU, as far as its settings say: MGPU_NUM_GPUS=0 given (by
 * the flag or the variable), else the runtime saw none. The library does
 * not report why its probe found no device. */
static const char *no_gpu_reason(mgpu_runtime_t *rt) {
  static char why[320];
  mgpu_setting_t s = MGPU_SETTING_INIT;
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++) {
    if (strcmp(s.name, "MGPU_NUM_GPUS") || strcmp(s.value, "0")) continue;
    if (strcmp(s.source, "argument") && strcmp(s.source, "environment")) break;
    snprintf(why, sizeof why, "%s", flagname_apply("MGPU_NUM_GPUS=0"));
    return why;
  }
  const char *probe = mgpu_gpu_probe_error(rt);
  if (probe) {
    snprintf(why, sizeof why, "%s", probe);
    return why;
  }
  return "the runtime sees none";
}

void print_info(mgpu_runtime_t *rt) {
  printf("libmgpurt %s\n\nSettings (value, source):\n", mgpu_version());
  mgpu_setting_t s = MGPU_SETTING_INIT;
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
           "run, or every GPU where the GPUs add under 30%%, where its timed batches find that faster "
           "(MGPU_RESERVE_THREADS=auto)", ways, all);
  }
  else if (atoi(reserve))
    printf(", the last %d kept out of batches that GPUs also run", atoi(reserve));
  printf("\n");
  int g = mgpu_num_gpus(rt);
  printf("GPUs: %d in use", g);
  if (g == 0) printf(" (%s)", no_gpu_reason(rt));
  printf("\n");
  for (int i = 0; i < g; i++) {
    mgpu_device_info_t d = MGPU_DEVICE_INFO_INIT;
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

/* Finalize rt, saying why where the trace could not be written; true then. */
bool finalize_runtime(mgpu_runtime_t *rt) {
  if (mgpu_finalize_checked(rt) == MGPU_OK) return false;
  fprintf(stderr, "%s: %s\n", prog, flagname_apply(mgpu_last_error()));
  trace_lost = true;
  return true;
}

/* Finalize a runtime of one mode (or GPU count), with the constant made on it. */
void finish_runtime(work_t *w, mgpu_runtime_t *rt) {
  if (w->kconst_rt == rt) {
    mgpu_const_destroy(w->kconst);
    w->kconst = NULL;
    w->kconst_rt = NULL;
  }
  finalize_runtime(rt);
}

/* --list: the workloads, the built-in kernels and the plugin's workloads. */
void print_list(const char *plugin) {
  printf("Workloads:");
  for (int i = 0; workloads[i]; i++) printf(" %s", workloads[i]);
  printf("\nBuilt-in kernels:\n");
  for (int i = 0; i < mgpu_builtin_count(); i++) printf("  %-20s %s\n", mgpu_builtin_name(i), mgpu_builtin_doc(i));
  if (plugin_count()) printf("Plugin workloads (%s):\n", plugin);
  for (int i = 0; i < plugin_count(); i++) {
    const mgpu_plugin_workload_t *p = plugin_workload(i);
    printf("  %-20s %s\n", p->name, p->doc ? p->doc : "");
  }
}
