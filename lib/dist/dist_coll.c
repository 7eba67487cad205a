/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist_coll.c: the collectives over every GPU of every rank, GPUs numbered
 * over the ranks, rank 0's first; every call starts with an exchange of the
 * ranks' records (kind, count, type, operator and root must agree). With NCCL
 * they run as on one process (coll.c); otherwise through host memory and MPI,
 * and an _async form runs to its end before it returns.
 */
#include "dist/dist_mpi.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"mgpu_allreduce", "mgpu_broadcast", "mgpu_allgather", "mgpu_reduce_scatter"};

/* A rank's record of a collective. */
typedef struct {
  int32_t check;      /* its own checks: MGPU_OK or their failure */
  int32_t dep_failed;
  int32_t nccl;       /* it would run NCCL (real GPUs, a build with it) */
  int32_t dt, op, root;
  uint64_t count;
  char why[400];
} coll_rec_t;

static MPI_Datatype mpi_type(mgpu_dtype_t dt) {
  switch (dt) {
  case MGPU_INT32: return MPI_INT32_T;
  case MGPU_INT64: return MPI_INT64_T;
  case MGPU_UINT64: return MPI_UINT64_T;
  case MGPU_FLOAT32: return MPI_FLOAT;
  case MGPU_FLOAT64: break;
  }
  return MPI_DOUBLE;
}

static MPI_Op mpi_op(mgpu_redop_t op) {
  switch (op) {
  case MGPU_OP_SUM: return MPI_SUM;
  case MGPU_OP_PROD: return MPI_PROD;
  case MGPU_OP_MIN: return MPI_MIN;
  case MGPU_OP_MAX: break;
  }
  return MPI_MAX;
}

/* n elements of the operator's identity: what a rank without GPUs brings
 * to a reduction. */
static void identity(void *p, size_t n, mgpu_dtype_t dt, mgpu_redop_t op) {
#define FILL(T, sum, prod, mn, mx)                                                              \
  do {                                                                                          \
    T v = op == MGPU_OP_SUM ? (sum) : op == MGPU_OP_PROD ? (prod) : op == MGPU_OP_MIN ? (mn) : (mx); \
    for (size_t i = 0; i < n; i++) ((T *)p)[i] = v;                                             \
  } while (0)
  switch (dt) {
  case MGPU_INT32: FILL(int32_t, 0, 1, INT32_MAX, INT32_MIN); break;
  case MGPU_INT64: FILL(int64_t, 0, 1, INT64_MAX, INT64_MIN); break;
  case MGPU_UINT64: FILL(uint64_t, 0, 1, UINT64_MAX, 0); break;
  case MGPU_FLOAT32: FILL(float, 0, 1, INFINITY, -INFINITY); break;
  case MGPU_FLOAT64: FILL(double, 0, 1, INFINITY, -INFINITY); break;
  }
#undef FILL
}

/* This rank's checks of the call (as the collective of one process makes
 * them, with the GPUs numbered over all ranks). */
static mgpu_status_t check_local(mgpu_runtime_t *rt, const char *fn, int kind, const void *const *send,
                                 void *const *recv, size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root) {
  size_t es = mgpu_dtype_size(dt);
  if (es == 0)
    return mgpu__fail(MGPU_EINVAL, "%s: dtype %d is not one of MGPU_INT32, MGPU_INT64, MGPU_UINT64, MGPU_FLOAT32, "
                      "MGPU_FLOAT64", fn, (int)dt);
  if ((kind == MGPU__COLL_ALLREDUCE || kind == MGPU__COLL_REDUCE_SCATTER) && (unsigned)op > MGPU_OP_MAX)
    return mgpu__fail(MGPU_EINVAL, "%s: op %d is not one of MGPU_OP_SUM, MGPU_OP_PROD, MGPU_OP_MIN, MGPU_OP_MAX", fn,
                      (int)op);
  int total = rt->coll_gpu_total;
  if (total == 0) return mgpu__fail(MGPU_ENODEV, "%s: no rank of the runtime has a GPU", fn);
  if (kind == MGPU__COLL_BROADCAST && (root < 0 || root >= total))
    return mgpu__fail(MGPU_EINVAL, "%s: root %d is not a GPU of the runtime: expected 0..%d (the GPUs of every rank, "
                      "rank 0's first)", fn, root, total - 1);
  if (rt->ngpus > 0 && (!send || !recv)) return mgpu__fail(MGPU_EINVAL, "%s: %s is NULL", fn, send ? "recv" : "send");
  /* The host path moves a rank's whole result in one MPI call: MPI counts are ints. */
  size_t most = (size_t)INT_MAX / es / (size_t)total;
  if (count > most)
    return mgpu__fail(MGPU_EINVAL, "%s: count %zu: across ranks at most %zu elements of %zu bytes with %d GPUs", fn,
                      count, most, es, total);
  return mgpu__coll_check_buffers(rt, fn, kind, send, recv, count, dt, root);
}

