/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * event.c: the events of batches and device tasks: waiting (also for a GPU's
 * earlier tasks, before its memory is freed), testing, canceling, progress,
 * release, and the statistics a finished batch reports.
 */
#include "core/core.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- the caller's statistics */

mgpu_status_t mgpu__stats_ref(const char *fn, const mgpu_stats_t *user, mgpu__stats_ref_t *r) {
  memset(r, 0, sizeof *r);
  r->in.size = sizeof r->in;
  if (!user) return MGPU_OK;
  size_t bytes, wbytes = 0;
  mgpu_status_t st =
      mgpu__abi_size(fn, "stats->size", "mgpu_stats_t", user->size, MGPU__STATS_SIZE_V1, sizeof r->in,
                     _Alignof(mgpu_stats_t), true, &bytes);
  if (st != MGPU_OK) return st;
  mgpu__abi_in(&r->in, sizeof r->in, user, bytes);
  /* A negative count of entries is no array size: refused rather than read
   * as none, which would leave the caller's array unfilled without a word. */
  if (r->in.worker_cap < 0)
    return mgpu__fail(MGPU_EINVAL, "%s: stats->worker_cap = %d: expected 0 or more, the entries of stats->worker", fn,
                      r->in.worker_cap);
  if (r->in.rank_cap < 0)
    return mgpu__fail(MGPU_EINVAL, "%s: stats->rank_cap = %d: expected 0 or more, the entries of stats->rank", fn,
                      r->in.rank_cap);
  if (r->in.worker) {
    st = mgpu__abi_size(fn, "stats->worker_size", "mgpu_worker_stats_t", r->in.worker_size,
                        MGPU__WORKER_STATS_SIZE_V1, sizeof(mgpu_worker_stats_t), _Alignof(mgpu_worker_stats_t), false,
                        &wbytes);
    if (st != MGPU_OK) return st;
  }
  /* A layout without the rank fields reads them as 0 (mgpu__abi_in). */
  if (r->in.rank && r->in.rank_cap > 0) {
    size_t kbytes;
    st = mgpu__abi_size(fn, "stats->rank_size", "mgpu_rank_stats_t", r->in.rank_size, MGPU__RANK_STATS_SIZE_V1,
                        sizeof(mgpu_rank_stats_t), _Alignof(mgpu_rank_stats_t), false, &kbytes);
    if (st != MGPU_OK) return st;
    r->rank = (char *)r->in.rank;
    r->rank_bytes = kbytes;
    r->rank_cap = r->in.rank_cap;
  }
  r->user = (mgpu_stats_t *)user;
  r->bytes = bytes;
  r->worker = r->in.worker_cap > 0 ? (char *)r->in.worker : NULL;
  r->worker_bytes = wbytes;
  r->worker_cap = r->worker ? r->in.worker_cap : 0;
  return MGPU_OK;
}

void mgpu__stats_ref_own(mgpu__stats_ref_t *r, mgpu_worker_stats_t *w, int cap) {
  memset(r, 0, sizeof *r);
  r->in.size = sizeof r->in;
  r->worker = w && cap > 0 ? (char *)w : NULL;
  r->worker_bytes = sizeof *w;
  r->worker_cap = r->worker ? cap : 0;
}

void mgpu__stats_put_worker(const mgpu__stats_ref_t *r, int i, const mgpu_worker_stats_t *w) {
  if (!r->worker || i < 0 || i >= r->worker_cap) return;
  mgpu__abi_out(r->worker + (size_t)i * r->worker_bytes, r->worker_bytes, w, sizeof *w);
}

void mgpu__stats_put_rank(const mgpu__stats_ref_t *r, int i, const mgpu_rank_stats_t *k) {
  if (!r->rank || i < 0 || i >= r->rank_cap) return;
  mgpu__abi_out(r->rank + (size_t)i * r->rank_bytes, r->rank_bytes, k, sizeof *k);
}

void mgpu__stats_get_worker(const mgpu__stats_ref_t *r, int i, mgpu_worker_stats_t *w) {
  memset(w, 0, sizeof *w);
  if (r->worker && i >= 0 && i < r->worker_cap)
    mgpu__abi_in(w, sizeof *w, r->worker + (size_t)i * r->worker_bytes, r->worker_bytes);
}

