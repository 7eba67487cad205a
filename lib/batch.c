/*
 * batch.c: submitting batches, their events and dependencies, waiting, and the
 * statistics a finished batch reports. A batch is its own event: one reference
 * is the caller's, one the runtime's until the batch completes, one per
 * dependent waiting on it and one per worker currently taking chunks from it.
 */
#include "mgpurt_int.h"

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

static mgpu_status_t check_batch(const mgpu_runtime_t *rt, const mgpu_batch_t *d) {
  const mgpu_kernel_t *k = d->kernel;
  if (!k) return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->kernel is NULL");
  const char *name = k->name ? k->name : "(unnamed)";
  if (!k->cpu) return mgpu__fail(MGPU_EINVAL, "mgpu_submit: kernel '%s' has no cpu function (it is required)", name);
  if (k->nin < 0 || k->nin > MGPU_MAX_ARGS)
    return mgpu__fail(MGPU_EINVAL, "mgpu_submit: kernel '%s' has nin = %d: expected 0..%d", name, k->nin, MGPU_MAX_ARGS);
  if (k->nout < 0 || k->nout > MGPU_MAX_ARGS)
    return mgpu__fail(MGPU_EINVAL, "mgpu_submit: kernel '%s' has nout = %d: expected 0..%d", name, k->nout,
                      MGPU_MAX_ARGS);
  if (d->nconsts < 0 || d->nconsts > MGPU_MAX_CONSTS)
    return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->nconsts = %d: expected 0..%d", d->nconsts, MGPU_MAX_CONSTS);
  for (int i = 0; i < d->nconsts; i++) {
    if (!d->consts[i]) return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->consts[%d] is NULL", i);
    if (!mgpu__handle_live(MGPU_H_CONST, d->consts[i]))
      return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->consts[%d] was destroyed, or is not a constant", i);
    if (d->consts[i]->rt != rt)
      return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->consts[%d] belongs to another runtime", i);
  }
  if (d->arg_size > 0 && !d->arg)
    return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->arg is NULL with arg_size = %zu", d->arg_size);
  size_t per_item = k->scratch_per_item;
  for (int dir = 0; dir < 2; dir++) {
    int n = dir ? k->nout : k->nin;
    for (int i = 0; i < n; i++) {
      size_t sz = dir ? k->out_size[i] : k->in_size[i];
      const void *p = dir ? (const void *)d->out[i] : d->in[i];
      const char *what = dir ? "out" : "in";
      if (d->n > 0 && !p)
        return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->%s[%d] is NULL with n = %zu items", what, i, d->n);
      if (sz && d->n > SIZE_MAX / sz)
        return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->n = %zu items of %zu bytes (%s[%d]) overflows size_t", d->n,
                          sz, what, i);
      if (per_item > SIZE_MAX - sz)
        return mgpu__fail(MGPU_EINVAL, "mgpu_submit: kernel '%s' item sizes overflow size_t", name);
      per_item += sz;
    }
  }
  if (per_item && d->n > SIZE_MAX / per_item)
    return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->n = %zu items of %zu bytes in all overflows size_t", d->n,
                      per_item);
  if (d->n > MGPU_MAX_ITEMS)
    return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch->n = %zu items: expected at most MGPU_MAX_ITEMS (%zu)", d->n,
                      MGPU_MAX_ITEMS);
  return MGPU_OK;
}

