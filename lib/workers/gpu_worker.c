/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_worker.c: one host thread per GPU, against the device interface (CUDA
 * or emulated). It keeps up to MGPU_STREAMS_PER_GPU chunks in flight, a slot
 * each (stream, device buffer, pinned staging), so that one chunk's copies in
 * overlap another's kernel and a third's copies out (gpu_chunk.c), and runs
 * the device task parts posted to it (gpu_task.c).
 */
#include "workers/workers.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

size_t mgpu__gpu_cap(mgpu_runtime_t *rt, int g) {
  return rt->gpus && rt->gpus[g] ? atomic_load(&rt->gpus[g]->room.cap_items) : 0;
}

double mgpu__gpu_estimate(mgpu_runtime_t *rt, int g) { return rt->gpus[g] ? rt->gpus[g]->estimate : 1.0; }

static void free_slots(mgpu__gpu_t *gp) {
  for (int i = 0; i < gp->nslots; i++) {
    mgpu__slot_t *s = &gp->slots[i];
    if (s->stream) mgpu__gpu_drop_dbuf(gp, s);
    if (s->hbuf) gp->ops->host_free(s->hbuf);
    if (s->ev_start) gp->ops->event_destroy(gp->ctx, s->ev_start);
    if (s->ev_end) gp->ops->event_destroy(gp->ctx, s->ev_end);
    if (s->ev_h2d) gp->ops->event_destroy(gp->ctx, s->ev_h2d);
    if (s->ev_kern) gp->ops->event_destroy(gp->ctx, s->ev_kern);
    if (s->stream) gp->ops->stream_destroy(gp->ctx, s->stream);
    free(s->arg);
  }
  free(gp->slots);
  gp->slots = NULL;
  for (int i = 0; i < gp->nevpool; i++) gp->ops->event_destroy(gp->ctx, gp->evpool[i]);
  gp->nevpool = 0;
  if (gp->task_stream) gp->ops->stream_destroy(gp->ctx, gp->task_stream);
  gp->task_stream = NULL;
}

static void free_const_copies(mgpu__gpu_t *gp) {
  mgpu_runtime_t *rt = gp->rt;
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  mgpu_const_t *lists[2] = {rt->consts, rt->dead_consts};
  for (int l = 0; l < 2; l++)
    for (mgpu_const_t *c = lists[l]; c; c = c->next_live)
      if (c->dev[gp->g]) {
        gp->ops->mem_free(gp->ctx, c->dev[gp->g]);
        c->dev[gp->g] = NULL;
      }
  MGPU_UNLOCK(&rt->lock);
}

/* Open GPU gp's device and make its slots, its task stream and its share of
 * the device's memory. */
static mgpu_status_t open_device(mgpu__gpu_t *gp) {
  mgpu_runtime_t *rt = gp->rt;
  int dev = rt->gpu_index[gp->g];
  /* Before the device opens: the driver's threads inherit this mask. */
  mgpu__cpus_apply(&rt->cpus);
  if (gp->ops->open(dev, &rt->cfg, &gp->ctx) != 0) return mgpu__fail(MGPU_EDEVICE, "cannot open device %d", dev);
  gp->epoch_host = mgpu__now();
  gp->slots = calloc((size_t)gp->nslots, sizeof *gp->slots);
  if (!gp->slots) return mgpu__fail(MGPU_ENOMEM, "GPU %d: out of memory", gp->g);
  gp->timed = gp->ops->event_create != NULL;
  for (int i = 0; i < gp->nslots; i++) {
    mgpu__slot_t *s = &gp->slots[i];
    if (gp->ops->stream_create(gp->ctx, &s->stream) != 0)
      return mgpu__fail(MGPU_EDEVICE, "device %d: cannot create stream %d", dev, i);
    if (gp->timed && (gp->ops->event_create(gp->ctx, &s->ev_start) != 0 ||
                      gp->ops->event_create(gp->ctx, &s->ev_end) != 0 ||
                      (rt->trace_on && (gp->ops->event_create(gp->ctx, &s->ev_h2d) != 0 ||
                                        gp->ops->event_create(gp->ctx, &s->ev_kern) != 0))))
      gp->timed = false; /* chunks are then timed with host clocks, and not traced */
  }
  if (gp->ops->stream_create(gp->ctx, &gp->task_stream) != 0)
    return mgpu__fail(MGPU_EDEVICE, "device %d: cannot create its task stream", dev);
  /* An open gate on the task stream tells whether the device has one. */
  gp->room.gate_ok = gp->ops->gate && gp->ops->gate(gp->ctx, gp->task_stream) == 0;
  size_t free_b = 0, total_b = 0;
  gp->ops->mem_info(gp->ctx, &free_b, &total_b);
  atomic_store(&gp->room.slot_bytes, (size_t)((double)free_b * MGPU_SLOT_MEM_SHARE) / (size_t)gp->nslots);
  rt->gpu_info[gp->g].free_mem = free_b;
  rt->gpu_info[gp->g].total_mem = total_b;
  gp->estimate = gp->ops->speed_estimate ? gp->ops->speed_estimate(gp->ctx) : 1.0;
  if (!(gp->estimate > 0)) gp->estimate = 1.0;
  return MGPU_OK;
}