/* Where the records differ: a message, the same on every rank. */
static bool disagree(const struct mgpu__dist *d, const char *fn, int kind, const char *all, char *msg, size_t len) {
  coll_rec_t z, o;
  memcpy(&z, all, sizeof z);
  for (int r = 1; r < d->size; r++) {
    memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
    const char *what = z.count != o.count ? "count" : z.dt != o.dt ? "dtype" : NULL;
    if (!what && (kind == MGPU__COLL_ALLREDUCE || kind == MGPU__COLL_REDUCE_SCATTER) && z.op != o.op) what = "op";
    if (!what && kind == MGPU__COLL_BROADCAST && z.root != o.root) what = "root";
    if (!what) continue;
    long long a = !strcmp(what, "count") ? (long long)z.count : !strcmp(what, "dtype") ? z.dt : !strcmp(what, "op") ? z.op : z.root;
    long long b = !strcmp(what, "count") ? (long long)o.count : !strcmp(what, "dtype") ? o.dt : !strcmp(what, "op") ? o.op : o.root;
    snprintf(msg, len, "%s: the ranks disagree on %s: %lld on rank 0, %lld on rank %d (every rank makes the same "
             "collective)", fn, what, a, b, r);
    return true;
  }
  return false;
}

/* NCCL communicators over every GPU of every rank, made once, by all ranks
 * together: the rank of GPU 0 makes the unique id and MPI carries it. */
static mgpu_status_t make_comms(mgpu_runtime_t *rt, const char *fn) {
  struct mgpu__dist *d = rt->dist;
  if (mgpu__coll_ready(rt)) return MGPU_OK;
  int owner = 0;
  while (owner < d->size && d->ngpus[owner] == 0) owner++;
  char id[256] = {0}, why[256] = "";
  if (mgpu__nccl && mgpu__nccl->id_bytes > sizeof id) MGPU_PANIC("an NCCL unique id of %zu bytes", mgpu__nccl->id_bytes);
  int rc = 0;
  if (d->rank == owner) rc = mgpu__nccl->unique_id(id, why, sizeof why);
  /* A failed id reaches the others as a zero id with the failure beside it. */
  struct idmsg {
    int32_t rc;
    char id[256];
  } *msg = calloc(1, sizeof *msg);
  if (!msg) return mgpu__dist_break(d, fn, "out of memory");
  msg->rc = rc;
  memcpy(msg->id, id, sizeof id);
  MPI_Request req;
  int mrc = MPI_Ibcast(msg, (int)sizeof *msg, MPI_BYTE, owner, d->comm, &req);
  if (mrc != MPI_SUCCESS) {
    free(msg);
    return mgpu__dist_mpi(d, fn, "MPI_Ibcast", mrc);
  }
  /* One that never completed may still write msg: it is left to MPI. */
  mgpu_status_t st = mgpu__dist_wait(d, fn, &req, mgpu__dist_deadline(d, 0), fn);
  if (st != MGPU_OK) {
    mgpu__dist_leave(msg);
    return st;
  }
  struct idmsg got = *msg;
  free(msg);
  if (got.rc != 0)
    return mgpu__fail(MGPU_EDEVICE, "%s: rank %d could not make an NCCL unique id%s%s", fn, owner, *why ? ": " : "",
                      why);
  if (rt->ngpus == 0) return MGPU_OK;
  void *comms[MGPU_MAX_DEVICES] = {0};
  double t0 = mgpu__now();
  rc = mgpu__nccl->init_ranks(rt->ngpus, rt->gpu_index, d->gpu_total, d->gpu_base, got.id, comms, why, sizeof why);
  if (rc != 0)
    return mgpu__fail(MGPU_EDEVICE, "%s: rank %d cannot make the NCCL communicators of its %d GPUs (of %d in all): %s",
                      fn, d->rank, rt->ngpus, d->gpu_total, why);
  mgpu__coll_adopt(rt, comms);
  mgpu__log(MGPU_LOG_INFO, "NCCL %s: communicators of %d GPUs on %d ranks made in %.3f s", mgpu__nccl->version(),
            d->gpu_total, d->size, mgpu__now() - t0);
  return MGPU_OK;
}