void mgpu__stats_put(const mgpu__stats_ref_t *r, mgpu_stats_t *s) {
  if (!r->user) return;
  /* The fields the caller gave stay as it gave them. */
  s->size = r->in.size;
  s->worker = r->in.worker;
  s->worker_cap = r->in.worker_cap;
  s->worker_size = r->in.worker_size;
  s->rank = r->in.rank;
  s->rank_cap = r->in.rank_cap;
  s->rank_size = r->in.rank_size;
  mgpu__abi_out(r->user, r->bytes, s, sizeof *s);
}

/* ------------------------------------------------------------------ events */

static void fill_stats(const mgpu__batch_t *b, mgpu_stats_t *s, const mgpu__stats_ref_t *r) {
  memset(s, 0, sizeof *s);
  s->status = (mgpu_status_t)atomic_load(&b->status);
  s->wall_s = b->t_end - b->t_start;
  s->batches = 1;
  s->failed_first = b->failed_first;
  s->failed_count = b->failed_count;
  s->nworkers = b->nworkers;
  s->reserve_workers = b->nreserve;
  s->gpus_out_batches = b->gpu_out;
  for (int i = 0; i < b->nworkers; i++) {
    const mgpu_worker_stats_t *w = &b->wstats[i];
    s->items += w->items;
    s->chunks += w->chunks;
    s->steals += w->steals;
    s->retries += w->retries;
    if (r) mgpu__stats_put_worker(r, i, w);
  }
}

mgpu_status_t mgpu__node_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats) {
  if (!ev) return mgpu__fail(MGPU_EINVAL, "mgpu_event_wait: event is NULL");
  if (!mgpu__handle_live(MGPU_H_EVENT, ev))
    return mgpu__fail(MGPU_EINVAL, "mgpu_event_wait: %p is not a live event (released already?)", (void *)ev);
  mgpu_status_t st = mgpu__refuse_in_worker(((const mgpu__batch_t *)ev)->rt, "mgpu_event_wait");
  if (st != MGPU_OK) return st;
  mgpu__stats_ref_t ref;
  st = mgpu__stats_ref("mgpu_event_wait", stats, &ref);
  if (st != MGPU_OK) return st;
  mgpu_stats_t s;
  st = mgpu__event_wait(ev, stats ? &s : NULL, &ref);
  if (stats) mgpu__stats_put(&ref, &s);
  return st;
}

/* Until batch or task b has completed. */
static void wait_done(mgpu__batch_t *b) {
  /* Spin first: a short batch ends within microseconds, and a sleep and a
   * wake-up would cost more than the batch. */
  double until = mgpu__now() + MGPU_WAIT_SPIN_S;
  while (!atomic_load_explicit(&b->done, memory_order_acquire) && mgpu__now() < until) sched_yield();
  if (atomic_load_explicit(&b->done, memory_order_acquire)) return;
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  b->waiters++;
  while (!b->done) pthread_cond_wait(&b->done_cv, &b->lock);
  b->waiters--;
  MGPU_UNLOCK(&b->lock);
}

mgpu_status_t mgpu__event_wait(mgpu_event_t *ev, mgpu_stats_t *stats, const mgpu__stats_ref_t *r) {
  mgpu__batch_t *b = (mgpu__batch_t *)ev;
  wait_done(b);
  if (stats) fill_stats(b, stats, r);
  mgpu_status_t st = (mgpu_status_t)atomic_load(&b->status);
  if (b->task && st != MGPU_OK)
    mgpu__fail_quiet(st, "%s", st == MGPU_EDEP ? "an event this one depends on failed" : mgpu__task_why(b->task));
  else if (st == MGPU_EKERNEL)
    mgpu__fail_quiet(st, "kernel '%s' failed on items %zu..%zu", b->kernel.name ? b->kernel.name : "(unnamed)",
                     b->failed_first, b->failed_first + b->failed_count - 1);
  else if (st == MGPU_EDEP)
    mgpu__fail_quiet(st, "a batch this one depends on failed, so kernel '%s' did not run",
                     b->kernel.name ? b->kernel.name : "(unnamed)");
  else if (st == MGPU_ENOMEM && atomic_load(&b->no_room_bytes))
    mgpu__fail_quiet(st, "kernel '%s': no GPU left to the batch has room for one item (%zu bytes of device memory), "
                         "and no CPU worker may run it", b->kernel.name ? b->kernel.name : "(unnamed)",
                     atomic_load(&b->no_room_bytes));
  else if (st == MGPU_ENOMEM && b->kernel.scratch_per_item)
    mgpu__fail_quiet(st, "kernel '%s': a CPU worker cannot allocate one item's scratch (%zu bytes)",
                     b->kernel.name ? b->kernel.name : "(unnamed)", b->kernel.scratch_per_item);
  else if (st == MGPU_ECANCELED)
    mgpu__fail_quiet(st, "batch of kernel '%s' canceled: %zu of %zu items computed, the rest not",
                     b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n - atomic_load(&b->dropped), b->desc.n);
  else if (st != MGPU_OK) {
    const char *why = atomic_load(&b->fail_why);
    mgpu__fail_quiet(st, "batch of kernel '%s' failed: %s%s%s", b->kernel.name ? b->kernel.name : "(unnamed)",
                     mgpu_strerror(st), why ? ": " : "", why ? why : "");
  }
  return st;
}

