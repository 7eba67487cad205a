/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * array.c: device memory, and arrays split across the GPUs and the host by
 * shares (mgpu_array_*). Every device operation is a task run by the GPU's own
 * host thread (task.c), the host part meanwhile by the caller or the CPU
 * workers. Across MPI ranks an array is this rank's part, from element `base`,
 * in which its parts, host copies and chunk->first count (dist_array.c).
 */
#include "data/data.h"

#include "builtin.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct mgpu_array {
  mgpu_runtime_t *rt;
  size_t n, elem;                     /* this process's elements */
  size_t base;                        /* the global index of its first: 0 for one process */
  int ngpus;
  size_t bound[MGPU_MAX_DEVICES + 2]; /* part p holds [bound[p], bound[p + 1]); p = ngpus is the host's */
  void *dev[MGPU_MAX_DEVICES];
  void *host;
  struct mgpu_array *next;            /* rt->arrays, under rt->alloc_lock */
};

static size_t part_count(const mgpu_array_t *a, int p) { return a->bound[p + 1] - a->bound[p]; }

mgpu_runtime_t *mgpu__array_rt(const mgpu_array_t *a) { return mgpu__handle_live(MGPU_H_ARRAY, a) ? a->rt : NULL; }

/* MGPU_OK when a is a live array (created, not destroyed), as `what` of fn. */
static mgpu_status_t live_array(const char *fn, const char *what, const mgpu_array_t *a) {
  if (!a) return mgpu__fail(MGPU_EINVAL, "%s: %s is NULL", fn, what);
  if (!mgpu__handle_live(MGPU_H_ARRAY, a))
    return mgpu__fail(MGPU_EINVAL, "%s: %s (%p) is not a live array (destroyed already, or after mgpu_finalize?)", fn,
                      what, (const void *)a);
  return MGPU_OK;
}

/* ------------------------------------------------------------ tasks on GPUs */

/* What the small per-GPU tasks of this file carry. */
typedef struct {
  mgpu_array_t *a;           /* the array, or NULL for raw device memory */
  const mgpu_array_t *src;   /* copies between arrays */
  void *dev[MGPU_MAX_DEVICES];
  const void *cdev[MGPU_MAX_DEVICES];
  char *host;                /* host side of a copy (whole array or raw buffer) */
  size_t bytes;              /* raw copies and allocations */
  int dir;                   /* 0 to the device, 1 from it */
  /* mgpu_array_run */
  const mgpu_array_batch_t *batch;
  mgpu_kernel_t kernel;
  void *scratch[MGPU_MAX_DEVICES];
  /* mgpu_array_sum */
  mgpu__sum_arg_t sum_arg;
} op_t;

static int gpus_with_parts(const mgpu_array_t *a, int *gpu) {
  int n = 0;
  for (int g = 0; g < a->ngpus; g++)
    if (part_count(a, g) > 0) gpu[n++] = g;
  return n;
}

/* Run part over GPUs gpu[0..n) and wait. */
static mgpu_status_t on_gpus(mgpu_runtime_t *rt, const char *name, int n, const int *gpu, int nphases,
                             int (*part)(mgpu__task_t *, const mgpu__devcall_t *, int), op_t *op, mgpu_event_t **ev) {
  mgpu__task_t *t = mgpu__task_new(n, gpu);
  if (!t) return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", name);
  t->nphases = nphases;
  t->part = part;
  t->arg = op;
  return mgpu__task_submit(rt, t, name, 0, NULL, ev);
}

static int alloc_part(mgpu__task_t *t, const mgpu__devcall_t *dc, int phase) {
  op_t *op = t->arg;
  MGPU_UNUSED(phase);
  size_t bytes = op->bytes ? op->bytes : part_count(op->a, dc->g) * op->a->elem;
  int rc = dc->ops->mem_alloc(dc->ctx, bytes, &op->dev[dc->g]);
  if (rc != 0) {
    op->dev[dc->g] = NULL;
    mgpu__task_fail(t, rc, "cannot allocate %zu bytes on GPU %d%s", bytes, dc->g,
                    rc == MGPU_ENOMEM ? ": out of device memory" : "");
  }
  return rc;
}

static int free_part(mgpu__task_t *t, const mgpu__devcall_t *dc, int phase) {
  op_t *op = t->arg;
  MGPU_UNUSED(phase);
  /* Work of the task stream that may still read it must end first. */
  int rc = dc->ops->stream_sync(dc->ctx, dc->stream);
  if (op->dev[dc->g]) dc->ops->mem_free(dc->ctx, op->dev[dc->g]);
  return rc;
}

static int copy_part(mgpu__task_t *t, const mgpu__devcall_t *dc, int phase) {
  op_t *op = t->arg;
  int g = dc->g;
  MGPU_UNUSED(phase);
  if (op->src) { /* array to array, on the device */
    size_t bytes = part_count(op->a, g) * op->a->elem;
    t->items[g] = part_count(op->a, g);
    return dc->ops->copy_d2d(dc->ctx, op->a->dev[g], op->src->dev[g], bytes, dc->stream);
  }
  size_t off = op->a ? op->a->bound[g] * op->a->elem : 0;
  size_t bytes = op->a ? part_count(op->a, g) * op->a->elem : op->bytes;
  void *d = op->a ? op->a->dev[g] : op->dev[g];
  if (op->dir == 0) return dc->ops->copy_h2d(dc->ctx, d, op->host + off, bytes, dc->stream);
  return dc->ops->copy_d2h(dc->ctx, op->host + off, d, bytes, dc->stream);
}

