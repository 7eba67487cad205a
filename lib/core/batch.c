/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * batch.c: submitting work: a batch checked against its kernel and the
 * runtime (mgpu_submit), submitted and waited for (mgpu_run), a plain CPU
 * loop (mgpu_parallel_for), and the device tasks of collectives, split arrays
 * and device memory (mgpu__task_submit).
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

mgpu_status_t mgpu__kernel_in(const char *fn, const char *what, const mgpu_kernel_t *user, mgpu_kernel_t *k) {
  memset(k, 0, sizeof *k);
  size_t bytes;
  mgpu_status_t st =
      mgpu__abi_size(fn, what, "mgpu_kernel_t", user->size, MGPU__KERNEL_SIZE_V1, sizeof *k,
                     _Alignof(mgpu_kernel_t), true, &bytes);
  if (st != MGPU_OK) return st;
  mgpu__abi_in(k, sizeof *k, user, bytes);
  k->size = sizeof *k;
  return MGPU_OK;
}

mgpu_status_t mgpu__batch_in(const char *fn, const mgpu_batch_t *user, mgpu_batch_t *d, mgpu_kernel_t *k) {
  memset(d, 0, sizeof *d);
  size_t bytes;
  mgpu_status_t st =
      mgpu__abi_size(fn, "batch->size", "mgpu_batch_t", user->size, MGPU__BATCH_SIZE_V1, sizeof *d,
                     _Alignof(mgpu_batch_t), true, &bytes);
  if (st != MGPU_OK) return st;
  mgpu__abi_in(d, sizeof *d, user, bytes);
  d->size = sizeof *d;
  if (!d->kernel) return MGPU_OK; /* mgpu__batch_check names it */
  st = mgpu__kernel_in(fn, "batch->kernel->size", d->kernel, k);
  d->kernel = k;
  return st;
}

mgpu_status_t mgpu__batch_check(const mgpu_runtime_t *rt, const char *fn, const char *pre, const mgpu_batch_t *d) {
  const mgpu_kernel_t *k = d->kernel;
  if (!k) return mgpu__fail(MGPU_EINVAL, "%s: %skernel is NULL", fn, pre);
  const char *name = k->name ? k->name : "(unnamed)";
  if (!k->cpu) return mgpu__fail(MGPU_EINVAL, "%s: kernel '%s' has no cpu function (it is required)", fn, name);
  if (k->nin < 0 || k->nin > MGPU_MAX_ARGS)
    return mgpu__fail(MGPU_EINVAL, "%s: kernel '%s' has nin = %d: expected 0..%d", fn, name, k->nin, MGPU_MAX_ARGS);
  if (k->nout < 0 || k->nout > MGPU_MAX_ARGS)
    return mgpu__fail(MGPU_EINVAL, "%s: kernel '%s' has nout = %d: expected 0..%d", fn, name, k->nout,
                      MGPU_MAX_ARGS);
  if (d->nconsts < 0 || d->nconsts > MGPU_MAX_CONSTS)
    return mgpu__fail(MGPU_EINVAL, "%s: %snconsts = %d: expected 0..%d", fn, pre, d->nconsts, MGPU_MAX_CONSTS);
  for (int i = 0; i < d->nconsts; i++) {
    if (!d->consts[i]) return mgpu__fail(MGPU_EINVAL, "%s: %sconsts[%d] is NULL", fn, pre, i);
    if (!mgpu__handle_live(MGPU_H_CONST, d->consts[i]))
      return mgpu__fail(MGPU_EINVAL, "%s: %sconsts[%d] was destroyed, or is not a constant", fn, pre, i);
    if (d->consts[i]->rt != rt)
      return mgpu__fail(MGPU_EINVAL, "%s: %sconsts[%d] belongs to another runtime", fn, pre, i);
  }
  if (d->arg_size > 0 && !d->arg)
    return mgpu__fail(MGPU_EINVAL, "%s: %sarg is NULL with arg_size = %zu", fn, pre, d->arg_size);
  size_t per_item = k->scratch_per_item;
  for (int dir = 0; dir < 2; dir++) {
    int n = dir ? k->nout : k->nin;
    for (int i = 0; i < n; i++) {
      size_t sz = dir ? k->out_size[i] : k->in_size[i];
      const void *p = dir ? (const void *)d->out[i] : d->in[i];
      const char *what = dir ? "out" : "in";
      if (d->n > 0 && !p)
        return mgpu__fail(MGPU_EINVAL, "%s: %s%s[%d] is NULL with n = %zu items", fn, pre, what, i, d->n);
      if (sz && d->n > SIZE_MAX / sz)
        return mgpu__fail(MGPU_EINVAL, "%s: %sn = %zu items of %zu bytes (%s[%d]) overflows size_t", fn, pre,
                          d->n, sz, what, i);
      if (per_item > SIZE_MAX - sz)
        return mgpu__fail(MGPU_EINVAL, "%s: kernel '%s' item sizes overflow size_t", fn, name);
      per_item += sz;
    }
  }
  if (per_item && d->n > SIZE_MAX / per_item)
    return mgpu__fail(MGPU_EINVAL, "%s: %sn = %zu items of %zu bytes in all overflows size_t", fn, pre, d->n,
                      per_item);
  if (d->n > MGPU_MAX_ITEMS)
    return mgpu__fail(MGPU_EINVAL, "%s: %sn = %zu items: expected at most MGPU_MAX_ITEMS (%zu)", fn, pre, d->n,
                      MGPU_MAX_ITEMS);
  return MGPU_OK;
}

