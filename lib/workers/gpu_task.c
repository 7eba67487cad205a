/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_task.c: device task parts on a GPU's task stream: taken from the GPU's
 * queue of posted parts (task.c), enqueued between timing events, polled, and
 * reported to their task. A part past its deadline fails its task (and has
 * the NCCL communicators aborted); past a second one its device is given up.
 */
#include "workers/workers.h"

#include <stdio.h>

static int pool_event(mgpu__gpu_t *gp, void **ev) {
  if (gp->nevpool > 0) {
    *ev = gp->evpool[--gp->nevpool];
    return 0;
  }
  return gp->ops->event_create(gp->ctx, ev);
}

static void pool_put(mgpu__gpu_t *gp, void *ev) {
  if (!ev) return;
  if (gp->nevpool < (int)(sizeof gp->evpool / sizeof *gp->evpool)) gp->evpool[gp->nevpool++] = ev;
  else gp->ops->event_destroy(gp->ctx, ev);
}

/* Take the next posted part and enqueue it on the task stream; false when
 * the device was given up while a call of the part blocked (an allocation
 * waits for the device). */
bool mgpu__gpu_task_issue(mgpu__gpu_t *gp) {
  mgpu__post_t p;
  mgpu__post_take(&gp->tq, &p); /* one is posted, and only this thread takes */
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  gp->issuing = p;
  MGPU_UNLOCK(&gp->hang_lock);
  char what[96];
  snprintf(what, sizeof what, "its part of %s", p.t->b->kernel.name);
  mgpu__gpu_watch_call(gp, what);

  mgpu__devcall_t dc = {gp->rt, gp->g, gp->ops, gp->ctx, gp->task_stream};
  mgpu__tflight_t f = {p.t, p.phase, NULL, NULL, mgpu__now(), false};
  int rc = pool_event(gp, &f.ev0);
  if (rc == 0) rc = pool_event(gp, &f.ev1);
  if (rc == 0) rc = gp->ops->event_record(gp->ctx, f.ev0, gp->task_stream);
  if (rc == 0 && mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_HANGCOLL, gp->g, gp->coll_parts++)) {
    mgpu__log(MGPU_LOG_INFO, "GPU %d: injected hang of task part %lld", gp->g, gp->coll_parts - 1);
    rc = gp->ops->hang(gp->ctx, gp->task_stream);
  }
  if (rc == 0) rc = p.t->part(p.t, &dc, p.phase);
  if (rc == 0) rc = gp->ops->event_record(gp->ctx, f.ev1, gp->task_stream);
  if (!mgpu__gpu_watch_end(gp)) return false;
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  gp->issuing.t = NULL;
  MGPU_UNLOCK(&gp->hang_lock);
  if (rc != 0) {
    /* What was enqueued must end before the task is reported. */
    gp->ops->stream_sync(gp->ctx, gp->task_stream);
    pool_put(gp, f.ev0);
    pool_put(gp, f.ev1);
    mgpu__task_part_done(gp->rt, p.t, gp->g, p.phase, rc, 0);
    return true;
  }
  gp->tf[(gp->tf_head + gp->tf_n) % MGPU_TASKS_IN_FLIGHT] = f;
  gp->tf_n++;
  return true;
}

/* The oldest task part in flight has not ended: past its deadline it fails
 * its task (and the NCCL communicators are aborted, which ends a collective
 * that waits for a peer); past a second one the device is given up. Returns
 * false when it was. */
static bool task_late(mgpu__gpu_t *gp, mgpu__tflight_t *f) {
  mgpu_runtime_t *rt = gp->rt;
  double predicted = 0;
  if (f->t->bytes > 0 && gp->task_bytes_sum > 0) predicted = (double)f->t->bytes * gp->task_secs_sum / gp->task_bytes_sum;
  double limit = mgpu__deadline_s(rt->cfg.v.timeout, predicted);
  double start = MGPU_MAX(f->t0, gp->task_done), now = mgpu__now();
  if (limit == 0 || now < start + (f->late ? 2 : 1) * limit) return true;
  const char *name = f->t->b->kernel.name;
  if (!f->late) {
    f->late = true;
    bool nccl = mgpu__coll_uses_nccl(rt);
    mgpu__task_fail(f->t, MGPU_EDEVICE, "%s did not end on GPU %d within %.3g s (MGPU_TIMEOUT)%s", name, gp->g, limit,
                    nccl ? "; the NCCL communicators are aborted" : "");
    mgpu__log(MGPU_LOG_ERROR, "%s did not end on GPU %d within %.3g s (MGPU_TIMEOUT): it fails%s", name, gp->g, limit,
              nccl ? ", and every GPU aborts its NCCL communicator" : "");
    if (nccl) atomic_store(&rt->comms_abort, 1);
    return true;
  }
  mgpu__held_t h;
  char why[160];
  snprintf(why, sizeof why, "its part of %s did not end within %.3g s, twice its deadline", name, 2 * limit);
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  mgpu__gpu_take_held(gp, &h);
  MGPU_UNLOCK(&gp->hang_lock);
  mgpu__gpu_give_up(gp, &h, why);
  return false;
}

/* Report the oldest part in flight if its stream got past it: 1 if it did,
 * 0 if not yet, -1 when the device was given up. */
int mgpu__gpu_task_poll(mgpu__gpu_t *gp) {
  mgpu__tflight_t *f = &gp->tf[gp->tf_head];
  int q = gp->ops->event_query(gp->ctx, f->ev1);
  if (q == 1) return task_late(gp, f) ? 0 : -1;
  double dev = 0, t0, t1;
  int rc = 0;
  if (q < 0) {
    rc = gp->ops->stream_sync(gp->ctx, gp->task_stream); /* takes the error off the stream */
    if (rc == 0) rc = q;
  } else if (gp->ops->event_time(gp->ctx, f->ev0, &t0) == 0 && gp->ops->event_time(gp->ctx, f->ev1, &t1) == 0) {
    dev = t1 - t0;
    if (dev > 0 && f->t->bytes > 0) {
      gp->task_bytes_sum = gp->task_bytes_sum * MGPU_MODEL_DECAY + (double)f->t->bytes;
      gp->task_secs_sum = gp->task_secs_sum * MGPU_MODEL_DECAY + dev;
    }
  }
  mgpu__tflight_t done = *f;
  gp->tf_head = (gp->tf_head + 1) % MGPU_TASKS_IN_FLIGHT;
  gp->tf_n--;
  pool_put(gp, done.ev0);
  pool_put(gp, done.ev1);
  gp->task_done = mgpu__now();
  mgpu__task_part_done(gp->rt, done.t, gp->g, done.phase, rc, dev > 0 ? dev : 0);
  return 1;
}
