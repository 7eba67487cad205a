/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll.c: collectives over the runtime's GPUs, each GPU's part a task part on
 * its task stream: an NCCL call (the communicators made on first use, under
 * coll_lock), or without NCCL copies through host memory, combined by one
 * thread between two phases. Across MPI ranks dist_coll.c makes the
 * communicators (mgpu__coll_adopt), and GPUs and roots count over all ranks.
 */
#include "data/data.h"

#include <stdlib.h>
#include <string.h>

static const char *const coll_names[] = {"mgpu_allreduce", "mgpu_broadcast", "mgpu_allgather", "mgpu_reduce_scatter"};

typedef struct {
  int kind;
  int ngpus;
  const void *send[MGPU_MAX_DEVICES];
  void *recv[MGPU_MAX_DEVICES];
  size_t count;
  mgpu_dtype_t dt;
  mgpu_redop_t op;
  int root;
  void **comms;
  char *host;      /* host path: ngpus input blocks, then the result */
  size_t in_elems; /* elements each GPU sends */
} coll_t;

MGPU_API size_t mgpu_dtype_size(mgpu_dtype_t t) {
  switch (t) {
  case MGPU_INT32: case MGPU_FLOAT32: return 4;
  case MGPU_INT64: case MGPU_UINT64: case MGPU_FLOAT64: return 8;
  }
  return 0;
}