/* ------------------------------------------------------------ host path */

static mgpu_status_t copy_out(mgpu_runtime_t *rt, int g, void *host, const void *dev, size_t bytes) {
  return bytes ? mgpu_memcpy_from_device(rt, g, host, dev, bytes) : MGPU_OK;
}

static mgpu_status_t copy_in(mgpu_runtime_t *rt, int g, void *dev, const void *host, size_t bytes) {
  return bytes ? mgpu_memcpy_to_device(rt, g, dev, host, bytes) : MGPU_OK;
}

/* One nonblocking MPI collective (its request req_), waited for under the
 * deadline; st its outcome. */
#define MPI_RUN(call)                                                                        \
  do {                                                                                       \
    MPI_Request req_;                                                                        \
    int rc_ = (call);                                                                        \
    st = rc_ == MPI_SUCCESS ? mgpu__dist_wait(d, fn, &req_, mgpu__dist_deadline(d, 0), fn)   \
                            : mgpu__dist_mpi(d, fn, #call, rc_);                             \
  } while (0)

/* A collective on the host path: this rank's staging of a whole result
 * (host; tmp for reduce-scatter), and the ranks' counts and displacements, in
 * elements, for MPI's collectives of blocks per rank. */
typedef struct {
  mgpu_runtime_t *rt;
  struct mgpu__dist *d;
  const char *fn;
  const void *const *send;
  void *const *recv;
  size_t count, bytes, host_elems;
  mgpu_dtype_t dt;
  mgpu_redop_t op;
  int root;
  char *host, *tmp;
  int *counts, *displs;
} host_coll_t;

/* Each collective below returns the MPI call's outcome and sets *local to
 * this rank's own (its GPUs' copies): a rank that fails locally still takes
 * part in the MPI call, or the others would wait for it. */

/* This rank's GPUs first (its collective of one process), then the ranks'. */
static mgpu_status_t host_allreduce(const host_coll_t *h, mgpu_status_t *local) {
  struct mgpu__dist *d = h->d;
  const char *fn = h->fn;
  mgpu_status_t st;
  int ng = h->rt->ngpus;
  if (ng > 0) {
    *local = mgpu__node_collective(h->rt, MGPU__COLL_ALLREDUCE, h->send, h->recv, h->count, h->dt, h->op, 0, 0, NULL,
                                   NULL, false);
    if (*local == MGPU_OK) *local = copy_out(h->rt, 0, h->host, h->recv[0], h->bytes);
  } else {
    identity(h->host, h->count, h->dt, h->op);
  }
  MPI_RUN(MPI_Iallreduce(MPI_IN_PLACE, h->host, (int)h->count, mpi_type(h->dt), mpi_op(h->op), d->comm, &req_));
  for (int g = 0; g < ng && st == MGPU_OK && *local == MGPU_OK; g++)
    *local = copy_in(h->rt, g, h->recv[g], h->host, h->bytes);
  return st;
}

/* The rank that holds the root GPU sends its buffer to every rank. */
static mgpu_status_t host_broadcast(const host_coll_t *h, mgpu_status_t *local) {
  struct mgpu__dist *d = h->d;
  const char *fn = h->fn;
  mgpu_status_t st;
  int owner = 0, base = d->gpu_base;
  for (int r = 0, at = 0; r < d->size; r++) {
    if (h->root >= at && h->root < at + d->ngpus[r]) owner = r;
    at += d->ngpus[r];
  }
  if (owner == d->rank) *local = copy_out(h->rt, h->root - base, h->host, h->send[h->root - base], h->bytes);
  MPI_RUN(MPI_Ibcast(h->host, (int)h->count, mpi_type(h->dt), owner, d->comm, &req_));
  for (int g = 0; g < h->rt->ngpus && st == MGPU_OK && *local == MGPU_OK; g++)
    *local = copy_in(h->rt, g, h->recv[g], h->host, h->bytes);
  return st;
}

/* Every GPU's block at its place in the numbering over all ranks. */
static mgpu_status_t host_allgather(const host_coll_t *h, mgpu_status_t *local) {
  struct mgpu__dist *d = h->d;
  const char *fn = h->fn;
  mgpu_status_t st;
  int ng = h->rt->ngpus;
  for (int g = 0; g < ng && *local == MGPU_OK; g++)
    *local = copy_out(h->rt, g, h->host + (size_t)(d->gpu_base + g) * h->bytes, h->send[g], h->bytes);
  MPI_RUN(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, h->host, h->counts, h->displs, mpi_type(h->dt), d->comm,
                          &req_));
  for (int g = 0; g < ng && st == MGPU_OK && *local == MGPU_OK; g++)
    *local = copy_in(h->rt, g, h->recv[g], h->host, (size_t)d->gpu_total * h->bytes);
  return st;
}

