/*
 * api.c: the entry points of runtimes, batches, events and collectives. Each
 * hands its call to the files below that do the work (runtime.c, batch.c,
 * event.c, coll.c), so that everything under this file calls only downward.
 */
#include "mgpurt_int.h"

MGPU_API mgpu_status_t mgpu_init(const mgpu_config_t *cfg, mgpu_runtime_t **rt_p) {
  return mgpu__init_test(cfg, NULL, rt_p);
}

MGPU_API mgpu_status_t mgpu_finalize_checked(mgpu_runtime_t *rt) { return mgpu__node_finalize(rt); }

/* No status reaches the caller here: what failed (a trace not written, a
 * runtime finalized twice) is logged at the error level. */
MGPU_API void mgpu_finalize(mgpu_runtime_t *rt) {
  if (mgpu_finalize_checked(rt) != MGPU_OK) mgpu__log(MGPU_LOG_ERROR, "%s", mgpu_last_error());
}

MGPU_API mgpu_status_t mgpu_submit(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t ndeps,
                                   mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  return mgpu__node_submit(rt, batch, 0, ndeps, deps, done_p);
}

MGPU_API mgpu_status_t mgpu_run(mgpu_runtime_t *rt, const mgpu_batch_t *batch, mgpu_stats_t *stats) {
  return mgpu__node_run(rt, batch, stats);
}

MGPU_API mgpu_status_t mgpu_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats) {
  return mgpu__node_event_wait(ev, stats);
}

MGPU_API mgpu_status_t mgpu_event_test(mgpu_event_t *ev) { return mgpu__node_event_test(ev); }

MGPU_API mgpu_status_t mgpu_event_cancel(mgpu_event_t *ev) { return mgpu__node_event_cancel(ev); }

MGPU_API mgpu_status_t mgpu_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p) {
  return mgpu__node_event_progress(ev, done_p, total_p);
}

MGPU_API void mgpu_event_release(mgpu_event_t *ev) { mgpu__node_event_release(ev); }

/* ------------------------------------------------------------ collectives */

static mgpu_status_t collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv, size_t count,
                                mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps, mgpu_event_t *const *deps,
                                mgpu_event_t **done_p, bool async) {
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