static mgpu_status_t check_gpu(mgpu_runtime_t *rt, const char *fn, int gpu) {
  mgpu_status_t st = mgpu__check_rt(rt, fn);
  if (st != MGPU_OK) return st;
  if (gpu < 0 || gpu >= rt->ngpus) {
    if (rt->ngpus == 0) return mgpu__fail(MGPU_ENODEV, "%s: the runtime has no GPU", fn);
    return mgpu__fail(MGPU_EINVAL, "%s: gpu %d is not a GPU of the runtime: expected 0..%d", fn, gpu, rt->ngpus - 1);
  }
  return MGPU_OK;
}

/* ------------------------------------------------------------ raw device memory */

static mgpu_status_t device_free(mgpu_runtime_t *rt, int gpu, void *p) {
  op_t op = {0};
  op.dev[gpu] = p;
  /* Earlier tasks may use p, also one still waiting for its dependencies,
   * which the free's task would otherwise overtake. */
  mgpu__tasks_wait(rt, gpu);
  return on_gpus(rt, "mgpu_device_free", 1, &gpu, 1, free_part, &op, NULL);
}

MGPU_API mgpu_status_t mgpu_device_alloc(mgpu_runtime_t *rt, int gpu, size_t bytes, void **p_p) {
  mgpu_status_t st = check_gpu(rt, "mgpu_device_alloc", gpu);
  if (st != MGPU_OK) return st;
  if (!p_p) return mgpu__fail(MGPU_EINVAL, "mgpu_device_alloc: p_p is NULL");
  op_t op = {.bytes = bytes ? bytes : 1};
  st = on_gpus(rt, "mgpu_device_alloc", 1, &gpu, 1, alloc_part, &op, NULL);
  if (st != MGPU_OK) return st;
  if (mgpu__devmem_record(rt, gpu, op.dev[gpu], op.bytes) != 0) {
    device_free(rt, gpu, op.dev[gpu]);
    return mgpu__fail(MGPU_ENOMEM, "mgpu_device_alloc: out of host memory recording the allocation");
  }
  *p_p = op.dev[gpu];
  return MGPU_OK;
}

MGPU_API mgpu_status_t mgpu_device_free(mgpu_runtime_t *rt, int gpu, void *p) {
  mgpu_status_t st = check_gpu(rt, "mgpu_device_free", gpu);
  if (st != MGPU_OK || !p) return st;
  if (!mgpu__devmem_forget(rt, gpu, p))
    return mgpu__fail(MGPU_EINVAL, "mgpu_device_free: %p was not allocated by mgpu_device_alloc on GPU %d of this "
                                   "runtime, or was freed already", p, gpu);
  return device_free(rt, gpu, p);
}

void mgpu__device_allocs_free_all(mgpu_runtime_t *rt) {
  size_t bytes = 0;
  int n = rt->ndev_allocs;
  for (int i = 0; i < n; i++) {
    bytes += rt->dev_allocs[i].bytes;
    device_free(rt, rt->dev_allocs[i].gpu, rt->dev_allocs[i].p);
  }
  if (n)
    mgpu__log(MGPU_LOG_WARN, "mgpu_finalize: %d allocation%s of mgpu_device_alloc (%zu bytes) %s not freed; freeing "
              "%s", n, n == 1 ? "" : "s", bytes, n == 1 ? "was" : "were", n == 1 ? "it" : "them");
  free(rt->dev_allocs);
  rt->dev_allocs = NULL;
  rt->ndev_allocs = rt->dev_allocs_cap = 0;
}

static mgpu_status_t raw_copy(mgpu_runtime_t *rt, const char *fn, int gpu, void *dev, void *host, size_t bytes,
                              int dir) {
  mgpu_status_t st = check_gpu(rt, fn, gpu);
  if (st != MGPU_OK) return st;
  if (bytes == 0) return MGPU_OK;
  if (!dev || !host) return mgpu__fail(MGPU_EINVAL, "%s: %s is NULL", fn, (dir == 0) == !dev ? "dst" : "src");
  if ((st = mgpu__devmem_check(rt, fn, dir == 0 ? "dst" : "src", gpu, dev, bytes, NULL)) != MGPU_OK) return st;
  op_t op = {.host = host, .bytes = bytes, .dir = dir};
  op.dev[gpu] = dev;
  return on_gpus(rt, fn, 1, &gpu, 1, copy_part, &op, NULL);
}

MGPU_API mgpu_status_t mgpu_memcpy_to_device(mgpu_runtime_t *rt, int gpu, void *dst, const void *src, size_t bytes) {
  return raw_copy(rt, "mgpu_memcpy_to_device", gpu, dst, (void *)src, bytes, 0);
}

MGPU_API mgpu_status_t mgpu_memcpy_from_device(mgpu_runtime_t *rt, int gpu, void *dst, const void *src, size_t bytes) {
  return raw_copy(rt, "mgpu_memcpy_from_device", gpu, (void *)src, dst, bytes, 1);
}

/* ------------------------------------------------------------ arrays */

/* Split n by shares[0..k) (k = ngpus, or ngpus + 1 with the host's last). */
static void split(mgpu_array_t *a, const double *shares, int k) {
  long double sum = 0, cum = 0;
  for (int i = 0; i < k; i++) sum += shares[i];
  a->bound[0] = 0;
  for (int p = 0; p <= a->ngpus; p++) {
    if (p < k) cum += shares[p];
    size_t b = p + 1 >= k ? a->n : (size_t)llroundl((long double)a->n * cum / sum);
    if (b > a->n) b = a->n;
    if (b < a->bound[p]) b = a->bound[p];
    a->bound[p + 1] = b;
  }
  a->bound[a->ngpus + 1] = a->n;
}

