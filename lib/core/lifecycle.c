/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lifecycle.c: a batch's life. A batch (or device task, task.c) is its own
 * event, held by the caller, by the runtime until it completes, by each
 * dependent waiting on it and by each worker taking chunks from it. Activated
 * once its dependencies are met, it is finished by the thread that completes
 * its last item or phase, which starts its dependents.
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

void mgpu__batch_ref(mgpu__batch_t *b) { atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed); }

void mgpu__batch_unref(mgpu__batch_t *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
  if (b->ranges)
    for (int i = 0; i < b->nworkers; i++) pthread_mutex_destroy(&b->ranges[i].lock);
  mgpu__task_free(b->task);
  for (int i = 0; i < b->desc.nconsts; i++) mgpu__const_unref(b->desc.consts[i]);
  pthread_mutex_destroy(&b->lock);
  pthread_cond_destroy(&b->done_cv);
  free(b->ranges);
  free(b->wstats);
  free(b->requeue);
  free(b->prof_sums);
  free(b->cost);
  free(b->dependents);
  free(b->arg_copy);
  free(b);
}

mgpu_status_t mgpu__check_deps(const mgpu_runtime_t *rt, const char *fn, size_t ndeps, mgpu_event_t *const *deps) {
  if (ndeps > 0 && !deps) return mgpu__fail(MGPU_EINVAL, "%s: deps is NULL with ndeps = %zu", fn, ndeps);
  for (size_t i = 0; i < ndeps; i++) {
    if (!deps[i]) return mgpu__fail(MGPU_EINVAL, "%s: deps[%zu] is NULL", fn, i);
    if (!mgpu__handle_live(MGPU_H_EVENT, deps[i]))
      return mgpu__fail(MGPU_EINVAL, "%s: deps[%zu] is not a live event (released already?)", fn, i);
    /* A completing batch starts its dependents on its own runtime's workers. */
    if (((const mgpu__batch_t *)deps[i])->rt != rt)
      return mgpu__fail(MGPU_EINVAL, "%s: deps[%zu] is an event of another runtime; a dependency must come from "
                                     "the runtime the batch is submitted to (wait on the other event first)", fn, i);
  }
  return MGPU_OK;
}

mgpu_status_t mgpu__enqueue(mgpu_runtime_t *rt, mgpu__batch_t *b, size_t ndeps, mgpu_event_t *const *deps,
                            mgpu_event_t **done_p) {
  b->rt = rt;
  pthread_mutex_init(&b->lock, NULL);
  pthread_cond_init(&b->done_cv, NULL);
  b->t_submit = mgpu__now();
  b->id = atomic_fetch_add(&rt->next_batch_id, 1);
  atomic_init(&b->status, MGPU_OK);
  atomic_init(&b->refs, 2); /* the caller's and the runtime's */

  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  if (rt->finalizing) {
    MGPU_UNLOCK(&rt->lock);
    atomic_store(&b->refs, 1);
    mgpu__batch_unref(b);
    return mgpu__fail(MGPU_ESTATE, "the runtime is being finalized");
  }
  rt->live_batches++;
  if (b->task) {
    b->tnext = rt->tasks_head;
    if (b->tnext) b->tnext->tprev = b;
    rt->tasks_head = b;
  }
  MGPU_UNLOCK(&rt->lock);

  /* One extra pending count keeps the batch from starting while deps are added. */
  atomic_init(&b->deps_pending, (int)ndeps + 1);
  for (size_t i = 0; i < ndeps; i++) {
    mgpu__batch_t *dep = (mgpu__batch_t *)deps[i];
    MGPU_LOCK(&dep->lock, MGPU_LK_BATCH);
    if (dep->done) {
      if (atomic_load(&dep->status) != MGPU_OK) atomic_store(&b->dep_failed, 1);
      MGPU_UNLOCK(&dep->lock);
      atomic_fetch_sub(&b->deps_pending, 1);
      continue;
    }
    if (dep->ndependents == dep->dependents_cap) {
      int cap = dep->dependents_cap ? 2 * dep->dependents_cap : 4;
      mgpu__batch_t **p = realloc(dep->dependents, sizeof *p * (size_t)cap);
      if (!p) MGPU_PANIC("out of memory recording a dependency");
      dep->dependents = p;
      dep->dependents_cap = cap;
    }
    mgpu__batch_ref(b);
    dep->dependents[dep->ndependents++] = b;
    MGPU_UNLOCK(&dep->lock);
  }
  if (mgpu__handle_add(MGPU_H_EVENT, b) != 0) MGPU_PANIC("out of memory registering an event");
  *done_p = (mgpu_event_t *)b;
  if (atomic_fetch_sub(&b->deps_pending, 1) == 1) mgpu__activate(rt, b);
  return MGPU_OK;
}

