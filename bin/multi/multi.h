/* SPDX-License-Identifier: BSD-3-Clause */
/* multi.h: mgpu-run's data-parallel workloads (split arrays and collectives). */
#ifndef MGPU_RUN_MULTI_H
#define MGPU_RUN_MULTI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "mgpurt.h"

typedef struct {
  const char *workload;  /* matvec, reduce, allreduce, saxpy-resident */
  long long items;       /* -1: default */
  int size;              /* matvec: columns (-1: default) */
  int repeat;
  unsigned long long seed;
  bool verify, json, f64;
  int nshares;           /* --split, 0 when not given */
  double shares[MGPU_MAX_DEVICES + 1];
  size_t min_bytes, max_bytes; /* allreduce sweep */
  const atomic_int *stop; /* set by SIGINT: stop after the run in flight (NULL: never) */
} multi_opts_t;

/* 1 when name is one of these workloads. */
int multi_is_workload(const char *name);
/* Run it on rt; prints the report; returns the exit status (0, 1 on failure,
 * 130 when o->stop was set: the report then covers the runs made). */
int multi_run(mgpu_runtime_t *rt, const multi_opts_t *o);

/* common.c: what the workloads share. */
/* SIGINT came: stop after the run in flight. */
bool multi_stopped(const multi_opts_t *o);
/* The exit status after the report: SIGINT, whatever else happened (as for
 * the batch workloads), then a failure. */
int multi_outcome(const multi_opts_t *o, long long bad);
/* SIGINT before the first timed run: says there is nothing to report. */
void multi_none_timed(const char *workload);
/* Monotonic seconds. */
double multi_now(void);
/* Reports the failed call what with the library's last error; returns 1. */
int multi_fail(const char *what);

/* allreduce.c: the allreduce workload on rt; returns the exit status. */
int multi_allreduce(mgpu_runtime_t *rt, const multi_opts_t *o);

/* rawnccl.c: the same all-reduce sweep written directly against NCCL and the
 * CUDA runtime, for comparison. Fills seconds[i] per operation for bytes[i];
 * returns 0, or -1 with a message in why (no NCCL in this build, or a failure). */
int raw_nccl_allreduce(int ngpus, const int *devs, const size_t *bytes, int nsizes, int warmup, int iters,
                       double *seconds, char *why, size_t whylen);

#endif