static void unlink_array(mgpu_array_t *a) {
  mgpu_runtime_t *rt = a->rt;
  MGPU_LOCK(&rt->alloc_lock, MGPU_LK_ALLOC);
  for (mgpu_array_t **pp = &rt->arrays; *pp; pp = &(*pp)->next)
    if (*pp == a) {
      *pp = a->next;
      break;
    }
  MGPU_UNLOCK(&rt->alloc_lock);
}

static void free_array(mgpu_array_t *a) {
  int gpu[MGPU_MAX_DEVICES], n = 0;
  op_t op = {0};
  for (int g = 0; g < a->ngpus; g++)
    if (a->dev[g]) {
      gpu[n++] = g;
      op.dev[g] = a->dev[g];
      mgpu__tasks_wait(a->rt, g); /* as in device_free */
    }
  if (n > 0 && on_gpus(a->rt, "mgpu_array_destroy", n, gpu, 1, free_part, &op, NULL) != MGPU_OK)
    mgpu__log(MGPU_LOG_WARN, "mgpu_array_destroy: freeing device memory failed: %s", mgpu_last_error());
  free(a->host);
  free(a);
}

/* The shares an array is split by: the caller's, else MGPU_TENSOR_SPLIT's,
 * else equal ones over the GPUs (eq holds them), checked: *sh_p and *k_p. */
static mgpu_status_t pick_shares(const mgpu_runtime_t *rt, const char *fn, const double *shares, int nshares,
                                 double *eq, const double **sh_p, int *k_p) {
  char why[256];
  const double *sh = shares;
  int k = nshares;
  const char *what = "shares";
  if (!shares || nshares == 0) {
    if (shares) return mgpu__fail(MGPU_EINVAL, "%s: nshares is 0 but shares is not NULL: give both or neither", fn);
    if (nshares) return mgpu__fail(MGPU_EINVAL, "%s: shares is NULL with nshares = %d", fn, nshares);
    if (rt->cfg.v.ntensor_split > 0) {
      sh = rt->cfg.v.tensor_split;
      k = rt->cfg.v.ntensor_split;
      what = "MGPU_TENSOR_SPLIT";
    } else {
      k = rt->ngpus > 0 ? rt->ngpus : 1;
      for (int i = 0; i < k; i++) eq[i] = 1;
      sh = eq;
    }
  }
  bool ok_count = k == rt->ngpus + 1 || (k == rt->ngpus && k > 0);
  if (!ok_count)
    return mgpu__fail(MGPU_EINVAL, "%s: %s has %d entr%s but the runtime has %d GPU%s: expected %d (GPUs) or %d "
                                   "(GPUs, then the host)", fn, what, k, k == 1 ? "y" : "ies", rt->ngpus,
                      rt->ngpus == 1 ? "" : "s", rt->ngpus, rt->ngpus + 1);
  if (mgpu__check_ratios(sh, k, why, sizeof why) != 0) return mgpu__fail(MGPU_EINVAL, "%s: %s: %s", fn, what, why);
  *sh_p = sh;
  *k_p = k;
  return MGPU_OK;
}

mgpu_status_t mgpu__array_create(mgpu_runtime_t *rt, size_t n, size_t base, size_t elem_size, int nshares,
                                 const double *shares, mgpu_array_t **a_p) {
  const char *fn = "mgpu_array_create";
  mgpu_status_t st = mgpu__check_rt(rt, fn);
  if (st != MGPU_OK) return st;
  if (!a_p) return mgpu__fail(MGPU_EINVAL, "%s: a_p is NULL", fn);
  if (elem_size == 0) return mgpu__fail(MGPU_EINVAL, "%s: elem_size is 0", fn);
  if (n > SIZE_MAX / elem_size)
    return mgpu__fail(MGPU_EINVAL, "%s: %zu elements of %zu bytes overflow size_t", fn, n, elem_size);
  double eq[MGPU_MAX_DEVICES + 1];
  const double *sh = NULL;
  int k = 0;
  if ((st = pick_shares(rt, fn, shares, nshares, eq, &sh, &k)) != MGPU_OK) return st;
  mgpu_array_t *a = calloc(1, sizeof *a);
  if (!a) return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  a->rt = rt;
  a->n = n;
  a->base = base;
  a->elem = elem_size;
  a->ngpus = rt->ngpus;
  split(a, sh, k);
  size_t host_n = part_count(a, a->ngpus);
  if (host_n > 0 && !(a->host = malloc(host_n * elem_size))) {
    free(a);
    return mgpu__fail(MGPU_ENOMEM, "%s: out of memory for the host part (%zu bytes)", fn, host_n * elem_size);
  }
  int gpu[MGPU_MAX_DEVICES];
  int ng = gpus_with_parts(a, gpu);
  op_t op = {.a = a};
  if (ng > 0 && (st = on_gpus(rt, fn, ng, gpu, 1, alloc_part, &op, NULL)) != MGPU_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", mgpu_last_error());
    memcpy(a->dev, op.dev, sizeof a->dev);
    free_array(a);
    /* A task's message names the call already. */
    if (strncmp(msg, fn, strlen(fn)) == 0) return mgpu__fail(st, "%s", msg);
    return mgpu__fail(st, "%s: %s", fn, msg);
  }
  memcpy(a->dev, op.dev, sizeof a->dev);
  if (mgpu__handle_add(MGPU_H_ARRAY, a) != 0) {
    free_array(a);
    return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  }
  MGPU_LOCK(&rt->alloc_lock, MGPU_LK_ALLOC);
  a->next = rt->arrays;
  rt->arrays = a;
  MGPU_UNLOCK(&rt->alloc_lock);
  *a_p = a;
  return MGPU_OK;
}