/* This rank's GPUs combined on the host, then the ranks' sums scattered:
 * each rank gets the blocks of its GPUs. */
static mgpu_status_t host_reduce_scatter(const host_coll_t *h, mgpu_status_t *local) {
  struct mgpu__dist *d = h->d;
  const char *fn = h->fn;
  mgpu_status_t st;
  int ng = h->rt->ngpus;
  size_t all = (size_t)d->gpu_total * h->bytes;
  if (ng == 0) identity(h->host, h->host_elems, h->dt, h->op);
  for (int g = 0; g < ng && *local == MGPU_OK; g++) {
    *local = copy_out(h->rt, g, g ? h->tmp : h->host, h->send[g], all);
    if (g && *local == MGPU_OK) mgpu__coll_combine(h->host, h->tmp, h->host_elems, h->dt, h->op);
  }
  MPI_RUN(MPI_Ireduce_scatter(MPI_IN_PLACE, h->host, h->counts, mpi_type(h->dt), mpi_op(h->op), d->comm, &req_));
  for (int g = 0; g < ng && st == MGPU_OK && *local == MGPU_OK; g++)
    *local = copy_in(h->rt, g, h->recv[g], h->host + (size_t)g * h->bytes, h->bytes);
  return st;
}

static mgpu_status_t host_path(mgpu_runtime_t *rt, const char *fn, int kind, const void *const *send,
                               void *const *recv, size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root) {
  struct mgpu__dist *d = rt->dist;
  size_t es = mgpu_dtype_size(dt);
  host_coll_t h = {.rt = rt, .d = d, .fn = fn, .send = send, .recv = recv, .count = count, .bytes = count * es,
                   .dt = dt, .op = op, .root = root};
  h.host_elems = kind == MGPU__COLL_ALLREDUCE || kind == MGPU__COLL_BROADCAST ? count : count * (size_t)d->gpu_total;
  h.host = malloc(MGPU_MAX(h.host_elems * es, 1));
  h.tmp = kind == MGPU__COLL_REDUCE_SCATTER ? malloc(MGPU_MAX(h.host_elems * es, 1)) : NULL;
  h.counts = calloc((size_t)d->size, sizeof *h.counts);
  h.displs = calloc((size_t)d->size, sizeof *h.displs);
  if (!h.host || !h.counts || !h.displs || (kind == MGPU__COLL_REDUCE_SCATTER && !h.tmp)) {
    free(h.host);
    free(h.tmp);
    free(h.counts);
    free(h.displs);
    return mgpu__dist_break(d, fn, "out of memory for %zu bytes of host staging", h.host_elems * es);
  }
  for (int r = 0, at = 0; r < d->size; r++) {
    h.counts[r] = d->ngpus[r] * (int)count;
    h.displs[r] = at;
    at += h.counts[r];
  }
  mgpu_status_t st, local = MGPU_OK;
  switch (kind) {
  case MGPU__COLL_ALLREDUCE: st = host_allreduce(&h, &local); break;
  case MGPU__COLL_BROADCAST: st = host_broadcast(&h, &local); break;
  case MGPU__COLL_ALLGATHER: st = host_allgather(&h, &local); break;
  default: st = host_reduce_scatter(&h, &local); break;
  }
  /* An MPI call that never completed may still use them: left to MPI. */
  if (d->broken) {
    mgpu__dist_leave(h.host);
    mgpu__dist_leave(h.tmp);
    mgpu__dist_leave(h.counts);
    mgpu__dist_leave(h.displs);
    return st != MGPU_OK ? st : local;
  }
  free(h.host);
  free(h.tmp);
  free(h.counts);
  free(h.displs);
  return st != MGPU_OK ? st : local;
}