MGPU_API mgpu_status_t mgpu_submit(mgpu_runtime_t *rt, const mgpu_batch_t *d, size_t ndeps, mgpu_event_t *const *deps,
                                   mgpu_event_t **done_p) {
  mgpu_status_t rst = mgpu__check_rt(rt, "mgpu_submit");
  if (rst != MGPU_OK) return rst;
  if (!d) return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch is NULL");
  if (!done_p) return mgpu__fail(MGPU_EINVAL, "mgpu_submit: done_p is NULL");
  mgpu_status_t st = mgpu__check_deps(rt, "mgpu_submit", ndeps, deps);
  if (st != MGPU_OK) return st;
  st = check_batch(rt, d);
  if (st != MGPU_OK) return st;

  const mgpu__config_t *cfg = &rt->cfg;
  bool has_gpu = d->kernel->gpu != NULL;
  bool cpu_ok = rt->ncpu > 0 && (cfg->v.sched != MGPU_SCHED_GPU || !has_gpu);
  bool gpu_ok = has_gpu && rt->ngpus > 0 && cfg->v.sched != MGPU_SCHED_CPU;
  if (!cpu_ok && !gpu_ok) {
    const char *k = d->kernel->name ? d->kernel->name : "(unnamed)";
    if (rt->ncpu == 0 && !has_gpu)
      return mgpu__fail(MGPU_ENOTSUP, "mgpu_submit: kernel '%s' has no GPU function and the runtime has no CPU workers "
                                      "(MGPU_NUM_THREADS=0)", k);
    return mgpu__fail(MGPU_ENOTSUP, "mgpu_submit: MGPU_SCHED=%s leaves no worker for kernel '%s'",
                      cfg->text[MGPU_SET_SCHED], k);
  }

  mgpu__batch_t *b = calloc(1, sizeof *b);
  if (!b) return mgpu__fail(MGPU_ENOMEM, "mgpu_submit: out of memory");
  b->nworkers = rt->nworkers;
  b->ranges = calloc((size_t)rt->nworkers, sizeof *b->ranges);
  b->wstats = calloc((size_t)rt->nworkers, sizeof *b->wstats);
  if (d->arg_size) b->arg_copy = malloc(d->arg_size);
  if (!b->ranges || !b->wstats || (d->arg_size && !b->arg_copy)) {
    free(b->ranges);
    free(b->wstats);
    free(b->arg_copy);
    free(b);
    return mgpu__fail(MGPU_ENOMEM, "mgpu_submit: out of memory");
  }
  for (int i = 0; i < rt->nworkers; i++) {
    pthread_mutex_init(&b->ranges[i].lock, NULL);
    b->wstats[i].kind = rt->workers[i].kind;
    b->wstats[i].device = rt->workers[i].gpu >= 0 ? rt->gpu_index[rt->workers[i].gpu] : -1;
  }
  b->rt = rt;
  b->desc = *d;
  b->kernel = *d->kernel;
  b->desc.kernel = &b->kernel;
  if (d->arg_size) {
    memcpy(b->arg_copy, d->arg, d->arg_size);
    b->desc.arg = b->arg_copy;
  }
  for (int i = 0; i < d->nconsts; i++) mgpu__const_ref(d->consts[i]);
  b->cpu_ok = cpu_ok;
  b->gpu_ok = gpu_ok;
  b->steal_ok = cfg->v.sched != MGPU_SCHED_STATIC;
  return mgpu__enqueue(rt, b, ndeps, deps, done_p);
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

  pthread_mutex_lock(&rt->lock);
  if (rt->finalizing) {
    pthread_mutex_unlock(&rt->lock);
    atomic_store(&b->refs, 1);
    mgpu__batch_unref(b);
    return mgpu__fail(MGPU_ESTATE, "the runtime is being finalized");
  }
  rt->live_batches++;
  pthread_mutex_unlock(&rt->lock);

  /* One extra pending count keeps the batch from starting while deps are added. */
  atomic_init(&b->deps_pending, (int)ndeps + 1);
  for (size_t i = 0; i < ndeps; i++) {
    mgpu__batch_t *dep = (mgpu__batch_t *)deps[i];
    pthread_mutex_lock(&dep->lock);
    if (dep->done) {
      if (atomic_load(&dep->status) != MGPU_OK) atomic_store(&b->dep_failed, 1);
      pthread_mutex_unlock(&dep->lock);
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
    pthread_mutex_unlock(&dep->lock);
  }
  if (mgpu__handle_add(MGPU_H_EVENT, b) != 0) MGPU_PANIC("out of memory registering an event");
  *done_p = (mgpu_event_t *)b;
  if (atomic_fetch_sub(&b->deps_pending, 1) == 1) mgpu__activate(rt, b);
  return MGPU_OK;
}

static void fill_stats(const mgpu__batch_t *b, mgpu_stats_t *s) {
  mgpu_worker_stats_t *user = s->worker;
  int cap = s->worker_cap;
  memset(s, 0, sizeof *s);
  s->worker = user;
  s->worker_cap = cap;
  s->status = (mgpu_status_t)atomic_load(&b->status);
  s->wall_s = b->t_end - b->t_start;
  s->batches = 1;
  s->failed_first = b->failed_first;
  s->failed_count = b->failed_count;
  s->nworkers = b->nworkers;
  s->reserve_workers = b->nreserve;
  for (int i = 0; i < b->nworkers; i++) {
    const mgpu_worker_stats_t *w = &b->wstats[i];
    s->items += w->items;
    s->chunks += w->chunks;
    s->steals += w->steals;
    s->retries += w->retries;
    if (user && i < cap) user[i] = *w;
  }
}

MGPU_API mgpu_status_t mgpu_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats) {
  if (!ev) return mgpu__fail(MGPU_EINVAL, "mgpu_event_wait: event is NULL");
  if (!mgpu__handle_live(MGPU_H_EVENT, ev))
    return mgpu__fail(MGPU_EINVAL, "mgpu_event_wait: %p is not a live event (released already?)", (void *)ev);
  mgpu__batch_t *b = (mgpu__batch_t *)ev;
  pthread_mutex_lock(&b->lock);
  while (!b->done) pthread_cond_wait(&b->done_cv, &b->lock);
  pthread_mutex_unlock(&b->lock);
  if (stats) fill_stats(b, stats);
  mgpu_status_t st = (mgpu_status_t)atomic_load(&b->status);
  if (b->task && st != MGPU_OK)
    mgpu__fail_quiet(st, "%s", st == MGPU_EDEP ? "an event this one depends on failed" : mgpu__task_why(b->task));
  else if (st == MGPU_EKERNEL)
    mgpu__fail_quiet(st, "kernel '%s' failed on items %zu..%zu", b->kernel.name ? b->kernel.name : "(unnamed)",
                     b->failed_first, b->failed_first + b->failed_count - 1);
  else if (st == MGPU_EDEP)
    mgpu__fail_quiet(st, "a batch this one depends on failed, so kernel '%s' did not run",
                     b->kernel.name ? b->kernel.name : "(unnamed)");
  else if (st == MGPU_ECANCELED)
    mgpu__fail_quiet(st, "batch of kernel '%s' canceled: %zu of %zu items computed, the rest not",
                     b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n - atomic_load(&b->dropped), b->desc.n);
  else if (st != MGPU_OK)
    mgpu__fail_quiet(st, "batch of kernel '%s' failed: %s", b->kernel.name ? b->kernel.name : "(unnamed)",
                     mgpu_strerror(st));
  return st;
}

