/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task.c: device tasks, work run on given GPUs from their own host threads
 * (collectives, split arrays, device memory), each an event like a batch's.
 * Here: the task object, and the posting of a phase's parts to each GPU's
 * queue, which its host thread takes them from (gpu_worker.c); a task's phases
 * advance in lifecycle.c.
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

mgpu__task_t *mgpu__task_new(int ngpus, const int *gpu) {
  mgpu__task_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->nphases = 1;
  t->ngpus = ngpus;
  for (int i = 0; i < ngpus; i++) t->gpu[i] = gpu ? gpu[i] : i;
  atomic_init(&t->status, MGPU_OK);
  pthread_mutex_init(&t->lock, NULL);
  return t;
}

void mgpu__task_free(mgpu__task_t *t) {
  if (!t) return;
  if (t->free_arg) t->free_arg(t->arg);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

void mgpu__task_fail(mgpu__task_t *t, int st, const char *fmt, ...) {
  int ok = MGPU_OK;
  if (!atomic_compare_exchange_strong(&t->status, &ok, st)) return;
  va_list ap;
  va_start(ap, fmt);
  MGPU_LOCK(&t->lock, MGPU_LK_TASKMSG);
  vsnprintf(t->why, sizeof t->why, fmt, ap);
  MGPU_UNLOCK(&t->lock);
  va_end(ap);
}

/* Queue part `phase` of t for the GPU that owns q. */
static void post(mgpu__postq_t *q, mgpu__task_t *t, int phase) {
  MGPU_LOCK(&q->lock, MGPU_LK_POSTQ);
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 16;
    mgpu__post_t *nq = malloc(sizeof *nq * (size_t)cap);
    if (!nq) MGPU_PANIC("out of memory queueing a device task");
    for (int i = 0; i < q->n; i++) nq[i] = q->q[(q->head + i) % q->cap];
    free(q->q);
    q->q = nq;
    q->cap = cap;
    q->head = 0;
  }
  q->q[(q->head + q->n) % q->cap] = (mgpu__post_t){t, phase};
  q->n++;
  atomic_fetch_add(&q->count, 1);
  MGPU_UNLOCK(&q->lock);
}

bool mgpu__post_take(mgpu__postq_t *q, mgpu__post_t *p) {
  MGPU_LOCK(&q->lock, MGPU_LK_POSTQ);
  if (q->n == 0) {
    MGPU_UNLOCK(&q->lock);
    return false;
  }
  *p = q->q[q->head];
  q->head = (q->head + 1) % q->cap;
  q->n--;
  atomic_fetch_sub(&q->count, 1);
  MGPU_UNLOCK(&q->lock);
  return true;
}

void mgpu__task_post(mgpu_runtime_t *rt, mgpu__task_t *t) {
  atomic_store(&t->left, t->ngpus);
  /* Under one lock, so that every GPU sees the tasks in the same order (NCCL
   * needs the ranks of a communicator to call collectives in one order). */
  MGPU_LOCK(&rt->task_lock, MGPU_LK_TASK);
  for (int i = 0; i < t->ngpus; i++) post(rt->postq[t->gpu[i]], t, t->phase);
  MGPU_UNLOCK(&rt->task_lock);
  mgpu__wake_gpus(rt);
  if (atomic_load(&rt->gpus_given_up) > 0) mgpu__wake_watchdog(rt); /* it fails parts posted to those */
}

/* The message of a failed task, for mgpu_event_wait. */
const char *mgpu__task_why(mgpu__task_t *t) {
  static __thread char buf[256];
  MGPU_LOCK(&t->lock, MGPU_LK_TASKMSG);
  snprintf(buf, sizeof buf, "%s", t->why);
  MGPU_UNLOCK(&t->lock);
  return buf;
}
