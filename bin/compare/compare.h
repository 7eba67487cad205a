/* compare.h: what mgpu-run runs and how often (compare/): a batch workload
 * in one mode, the modes of --compare with their sweep of fixed splits, turns
 * and ceiling, or the GPU counts of --gpus; the multi-GPU workloads, once or
 * per GPU count. */
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

/* ceiling.c */
void ceiling_run(const opts_t *o, work_t *w, int ngpu, size_t start, ceiling_t *c);

#endif