MGPU_API mgpu_status_t mgpu_event_test(mgpu_event_t *ev) {
  if (!ev) return mgpu__fail(MGPU_EINVAL, "mgpu_event_test: event is NULL");
  if (!mgpu__handle_live(MGPU_H_EVENT, ev))
    return mgpu__fail(MGPU_EINVAL, "mgpu_event_test: %p is not a live event (released already?)", (void *)ev);
  mgpu__batch_t *b = (mgpu__batch_t *)ev;
  pthread_mutex_lock(&b->lock);
  int done = b->done;
  pthread_mutex_unlock(&b->lock);
  return done ? (mgpu_status_t)atomic_load(&b->status) : MGPU_ESTATE;
}

MGPU_API mgpu_status_t mgpu_event_cancel(mgpu_event_t *ev) {
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

MGPU_API mgpu_status_t mgpu_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p) {
  if (!ev || !mgpu__handle_live(MGPU_H_EVENT, ev))
    return mgpu__fail(MGPU_EINVAL, "mgpu_event_progress: %p is not a live event", (void *)ev);
  mgpu__batch_t *b = (mgpu__batch_t *)ev;
  size_t total = b->desc.n, done;
  pthread_mutex_lock(&b->lock);
  int finished = b->done;
  pthread_mutex_unlock(&b->lock);
  if (finished) done = total;
  else if (!atomic_load(&b->active)) done = 0; /* waiting for its dependencies */
  else done = total - MGPU_MIN(total, atomic_load(&b->remaining));
  if (done_p) *done_p = done;
  if (total_p) *total_p = total;
  return MGPU_OK;
}

MGPU_API void mgpu_event_release(mgpu_event_t *ev) {
  if (!ev) return;
  if (!mgpu__handle_del(MGPU_H_EVENT, ev)) {
    mgpu__log(MGPU_LOG_ERROR, "mgpu_event_release: %p is not a live event (released twice?); ignored", (void *)ev);
    return;
  }
  mgpu__batch_unref((mgpu__batch_t *)ev);
}

MGPU_API mgpu_status_t mgpu_run(mgpu_runtime_t *rt, const mgpu_batch_t *batch, mgpu_stats_t *stats) {
  mgpu_event_t *ev;
  mgpu_status_t st = mgpu_submit(rt, batch, 0, NULL, &ev);
  if (st != MGPU_OK) return st;
  st = mgpu_event_wait(ev, stats);
  mgpu_event_release(ev);
  return st;
}

/* ------------------------------------------------------------ parallel for */

typedef struct {
  mgpu_loop_fn fn;
  void *arg;
} loop_arg_t;

static int loop_cpu(const mgpu_chunk_t *c) {
  const loop_arg_t *a = c->arg;
  return a->fn(a->arg, c->first, c->count);
}