MGPU_API void mgpu_array_destroy(mgpu_array_t *a) {
  if (!a) return;
  if (!mgpu__handle_del(MGPU_H_ARRAY, a)) {
    mgpu__log(MGPU_LOG_ERROR, "mgpu_array_destroy: %p is not a live array (destroyed twice, or after mgpu_finalize?); "
                              "ignored", (void *)a);
    return;
  }
  unlink_array(a);
  free_array(a);
}

void mgpu__arrays_free_all(mgpu_runtime_t *rt) {
  while (rt->arrays) {
    mgpu_array_t *a = rt->arrays;
    rt->arrays = a->next;
    mgpu__log(MGPU_LOG_WARN, "mgpu_finalize: an array of %zu elements was not destroyed; freeing it", a->n);
    mgpu__handle_del(MGPU_H_ARRAY, a);
    free_array(a);
  }
}

MGPU_API int mgpu_array_nparts(const mgpu_array_t *a) {
  return live_array("mgpu_array_nparts", "a", a) == MGPU_OK ? a->ngpus + 1 : 0;
}

MGPU_API mgpu_status_t mgpu_array_part(const mgpu_array_t *a, int i, mgpu_array_part_t *out) {
  mgpu_status_t live = live_array("mgpu_array_part", "a", a);
  if (live != MGPU_OK) return live;
  if (!out) return mgpu__fail(MGPU_EINVAL, "mgpu_array_part: out is NULL");
  size_t bytes;
  mgpu_status_t st = mgpu__abi_size("mgpu_array_part", "out->size", "mgpu_array_part_t", out->size,
                                    MGPU__ARRAY_PART_SIZE_V1, sizeof *out, _Alignof(mgpu_array_part_t), true,
                                    &bytes);
  if (st != MGPU_OK) return st;
  if (i < 0 || i > a->ngpus)
    return mgpu__fail(MGPU_EINVAL, "mgpu_array_part: part %d does not exist: expected 0..%d", i, a->ngpus);
  mgpu_array_part_t p = {.size = out->size, .gpu = i < a->ngpus ? i : -1, .first = a->base + a->bound[i],
                         .count = part_count(a, i)};
  p.data = p.count == 0 ? NULL : i < a->ngpus ? a->dev[i] : a->host;
  mgpu__abi_out(out, bytes, &p, sizeof p);
  return MGPU_OK;
}

/* Copy between an array and the host, the host part at the same time. */
static mgpu_status_t host_copy(mgpu_array_t *a, char *host, int dir, const char *fn) {
  mgpu_status_t live = live_array(fn, "a", a);
  if (live != MGPU_OK) return live;
  if (!host && a->n > 0) return mgpu__fail(MGPU_EINVAL, "%s: host is NULL", fn);
  if (host) host += a->base * a->elem; /* the host array holds every element, this part's from its base */
  int gpu[MGPU_MAX_DEVICES];
  int ng = gpus_with_parts(a, gpu);
  op_t op = {.a = a, .host = host, .dir = dir};
  mgpu_event_t *ev = NULL;
  mgpu_status_t st = ng > 0 ? on_gpus(a->rt, fn, ng, gpu, 1, copy_part, &op, &ev) : MGPU_OK;
  size_t off = a->bound[a->ngpus] * a->elem, bytes = part_count(a, a->ngpus) * a->elem;
  if (bytes) {
    if (dir == 0) memcpy(a->host, host + off, bytes);
    else memcpy(host + off, a->host, bytes);
  }
  if (ev) {
    st = mgpu__node_event_wait(ev, NULL);
    mgpu__node_event_release(ev);
  }
  return st;
}

MGPU_API mgpu_status_t mgpu_array_scatter(mgpu_array_t *a, const void *host) {
  return host_copy(a, (char *)host, 0, "mgpu_array_scatter");
}

MGPU_API mgpu_status_t mgpu_array_gather(const mgpu_array_t *a, void *host) {
  return host_copy((mgpu_array_t *)a, host, 1, "mgpu_array_gather");
}

static bool same_split(const mgpu_array_t *a, const mgpu_array_t *b) {
  return a->rt == b->rt && a->n == b->n && a->base == b->base && a->ngpus == b->ngpus &&
         memcmp(a->bound, b->bound, sizeof(size_t) * (size_t)(a->ngpus + 2)) == 0;
}

/* The figures of event ev (NULL: nothing ran on the GPUs) into s, in full,
 * and its workers' into r's array. */
static void stats_from(mgpu_event_t *ev, mgpu_stats_t *s, const mgpu__stats_ref_t *r) {
  if (ev) mgpu__event_wait(ev, s, r);
  else memset(s, 0, sizeof *s);
}