static void list_remove(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  if (b->prev) b->prev->next = b->next;
  else rt->active_head = b->next;
  if (b->next) b->next->prev = b->prev;
  else rt->active_tail = b->prev;
  b->next = b->prev = NULL;
}

bool mgpu__batch_fail(mgpu__batch_t *b, int st) {
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  bool first = atomic_load(&b->status) == MGPU_OK;
  if (first) atomic_store(&b->status, st);
  MGPU_UNLOCK(&b->lock);
  return first;
}

void mgpu__activate(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  b->t_start = mgpu__now();
  if (atomic_load(&b->dep_failed)) {
    mgpu__batch_fail(b, MGPU_EDEP);
    atomic_store(&b->dropped, b->desc.n); /* none of its items runs */
    mgpu__finish(rt, b);
    return;
  }
  if (b->task) {
    mgpu__task_start(rt, b);
    return;
  }
  if (b->desc.n == 0) {
    mgpu__finish(rt, b);
    return;
  }
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  b->model = mgpu__model_get(rt, &b->kernel, b->desc.footprint);
  size_t *share = calloc((size_t)rt->nworkers, sizeof(size_t));
  if (!share) MGPU_PANIC("out of memory splitting a batch");
  if (!mgpu__plan_split(rt, b, share)) {
    /* No worker can take it (every GPU retired and no CPU worker). */
    free(share);
    MGPU_UNLOCK(&rt->lock);
    if (mgpu__batch_fail(b, MGPU_EDEVICE)) atomic_store(&b->fail_why, MGPU_NO_WORKER_WHY);
    mgpu__fail_quiet(MGPU_EDEVICE, "batch of kernel '%s': %s", b->kernel.name, MGPU_NO_WORKER_WHY);
    mgpu__finish(rt, b);
    return;
  }
  size_t at = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    atomic_store_explicit(&b->ranges[i].begin, at, memory_order_relaxed);
    at += share[i];
    atomic_store_explicit(&b->ranges[i].end, at, memory_order_relaxed);
  }
  free(share);
  atomic_store(&b->unclaimed, b->desc.n);
  atomic_store(&b->remaining, b->desc.n);
  atomic_store(&b->active, true); /* after remaining: mgpu_event_progress reads them in this order */
  b->prev = rt->active_tail;
  b->next = NULL;
  if (rt->active_tail) rt->active_tail->next = b;
  else rt->active_head = b;
  rt->active_tail = b;
  if (!b->gpu_ok) atomic_fetch_add(&rt->n_active_cpu_only, 1);
  MGPU_UNLOCK(&rt->lock);
  mgpu__wake_all(rt);
}

/* Under rt->lock: b leaves the active list and enters the trace, and its
 * model learns from it (the cost profile, the reserve's way). */
static void unlist_and_learn(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  if (atomic_load_explicit(&b->active, memory_order_relaxed)) {
    list_remove(rt, b);
    atomic_store_explicit(&b->active, false, memory_order_relaxed);
    if (!b->gpu_ok) atomic_fetch_sub(&rt->n_active_cpu_only, 1);
  }
  mgpu__trace_batch(rt, b);
  if (b->prof_sums) {
    if (atomic_load(&b->status) == MGPU_OK) mgpu__prof_learn(b->model, b->desc.n, b->prof_sums, rt->ngpus);
    free(b->prof_sums);
    b->prof_sums = NULL;
  }
  if (b->reserve_timed && atomic_load(&b->status) == MGPU_OK && b->t_end > b->t_start) {
    double rate = (double)b->desc.n / (b->t_end - b->t_start);
    mgpu__reserve_learn(b->model, b->reserve_level, rate);
    mgpu__log(MGPU_LOG_DEBUG, "kernel '%s', %zu items: %.4g items/s with %d CPU workers%s kept out (auto reserve)",
              b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n, rate, b->nreserve,
              b->gpu_out ? " and every GPU" : "");
  }
}

/* Mark b done and wake its waiters; returns its dependents (*n of them), whose
 * references pass to the caller. */
static mgpu__batch_t **mark_done(mgpu__batch_t *b, int *n) {
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  atomic_store_explicit(&b->done, 1, memory_order_release);
  mgpu__batch_t **deps = b->dependents;
  *n = b->ndependents;
  b->dependents = NULL;
  b->ndependents = 0;
  bool sleepers = b->waiters > 0;
  MGPU_UNLOCK(&b->lock);
  /* After the unlock, so that a woken waiter does not block on the lock; b
   * lives until the runtime's reference goes. */
  if (sleepers) pthread_cond_broadcast(&b->done_cv);
  return deps;
}

/* Each dependent of a finished batch has one dependency fewer (and a failed
 * one where it failed); the one whose last it was is activated. */
