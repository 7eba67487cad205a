/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_hang.c: deadlines and hung devices. A GPU's host thread publishes when
 * the chunk it waits for must end (under hang_lock); past it, the watchdog
 * gives the device up on the thread's behalf, since the thread may never come
 * back from the driver. Nothing is asked of a device given up again.
 */
#include "workers/workers.h"

#include <stdio.h>
#include <string.h>

/* Take its chunks and task parts in flight. Under hang_lock, by its thread,
 * or by the watchdog while the thread waits in the driver. */
void mgpu__gpu_take_held(mgpu__gpu_t *gp, mgpu__held_t *h) {
  h->nclaims = h->nparts = 0;
  for (int i = 0; i < gp->inflight; i++) {
    h->slot[h->nclaims] = (gp->oldest + i) % gp->nslots;
    h->claims[h->nclaims++] = gp->slots[(gp->oldest + i) % gp->nslots].claim;
  }
  gp->inflight = 0;
  for (int i = 0; i < gp->tf_n; i++) h->parts[h->nparts++] = gp->tf[(gp->tf_head + i) % MGPU_TASKS_IN_FLIGHT];
  gp->tf_n = 0;
  if (gp->issuing.t) h->parts[h->nparts++] = (mgpu__tflight_t){gp->issuing.t, gp->issuing.phase, NULL, NULL, 0, false};
  gp->issuing.t = NULL;
  gp->given_up = true;
}

/* Fail the task parts posted to a device given up (any thread). */
static void fail_posts(mgpu__gpu_t *gp) {
  for (;;) {
    mgpu__post_t p;
    if (!mgpu__post_take(&gp->tq, &p)) return;
    mgpu__task_fail(p.t, MGPU_EDEVICE, "%s: GPU %d is hung (given up after a deadline, MGPU_TIMEOUT)",
                    p.t->b->kernel.name, gp->g);
    mgpu__task_part_done(gp->rt, p.t, gp->g, p.phase, MGPU_EDEVICE, 0);
  }
}

/* Which held chunks the device has ended (done[i]), once the gate is shut:
 * those past it wrote into the caller's pinned arrays, and computed again an
 * array both input and output would get f(f(x)). Their ends are read until
 * they stay unchanged (MGPU_GIVEUP_SETTLE_S, at most MGPU_GIVEUP_WAIT_S);
 * without event timing nothing is known, and all go back. */
static int held_done(mgpu__gpu_t *gp, const mgpu__held_t *h, bool *done) {
  int ndone = 0;
  for (int i = 0; i < h->nclaims; i++) done[i] = false;
  if (!gp->timed || !gp->ops->event_query) return 0;
  double t0 = mgpu__now(), stable = t0;
  for (;;) {
    bool changed = false;
    for (int i = 0; i < h->nclaims; i++)
      if (!done[i] && gp->ops->event_query(gp->ctx, gp->slots[h->slot[i]].ev_end) == 0)
        done[i] = changed = true, ndone++;
    double now = mgpu__now();
    if (changed) stable = now;
    if (ndone == h->nclaims || now - stable >= MGPU_GIVEUP_SETTLE_S || now - t0 >= MGPU_GIVEUP_WAIT_S) return ndone;
    mgpu__nap(MGPU_GIVEUP_POLL_S);
  }
}

/* Hand back what a hung device held (taken by mgpu__gpu_take_held) and retire it. */
void mgpu__gpu_give_up(mgpu__gpu_t *gp, mgpu__held_t *h, const char *why) {
  mgpu_runtime_t *rt = gp->rt;
  /* First the gate: nothing the device finishes late may land in the
   * caller's arrays once other workers own those items; then what it held
   * goes back, and it is retired. */
  if (gp->ops->gate_close) gp->ops->gate_close(gp->ctx);
  bool done[sizeof h->claims / sizeof h->claims[0]];
  int ndone = held_done(gp, h, done);
  if (gp->ops->abandon) gp->ops->abandon(gp->ctx);
  int back = h->nclaims - ndone;
  mgpu__log(MGPU_LOG_ERROR, "GPU %d (device %d) is hung: %s; it is given up for the rest of the runtime's life: "
                            "%d chunk%s in flight go%s to the other workers (%d ended on the device and count%s as "
                            "done), %d collective or copy part%s fail%s",
            gp->g, rt->gpu_index[gp->g], why, back, back == 1 ? "" : "s", back == 1 ? "es" : "", ndone,
            ndone == 1 ? "s" : "", h->nparts, h->nparts == 1 ? "" : "s", h->nparts == 1 ? "s" : "");
  atomic_fetch_add(&rt->gpus_given_up, 1);
  /* The ended ones first: their staged outputs are in host memory the
   * device no longer writes, their direct ones in the caller's arrays. */
  for (int i = 0; i < h->nclaims; i++) {
    if (!done[i]) continue;
    const mgpu__slot_t *s = &gp->slots[h->slot[i]];
    for (int k = 0; k < s->nstaged && !atomic_load(&h->claims[i].b->failed); k++)
      memcpy(s->staged_out[k].user, s->staged_out[k].staged, s->staged_out[k].bytes);
    mgpu__complete(rt, gp->w, &h->claims[i], 0, 0);
  }
  mgpu__retire(rt, gp->w, "it is hung");
  for (int i = 0; i < h->nclaims; i++)
    if (!done[i]) mgpu__giveback(rt, gp->w, &h->claims[i]);
  for (int i = 0; i < h->nparts; i++) {
    mgpu__task_t *t = h->parts[i].t;
    mgpu__task_fail(t, MGPU_EDEVICE, "%s: GPU %d is hung: %s", t->b->kernel.name, gp->g, why);
    mgpu__task_part_done(rt, t, gp->g, h->parts[i].phase, MGPU_EDEVICE, 0);
  }
  fail_posts(gp);
  /* mgpu__gpu_join waits for the thread or for this. */
  MGPU_LOCK(&gp->lock, MGPU_LK_GPU);
  pthread_cond_broadcast(&gp->cv);
  MGPU_UNLOCK(&gp->lock);
}

