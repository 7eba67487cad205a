/*
 * task.c: device tasks, the runtime's way of running work on given GPUs from
 * their own host threads (collectives, split arrays, device memory). A task is
 * an event like a batch: it waits for dependencies, other batches and tasks may
 * depend on it, and mgpu_event_wait reports it. Its phases run on every GPU it
 * names; the GPU threads report their parts here (gpu_worker.c).
 */
#include "mgpurt_int.h"

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
  pthread_mutex_lock(&t->lock);
  vsnprintf(t->why, sizeof t->why, fmt, ap);
  pthread_mutex_unlock(&t->lock);
  va_end(ap);
}

mgpu_status_t mgpu__task_submit(mgpu_runtime_t *rt, mgpu__task_t *t, const char *name, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  mgpu__batch_t *b = calloc(1, sizeof *b);
  if (b) b->wstats = calloc((size_t)rt->nworkers, sizeof *b->wstats);
  if (!b || !b->wstats) {
    if (b) free(b);
    mgpu__task_free(t);
    return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", name);
  }
  b->nworkers = rt->nworkers;
  for (int i = 0; i < rt->nworkers; i++) {
    b->wstats[i].kind = rt->workers[i].kind;
    b->wstats[i].device = rt->workers[i].gpu >= 0 ? rt->gpu_index[rt->workers[i].gpu] : -1;
  }
  b->kernel.name = name;
  b->desc.kernel = &b->kernel;
  b->task = t;
  t->b = b;
  mgpu_event_t *ev;
  mgpu_status_t st = mgpu__enqueue(rt, b, ndeps, deps, &ev);
  if (st != MGPU_OK) return st;
  if (done_p) {
    *done_p = ev;
    return MGPU_OK;
  }
  st = mgpu_event_wait(ev, NULL);
  mgpu_event_release(ev);
  return st;
}

static void post_phase(mgpu_runtime_t *rt, mgpu__task_t *t) {
  atomic_store(&t->left, t->ngpus);
  /* Under one lock, so that every GPU sees the tasks in the same order (NCCL
   * needs the ranks of a communicator to call collectives in one order). */
  pthread_mutex_lock(&rt->task_lock);
  for (int i = 0; i < t->ngpus; i++) mgpu__gpu_post(rt, t->gpu[i], t, t->phase);
  pthread_mutex_unlock(&rt->task_lock);
  mgpu__wake_gpus(rt);
}

static void complete(mgpu_runtime_t *rt, mgpu__task_t *t) {
  mgpu__batch_t *b = t->b;
  int st = atomic_load(&t->status);
  for (int i = 0; i < t->ngpus; i++) {
    int g = t->gpu[i];
    mgpu_worker_stats_t *w = &b->wstats[rt->ncpu + g];
    w->items = t->items[g];
    w->busy_s = t->dev_s[g];
    w->chunks = 1;
  }
  atomic_store(&b->status, st);
  mgpu__finish(rt, b);
}

void mgpu__task_start(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  mgpu__task_t *t = b->task;
  t->phase = 0;
  if (t->ngpus == 0 || atomic_load(&t->status) != MGPU_OK) {
    complete(rt, t);
    return;
  }
  post_phase(rt, t);
}

void mgpu__task_part_done(mgpu_runtime_t *rt, mgpu__task_t *t, int g, int phase, int rc, double dev_s) {
  t->dev_s[g] += dev_s;
  if (rc != 0)
    mgpu__task_fail(t, rc, "%s: GPU %d failed (%s)", t->b->kernel.name, g, mgpu_strerror((mgpu_status_t)rc));
  if (atomic_fetch_sub(&t->left, 1) != 1) return;
  /* This thread saw the phase end on every GPU. */
  if (atomic_load(&t->status) == MGPU_OK && phase + 1 < t->nphases) {
    int brc = t->between ? t->between(t, phase) : 0;
    if (brc == 0) {
      t->phase = phase + 1;
      post_phase(rt, t);
      return;
    }
    mgpu__task_fail(t, brc, "%s: the host step after phase %d failed", t->b->kernel.name, phase);
  }
  complete(rt, t);
}

/* The message of a failed task, for mgpu_event_wait. */
const char *mgpu__task_why(mgpu__task_t *t) {
  static __thread char buf[256];
  pthread_mutex_lock(&t->lock);
  snprintf(buf, sizeof buf, "%s", t->why);
  pthread_mutex_unlock(&t->lock);
  return buf;
}