static void release_dependents(mgpu_runtime_t *rt, mgpu__batch_t **deps, int n, bool failed) {
  for (int i = 0; i < n; i++) {
    mgpu__batch_t *d = deps[i];
    if (failed) atomic_store(&d->dep_failed, 1);
    if (atomic_fetch_sub(&d->deps_pending, 1) == 1) mgpu__activate(rt, d);
    mgpu__batch_unref(d);
  }
  free(deps);
}

/* The runtime's reference, taken at submit: b leaves the live tasks and the
 * live batches, for which finalize waits. */
static void drop_live(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  if (b->task) {
    if (b->tprev) b->tprev->tnext = b->tnext;
    else rt->tasks_head = b->tnext;
    if (b->tnext) b->tnext->tprev = b->tprev;
    b->tnext = b->tprev = NULL;
  }
  rt->live_batches--;
  if (rt->live_batches == 0) pthread_cond_broadcast(&rt->idle_cv);
  MGPU_UNLOCK(&rt->lock);
  mgpu__batch_unref(b);
}

/* Completion of a batch: unlink, publish status and statistics, release
 * dependents. Called by the thread that completed its last item. */
void mgpu__finish(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  /* A cancel that came after the last item was handed out stopped nothing:
   * the batch completed (one whose dependency failed dropped every item; a
   * kernel's error after the cancel replaced it already). */
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  if (atomic_load(&b->status) == MGPU_ECANCELED && atomic_load(&b->dropped) == 0) atomic_store(&b->status, MGPU_OK);
  MGPU_UNLOCK(&b->lock);
  b->t_end = mgpu__now();
  if (b->t_start == 0) b->t_start = b->t_end;
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  unlist_and_learn(rt, b);
  MGPU_UNLOCK(&rt->lock);

  if (!b->task) atomic_fetch_add(&rt->batches_done, 1); /* batches, not device tasks */
  if (b->gpu_out) atomic_fetch_add(&rt->gpus_out_batches, 1);
  for (int i = 0; i < b->desc.nconsts; i++) mgpu__const_unref(b->desc.consts[i]);
  b->desc.nconsts = 0;

  int ndeps;
  mgpu__batch_t **deps = mark_done(b, &ndeps);
  release_dependents(rt, deps, ndeps, atomic_load(&b->status) != MGPU_OK);
  drop_live(rt, b);
}

void mgpu__cancel(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  /* The status first, under the lock, so that a failure recorded before it
   * stays; then the drain flag every claim checks. A kernel's error after it
   * replaces it (mgpu__status_open); other causes do not. */
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  bool live = !b->done && atomic_load(&b->status) == MGPU_OK;
  if (live) atomic_store(&b->status, MGPU_ECANCELED);
  MGPU_UNLOCK(&b->lock);
  if (!live) return;
  atomic_store(&b->failed, 1);
  mgpu__wake_all(rt);
}

/* ------------------------------------------------------------ device tasks */

static void task_complete(mgpu_runtime_t *rt, mgpu__task_t *t) {
  mgpu__batch_t *b = t->b;
  int st = atomic_load(&t->status);
  for (int i = 0; i < t->ngpus; i++) {
    int g = t->gpu[i];
    mgpu_worker_stats_t *w = &b->wstats[rt->ncpu + g];
    w->items = t->part_failed[g] ? 0 : t->items[g]; /* a failed part's items are not done */
    w->busy_s = t->dev_s[g];
    w->chunks = 1;
  }
  if (st != MGPU_OK) mgpu__batch_fail(b, st);
  mgpu__finish(rt, b);
}

void mgpu__task_start(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  mgpu__task_t *t = b->task;
  t->phase = 0;
  if (t->ngpus == 0 || atomic_load(&t->status) != MGPU_OK) {
    task_complete(rt, t);
    return;
  }
  mgpu__task_post(rt, t);
}

void mgpu__task_part_done(mgpu_runtime_t *rt, mgpu__task_t *t, int g, int phase, int rc, double dev_s) {
  t->dev_s[g] += dev_s;
  if (rc != 0) {
    t->part_failed[g] = true;
    mgpu__task_fail(t, rc, "%s: GPU %d failed (%s)", t->b->kernel.name, g, mgpu_strerror((mgpu_status_t)rc));
  }
  if (atomic_fetch_sub(&t->left, 1) != 1) return;
  /* This thread saw the phase end on every GPU. */
  if (atomic_load(&t->status) == MGPU_OK && phase + 1 < t->nphases) {
    int brc = t->between ? t->between(t, phase) : 0;
    if (brc == 0) {
      t->phase = phase + 1;
      mgpu__task_post(rt, t);
      return;
    }
    mgpu__task_fail(t, brc, "%s: the host step after phase %d failed", t->b->kernel.name, phase);
  }
  task_complete(rt, t);
}