MGPU_API const char *mgpu_dtype_name(mgpu_dtype_t t) {
  static const char *const names[] = {"i32", "i64", "u64", "f32", "f64"};
  return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

MGPU_API const char *mgpu_redop_name(mgpu_redop_t op) {
  static const char *const names[] = {"sum", "prod", "min", "max"};
  return (unsigned)op < sizeof names / sizeof *names ? names[op] : "?";
}

MGPU_API const char *mgpu_collectives_backend(const mgpu_runtime_t *rt) {
  static __thread char buf[64];
  if (mgpu__check_rt(rt, "mgpu_collectives_backend") != MGPU_OK) return "none";
  if (!mgpu__coll_uses_nccl(rt)) {
    if (rt->coll_ranks <= 1) return "host";
    snprintf(buf, sizeof buf, "host, MPI across %d ranks", rt->coll_ranks);
    return buf;
  }
  if (rt->coll_ranks <= 1) snprintf(buf, sizeof buf, "nccl %s", mgpu__nccl->version());
  else snprintf(buf, sizeof buf, "nccl %s across %d ranks", mgpu__nccl->version(), rt->coll_ranks);
  return buf;
}

/* ------------------------------------------------------------ host path */

/* r[i] = r[i] op x[i] for n elements of type T. */
#define COMBINE(T)                                                      \
  do {                                                                  \
    T *r = res;                                                         \
    const T *x = in;                                                    \
    switch (op) {                                                       \
    case MGPU_OP_SUM: for (size_t i = 0; i < n; i++) r[i] += x[i]; break;  \
    case MGPU_OP_PROD: for (size_t i = 0; i < n; i++) r[i] *= x[i]; break; \
    case MGPU_OP_MIN: for (size_t i = 0; i < n; i++) r[i] = x[i] < r[i] ? x[i] : r[i]; break; \
    case MGPU_OP_MAX: for (size_t i = 0; i < n; i++) r[i] = x[i] > r[i] ? x[i] : r[i]; break; \
    }                                                                   \
  } while (0)

void mgpu__coll_combine(void *res, const void *in, size_t n, mgpu_dtype_t dt, mgpu_redop_t op) {
  switch (dt) {
  case MGPU_INT32: COMBINE(int32_t); break;
  case MGPU_INT64: COMBINE(int64_t); break;
  case MGPU_UINT64: COMBINE(uint64_t); break;
  case MGPU_FLOAT32: COMBINE(float); break;
  case MGPU_FLOAT64: COMBINE(double); break;
  }
}

static int host_part(mgpu__task_t *t, const mgpu__devcall_t *dc, int phase) {
  coll_t *c = t->arg;
  size_t es = mgpu_dtype_size(c->dt), in_bytes = c->in_elems * es;
  char *result = c->host + (size_t)c->ngpus * in_bytes;
  int g = dc->g;
  if (phase == 0) {
    if (c->kind == MGPU__COLL_BROADCAST && g != c->root) return 0;
    t->items[g] += c->in_elems;
    return dc->ops->copy_d2h(dc->ctx, c->host + (size_t)g * in_bytes, c->send[g], in_bytes, dc->stream);
  }
  switch (c->kind) {
  case MGPU__COLL_ALLREDUCE: return dc->ops->copy_h2d(dc->ctx, c->recv[g], result, c->count * es, dc->stream);
  case MGPU__COLL_BROADCAST:
    return dc->ops->copy_h2d(dc->ctx, c->recv[g], c->host + (size_t)c->root * in_bytes, c->count * es, dc->stream);
  case MGPU__COLL_ALLGATHER: return dc->ops->copy_h2d(dc->ctx, c->recv[g], c->host, (size_t)c->ngpus * in_bytes, dc->stream);
  default:
    return dc->ops->copy_h2d(dc->ctx, c->recv[g], result + (size_t)g * c->count * es, c->count * es, dc->stream);
  }
}

static int host_between(mgpu__task_t *t, int phase) {
  coll_t *c = t->arg;
  MGPU_UNUSED(phase);
  if (c->kind != MGPU__COLL_ALLREDUCE && c->kind != MGPU__COLL_REDUCE_SCATTER) return 0;
  size_t es = mgpu_dtype_size(c->dt), in_bytes = c->in_elems * es;
  char *result = c->host + (size_t)c->ngpus * in_bytes;
  memcpy(result, c->host, in_bytes);
  for (int g = 1; g < c->ngpus; g++) mgpu__coll_combine(result, c->host + (size_t)g * in_bytes, c->in_elems, c->dt, c->op);
  return 0;
}

/* ------------------------------------------------------------ NCCL path */

static int nccl_part(mgpu__task_t *t, const mgpu__devcall_t *dc, int phase) {
  coll_t *c = t->arg;
  char why[200];
  MGPU_UNUSED(phase);
  int g = dc->g;
  if (atomic_load(&dc->rt->comms_abort)) {
    mgpu__task_fail(t, MGPU_EDEVICE, "%s on GPU %d: the NCCL communicators were aborted after a collective passed its "
                    "deadline (MGPU_TIMEOUT)", coll_names[c->kind], g);
    return MGPU_EDEVICE;
  }
  t->items[g] += c->in_elems;
  int rc = mgpu__nccl->run(c->comms[g], c->kind, c->send[g], c->recv[g], c->count, c->dt, c->op, c->root, dc->stream,
                           why, sizeof why);
  if (rc != 0) mgpu__task_fail(t, rc, "%s on GPU %d: %s", coll_names[c->kind], g, why);
  return rc;
}

static mgpu_status_t ensure_comms(mgpu_runtime_t *rt, const char *fn) {
  mgpu_status_t st = MGPU_OK;
  MGPU_LOCK(&rt->coll_lock, MGPU_LK_COLL);
  if (atomic_load(&rt->comms_abort)) {
    MGPU_UNLOCK(&rt->coll_lock);
    return mgpu__fail(MGPU_EDEVICE, "%s: the NCCL communicators were aborted after a collective passed its deadline "
                                    "(MGPU_TIMEOUT); this runtime runs no more collectives", fn);
  }
  if (!rt->comms_ready && rt->coll_ranks > 1) {
    /* Only all ranks together make communicators that span them. */
    MGPU_UNLOCK(&rt->coll_lock);
    return mgpu__fail(MGPU_ESTATE, "%s: the NCCL communicators across ranks do not exist", fn);
  }
  if (!rt->comms_ready) {
    char why[256] = "";
    double t0 = mgpu__now();
    if (mgpu__nccl->init(rt->ngpus, rt->gpu_index, rt->comms, why, sizeof why) != 0)
      st = mgpu__fail(MGPU_EDEVICE, "%s: cannot create the NCCL communicators of %d GPUs: %s", fn, rt->ngpus, why);
    else {
      rt->comms_ready = 1;
      mgpu__log(MGPU_LOG_INFO, "NCCL %s: communicators of %d GPUs created in %.3f s", mgpu__nccl->version(),
                rt->ngpus, mgpu__now() - t0);
    }
  }
  MGPU_UNLOCK(&rt->coll_lock);
  return st;
}

void mgpu__coll_adopt(mgpu_runtime_t *rt, void *const *comms) {
  MGPU_LOCK(&rt->coll_lock, MGPU_LK_COLL);
  for (int g = 0; g < rt->ngpus; g++) rt->comms[g] = comms[g];
  rt->comms_ready = 1;
  MGPU_UNLOCK(&rt->coll_lock);
}

bool mgpu__coll_ready(mgpu_runtime_t *rt) {
  MGPU_LOCK(&rt->coll_lock, MGPU_LK_COLL);
  bool ready = rt->comms_ready && !atomic_load(&rt->comms_abort);
  MGPU_UNLOCK(&rt->coll_lock);
  return ready;
}

void mgpu__coll_destroy(mgpu_runtime_t *rt) {
  /* A hung device's communicator is left alone: destroying it could wait on
   * the device. (Aborted ones are NULL already.) */
  for (int g = 0; g < rt->ngpus; g++)
    if (rt->gpu_gone[g]) rt->comms[g] = NULL;
  if (rt->comms_ready && mgpu__nccl) mgpu__nccl->destroy(rt->ngpus, rt->comms);
  rt->comms_ready = 0;
}

/* ------------------------------------------------------------ the calls */

static void free_coll(void *arg) {
  coll_t *c = arg;
  if (c) free(c->host);
  free(c);
}

mgpu_status_t mgpu__coll_check_buffers(mgpu_runtime_t *rt, const char *fn, int kind, const void *const *send,
                                       void *const *recv, size_t count, mgpu_dtype_t dt, int root) {
  int total = rt->coll_gpu_total, base = rt->coll_gpu_base;
  size_t es = mgpu_dtype_size(dt), one = count * es, all = one * (size_t)total;
  char each[64], every[96];
  snprintf(each, sizeof each, "count %zu of %s", count, mgpu_dtype_name(dt));
  snprintf(every, sizeof every, "count %zu of %s for each of %d GPUs", count, mgpu_dtype_name(dt), total);
  /* What each GPU reads from send and writes to recv (mgpurt.h's rules). */
  bool send_all = kind == MGPU__COLL_REDUCE_SCATTER, recv_all = kind == MGPU__COLL_ALLGATHER;
  char name[32];
  for (int g = 0; g < rt->ngpus && count > 0; g++) {
    if (!recv[g]) return mgpu__fail(MGPU_EINVAL, "%s: recv[%d] is NULL", fn, g);
    bool reads = kind != MGPU__COLL_BROADCAST || g + base == root;
    if (reads && !send[g]) return mgpu__fail(MGPU_EINVAL, "%s: send[%d] is NULL", fn, g);
    mgpu_status_t st;
    snprintf(name, sizeof name, "send[%d]", g);
    if (reads && (st = mgpu__devmem_check(rt, fn, name, g, send[g], send_all ? all : one,
                                          send_all ? every : each)) != MGPU_OK)
      return st;
    snprintf(name, sizeof name, "recv[%d]", g);
    if ((st = mgpu__devmem_check(rt, fn, name, g, recv[g], recv_all ? all : one, recv_all ? every : each)) != MGPU_OK)
      return st;
  }
  return MGPU_OK;
}

/* The checks of a collective of the given kind, fn its name in messages:
 * MGPU_OK where it can run. */
static mgpu_status_t check_call(mgpu_runtime_t *rt, const char *fn, int kind, const void *const *send,
                                void *const *recv, size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root,
                                size_t ndeps, mgpu_event_t *const *deps, mgpu_event_t **done_p, bool async) {
  mgpu_status_t st = mgpu__check_rt(rt, fn);
  if (st != MGPU_OK) return st;
  if (async && !done_p) return mgpu__fail(MGPU_EINVAL, "%s: done_p is NULL", fn);
  if ((st = mgpu__check_deps(rt, fn, ndeps, deps)) != MGPU_OK) return st;
  if (rt->ngpus == 0) return mgpu__fail(MGPU_ENODEV, "%s: the runtime has no GPU", fn);
  size_t es = mgpu_dtype_size(dt);
  if (es == 0) return mgpu__fail(MGPU_EINVAL, "%s: dtype %d is not one of MGPU_INT32, MGPU_INT64, MGPU_UINT64, "
                                              "MGPU_FLOAT32, MGPU_FLOAT64", fn, (int)dt);
  if ((kind == MGPU__COLL_ALLREDUCE || kind == MGPU__COLL_REDUCE_SCATTER) && (unsigned)op > MGPU_OP_MAX)
    return mgpu__fail(MGPU_EINVAL, "%s: op %d is not one of MGPU_OP_SUM, MGPU_OP_PROD, MGPU_OP_MIN, MGPU_OP_MAX", fn,
                      (int)op);
  /* GPUs numbered over all ranks where the collectives span several. */
  int total = rt->coll_gpu_total;
  if (kind == MGPU__COLL_BROADCAST && (root < 0 || root >= total))
    return mgpu__fail(MGPU_EINVAL, "%s: root %d is not a GPU of the runtime: expected 0..%d", fn, root, total - 1);
  if (!send || !recv) return mgpu__fail(MGPU_EINVAL, "%s: %s is NULL", fn, send ? "recv" : "send");
  if (count > SIZE_MAX / es / (size_t)total / 2)
    return mgpu__fail(MGPU_EINVAL, "%s: count %zu of %zu-byte elements overflows size_t", fn, count, es);
  return mgpu__coll_check_buffers(rt, fn, kind, send, recv, count, dt, root);
}

/* The task of a collective whose call c describes (the task owns it): through
 * NCCL, or through host memory in two phases (every GPU's buffer out, then
 * the result in); none to run where count is 0. */
static mgpu_status_t coll_task(mgpu_runtime_t *rt, const char *fn, coll_t *c, bool nccl, mgpu__task_t **t_p) {
  mgpu__task_t *t = mgpu__task_new(rt->ngpus, NULL);
  if (!t) {
    free(c);
    return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  }
  size_t in_bytes = c->in_elems * mgpu_dtype_size(c->dt);
  t->bytes = in_bytes;
  t->arg = c;
  t->free_arg = free_coll;
  if (c->count == 0) {
    t->ngpus = 0; /* nothing to move: completes when its dependencies do */
  } else if (nccl) {
    t->part = nccl_part;
  } else {
    c->host = malloc((size_t)(rt->ngpus + 1) * in_bytes);
    if (!c->host) {
      mgpu__task_free(t);
      return mgpu__fail(MGPU_ENOMEM, "%s: out of memory for %zu bytes of host staging", fn,
                        (size_t)(rt->ngpus + 1) * in_bytes);
    }
    t->nphases = 2;
    t->part = host_part;
    t->between = host_between;
  }
  *t_p = t;
  return MGPU_OK;
}

mgpu_status_t mgpu__node_collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv,
                                    size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps,
                                    mgpu_event_t *const *deps, mgpu_event_t **done_p, bool async) {
  const char *fn = coll_names[kind];
  char afn[40];
  if (async) {
    snprintf(afn, sizeof afn, "%s_async", fn);
    fn = afn;
  }
  mgpu_status_t st = check_call(rt, fn, kind, send, recv, count, dt, op, root, ndeps, deps, done_p, async);
  if (st != MGPU_OK) return st;
  bool nccl = mgpu__coll_uses_nccl(rt);
  if (nccl && (st = ensure_comms(rt, fn)) != MGPU_OK) return st;
  coll_t *c = calloc(1, sizeof *c);
  if (!c) return mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  c->kind = kind;
  c->ngpus = rt->ngpus;
  for (int g = 0; g < rt->ngpus; g++) {
    c->send[g] = send[g];
    c->recv[g] = recv[g];
  }
  c->count = count;
  c->dt = dt;
  c->op = op;
  c->root = root;
  c->in_elems = kind == MGPU__COLL_REDUCE_SCATTER ? count * (size_t)rt->coll_gpu_total : count;
  c->comms = rt->comms;
  mgpu__task_t *t = NULL;
  if ((st = coll_task(rt, fn, c, nccl, &t)) != MGPU_OK) return st;
  return mgpu__task_submit(rt, t, coll_names[kind], ndeps, deps, async ? done_p : NULL);
}
