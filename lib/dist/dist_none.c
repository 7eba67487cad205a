/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist_none.c: stands in for the ranks' layer (dist.c, dist_batch.c,
 * dist_coll.c, dist_array.c) in builds without MPI: every runtime is one
 * process's, and a configuration that names a communicator is refused. The
 * other calls are never reached: api.c makes them only for a runtime or event
 * across ranks, of which this build has none.
 */
#include "dist/dist.h"

mgpu_status_t mgpu__dist_init(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, mgpu_runtime_t **rt_p) {
  mgpu__clear_error();
  if (!rt_p) return mgpu__fail(MGPU_EINVAL, "mgpu_init: rt_p is NULL");
  if (cfg && cfg->size >= MGPU__SIZE_TO(mgpu_config_t, mpi_comm) && cfg->size <= sizeof *cfg && cfg->mpi_comm)
    return mgpu__fail(MGPU_ENOTSUP, "mgpu_init: cfg->mpi_comm is set, but this libmgpurt was built without MPI "
                                    "(configure --with-mpi)");
  mgpu_runtime_t *rt;
  mgpu_status_t st = mgpu__init_test(cfg, test, &rt);
  if (st != MGPU_OK) return st;
  snprintf(rt->cfg.text[MGPU_SET_MPI], sizeof rt->cfg.text[0], "%s (a build without MPI: this process alone)",
           rt->cfg.v.mpi ? "auto" : "off");
  *rt_p = rt;
  return MGPU_OK;
}

static mgpu_status_t none(const char *fn) {
  return mgpu__fail(MGPU_ENOTSUP, "%s: this libmgpurt was built without MPI (configure --with-mpi)", fn);
}

mgpu_status_t mgpu__dist_finalize(mgpu_runtime_t *rt) { return mgpu__node_finalize(rt); }
int mgpu__dist_rank(const mgpu_runtime_t *rt) { return 0; }
int mgpu__dist_size(const mgpu_runtime_t *rt) { return 1; }
mgpu_status_t mgpu__dist_submit(mgpu_runtime_t *rt, const char *fn, const mgpu_batch_t *batch, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  return none(fn);
}
mgpu_status_t mgpu__dist_plan(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t *first_p, size_t *count_p) {
  return none("mgpu_batch_plan");
}
void mgpu__dist_close(mgpu_runtime_t *rt) {}
bool mgpu__dist_is_event(const mgpu_event_t *ev) { return false; }
mgpu_status_t mgpu__dist_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats) { return none("mgpu_event_wait"); }
mgpu_status_t mgpu__dist_event_test(mgpu_event_t *ev) { return none("mgpu_event_test"); }
mgpu_status_t mgpu__dist_event_cancel(mgpu_event_t *ev) { return none("mgpu_event_cancel"); }
mgpu_status_t mgpu__dist_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p) {
  return none("mgpu_event_progress");
}
void mgpu__dist_event_release(mgpu_event_t *ev) {}
mgpu_status_t mgpu__dist_collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv,
                                    size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps,
                                    mgpu_event_t *const *deps, mgpu_event_t **done_p, bool async) {
  return none("a collective across ranks");
}
mgpu_status_t mgpu__dist_array_create(mgpu_runtime_t *rt, size_t n, size_t elem_size, int nshares,
                                      const double *shares, mgpu_array_t **a_p) {
  return none("mgpu_array_create");
}
mgpu_status_t mgpu__dist_array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum) { return none("mgpu_array_sum"); }
