/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * retire.c: a GPU worker that keeps failing is retired for the rest of the
 * run, and the other workers take its ranges. A batch that no worker left may
 * run (its GPUs retired or without room for one of its items, and no CPU
 * worker for it) fails instead of hanging.
 */
#include "core/core.h"

void mgpu__retire(mgpu_runtime_t *rt, mgpu__worker_t *w, const char *why) {
  if (atomic_exchange(&w->retired, 1)) return;
  mgpu__log(MGPU_LOG_WARN, "GPU %d (device %d) is retired for the rest of the run: %s; its items go to the other workers",
            w->gpu, rt->gpu_index[w->gpu], why);
  mgpu__fail_orphans(rt, MGPU_EDEVICE, MGPU_NO_WORKER_WHY);
}

void mgpu__fail_orphans(mgpu_runtime_t *rt, mgpu_status_t st, const char *why) {
  /* Batches that nobody can run any more fail instead of hanging: each
   * one with items in no claim, once (after it, its unclaimed count is 0,
   * and a failed batch's chunks that end badly are dropped, not requeued).
   * One whose items are all in flight is finished by those chunks. */
  for (;;) {
    mgpu__batch_t *orphan = NULL;
    MGPU_LOCK(&rt->lock, MGPU_LK_RT);
    for (mgpu__batch_t *b = rt->active_head; b; b = b->next) {
      if (atomic_load(&b->unclaimed) == 0) continue;
      bool someone = false;
      for (int i = 0; i < rt->nworkers && !someone; i++) someone = mgpu__eligible(rt, b, &rt->workers[i]);
      if (!someone) {
        orphan = b;
        mgpu__batch_ref(b);
        break;
      }
    }
    MGPU_UNLOCK(&rt->lock);
    if (!orphan) break;
    /* Fail it (unless it failed already: a cancel or a kernel's error
     * stays its status) and drop the unclaimed items; claimed ones complete
     * as usual. */
    bool fails_now = mgpu__batch_fail(orphan, st);
    if (fails_now) atomic_store(&orphan->fail_why, why);
    atomic_store(&orphan->failed, 1);
    size_t dropped = 0;
    for (int i = 0; i < rt->nworkers; i++) {
      mgpu__range_t *r = &orphan->ranges[i];
      mgpu__range_lock(r);
      size_t begin = atomic_load(&r->begin), end = atomic_load(&r->end);
      dropped += end - begin;
      atomic_store(&r->begin, end);
      mgpu__range_unlock(r);
    }
    MGPU_LOCK(&orphan->lock, MGPU_LK_BATCH);
    for (int i = 0; i < orphan->nrequeue; i++) dropped += orphan->requeue[i].count;
    orphan->nrequeue = 0;
    atomic_store(&orphan->has_requeue, 0);
    MGPU_UNLOCK(&orphan->lock);
    if (fails_now)
      mgpu__log(MGPU_LOG_ERROR, "batch of kernel '%s' fails with %s: %s", orphan->kernel.name ? orphan->kernel.name : "",
                mgpu_status_name(st), why);
    atomic_fetch_sub(&orphan->unclaimed, dropped);
    atomic_fetch_add(&orphan->dropped, dropped); /* a canceled batch that lost items stays canceled */
    if (dropped && atomic_fetch_sub(&orphan->remaining, dropped) == dropped) mgpu__finish(rt, orphan);
    mgpu__batch_unref(orphan);
    /* An unclaimed count that a thief's steal moves stays above 0 only
     * between its two steps; nothing dropped means nothing to do here. */
    if (!dropped) break;
  }
  mgpu__wake_all(rt);
}