void mgpu__gpu_watch(mgpu_runtime_t *rt, int g, double now) {
  mgpu__gpu_t *gp = rt->gpus[g];
  if (!gp) return;
  mgpu__held_t h;
  char why[sizeof gp->wait_what + sizeof rt->cfg.text[0] + 80];
  bool act = false, gone;
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  gone = gp->given_up;
  if (!gone && gp->wait_until > 0 && now >= gp->wait_until) {
    /* A deadline set by hand below the device's launch time gives up a
     * healthy GPU: the message says which setting made the deadline. */
    if (gp->wait_kernel)
      snprintf(why, sizeof why, "its chunk of items %zu..%zu of '%s' did not end within %.3g s (MGPU_TIMEOUT=%s%s)",
               gp->wait_first, gp->wait_first + gp->wait_count - 1, gp->wait_kernel, gp->wait_limit,
               rt->cfg.text[MGPU_SET_TIMEOUT],
               rt->cfg.v.timeout > 0 ? ", every chunk's deadline; 'auto' gives a chunk 10 times its predicted time"
                                     : "");
    else
      snprintf(why, sizeof why, "%s", gp->wait_what);
    mgpu__gpu_take_held(gp, &h);
    act = true;
  }
  MGPU_UNLOCK(&gp->hang_lock);
  if (act) mgpu__gpu_give_up(gp, &h, why);
  else if (gone) fail_posts(gp);
}

/* Publish the deadline of the chunk in slot s before waiting for it: from
 * when the device could start it, the model's predicted time under the
 * MGPU_TIMEOUT rule (mgpu__deadline_s). */
void mgpu__gpu_watch_begin(mgpu__gpu_t *gp, const mgpu__slot_t *s) {
  const mgpu__batch_t *b = s->claim.b;
  int id = gp->w->id;
  double speed = mgpu__worker_speed(b, id), predicted = 0;
  if (atomic_load_explicit(&b->model->samples[id], memory_order_relaxed) > 0 && speed > 0)
    predicted = (double)s->claim.count / speed;
  double limit = mgpu__deadline_s(gp->rt->cfg.v.timeout, predicted);
  if (limit == 0) return;
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  gp->wait_until = MGPU_MAX(s->t_issue, gp->last_done) + limit;
  gp->wait_kernel = b->kernel.name ? b->kernel.name : "(unnamed)"; /* the claim holds the batch */
  gp->wait_first = s->claim.first;
  gp->wait_count = s->claim.count;
  gp->wait_limit = limit;
  MGPU_UNLOCK(&gp->hang_lock);
}

/* Before a driver call that may block on a hung device (an allocation, a
 * communicator's abort): the watchdog gives the device up if the call has
 * not returned within the deadline of work with no prediction. */
void mgpu__gpu_watch_call(mgpu__gpu_t *gp, const char *what) {
  double limit = mgpu__deadline_s(gp->rt->cfg.v.timeout, 0);
  if (limit == 0) return;
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  gp->wait_until = mgpu__now() + limit;
  gp->wait_kernel = NULL;
  snprintf(gp->wait_what, sizeof gp->wait_what, "%s did not return from the driver within %.3g s", what, limit);
  MGPU_UNLOCK(&gp->hang_lock);
}

/* After the wait: false when the device was given up meanwhile (what it held
 * went back already; the thread must leave without touching anything). */
bool mgpu__gpu_watch_end(mgpu__gpu_t *gp) {
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  bool ok = !gp->given_up;
  gp->wait_until = 0;
  MGPU_UNLOCK(&gp->hang_lock);
  return ok;
}

bool mgpu__gpu_given_up(mgpu__gpu_t *gp) {
  MGPU_LOCK(&gp->hang_lock, MGPU_LK_HANG);
  bool gone = gp->given_up;
  MGPU_UNLOCK(&gp->hang_lock);
  return gone;
}