/* A new batch of checked batch d, its kernel copied from kernel and its
 * argument block from d->arg; NULL out of memory. */
static mgpu__batch_t *batch_new(mgpu_runtime_t *rt, const mgpu_batch_t *d, const mgpu_kernel_t *kernel, size_t base) {
  mgpu__batch_t *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->nworkers = rt->nworkers;
  b->ranges = calloc((size_t)rt->nworkers, sizeof *b->ranges);
  b->wstats = calloc((size_t)rt->nworkers, sizeof *b->wstats);
  if (d->arg_size) b->arg_copy = malloc(d->arg_size);
  if (!b->ranges || !b->wstats || (d->arg_size && !b->arg_copy)) {
    free(b->ranges);
    free(b->wstats);
    free(b->arg_copy);
    free(b);
    return NULL;
  }
  for (int i = 0; i < rt->nworkers; i++) {
    pthread_mutex_init(&b->ranges[i].lock, NULL);
    b->wstats[i].kind = rt->workers[i].kind;
    b->wstats[i].device = rt->workers[i].gpu >= 0 ? rt->gpu_index[rt->workers[i].gpu] : -1;
  }
  b->rt = rt;
  b->base = base;
  b->desc = *d;
  b->kernel = *kernel;
  b->desc.kernel = &b->kernel;
  if (d->arg_size) {
    memcpy(b->arg_copy, d->arg, d->arg_size);
    b->desc.arg = b->arg_copy;
  }
  return b;
}