MGPU_API mgpu_status_t mgpu_array_copy(mgpu_array_t *dst, const mgpu_array_t *src, mgpu_stats_t *stats) {
  const char *fn = "mgpu_array_copy";
  mgpu_status_t st = live_array(fn, "dst", dst);
  if (st == MGPU_OK) st = live_array(fn, "src", src);
  if (st != MGPU_OK) return st;
  if (dst->rt != src->rt) return mgpu__fail(MGPU_EINVAL, "%s: the arrays belong to different runtimes", fn);
  if (!same_split(dst, src) || dst->elem != src->elem)
    return mgpu__fail(MGPU_EINVAL, "%s: the arrays differ in length, element size or split", fn);
  mgpu__stats_ref_t ref;
  st = mgpu__stats_ref(fn, stats, &ref);
  if (st != MGPU_OK) return st;
  double t0 = mgpu__now();
  int gpu[MGPU_MAX_DEVICES];
  int ng = gpus_with_parts(dst, gpu);
  op_t op = {.a = dst, .src = src};
  mgpu_event_t *ev = NULL;
  st = ng > 0 ? on_gpus(dst->rt, fn, ng, gpu, 1, copy_part, &op, &ev) : MGPU_OK;
  size_t bytes = part_count(dst, dst->ngpus) * dst->elem;
  if (bytes) memcpy(dst->host, src->host, bytes);
  if (ev) st = mgpu__node_event_wait(ev, NULL);
  if (stats) {
    mgpu_stats_t s;
    stats_from(ev, &s, &ref);
    s.wall_s = mgpu__now() - t0;
    mgpu__stats_put(&ref, &s);
  }
  mgpu__node_event_release(ev);
  return st;
}

/* ------------------------------------------------------------ kernels over arrays */

static int run_part(mgpu__task_t *t, const mgpu__devcall_t *dc, int phase) {
  op_t *op = t->arg;
  const mgpu_array_batch_t *ab = op->batch;
  const mgpu_kernel_t *k = &op->kernel;
  int g = dc->g;
  if (phase == 1) { /* the kernel is done: give its scratch back */
    if (op->scratch[g]) dc->ops->mem_free(dc->ctx, op->scratch[g]);
    op->scratch[g] = NULL;
    return 0;
  }
  const mgpu_array_t *any = k->nin ? ab->in[0] : ab->out[0];
  size_t n = part_count(any, g);
  const void *in[MGPU_MAX_ARGS], *consts[MGPU_MAX_CONSTS] = {0};
  void *out[MGPU_MAX_ARGS];
  for (int i = 0; i < k->nin; i++) in[i] = ab->in[i]->dev[g];
  for (int i = 0; i < k->nout; i++) out[i] = ab->out[i]->dev[g];
  int rc;
  for (int i = 0; i < ab->nconsts; i++)
    if ((rc = mgpu__gpu_const(dc, ab->consts[i], &consts[i])) != 0) return rc;
  if (k->scratch_per_item && (rc = dc->ops->mem_alloc(dc->ctx, k->scratch_per_item * n, &op->scratch[g])) != 0)
    return rc;
  mgpu_chunk_t c = {.in = in, .out = out, .consts = consts, .arg = ab->arg, .scratch = op->scratch[g],
                    .first = any->base + any->bound[g], .count = n, .stream = dc->stream, .worker = dc->rt->ncpu + g};
  t->items[g] = n;
  rc = dc->ops->launch(dc->ctx, k, &c, dc->stream);
  if (rc != 0)
    mgpu__task_fail(t, rc, "kernel '%s' failed to launch on GPU %d: %s", k->name ? k->name : "", g,
                    mgpu_strerror((mgpu_status_t)rc));
  return rc;
}

/* The host part runs as a CPU-only batch whose items start at the arrays'
 * index `offset` (its base: chunks, failures and messages count in the
 * arrays' indices); this wrapper gives the kernel the caller's argument. */
typedef struct {
  const mgpu_kernel_t *k;
  const void *arg;
  size_t offset;
} host_wrap_t;

static int host_wrap_cpu(const mgpu_chunk_t *c) {
  const host_wrap_t *w = c->arg;
  mgpu_chunk_t u = *c;
  u.arg = w->arg;
  return w->k->cpu(&u);
}

/* The caller's batch and its kernel, copied in full (abi.c). */
static mgpu_status_t array_batch_in(const char *fn, const mgpu_array_batch_t *user, mgpu_array_batch_t *ab,
                                    mgpu_kernel_t *k) {
  memset(ab, 0, sizeof *ab);
  size_t bytes;
  mgpu_status_t st = mgpu__abi_size(fn, "batch->size", "mgpu_array_batch_t", user->size, MGPU__ARRAY_BATCH_SIZE_V1,
                                    sizeof *ab, _Alignof(mgpu_array_batch_t), true, &bytes);
  if (st != MGPU_OK) return st;
  mgpu__abi_in(ab, sizeof *ab, user, bytes);
  ab->size = sizeof *ab;
  if (!ab->kernel) return mgpu__fail(MGPU_EINVAL, "%s: batch->kernel is NULL", fn);
  st = mgpu__kernel_in(fn, "batch->kernel->size", ab->kernel, k);
  ab->kernel = k;
  return st;
}

/* mgpu_array_run's checks of batch ab and its kernel; *first_p: its first
 * array, which every other one matches in length and split. */