/* An event that has completed, for an _async form that ran to its end: an
 * empty batch of this process. */
static int noop(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  return 0;
}

static mgpu_status_t done_event(mgpu_runtime_t *rt, const char *fn, mgpu_event_t **done_p) {
  static const mgpu_kernel_t k = {.size = sizeof k, .name = "collective across ranks", .cpu = noop, .gpu = noop};
  mgpu_batch_t b = {.size = sizeof b, .kernel = &k, .n = 0};
  return mgpu__node_submit(rt, fn, "batch->", &b, 0, 0, NULL, done_p);
}

mgpu_status_t mgpu__dist_collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv,
                                    size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps,
                                    mgpu_event_t *const *deps, mgpu_event_t **done_p, bool async) {
  struct mgpu__dist *d = rt->dist;
  char fn[40];
  snprintf(fn, sizeof fn, "%s%s", names[kind], async ? "_async" : "");
  if (async && !done_p) return mgpu__fail(MGPU_EINVAL, "%s: done_p is NULL", fn);
  mgpu_status_t st = mgpu__dist_thread_ok(d, fn);
  if (st != MGPU_OK) return st;
  MGPU_LOCK(&d->lock, MGPU_LK_DIST);
  mgpu__dist_close_open(d);
  coll_rec_t mine;
  memset(&mine, 0, sizeof mine);
  bool dep_failed = false;
  mgpu_status_t chk = mgpu__dist_deps(rt, fn, ndeps, deps, &dep_failed);
  if (chk == MGPU_OK) chk = check_local(rt, fn, kind, send, recv, count, dt, op, root);
  mine.check = chk;
  if (chk != MGPU_OK) snprintf(mine.why, sizeof mine.why, "%s", mgpu_last_error());
  mine.dep_failed = dep_failed;
  mine.nccl = mgpu__coll_uses_nccl(rt) || rt->ngpus == 0;
  mine.dt = dt, mine.op = op, mine.root = root, mine.count = count;
  char *all = malloc((size_t)d->size * MGPU_DIST_PAYLOAD);
  st = all ? mgpu__dist_exchange(d, fn, MGPU_DOP_COLL + kind, &mine, sizeof mine, all, mgpu__dist_deadline(d, 0))
           : mgpu__dist_break(d, fn, "out of memory");
  bool nccl = true;
  for (int r = 0; r < d->size && st == MGPU_OK; r++) {
    coll_rec_t o;
    memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
    nccl &= o.nccl != 0;
    if (o.check != MGPU_OK)
      st = r == d->rank ? mgpu__fail_quiet((mgpu_status_t)o.check, "%s", o.why)
                        : mgpu__fail((mgpu_status_t)o.check, "%s: rank %d refused the collective: %s", fn, r, o.why);
    else if (o.dep_failed)
      st = mgpu__fail(MGPU_EDEP, "%s: an event it depends on failed on rank %d", fn, r);
  }
  char msg[512];
  if (st == MGPU_OK && disagree(d, fn, kind, all, msg, sizeof msg)) st = mgpu__fail(MGPU_EINVAL, "%s", msg);
  free(all);
  /* Every GPU of every rank runs NCCL, or none does: a rank of emulated
   * devices or without NCCL sends every rank through MPI. (A rank without a
   * GPU has nothing to run either way.) */
  if (st == MGPU_OK && nccl && d->gpu_total > 0) {
    st = make_comms(rt, fn);
    if (st == MGPU_OK && rt->ngpus > 0) {
      st = mgpu__node_collective(rt, kind, send, recv, count, dt, op, root, 0, NULL, async ? done_p : NULL, async);
      MGPU_UNLOCK(&d->lock);
      return st;
    }
  } else if (st == MGPU_OK && count > 0) {
    st = host_path(rt, fn, kind, send, recv, count, dt, op, root);
  }
  MGPU_UNLOCK(&d->lock);
  if (st == MGPU_OK && async) st = done_event(rt, fn, done_p);
  return st;
}