/* Claim a chunk into the next free slot and put it in flight; false where
 * there was nothing to claim. A chunk that fails to start goes back. */
static bool claim_and_issue(mgpu__gpu_t *gp) {
  mgpu_runtime_t *rt = gp->rt;
  mgpu__worker_t *w = gp->w;
  mgpu__slot_t *s = &gp->slots[(gp->oldest + gp->inflight) % gp->nslots];
  if (!mgpu__claim(rt, w, SIZE_MAX, MGPU_GPU_TARGET_S, &s->claim)) return false;
  if (atomic_load(&s->claim.b->failed)) {
    mgpu__drop(rt, w, &s->claim);
    return true;
  }
  double t_claimed = mgpu__now(); /* mgpu__gpu_issue() sets t_issue once the buffers are there */
  int rc = mgpu__gpu_issue(gp, s);
  if (rt->trace_on) {
    mgpu__batch_t *b = s->claim.b;
    mgpu__tev_t ev = {.t0 = t_claimed, .t1 = mgpu__now(), .kind = MGPU_TEV_ISSUE, .stream = -1,
                      .name = b->kernel.name, .batch = b->id, .first = s->claim.first, .count = s->claim.count};
    mgpu__trace_add(rt, w, &ev);
  }
  if (rc != 0) {
    /* Work already queued on the stream must end before the slot is reused. */
    gp->ops->stream_sync(gp->ctx, s->stream);
    s->busy = true;
    mgpu__gpu_on_failure(gp, s, rc, "while starting");
    s->busy = false;
  } else {
    s->busy = true;
    gp->inflight++;
  }
  return true;
}

/* The thread's loop, until the runtime stops and nothing is in flight.
 * Posted task parts go before chunks: a collective ends only once every GPU
 * has enqueued its part. False where the device was given up: nothing of the
 * runtime may be touched then. */
static bool run(mgpu__gpu_t *gp) {
  mgpu_runtime_t *rt = gp->rt;
  while (!atomic_load_explicit(&rt->stop, memory_order_relaxed) || gp->inflight > 0 || gp->tf_n > 0) {
    uint64_t gen = atomic_load(&rt->work_gen);
    if (atomic_load(&rt->comms_abort) && !gp->comm_aborted) {
      gp->comm_aborted = true;
      mgpu__gpu_watch_call(gp, "the abort of its NCCL communicator");
      mgpu__coll_abort(rt, gp->g);
      if (!mgpu__gpu_watch_end(gp)) return false; /* given up while the abort waited for the device */
    }
    mgpu__consts_reap(rt, gp->g, gp->ops->mem_free, gp->ctx);
    if (atomic_load(&gp->tq.count) > 0 && gp->tf_n < MGPU_TASKS_IN_FLIGHT) {
      if (!mgpu__gpu_task_issue(gp)) return false; /* given up while a call blocked */
      continue;
    }
    if (gp->tf_n > 0) {
      int polled = mgpu__gpu_task_poll(gp);
      if (polled < 0) return false;
      if (polled > 0) continue;
    }
    if (gp->inflight == 0) gp->oom_drain = false;
    if (gp->inflight < gp->nslots && !gp->oom_drain && !atomic_load(&gp->w->retired) && !atomic_load(&rt->stop) &&
        claim_and_issue(gp))
      continue;
    if (gp->inflight > 0) {
      if (!mgpu__gpu_retire_oldest(gp)) return false; /* given up while it waited */
      continue;
    }
    if (gp->tf_n > 0) {
      /* A task part is in flight: poll it, without sleeping. */
      sched_yield();
      continue;
    }
    mgpu__idle_wait(rt, gen, true);
  }
  return true;
}

static void *gpu_main(void *arg) {
  mgpu__gpu_t *gp = arg;
  mgpu__self_rt = gp->rt;
  mgpu__self_gpu = gp->g;
  mgpu_status_t st = open_device(gp);
  /* mgpu__gpu_start waits for this report. */
  MGPU_LOCK(&gp->lock, MGPU_LK_GPU);
  gp->open_status = st;
  gp->ready = st == MGPU_OK ? 1 : -1;
  pthread_cond_broadcast(&gp->cv);
  MGPU_UNLOCK(&gp->lock);
  if (st != MGPU_OK) {
    if (gp->slots) free_slots(gp);
    if (gp->ctx) gp->ops->close(gp->ctx);
    gp->ctx = NULL;
  } else if (run(gp)) {
    /* A device given up is left alone: its driver could block on it. */
    free_const_copies(gp);
    free_slots(gp);
    gp->ops->close(gp->ctx);
    gp->ctx = NULL;
  }
  MGPU_LOCK(&gp->lock, MGPU_LK_GPU);
  gp->exited = true;
  pthread_cond_broadcast(&gp->cv);
  MGPU_UNLOCK(&gp->lock);
  return NULL;
}