MGPU_API mgpu_status_t mgpu_parallel_for(mgpu_runtime_t *rt, size_t n, mgpu_loop_fn fn, void *arg) {
  mgpu_status_t st = mgpu__check_rt(rt, "mgpu_parallel_for");
  if (st != MGPU_OK) return st;
  if (!fn) return mgpu__fail(MGPU_EINVAL, "mgpu_parallel_for: fn is NULL");
  if (rt->ncpu == 0)
    return mgpu__fail(MGPU_ENOTSUP, "mgpu_parallel_for: the runtime has no CPU workers (MGPU_NUM_THREADS=0)");
  static const mgpu_kernel_t loop_kernel = {.name = "mgpu_parallel_for", .cpu = loop_cpu};
  loop_arg_t la = {fn, arg};
  mgpu_batch_t b = {.kernel = &loop_kernel, .n = n, .arg = &la, .arg_size = sizeof la};
  return mgpu_run(rt, &b, NULL);
}

/* ------------------------------------------------------------ runtime stats */

MGPU_API mgpu_status_t mgpu_runtime_stats(const mgpu_runtime_t *rt, mgpu_stats_t *s) {
  mgpu_status_t st = mgpu__check_rt(rt, "mgpu_runtime_stats");
  if (st != MGPU_OK) return st;
  if (!s) return mgpu__fail(MGPU_EINVAL, "mgpu_runtime_stats: stats is NULL");
  mgpu__runtime_stats(rt, s);
  return MGPU_OK;
}

void mgpu__runtime_stats(const mgpu_runtime_t *rt, mgpu_stats_t *s) {
  mgpu_worker_stats_t *user = s->worker;
  int cap = s->worker_cap;
  memset(s, 0, sizeof *s);
  s->worker = user;
  s->worker_cap = cap;
  s->nworkers = rt->nworkers;
  s->batches = atomic_load(&rt->batches_done);
  for (int i = 0; i < rt->nworkers; i++) {
    mgpu__worker_t *w = &rt->workers[i];
    mgpu_worker_stats_t ws = {
        .kind = w->kind,
        .device = w->gpu >= 0 ? rt->gpu_index[w->gpu] : -1,
        .items = atomic_load(&w->items),
        .chunks = atomic_load(&w->chunks),
        .steals = atomic_load(&w->steals),
        .retries = atomic_load(&w->retries),
        .busy_s = 1e-9 * (double)atomic_load(&w->busy_ns),
        .batch_cap = w->gpu >= 0 ? mgpu__gpu_cap((mgpu_runtime_t *)rt, w->gpu) : 0,
        .staged_bytes = atomic_load(&w->staged),
    };
    s->items += ws.items;
    s->chunks += ws.chunks;
    s->steals += ws.steals;
    s->retries += ws.retries;
    if (user && i < cap) user[i] = ws;
  }
  s->wall_s = mgpu__now() - rt->t_init;
}

MGPU_API void mgpu_stats_print(const mgpu_runtime_t *rt, const mgpu_stats_t *s, FILE *fp) {
  if (!s || !fp) return;
  uint64_t total = s->items ? s->items : 1;
  fprintf(fp, "%-8s %-7s %12s %7s %9s %7s %8s %7s %11s\n", "worker", "kind", "items", "share", "chunks", "steals",
          "retries", "busy", "staged MiB");
  int n = s->worker ? MGPU_MIN(s->nworkers, s->worker_cap) : 0;
  for (int i = 0; i < n; i++) {
    const mgpu_worker_stats_t *w = &s->worker[i];
    char kind[16];
    if (w->kind == MGPU_WORKER_GPU) snprintf(kind, sizeof kind, "gpu%d", w->device);
    else snprintf(kind, sizeof kind, "cpu");
    double busy = s->wall_s > 0 ? 100.0 * w->busy_s / s->wall_s : 0;
    fprintf(fp, "%-8d %-7s %12llu %6.1f%% %9llu %7llu %8llu %6.1f%% %11.1f\n", i, kind, (unsigned long long)w->items,
            100.0 * (double)w->items / (double)total, (unsigned long long)w->chunks, (unsigned long long)w->steals,
            (unsigned long long)w->retries, busy > 100 ? 100 : busy, (double)w->staged_bytes / (1 << 20));
  }
  fprintf(fp, "total: %llu items, %llu chunks, %llu steals, %llu retries, %.6f s\n", (unsigned long long)s->items,
          (unsigned long long)s->chunks, (unsigned long long)s->steals, (unsigned long long)s->retries, s->wall_s);
  MGPU_UNUSED(rt);
}