mgpu_status_t mgpu__node_submit(mgpu_runtime_t *rt, const char *fn, const char *pre, const mgpu_batch_t *user,
                                size_t base, size_t ndeps, mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  mgpu_status_t rst = mgpu__check_rt(rt, fn);
  if (rst != MGPU_OK) return rst;
  if (!user) return mgpu__fail(MGPU_EINVAL, "%s: batch is NULL", fn);
  if (!done_p) return mgpu__fail(MGPU_EINVAL, "%s: done_p is NULL", fn);
  mgpu_batch_t desc;
  mgpu_kernel_t kernel;
  mgpu_status_t st = mgpu__batch_in(fn, user, &desc, &kernel);
  if (st != MGPU_OK) return st;
  const mgpu_batch_t *d = &desc;
  st = mgpu__check_deps(rt, fn, ndeps, deps);
  if (st != MGPU_OK) return st;
  st = mgpu__batch_check(rt, fn, pre, d);
  if (st != MGPU_OK) return st;

  const mgpu__config_t *cfg = &rt->cfg;
  bool has_gpu = d->kernel->gpu != NULL;
  bool cpu_ok = rt->ncpu > 0 && (cfg->v.sched != MGPU_SCHED_GPU || !has_gpu);
  bool gpu_ok = has_gpu && rt->ngpus > 0 && cfg->v.sched != MGPU_SCHED_CPU;
  /* mgpu_init refuses an MGPU_SCHED that leaves no worker: only a kernel
   * without GPU function on a runtime without CPU workers has none. */
  if (!cpu_ok && !gpu_ok)
    return mgpu__fail(MGPU_ENOTSUP, "%s: kernel '%s' has no GPU function and the runtime has no CPU workers "
                                    "(MGPU_NUM_THREADS=0)", fn, d->kernel->name ? d->kernel->name : "(unnamed)");

  mgpu__batch_t *b = batch_new(rt, d, &kernel, base);
  if (!b) return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  for (int i = 0; i < d->nconsts; i++) mgpu__const_ref(d->consts[i]);
  b->cpu_ok = cpu_ok;
  b->gpu_ok = gpu_ok;
  b->steal_ok = cfg->v.sched != MGPU_SCHED_STATIC;
  st = mgpu__enqueue(rt, b, ndeps, deps, done_p);
  /* What earlier batches learnt is stored from here, where the caller vouches
   * for rt (an event may be waited on after its runtime is finalized), once
   * this batch is under way. */
  if (st == MGPU_OK) mgpu__persist_tick(rt);
  return st;
}

mgpu_status_t mgpu__node_run(mgpu_runtime_t *rt, const char *fn, const char *pre, const mgpu_batch_t *batch,
                             mgpu_stats_t *stats) {
  /* A statistics struct the library cannot fill is refused before the batch runs. */
  mgpu__stats_ref_t ref;
  mgpu_status_t st = mgpu__stats_ref(fn, stats, &ref);
  if (st != MGPU_OK) return st;
  mgpu_event_t *ev;
  st = mgpu__node_submit(rt, fn, pre, batch, 0, 0, NULL, &ev);
  if (st != MGPU_OK) return st;
  mgpu_stats_t s;
  st = mgpu__event_wait(ev, stats ? &s : NULL, &ref);
  mgpu__node_event_release(ev);
  mgpu__persist_tick(rt);
  if (stats) mgpu__stats_put(&ref, &s);
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
  if (st != MGPU_OK || (st = mgpu__refuse_in_worker(rt, "mgpu_parallel_for")) != MGPU_OK) return st;
  if (!fn) return mgpu__fail(MGPU_EINVAL, "mgpu_parallel_for: fn is NULL");
  if (rt->ncpu == 0)
    return mgpu__fail(MGPU_ENOTSUP, "mgpu_parallel_for: the runtime has no CPU workers (MGPU_NUM_THREADS=0)");
  static const mgpu_kernel_t loop_kernel = {.size = sizeof loop_kernel, .name = "mgpu_parallel_for", .cpu = loop_cpu};
  loop_arg_t la = {fn, arg};
  mgpu_batch_t b = {.size = sizeof b, .kernel = &loop_kernel, .n = n, .arg = &la, .arg_size = sizeof la};
  /* Of the batch, only n is the caller's: it is named as this call names it. */
  return mgpu__node_run(rt, "mgpu_parallel_for", "", &b, NULL);
}

mgpu_status_t mgpu__task_submit(mgpu_runtime_t *rt, mgpu__task_t *t, const char *name, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  /* A GPU's host thread runs its parts only after the kernel it is in
   * returns: the caller would wait for itself. */
  for (int i = 0; i < t->ngpus && mgpu__self_rt == rt; i++)
    if (t->gpu[i] == mgpu__self_gpu) {
      mgpu__task_free(t);
      return mgpu__fail(MGPU_ESTATE, "%s: called from GPU %d's host thread (inside a kernel function?), which would "
                                     "run the call's part on that GPU only after the kernel returns: refused",
                        name, mgpu__self_gpu);
    }
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
  st = mgpu__node_event_wait(ev, NULL);
  mgpu__node_event_release(ev);
  return st;
}
