/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api.c: the entry points of runtimes, batches, events and collectives, each
 * handing its call to the files below that do the work: those of one process
 * (runtime.c, batch.c, event.c, coll.c), or for a runtime or event across
 * ranks the ranks' layer (dist/; dist_none.c without MPI), so that everything
 * under this file calls only downward.
 */
#include "dist/dist.h"

MGPU_API mgpu_status_t mgpu_init(const mgpu_config_t *cfg, mgpu_runtime_t **rt_p) {
  return mgpu__dist_init(cfg, NULL, rt_p);
}

/* A runtime's fields are read only once it is known to be live. */
static bool dist_rt(const mgpu_runtime_t *rt) {
  return rt && mgpu__handle_live(MGPU_H_RUNTIME, rt) && rt->dist;
}

MGPU_API mgpu_status_t mgpu_finalize_checked(mgpu_runtime_t *rt) {
  /* A fork's child would wait for workers it does not have. */
  if (mgpu__refuse_forked(rt, "mgpu_finalize") != MGPU_OK) return MGPU_ESTATE;
  if (!dist_rt(rt)) return mgpu__node_finalize(rt);
  mgpu__dist_close(rt);
  return mgpu__dist_finalize(rt);
}

/* No status reaches the caller here: what failed (a trace not written, a
 * runtime finalized twice) is logged at the error level. */
MGPU_API void mgpu_finalize(mgpu_runtime_t *rt) {
  if (mgpu_finalize_checked(rt) != MGPU_OK) mgpu__log(MGPU_LOG_ERROR, "%s", mgpu_last_error());
}

MGPU_API int mgpu_num_ranks(const mgpu_runtime_t *rt) {
  return mgpu__check_rt(rt, "mgpu_num_ranks") == MGPU_OK ? mgpu__dist_size(rt) : 0;
}

MGPU_API int mgpu_rank(const mgpu_runtime_t *rt) {
  return mgpu__check_rt(rt, "mgpu_rank") == MGPU_OK ? mgpu__dist_rank(rt) : 0;
}

MGPU_API mgpu_status_t mgpu_submit(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t ndeps,
                                   mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  if (dist_rt(rt)) return mgpu__dist_submit(rt, "mgpu_submit", batch, ndeps, deps, done_p);
  return mgpu__node_submit(rt, "mgpu_submit", "batch->", batch, 0, ndeps, deps, done_p);
}

MGPU_API mgpu_status_t mgpu_run(mgpu_runtime_t *rt, const mgpu_batch_t *batch, mgpu_stats_t *stats) {
  mgpu_status_t st = mgpu__refuse_in_worker(rt, "mgpu_run");
  if (st != MGPU_OK) return st;
  if (!dist_rt(rt)) return mgpu__node_run(rt, "mgpu_run", "batch->", batch, stats);
  /* The statistics are checked before the batch runs, as for one process. */
  mgpu__stats_ref_t ref;
  st = mgpu__stats_ref("mgpu_run", stats, &ref);
  if (st != MGPU_OK) return st;
  mgpu_event_t *ev;
  st = mgpu__dist_submit(rt, "mgpu_run", batch, 0, NULL, &ev);
  if (st != MGPU_OK) return st;
  st = mgpu__dist_event_wait(ev, stats);
  mgpu__dist_event_release(ev);
  return st;
}

MGPU_API mgpu_status_t mgpu_batch_plan(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t *first_p,
                                       size_t *count_p) {
  mgpu_status_t st = mgpu__check_rt(rt, "mgpu_batch_plan");
  if (st != MGPU_OK) return st;
  if (!first_p || !count_p)
    return mgpu__fail(MGPU_EINVAL, "mgpu_batch_plan: %s is NULL", first_p ? "count_p" : "first_p");
  if (rt->dist) return mgpu__dist_plan(rt, batch, first_p, count_p);
  if (!batch) return mgpu__fail(MGPU_EINVAL, "mgpu_batch_plan: batch is NULL");
  mgpu_batch_t d;
  mgpu_kernel_t k;
  if ((st = mgpu__batch_in("mgpu_batch_plan", batch, &d, &k)) != MGPU_OK) return st;
  if (!d.kernel) return mgpu__fail(MGPU_EINVAL, "mgpu_batch_plan: batch->kernel is NULL");
  *first_p = 0;
  *count_p = d.n;
  return MGPU_OK;
}

MGPU_API mgpu_status_t mgpu_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats) {
  if (mgpu__dist_is_event(ev)) return mgpu__dist_event_wait(ev, stats);
  return mgpu__node_event_wait(ev, stats);
}

MGPU_API mgpu_status_t mgpu_event_test(mgpu_event_t *ev) {
  if (mgpu__dist_is_event(ev)) return mgpu__dist_event_test(ev);
  return mgpu__node_event_test(ev);
}