static mgpu_status_t check_run(mgpu_runtime_t *rt, const char *fn, const mgpu_array_batch_t *ab,
                               const mgpu_array_t **first_p) {
  const mgpu_kernel_t *k = ab->kernel;
  const char *name = k->name ? k->name : "(unnamed)";
  if (!k->cpu) return mgpu__fail(MGPU_EINVAL, "%s: kernel '%s' has no cpu function (it is required)", fn, name);
  if (k->nin < 0 || k->nin > MGPU_MAX_ARGS || k->nout < 0 || k->nout > MGPU_MAX_ARGS || k->nin + k->nout == 0)
    return mgpu__fail(MGPU_EINVAL, "%s: kernel '%s' has nin = %d, nout = %d: expected 0..%d each, not both 0", fn, name,
                      k->nin, k->nout, MGPU_MAX_ARGS);
  if (ab->nconsts < 0 || ab->nconsts > MGPU_MAX_CONSTS)
    return mgpu__fail(MGPU_EINVAL, "%s: batch->nconsts = %d: expected 0..%d", fn, ab->nconsts, MGPU_MAX_CONSTS);
  for (int i = 0; i < ab->nconsts; i++)
    if (!ab->consts[i] || !mgpu__handle_live(MGPU_H_CONST, ab->consts[i]) || ab->consts[i]->rt != rt)
      return mgpu__fail(MGPU_EINVAL, "%s: batch->consts[%d] is not a live constant of this runtime", fn, i);
  if (ab->arg_size > 0 && !ab->arg) return mgpu__fail(MGPU_EINVAL, "%s: batch->arg is NULL with arg_size > 0", fn);
  const mgpu_array_t *first = k->nin ? ab->in[0] : ab->out[0];
  mgpu_status_t st;
  for (int dir = 0; dir < 2; dir++)
    for (int i = 0; i < (dir ? k->nout : k->nin); i++) {
      const mgpu_array_t *x = dir ? ab->out[i] : ab->in[i];
      size_t sz = dir ? k->out_size[i] : k->in_size[i];
      const char *what = dir ? "out" : "in";
      char which[32];
      snprintf(which, sizeof which, "batch->%s[%d]", what, i);
      if ((st = live_array(fn, which, x)) != MGPU_OK) return st;
      if (x->rt != rt) return mgpu__fail(MGPU_EINVAL, "%s: batch->%s[%d] belongs to another runtime", fn, what, i);
      if (x->elem != sz)
        return mgpu__fail(MGPU_EINVAL, "%s: batch->%s[%d] has %zu-byte elements but kernel '%s' takes %zu-byte items",
                          fn, what, i, x->elem, name, sz);
      if (!same_split(x, first))
        return mgpu__fail(MGPU_EINVAL, "%s: batch->%s[%d] differs from the first array in length or split", fn, what,
                          i);
    }
  *first_p = first;
  return MGPU_OK;
}

/* The GPUs' parts of the batch in op, one task on GPUs gpu[0..ng); a second
 * phase gives the kernel's scratch back. */
static mgpu_status_t submit_gpu_parts(mgpu_runtime_t *rt, const char *fn, const char *name, int ng, const int *gpu,
                                      op_t *op, mgpu_event_t **gev) {
  mgpu__task_t *t = mgpu__task_new(ng, gpu);
  if (!t) return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  t->nphases = op->kernel.scratch_per_item ? 2 : 1;
  t->part = run_part;
  t->arg = op;
  return mgpu__task_submit(rt, t, name, 0, NULL, gev);
}

/* The host part of ab's arrays as a CPU-only batch of kernel hk (made from
 * ab's, hw its argument; both outlive the batch): MGPU_OK with *hev NULL
 * where the host part is empty. */
static mgpu_status_t submit_host_part(mgpu_runtime_t *rt, const char *fn, const mgpu_array_batch_t *ab,
                                      const mgpu_array_t *first, host_wrap_t *hw, mgpu_kernel_t *hk,
                                      mgpu_event_t **hev) {
  const mgpu_kernel_t *k = ab->kernel;
  size_t hn = part_count(first, first->ngpus);
  hk->gpu = NULL;
  hk->cpu = host_wrap_cpu;
  if (hn == 0) return MGPU_OK;
  mgpu_batch_t hb = {
      .size = sizeof hb, .kernel = hk, .n = hn, .nconsts = ab->nconsts, .arg = hw, .arg_size = sizeof *hw};
  for (int i = 0; i < k->nin; i++) hb.in[i] = ab->in[i]->host;
  for (int i = 0; i < k->nout; i++) hb.out[i] = ab->out[i]->host;
  for (int i = 0; i < ab->nconsts; i++) hb.consts[i] = ab->consts[i];
  return mgpu__node_submit(rt, fn, "batch->", &hb, hw->offset, 0, NULL, hev);
}

/* The GPUs' parts failed (event gev): the first GPU whose part failed, its
 * items in the arrays' indices, into s and the message why. */
static void gpu_failure(mgpu_event_t *gev, const mgpu_array_t *first, mgpu_stats_t *s, char *why, size_t len) {
  const mgpu__task_t *t = ((mgpu__batch_t *)gev)->task;
  int fg = 0;
  while (fg < first->ngpus && !t->part_failed[fg]) fg++;
  if (fg < first->ngpus) {
    s->failed_first = first->base + first->bound[fg];
    s->failed_count = part_count(first, fg);
    snprintf(why, len, "%s (GPU %d's part: items %zu..%zu)", mgpu_last_error(), fg, s->failed_first,
             s->failed_first + s->failed_count - 1);
  } else {
    snprintf(why, len, "%s", mgpu_last_error());
  }
}

/* Wait for the host part's batch hev and add its figures to s and its
 * workers' to ref's; its status. A kernel's failure there names its items
 * where the GPUs' status st did not fail first. */
