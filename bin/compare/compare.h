/* SPDX-License-Identifier: BSD-3-Clause */
/* compare.h: what mgpu-run runs and how often (compare/): a batch workload
 * in one mode, the modes of --compare with their sweep of fixed splits, turns,
 * ceiling and bounds, or the GPU counts of --gpus; the multi-GPU workloads,
 * once or per GPU count. */
#ifndef MGPU_RUN_COMPARE_H
#define MGPU_RUN_COMPARE_H

#include "report/report.h"

/* modes.c: each returns the exit status. */
int run_multi(mgpu_runtime_t *base, opts_t *o);
int run_batch_workload(mgpu_runtime_t *base, opts_t *o, const mgpu_plugin_workload_t *pw);

/* sweep.c */
void run_sweep(work_t *w, const opts_t *o, outcome_t *oc, const char *skip);
void sweep_best(outcome_t *oc);
mgpu_runtime_t *start_best_split(const opts_t *o, const outcome_t *oc, const result_t **from);

/* turns.c */
void run_turns(work_t *w, const opts_t *o, outcome_t *oc);

/* ceiling.c: b is --compare's bounds, or NULL. */
void ceiling_run(const opts_t *o, work_t *w, int ngpu, size_t start, ceiling_t *c, const bound_t *b);

/* bound.c: --compare's bounds (bound_t, report/report.h). */
extern const char *const bound_end_why;
void bound_start(bound_t *b, const opts_t *o, const bool mode[4], bool trials, bool ceiling);
void bound_finish(bound_t *b);
bool bound_reached(const bound_t *b);
const char *bound_measure(mgpu_runtime_t *rt, work_t *w, const opts_t *o, result_t *r, const char *mode, bound_t *b);

#endif