MGPU_API mgpu_status_t mgpu_event_cancel(mgpu_event_t *ev) {
  if (mgpu__dist_is_event(ev)) return mgpu__dist_event_cancel(ev);
  return mgpu__node_event_cancel(ev);
}

MGPU_API mgpu_status_t mgpu_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p) {
  if (mgpu__dist_is_event(ev)) return mgpu__dist_event_progress(ev, done_p, total_p);
  return mgpu__node_event_progress(ev, done_p, total_p);
}

MGPU_API void mgpu_event_release(mgpu_event_t *ev) {
  if (mgpu__dist_is_event(ev)) mgpu__dist_event_release(ev);
  else mgpu__node_event_release(ev);
}

/* ------------------------------------------------------------ split arrays */

MGPU_API mgpu_status_t mgpu_array_create(mgpu_runtime_t *rt, size_t n, size_t elem_size, int nshares,
                                         const double *shares, mgpu_array_t **a_p) {
  if (dist_rt(rt)) return mgpu__dist_array_create(rt, n, elem_size, nshares, shares, a_p);
  return mgpu__array_create(rt, n, 0, elem_size, nshares, shares, a_p);
}

MGPU_API mgpu_status_t mgpu_array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum) {
  if (dist_rt(mgpu__array_rt(a))) return mgpu__dist_array_sum(a, dt, sum);
  return mgpu__array_sum(a, dt, sum);
}

/* ------------------------------------------------------------ collectives */

static mgpu_status_t collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv, size_t count,
                                mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps, mgpu_event_t *const *deps,
                                mgpu_event_t **done_p, bool async) {
  if (dist_rt(rt)) return mgpu__dist_collective(rt, kind, send, recv, count, dt, op, root, ndeps, deps, done_p, async);
  return mgpu__node_collective(rt, kind, send, recv, count, dt, op, root, ndeps, deps, done_p, async);
}

MGPU_API mgpu_status_t mgpu_allreduce(mgpu_runtime_t *rt, const void *const *send, void *const *recv, size_t count,
                                      mgpu_dtype_t dt, mgpu_redop_t op) {
  return collective(rt, MGPU__COLL_ALLREDUCE, send, recv, count, dt, op, 0, 0, NULL, NULL, false);
}
MGPU_API mgpu_status_t mgpu_broadcast(mgpu_runtime_t *rt, const void *const *send, void *const *recv, size_t count,
                                      mgpu_dtype_t dt, int root) {
  return collective(rt, MGPU__COLL_BROADCAST, send, recv, count, dt, MGPU_OP_SUM, root, 0, NULL, NULL, false);
}
MGPU_API mgpu_status_t mgpu_allgather(mgpu_runtime_t *rt, const void *const *send, void *const *recv, size_t count,
                                      mgpu_dtype_t dt) {
  return collective(rt, MGPU__COLL_ALLGATHER, send, recv, count, dt, MGPU_OP_SUM, 0, 0, NULL, NULL, false);
}
MGPU_API mgpu_status_t mgpu_reduce_scatter(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                           size_t count, mgpu_dtype_t dt, mgpu_redop_t op) {
  return collective(rt, MGPU__COLL_REDUCE_SCATTER, send, recv, count, dt, op, 0, 0, NULL, NULL, false);
}
MGPU_API mgpu_status_t mgpu_allreduce_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                            size_t count, mgpu_dtype_t dt, mgpu_redop_t op, size_t ndeps,
                                            mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  return collective(rt, MGPU__COLL_ALLREDUCE, send, recv, count, dt, op, 0, ndeps, deps, done_p, true);
}
MGPU_API mgpu_status_t mgpu_broadcast_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                            size_t count, mgpu_dtype_t dt, int root, size_t ndeps,
                                            mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  return collective(rt, MGPU__COLL_BROADCAST, send, recv, count, dt, MGPU_OP_SUM, root, ndeps, deps, done_p, true);
}
MGPU_API mgpu_status_t mgpu_allgather_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                            size_t count, mgpu_dtype_t dt, size_t ndeps, mgpu_event_t *const *deps,
                                            mgpu_event_t **done_p) {
  return collective(rt, MGPU__COLL_ALLGATHER, send, recv, count, dt, MGPU_OP_SUM, 0, ndeps, deps, done_p, true);
}
MGPU_API mgpu_status_t mgpu_reduce_scatter_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                                 size_t count, mgpu_dtype_t dt, mgpu_redop_t op, size_t ndeps,
                                                 mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  return collective(rt, MGPU__COLL_REDUCE_SCATTER, send, recv, count, dt, op, 0, ndeps, deps, done_p, true);
}