static mgpu_status_t wait_host_part(mgpu_runtime_t *rt, mgpu_event_t *hev, mgpu_status_t st, mgpu_stats_t *s,
                                    const mgpu__stats_ref_t *ref) {
  mgpu_stats_t hs;
  mgpu_worker_stats_t *hw_stats = ref->worker ? calloc((size_t)rt->nworkers, sizeof *hw_stats) : NULL;
  mgpu__stats_ref_t href;
  mgpu__stats_ref_own(&href, hw_stats, rt->nworkers);
  mgpu_status_t hst = mgpu__event_wait(hev, &hs, &href);
  s->items += hs.items;
  s->chunks += hs.chunks;
  if (hst == MGPU_EKERNEL && st == MGPU_OK) s->failed_first = hs.failed_first, s->failed_count = hs.failed_count;
  s->nworkers = rt->nworkers;
  for (int i = 0; hw_stats && i < rt->ncpu; i++) mgpu__stats_put_worker(ref, i, &hw_stats[i]);
  free(hw_stats);
  mgpu__node_event_release(hev);
  return hst;
}

MGPU_API mgpu_status_t mgpu_array_run(mgpu_runtime_t *rt, const mgpu_array_batch_t *user, mgpu_stats_t *stats) {
  const char *fn = "mgpu_array_run";
  mgpu_status_t st = mgpu__check_rt(rt, fn);
  if (st != MGPU_OK) return st;
  if (!user) return mgpu__fail(MGPU_EINVAL, "%s: batch is NULL", fn);
  mgpu_array_batch_t batch;
  mgpu_kernel_t kernel;
  if ((st = array_batch_in(fn, user, &batch, &kernel)) != MGPU_OK) return st;
  mgpu__stats_ref_t ref;
  if ((st = mgpu__stats_ref(fn, stats, &ref)) != MGPU_OK) return st;
  const mgpu_array_batch_t *ab = &batch;
  const mgpu_kernel_t *k = ab->kernel;
  const char *name = k->name ? k->name : "(unnamed)";
  const mgpu_array_t *first = NULL;
  if ((st = check_run(rt, fn, ab, &first)) != MGPU_OK) return st;
  int gpu[MGPU_MAX_DEVICES];
  int ng = gpus_with_parts(first, gpu);
  /* Emulated devices run the CPU function in place of the GPU one, but only
   * for kernels that have one, so that they refuse what a real device does. */
  if (ng > 0 && !k->gpu)
    return mgpu__fail(MGPU_ENOTSUP, "%s: kernel '%s' has no GPU function but GPU %d holds a part of its arrays", fn,
                      name, gpu[0]);
  if (part_count(first, first->ngpus) > 0 && rt->ncpu == 0)
    return mgpu__fail(MGPU_ENOTSUP, "%s: the host part holds %zu elements but the runtime has no CPU workers "
                                    "(MGPU_NUM_THREADS=0)", fn, part_count(first, first->ngpus));
  double t0 = mgpu__now();
  op_t *op = calloc(1, sizeof *op);
  if (!op) return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  op->batch = ab;
  op->kernel = *k;
  mgpu_event_t *gev = NULL, *hev = NULL;
  if (ng > 0 && (st = submit_gpu_parts(rt, fn, name, ng, gpu, op, &gev)) != MGPU_OK) {
    free(op);
    return st;
  }
  host_wrap_t hw = {k, ab->arg, first->base + first->bound[first->ngpus]};
  mgpu_kernel_t hk = *k;
  mgpu_status_t hst = submit_host_part(rt, fn, ab, first, &hw, &hk, &hev);
  mgpu_stats_t s;
  char gwhy[512] = "";
  if (gev) st = mgpu__event_wait(gev, &s, &ref);
  else stats_from(NULL, &s, &ref);
  if (st != MGPU_OK) gpu_failure(gev, first, &s, gwhy, sizeof gwhy);
  if (hev) hst = wait_host_part(rt, hev, st, &s, &ref);
  s.wall_s = mgpu__now() - t0;
  if (st == MGPU_OK) s.status = hst;
  if (stats) mgpu__stats_put(&ref, &s);
  mgpu__node_event_release(gev);
  free(op);
  /* The GPUs' failure first, as the status; the host part's wait set its own message. */
  if (st != MGPU_OK) return mgpu__fail_quiet(st, "%s", gwhy);
  return hst;
}

/* ------------------------------------------------------------ sum */

typedef struct {
  const char *data;
  size_t n, elem;
  int is_double;
  double *partial;
} host_sum_t;

static int host_sum_seg(void *arg, size_t first, size_t count) {
  host_sum_t *h = arg;
  mgpu__sum_arg_t sa = {h->is_double};
  for (size_t s = first; s < first + count; s++) {
    size_t lo = s * MGPU_SUM_SEGMENT, len = MGPU_MIN(MGPU_SUM_SEGMENT, h->n - lo);
    const void *in[1] = {h->data + lo * h->elem};
    void *out[1] = {&h->partial[s]};
    mgpu_chunk_t c = {.in = in, .out = out, .arg = &sa, .count = len};
    if (mgpu__sum_cpu(&c) != 0) return 1;
  }
  return 0;
}

/* Pairwise sum of v[0..n): the same tree whatever the thread count. */
static double pairwise(const double *v, size_t n) {
  if (n == 0) return 0;
  if (n == 1) return v[0];
  size_t h = n / 2;
  return pairwise(v, h) + pairwise(v + h, n - h);
}

static int sum_part(mgpu__task_t *t, const mgpu__devcall_t *dc, int phase) {
  op_t *op = t->arg;
  int g = dc->g;
  MGPU_UNUSED(phase);
  size_t n = part_count(op->a, g);
  const void *in[1] = {op->a->dev[g]};
  void *out[1] = {op->dev[g]};
  mgpu_chunk_t c = {.in = in, .out = out, .arg = &op->sum_arg, .scratch = (char *)op->dev[g] + MGPU_SUM_HEAD_BYTES, .first = 0,
                    .count = n, .stream = dc->stream, .worker = dc->rt->ncpu + g};
  t->items[g] = n;
  return dc->ops->launch(dc->ctx, &mgpu__sum_kernel, &c, dc->stream);
}