mgpu_status_t mgpu__gpu_start(mgpu_runtime_t *rt, int g) {
  mgpu__gpu_t *gp = calloc(1, sizeof *gp);
  if (!gp) return mgpu__fail(MGPU_ENOMEM, "mgpu_init: out of memory");
  gp->rt = rt;
  gp->g = g;
  gp->w = &rt->workers[rt->ncpu + g];
  gp->ops = rt->dev;
  gp->room.ops = rt->dev;
  gp->w->room = &gp->room;
  gp->nslots = rt->cfg.v.streams_per_gpu;
  gp->room.max_batch = rt->cfg.v.max_batch_size > 0 ? (size_t)rt->cfg.v.max_batch_size : 0;
  pthread_mutex_init(&gp->lock, NULL);
  pthread_mutex_init(&gp->tl_lock, NULL);
  pthread_mutex_init(&gp->tq.lock, NULL);
  pthread_mutex_init(&gp->hang_lock, NULL);
  pthread_cond_init(&gp->cv, NULL);
  rt->gpus[g] = gp;
  rt->postq[g] = &gp->tq;
  int rc = pthread_create(&gp->thread, NULL, gpu_main, gp);
  if (rc != 0) {
    rt->gpus[g] = NULL;
    rt->postq[g] = NULL;
    pthread_mutex_destroy(&gp->lock);
    pthread_mutex_destroy(&gp->tl_lock);
    pthread_mutex_destroy(&gp->tq.lock);
    pthread_mutex_destroy(&gp->hang_lock);
    pthread_cond_destroy(&gp->cv);
    free(gp);
    return mgpu__fail(MGPU_ESYSTEM, "cannot start the host thread of GPU %d: pthread_create returned %d", g, rc);
  }
  gp->started = true;
  MGPU_LOCK(&gp->lock, MGPU_LK_GPU);
  while (gp->ready == 0) pthread_cond_wait(&gp->cv, &gp->lock);
  mgpu_status_t st = gp->open_status;
  MGPU_UNLOCK(&gp->lock);
  if (st != MGPU_OK) {
    mgpu__fail(st, "%s", mgpu_last_error()[0] ? mgpu_last_error() : "cannot start a GPU worker");
  }
  return st;
}

void mgpu__gpu_wait(mgpu_runtime_t *rt, int g) {
  mgpu__gpu_t *gp = rt->gpus ? rt->gpus[g] : NULL;
  if (!gp || !gp->started) return;
  MGPU_LOCK(&gp->lock, MGPU_LK_GPU);
  while (!gp->exited && !mgpu__gpu_given_up(gp)) pthread_cond_wait(&gp->cv, &gp->lock);
  MGPU_UNLOCK(&gp->lock);
}

/* Devices given up, with their threads: never freed (the thread may still
 * come back from the driver and look at its state), and kept reachable. */
static pthread_mutex_t gone_lock = PTHREAD_MUTEX_INITIALIZER;
static mgpu__gpu_t **gone;
static int ngone;

void mgpu__gpu_join(mgpu_runtime_t *rt, int g) {
  mgpu__gpu_t *gp = rt->gpus ? rt->gpus[g] : NULL;
  if (!gp) return;
  if (gp->started && mgpu__gpu_given_up(gp)) {
    rt->gpu_gone[g] = true;
    rt->gpus[g] = NULL;
    rt->postq[g] = NULL;
    pthread_detach(gp->thread);
    MGPU_LOCK(&gone_lock, MGPU_LK_LEAF);
    mgpu__gpu_t **p = realloc(gone, sizeof *p * (size_t)(ngone + 1));
    if (p) gone = p, gone[ngone++] = gp;
    MGPU_UNLOCK(&gone_lock);
    return;
  }
  if (gp->started) pthread_join(gp->thread, NULL);
  pthread_mutex_destroy(&gp->lock);
  pthread_mutex_destroy(&gp->tl_lock);
  pthread_mutex_destroy(&gp->tq.lock);
  pthread_mutex_destroy(&gp->hang_lock);
  pthread_cond_destroy(&gp->cv);
  free(gp->tq.q);
  gp->w->room = NULL;
  rt->gpus[g] = NULL;
  rt->postq[g] = NULL;
  free(gp);
}

int mgpu__gpu_timeline(mgpu_runtime_t *rt, int g, double *start, double *end, int max) {
  mgpu__gpu_t *gp = rt->gpus[g];
  MGPU_LOCK(&gp->tl_lock, MGPU_LK_TIMELINE);
  uint64_t n = gp->tl_n < MGPU_TIMELINE ? gp->tl_n : MGPU_TIMELINE;
  if ((uint64_t)max < n) n = (uint64_t)max;
  uint64_t first = gp->tl_n - n;
  for (uint64_t i = 0; i < n; i++) {
    start[i] = gp->tl_start[(first + i) % MGPU_TIMELINE];
    end[i] = gp->tl_end[(first + i) % MGPU_TIMELINE];
  }
  MGPU_UNLOCK(&gp->tl_lock);
  return (int)n;
}
