/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common.c: what the multi-GPU workloads (multi.c, allreduce.c) share: the
 * stop that SIGINT asks for, the exit status, the clock and the message of a
 * failed call.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "util/util.h"
#include "multi/multi.h"

/* SIGINT came: stop after the run in flight. */
bool multi_stopped(const multi_opts_t *o) { return o->stop && atomic_load(o->stop); }

/* The exit status after the report: SIGINT, whatever else happened (as for
 * the batch workloads), then a failure. */
int multi_outcome(const multi_opts_t *o, long long bad) { return multi_stopped(o) ? 130 : bad ? 1 : 0; }

/* SIGINT before the first timed run: nothing to report. */
void multi_none_timed(const char *workload) {
  fprintf(stderr, "mgpu-run: %s: interrupted before the first timed run; nothing to report\n", workload);
}

double multi_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int multi_fail(const char *what) {
  fprintf(stderr, "mgpu-run: %s: %s\n", what, flagname_apply(mgpu_last_error()));
  return 1;
}
