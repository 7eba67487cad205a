/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpu-run: the bundled driver of libmgpurt. Runs a built-in workload on every
 * CPU core and GPU, checks the answers, compares scheduling modes, and prints
 * the effective configuration (--info). This file reads the command line,
 * starts the base runtime and hands over to the workload's run (compare/modes.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "compare/compare.h"

/* --gpus with every count above the GPUs seen would run nothing, so it is a
 * usage error that reports nothing; true when so. */
static bool gpus_unrunnable(const opts_t *o, int ngpu) {
  int runnable = 0;
  for (int i = 0; i < o->ngpus_list; i++) runnable += o->gpus_list[i] <= ngpu;
  if (!o->ngpus_list || runnable) return false;
  char list[256] = "";
  for (int i = 0; i < o->ngpus_list; i++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", o->gpus_list[i]);
  }
  if (ngpu == 0)
    fprintf(stderr, "%s: nothing ran: --gpus %s needs GPUs and the runtime sees none\n", prog, list);
  else
    fprintf(stderr, "%s: nothing ran: --gpus %s asks for more GPUs than the runtime sees: expected counts in 1..%d\n",
            prog, list, ngpu);
  return true;
}

/* Under an MPI launcher every rank runs this with the same options, and the
 * runtimes span the ranks (base/ranks.c). */
/* The flags of the GPUs alone have no effect where no GPU is in use: said as
 * the library says it of their variables. */
static void warn_gpu_flags(const mgpu_config_t *c, int ncpu) {
  char v[4][32] = {""};
  const char *flag[4] = {"--reserve", "--streams", "--max-batch", "--ratio"};
  if (c->reserve_threads > 0) snprintf(v[0], sizeof v[0], "%d", c->reserve_threads);
  if (c->streams_per_gpu > 0) snprintf(v[1], sizeof v[1], "%d", c->streams_per_gpu);
  if (c->max_batch_size > 0) snprintf(v[2], sizeof v[2], "%lld", c->max_batch_size);
  if (c->device_to_core_ratio > 0) snprintf(v[3], sizeof v[3], "%g", c->device_to_core_ratio);
  for (int i = 0; i < 4; i++)
    if (v[i][0])
      fprintf(stderr, "%s: warning: %s %s has no effect: no GPU is in use, so every batch runs on all %d CPU worker%s\n",
              prog, flag[i], v[i], ncpu, ncpu == 1 ? "" : "s");
}

static int run(opts_t *op) {
  opts_t o = *op;
  if (o.plugin) plugin_load(o.plugin, &o);
  if (o.list) {
    print_list(o.plugin);
    return 0;
  }
  const mgpu_plugin_workload_t *pw = o.info ? NULL : resolve_workload(&o);
  if (o.plot && !o.trace && plot_trace_make() != 0) return EXIT_FAIL;
  mgpu_runtime_t *base = start_runtime(&o, o.mode, 0, !o.compare);
  if (o.info) {
    print_info(base);
    mgpu_finalize(base);
    return 0;
  }
  int ngpu = mgpu_num_gpus(base), ncpu = mgpu_num_cpu_workers(base);
  if (ngpu == 0) warn_gpu_flags(&o.cfg, ncpu);
  if (gpus_unrunnable(&o, ngpu)) {
    mgpu_finalize(base);
    return EXIT_USAGE;
  }
  if (multi_is_workload(o.workload) && mgpu_num_ranks(base) > 1) {
    fprintf(stderr, "%s: nothing ran: workload '%s' runs in one process (its split arrays and device memory are "
            "each rank's own): run it without an MPI launcher, or with --no-mpi\n", prog, o.workload);
    mgpu_finalize(base);
    return EXIT_USAGE;
  }
  if (multi_is_workload(o.workload)) return run_multi(base, &o);
  if (o.multi.nshares || o.multi.min_bytes || o.multi.max_bytes || o.dtype_given)
    usage_error("--split, --dtype, --min-bytes and --max-bytes are for the matvec, reduce, allreduce and "
                "saxpy-resident workloads");
  return run_batch_workload(base, &o, pw);
}

/* Standard input, output and error closed by the caller are opened on
 * /dev/null, so that no file the run opens (a trace) takes their numbers and
 * receives the report. */
static void keep_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd) _exit(EXIT_FAIL);
}

/* A report that could not be written (a full disk) fails the run. */
static void check_stdout(void) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return;
  fprintf(stderr, "%s: cannot write the report to standard output: %s\n", prog, strerror(errno ? errno : EIO));
  _exit(EXIT_FAIL);
}

int main(int argc, char **argv) {
  keep_std_fds();
  atexit(check_stdout);
  opts_t o;
  options_parse(argc, argv, &o);
  /* The model store is read and cleared without a runtime (no GPU needed). */
  if (o.models) return models_list();
  if (o.models_clear) return models_clear(o.workload);
  /* SIGINT's thread first: MPI's threads inherit the blocked signal. */
  if (sigint_start() != 0) return EXIT_FAIL;
  ranks_init(o.no_mpi || o.list);
  int rc = run(&o);
  ranks_finalize();
  return rc;
}