void mgpu__tasks_wait(mgpu_runtime_t *rt, int gpu) {
  /* References to the live tasks on the GPU, taken under the lock; then
   * each is waited for. Tasks submitted later are not waited for. */
  mgpu__batch_t **w = NULL;
  size_t n = 0, cap = 0;
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  for (mgpu__batch_t *b = rt->tasks_head; b; b = b->tnext) {
    bool on = false;
    for (int i = 0; i < b->task->ngpus && !on; i++) on = b->task->gpu[i] == gpu;
    if (!on) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 8;
      mgpu__batch_t **p = realloc(w, cap * sizeof *p);
      if (!p) MGPU_PANIC("out of memory listing the device tasks");
      w = p;
    }
    mgpu__batch_ref(b);
    w[n++] = b;
  }
  MGPU_UNLOCK(&rt->lock);
  for (size_t i = 0; i < n; i++) {
    wait_done(w[i]);
    mgpu__batch_unref(w[i]);
  }
  free(w);
}

mgpu_status_t mgpu__node_event_test(mgpu_event_t *ev) {
  if (!ev) return mgpu__fail(MGPU_EINVAL, "mgpu_event_test: event is NULL");
  if (!mgpu__handle_live(MGPU_H_EVENT, ev))
    return mgpu__fail(MGPU_EINVAL, "mgpu_event_test: %p is not a live event (released already?)", (void *)ev);
  mgpu__batch_t *b = (mgpu__batch_t *)ev;
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  int done = b->done;
  MGPU_UNLOCK(&b->lock);
  return done ? (mgpu_status_t)atomic_load(&b->status) : MGPU_ESTATE;
}

mgpu_status_t mgpu__node_event_cancel(mgpu_event_t *ev) {
  if (!ev) return mgpu__fail(MGPU_EINVAL, "mgpu_event_cancel: event is NULL");
  if (!mgpu__handle_live(MGPU_H_EVENT, ev))
    return mgpu__fail(MGPU_EINVAL, "mgpu_event_cancel: %p is not a live event (released already?)", (void *)ev);
  mgpu__batch_t *b = (mgpu__batch_t *)ev;
  if (b->task)
    return mgpu__fail(MGPU_ENOTSUP, "mgpu_event_cancel: %p is the event of a collective or copy, which runs to its end",
                      (void *)ev);
  mgpu__cancel(b->rt, b);
  return MGPU_OK;
}

mgpu_status_t mgpu__node_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p) {
  if (!ev) return mgpu__fail(MGPU_EINVAL, "mgpu_event_progress: event is NULL");
  if (!mgpu__handle_live(MGPU_H_EVENT, ev))
    return mgpu__fail(MGPU_EINVAL, "mgpu_event_progress: %p is not a live event (released already?)", (void *)ev);
  mgpu__batch_t *b = (mgpu__batch_t *)ev;
  size_t total = b->desc.n, done;
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  int finished = b->done;
  MGPU_UNLOCK(&b->lock);
  if (finished) done = total;
  else if (!atomic_load(&b->active)) done = 0; /* waiting for its dependencies */
  else done = total - MGPU_MIN(total, atomic_load(&b->remaining));
  if (done_p) *done_p = done;
  if (total_p) *total_p = total;
  return MGPU_OK;
}

void mgpu__node_event_release(mgpu_event_t *ev) {
  if (!ev) return;
  if (!mgpu__handle_del(MGPU_H_EVENT, ev)) {
    mgpu__log(MGPU_LOG_ERROR, "mgpu_event_release: %p is not a live event (released twice?); ignored", (void *)ev);
    return;
  }
  mgpu__batch_unref((mgpu__batch_t *)ev);
}
