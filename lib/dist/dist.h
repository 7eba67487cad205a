/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist.h: the runtime across MPI ranks, as the layer above sees it. Its
 * files sit above the rest of lib/; dist_mpi.h holds their MPI state.
 */
#ifndef MGPU_DIST_H
#define MGPU_DIST_H

#include "runtime/runtime.h"

/* ------------------------------------------ dist.c (dist_none.c without MPI) */
/* The runtime across MPI ranks (rt->dist; dist_mpi.h holds its state) runs
 * each rank's part of a batch as batches of this process (mgpu__node_submit).
 * In a build without MPI, dist_none.c gives the same calls for a runtime that
 * is never distributed. */
/* mgpu_init: this process's runtime (mgpu__init_test), then its part of the
 * runtime across ranks where MPI spans more than one. */
mgpu_status_t mgpu__dist_init(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, mgpu_runtime_t **rt_p);
/* mgpu_finalize_checked of a runtime across ranks (every rank calls it),
 * after mgpu__dist_close; then this process's runtime. */
mgpu_status_t mgpu__dist_finalize(mgpu_runtime_t *rt);
int mgpu__dist_rank(const mgpu_runtime_t *rt);
int mgpu__dist_size(const mgpu_runtime_t *rt);

/* dist_batch.c: a batch across ranks. Its event is its own object (a
 * handle of kind MGPU_H_DEVENT); the calls on it make the MPI calls that
 * drive it, from the caller's thread. mgpu__dist_submit is mgpu_submit's
 * work, its messages naming the public call fn (mgpu_submit or mgpu_run). */
mgpu_status_t mgpu__dist_submit(mgpu_runtime_t *rt, const char *fn, const mgpu_batch_t *batch, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p);
mgpu_status_t mgpu__dist_plan(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t *first_p, size_t *count_p);
/* Run the batch across ranks still open to its end (before finalize). */
void mgpu__dist_close(mgpu_runtime_t *rt);
bool mgpu__dist_is_event(const mgpu_event_t *ev);
mgpu_status_t mgpu__dist_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats);
mgpu_status_t mgpu__dist_event_test(mgpu_event_t *ev);
mgpu_status_t mgpu__dist_event_cancel(mgpu_event_t *ev);
mgpu_status_t mgpu__dist_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p);
void mgpu__dist_event_release(mgpu_event_t *ev);

/* dist_array.c: arrays split across the ranks, then each rank's part
 * across its GPUs and host as on one process. */
mgpu_status_t mgpu__dist_array_create(mgpu_runtime_t *rt, size_t n, size_t elem_size, int nshares,
                                      const double *shares, mgpu_array_t **a_p);
mgpu_status_t mgpu__dist_array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum);

/* dist_coll.c: the collectives over every GPU of every rank. */
mgpu_status_t mgpu__dist_collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv,
                                    size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps,
                                    mgpu_event_t *const *deps, mgpu_event_t **done_p, bool async);

#endif /* MGPU_DIST_H */