/* The sum of a's host part into *host (0 where it is empty), in segments on
 * the CPU workers, or on this thread where the runtime has none. */
static mgpu_status_t host_part_sum(mgpu_runtime_t *rt, const char *fn, const mgpu_array_t *a, mgpu_dtype_t dt,
                                   double *host) {
  size_t hn = part_count(a, a->ngpus);
  if (hn == 0) return MGPU_OK;
  mgpu_status_t st;
  size_t nseg = (hn + MGPU_SUM_SEGMENT - 1) / MGPU_SUM_SEGMENT;
  host_sum_t h = {a->host, hn, a->elem, dt == MGPU_FLOAT64, calloc(nseg, sizeof(double))};
  if (!h.partial) st = mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  else if (rt->ncpu > 0) st = mgpu_parallel_for(rt, nseg, host_sum_seg, &h);
  else st = host_sum_seg(&h, 0, nseg) ? MGPU_EKERNEL : MGPU_OK;
  if (st == MGPU_OK) *host = pairwise(h.partial, nseg);
  free(h.partial);
  return st;
}

/* The sum of the GPUs' partial sums (in op's buffers) into *gsum: an
 * all-reduce among this process's GPUs, or, where the collectives span the
 * GPUs of every rank, this rank's partials added here in GPU order. */
static mgpu_status_t gpu_parts_sum(mgpu_runtime_t *rt, const mgpu_array_t *a, const op_t *op, double *gsum) {
  mgpu_status_t st = MGPU_OK;
  if (rt->coll_ranks > 1) {
    for (int g = 0; g < a->ngpus && st == MGPU_OK; g++) {
      double p = 0;
      st = mgpu_memcpy_from_device(rt, g, &p, op->dev[g], sizeof p);
      *gsum += p;
    }
    return st;
  }
  void *buf[MGPU_MAX_DEVICES];
  for (int g = 0; g < a->ngpus; g++) buf[g] = op->dev[g];
  st = mgpu__node_collective(rt, MGPU__COLL_ALLREDUCE, (const void *const *)buf, buf, 1, MGPU_FLOAT64, MGPU_OP_SUM, 0,
                             0, NULL, NULL, false);
  if (st == MGPU_OK) st = mgpu_memcpy_from_device(rt, 0, gsum, op->dev[0], sizeof *gsum);
  return st;
}

mgpu_status_t mgpu__array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum) {
  const char *fn = "mgpu_array_sum";
  mgpu_status_t live = live_array(fn, "a", a);
  if (live != MGPU_OK) return live;
  if (!sum) return mgpu__fail(MGPU_EINVAL, "%s: sum is NULL", fn);
  if (dt != MGPU_FLOAT32 && dt != MGPU_FLOAT64)
    return mgpu__fail(MGPU_EINVAL, "%s: dtype %s: expected MGPU_FLOAT32 or MGPU_FLOAT64", fn, mgpu_dtype_name(dt));
  if (a->elem != mgpu_dtype_size(dt))
    return mgpu__fail(MGPU_EINVAL, "%s: the array has %zu-byte elements, not %s", fn, a->elem, mgpu_dtype_name(dt));
  mgpu_runtime_t *rt = a->rt;
  if (a->ngpus > 0 && !mgpu__sum_kernel.gpu && !rt->dev->emulated)
    return mgpu__fail(MGPU_ENOTSUP, "%s: this build has no GPU sum kernel", fn);
  mgpu_status_t st = MGPU_OK;
  op_t op = {.a = a, .bytes = MGPU_SUM_HEAD_BYTES + MGPU__SUM_SCRATCH_BYTES, .sum_arg = {dt == MGPU_FLOAT64}};
  int all[MGPU_MAX_DEVICES];
  for (int g = 0; g < a->ngpus; g++) all[g] = g;
  mgpu_event_t *ev = NULL;
  /* Every GPU takes part in the all-reduce, so every GPU gets a partial (0 for
   * an empty part). */
  if (a->ngpus > 0) {
    if ((st = on_gpus(rt, fn, a->ngpus, all, 1, alloc_part, &op, NULL)) != MGPU_OK) goto out;
    if ((st = on_gpus(rt, fn, a->ngpus, all, 1, sum_part, &op, &ev)) != MGPU_OK) goto out;
  }
  /* The host part meanwhile, on the CPU workers (or this thread). */
  double host = 0;
  st = host_part_sum(rt, fn, a, dt, &host);
  if (ev) {
    mgpu_status_t gst = mgpu__node_event_wait(ev, NULL);
    mgpu__node_event_release(ev);
    if (st == MGPU_OK) st = gst;
  }
  double gsum = 0;
  if (st == MGPU_OK && a->ngpus > 0) st = gpu_parts_sum(rt, a, &op, &gsum);
  if (st == MGPU_OK) *sum = gsum + host;
out:
  if (a->ngpus > 0) {
    int n = 0, gpu[MGPU_MAX_DEVICES];
    for (int g = 0; g < a->ngpus; g++)
      if (op.dev[g]) gpu[n++] = g;
    if (n) on_gpus(rt, fn, n, gpu, 1, free_part, &op, NULL);
  }
  return st;
}
