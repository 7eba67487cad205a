/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist.c: a runtime across MPI ranks: its duplicate of the caller's
 * communicator, the control window through which ranks see and take each
 * other's ranges, the window of a batch's arrays, and the exchange of records
 * that begins each call the ranks make together, under a deadline, so that
 * ranks that make different calls or stop answering get an error, not a hang.
 */
#include "dist/dist_mpi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t left_lock = PTHREAD_MUTEX_INITIALIZER;
static void **left;
static size_t nleft, left_cap;

void mgpu__dist_leave(void *p) {
  if (!p) return;
  MGPU_LOCK(&left_lock, MGPU_LK_LEAF);
  if (nleft == left_cap) {
    size_t cap = left_cap ? 2 * left_cap : 16;
    void **n = realloc(left, sizeof *n * cap);
    if (n) left = n, left_cap = cap;
  }
  /* Without room the pointer is dropped: the memory stays allocated all the same. */
  if (nleft < left_cap) left[nleft++] = p;
  MGPU_UNLOCK(&left_lock);
}

/* MPI errors are returned (MPI_ERRORS_RETURN on the communicator and the
 * windows), and the first marks the runtime broken: it then makes no further
 * collective call, which could wait for a rank that is gone. */
mgpu_status_t mgpu__dist_break(struct mgpu__dist *d, const char *fn, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!d->broken) {
    d->broken = true;
    snprintf(d->broken_why, sizeof d->broken_why, "%s", msg);
  }
  return mgpu__fail(MGPU_EREMOTE, "%s on rank %d: %s", fn, d->rank, msg);
}

/* MPI's words for error code rc, in s. */
static const char *mpi_error(int rc, char s[MPI_MAX_ERROR_STRING]) {
  int len = 0;
  if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, MPI_MAX_ERROR_STRING, "error %d", rc);
  return s;
}

mgpu_status_t mgpu__dist_mpi(struct mgpu__dist *d, const char *fn, const char *call, int rc) {
  if (rc == MPI_SUCCESS) return MGPU_OK;
  char s[MPI_MAX_ERROR_STRING];
  return mgpu__dist_break(d, fn, "%s failed: %s", call, mpi_error(rc, s));
}

mgpu_status_t mgpu__dist_wait(struct mgpu__dist *d, const char *fn, MPI_Request *req, double deadline_s,
                              const char *what) {
  double t0 = mgpu__now(), pause = MGPU_DIST_WAIT_FIRST_S;
  /* The message's head names fn (mgpu__dist_break): `what` only where it is
   * another step than the call itself. */
  bool own = !strcmp(what, fn);
  for (;;) {
    int flag = 0;
    int rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mgpu__dist_mpi(d, fn, "MPI_Test", rc);
    if (flag) return MGPU_OK;
    if (deadline_s > 0 && mgpu__now() - t0 > deadline_s)
      return mgpu__dist_break(d, fn, "%s%snot every rank took part within %g s (MGPU_TIMEOUT): a rank stopped, hangs, "
                              "or makes other calls", own ? "" : what, own ? "" : ": ", deadline_s);
    /* Short waits end soon after the request; long ones cost few wake-ups. */
    mgpu__nap(pause);
    pause = MGPU_MIN(2 * pause, MGPU_DIST_WAIT_MAX_S);
  }
}

static const char *const op_names[] = {
    [MGPU_DOP_INIT] = "mgpu_init",       [MGPU_DOP_FINALIZE] = "mgpu_finalize",
    [MGPU_DOP_SUBMIT] = "mgpu_submit",   [MGPU_DOP_PLAN] = "mgpu_batch_plan",
    [MGPU_DOP_END] = "the end of a batch (mgpu_event_wait)", [MGPU_DOP_ARRAY] = "mgpu_array_create",
    [MGPU_DOP_ARRAY_SUM] = "mgpu_array_sum",
};
static const char *const coll_op_names[] = {"mgpu_allreduce", "mgpu_broadcast", "mgpu_allgather",
                                            "mgpu_reduce_scatter"};

const char *mgpu__dist_op_name(int op) {
  if (op >= MGPU_DOP_COLL && op < MGPU_DOP_COLL + (int)(sizeof coll_op_names / sizeof *coll_op_names))
    return coll_op_names[op - MGPU_DOP_COLL];
  if (op >= MGPU_DOP_INIT && op <= MGPU_DOP_ARRAY_SUM) return op_names[op];
  return "an unknown call";
}

mgpu__dist_hdr_t mgpu__dist_hdr(const struct mgpu__dist *d, int op, const char *fn) {
  mgpu__dist_hdr_t h = {.op = (uint32_t)op, .rank = (uint32_t)d->rank, .call = d->calls};
  snprintf(h.fn, sizeof h.fn, "%s", fn);
  return h;
}

/* A batch's end is named for what it is; it is exchanged in whichever call
 * runs the batch to its end. */
const char *mgpu__dist_call_name(const mgpu__dist_hdr_t *h) {
  if (h->op == MGPU_DOP_END || !h->fn[0]) return mgpu__dist_op_name((int)h->op);
  return h->fn;
}

double mgpu__dist_deadline(const struct mgpu__dist *d, double predicted_s) {
  return mgpu__deadline_s(d->timeout, predicted_s);
}

/* The ranks' records of an exchange (recv) name different calls, rank r's
 * first: d is broken, its calls no longer pairing up, and the message, the
 * same on every rank, names rank 0's call and the first that differs. */
static mgpu_status_t calls_differ(struct mgpu__dist *d, const char *fn, const char *recv, int r) {
  mgpu__dist_hdr_t z, o;
  memcpy(&z, recv, sizeof z);
  int k = 1;
  for (; k < d->size; k++) {
    memcpy(&o, recv + (size_t)k * MGPU_DIST_REC, sizeof o);
    if (o.op != z.op || o.call != z.call) break;
  }
  if (k == d->size) k = r;
  memcpy(&o, recv + (size_t)k * MGPU_DIST_REC, sizeof o);
  d->broken = true;
  snprintf(d->broken_why, sizeof d->broken_why, "the ranks made different calls");
  return mgpu__fail(MGPU_EINVAL, "%s: the ranks made different calls: rank 0 called %s (its call %llu), rank %d "
                    "called %s (its call %llu); every rank makes the same calls on a runtime across ranks, in the "
                    "same order", fn, mgpu__dist_call_name(&z), (unsigned long long)z.call, k,
                    mgpu__dist_call_name(&o), (unsigned long long)o.call);
}

mgpu_status_t mgpu__dist_exchange(struct mgpu__dist *d, const char *fn, int op, const void *mine, size_t bytes,
                                  void *all, double deadline_s) {
  if (d->broken)
    return mgpu__fail(MGPU_EREMOTE, "%s: the runtime across ranks no longer works (%s); only mgpu_finalize is left",
                      fn, d->broken_why);
  if (bytes > MGPU_DIST_PAYLOAD) MGPU_PANIC("a record of %zu bytes for an exchange of %zu", bytes, MGPU_DIST_PAYLOAD);
  char *send = calloc(1, MGPU_DIST_REC), *recv = malloc((size_t)d->size * MGPU_DIST_REC);
  if (!send || !recv) {
    free(send);
    free(recv);
    /* The other ranks wait in the exchange: this rank cannot leave them. */
    return mgpu__dist_break(d, fn, "out of memory for an exchange between the ranks");
  }
  mgpu__dist_hdr_t h = mgpu__dist_hdr(d, op, fn);
  memcpy(send, &h, sizeof h);
  memcpy(send + sizeof h, mine, bytes);
  MPI_Request req;
  int rc = MPI_Iallgather(send, MGPU_DIST_REC, MPI_BYTE, recv, MGPU_DIST_REC, MPI_BYTE, d->comm, &req);
  if (rc != MPI_SUCCESS) {
    free(send);
    free(recv);
    return mgpu__dist_mpi(d, fn, "MPI_Iallgather", rc);
  }
  /* A batch's records are exchanged in the user's call, mgpu_run's or
   * mgpu_submit's. A request that never completed still owns its buffers:
   * MPI may write them should the others come after all. */
  const char *what = op == MGPU_DOP_SUBMIT ? fn : mgpu__dist_op_name(op);
  mgpu_status_t st = mgpu__dist_wait(d, fn, &req, deadline_s, what);
  if (st != MGPU_OK) {
    mgpu__dist_leave(send);
    mgpu__dist_leave(recv);
    return st;
  }
  free(send);
  d->calls++;
  for (int r = 0; r < d->size; r++) {
    mgpu__dist_hdr_t o;
    memcpy(&o, recv + (size_t)r * MGPU_DIST_REC, sizeof o);
    if (o.op == (uint32_t)op && o.call == h.call) continue;
    st = calls_differ(d, fn, recv, r);
    free(recv);
    return st;
  }
  for (int r = 0; r < d->size; r++)
    memcpy((char *)all + (size_t)r * MGPU_DIST_PAYLOAD, recv + (size_t)r * MGPU_DIST_REC + sizeof h,
           MGPU_DIST_PAYLOAD);
  free(recv);
  return MGPU_OK;
}

static const char *level_name(int level) {
  switch (level) {
  case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
  default: return "MPI_THREAD_MULTIPLE";
  }
}

mgpu_status_t mgpu__dist_thread_ok(struct mgpu__dist *d, const char *fn) {
  if (d->level >= MPI_THREAD_SERIALIZED) return MGPU_OK;
  int is_main = 0;
  MPI_Is_thread_main(&is_main);
  if (is_main) return MGPU_OK;
  return mgpu__fail(MGPU_ESTATE, "%s: MPI was initialised with %s, and a runtime across ranks makes its MPI calls in "
                    "the calling thread: call it from the thread that initialised MPI, or initialise MPI with "
                    "MPI_THREAD_SERIALIZED", fn, level_name(d->level));
}

uint64_t mgpu__dist_hash(const void *p, size_t n) {
  const unsigned char *c = p;
  uint64_t h = MGPU_FNV_OFFSET;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * MGPU_FNV_PRIME;
  return h;
}

mgpu__dmodel_t *mgpu__dist_model(struct mgpu__dist *d, const mgpu_kernel_t *k, uint64_t footprint) {
  for (mgpu__dmodel_t *m = d->models; m; m = m->next)
    if (m->footprint == footprint && mgpu__model_same_kernel(&m->key, k)) return m;
  mgpu__dmodel_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->key = *k;
  m->footprint = footprint;
  m->next = d->models;
  d->models = m;
  return m;
}

/* ------------------------------------------------------------ start */

/* What every rank tells the others at mgpu_init. */
typedef struct {
  int32_t status;   /* of its runtime's start */
  int32_t ncpu, ngpus;
  char why[512];
  int32_t traced;   /* its trace file, where it traces: the host, the device and the inode */
  uint64_t trace_dev, trace_ino;
  char host[128];
} init_rec_t;
_Static_assert(sizeof(init_rec_t) <= MGPU_DIST_PAYLOAD, "mgpu_init's record fits a record of the ranks");

/* Where two ranks trace to one file, the failure of mgpu_init on every rank
 * (each writes the whole file at its mgpu_finalize, so neither trace would be
 * whole); MGPU_OK where every rank's file is its own. Files are compared on
 * one host: a file shared between hosts is not seen. all holds the records. */
static mgpu_status_t check_traces(const char *all, int size, const mgpu_runtime_t *rt) {
  init_rec_t *rec = malloc((size_t)size * sizeof *rec);
  if (!rec) return mgpu__fail(MGPU_ENOMEM, "mgpu_init: out of memory");
  for (int r = 0; r < size; r++) memcpy(&rec[r], all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof *rec);
  mgpu_status_t st = MGPU_OK;
  for (int r = 0; r < size && st == MGPU_OK; r++)
    for (int q = r + 1; rec[r].traced && q < size && st == MGPU_OK; q++) {
      const init_rec_t *a = &rec[r], *b = &rec[q];
      char name[2200];
      if (b->traced && a->trace_dev == b->trace_dev && a->trace_ino == b->trace_ino && !strcmp(a->host, b->host))
        st = mgpu__fail(MGPU_EINVAL, "mgpu_init: ranks %d and %d trace to one file on host %s, %s, and each writes "
                        "the whole file at mgpu_finalize: put %%r in the path for a file per rank (for example "
                        "'trace-%%r.json')", r, q, a->host, mgpu__trace_name(rt, name, sizeof name));
    }
  free(rec);
  return st;
}

/* The communicator the configuration names, checked: MGPU_OK with *comm_p
 * and *use_p (false: this process alone). */
static mgpu_status_t pick_comm(const mgpu__config_t *c, MPI_Comm *comm_p, bool *use_p, char *how, size_t howlen) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  const char *src = c->source[MGPU_SET_MPI] == MGPU_SRC_ENV ? "MGPU_MPI=off (environment)" : "cfg->mpi = 0";
  *use_p = false;
  if (c->v.mpi_comm) {
    if (!c->v.mpi)
      return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->mpi_comm is set, but %s asks for this process alone: leave one "
                        "of them unset", src);
    if (c->v.mpi_comm_size != sizeof(MPI_Comm))
      return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->mpi_comm_size is %zu, but this library's MPI has %zu-byte "
                        "communicators: the program and libmgpurt were built against different MPI libraries, or "
                        "cfg->mpi_comm was set without MGPU_CONFIG_SET_COMM", c->v.mpi_comm_size, sizeof(MPI_Comm));
    if (!inited || finalized)
      return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->mpi_comm is set, but MPI is %s: call MPI_Init_thread first",
                        finalized ? "finalized already" : "not initialised");
    MPI_Comm comm = *(const MPI_Comm *)c->v.mpi_comm;
    if (comm == MPI_COMM_NULL)
      return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->mpi_comm is MPI_COMM_NULL: expected a communicator of the ranks "
                        "the runtime is to span");
    /* Errors on a handle that is no communicator are raised on
     * MPI_COMM_WORLD: returned here, not fatal. */
    MPI_Errhandler saved;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int inter = 0;
    int rc = MPI_Comm_test_inter(comm, &inter);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, saved);
    MPI_Errhandler_free(&saved);
    if (rc != MPI_SUCCESS) {
      char s[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, s, &len);
      return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->mpi_comm does not point at an MPI communicator (%s)", s);
    }
    if (inter)
      return mgpu__fail(MGPU_EINVAL, "mgpu_init: cfg->mpi_comm is an intercommunicator: expected an intracommunicator "
                        "(MPI_COMM_WORLD, or one made from it with MPI_Comm_split or MPI_Comm_dup)");
    *comm_p = comm;
    *use_p = true;
    snprintf(how, howlen, "the caller's communicator");
    return MGPU_OK;
  }
  if (!c->v.mpi) {
    snprintf(how, howlen, "off: this process alone");
    return MGPU_OK;
  }
  if (!inited || finalized) {
    snprintf(how, howlen, "auto: MPI is not initialised, this process alone");
    return MGPU_OK;
  }
  *comm_p = MPI_COMM_WORLD;
  *use_p = true;
  snprintf(how, howlen, "MPI_COMM_WORLD");
  return MGPU_OK;
}

static void dist_free(struct mgpu__dist *d) {
  if (!d) return;
  while (d->models) {
    mgpu__dmodel_t *m = d->models;
    d->models = m->next;
    free(m);
  }
  free(d->ncpu);
  free(d->ngpus);
  free(d->plan_share);
  free(d->plan_rate);
  free(d->ctl_mem);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

/* Seconds of a lock, a one-word get and an unlock at the next rank, the
 * median of a few, so that one late answer does not count. */
static double round_trip(struct mgpu__dist *d) {
  int peer = (d->rank + 1) % d->size;
  double t[MGPU_RANK_RTT_SAMPLES];
  for (int i = 0; i < MGPU_RANK_RTT_SAMPLES; i++) {
    uint64_t w;
    double t0 = mgpu__now();
    MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, d->ctl);
    MPI_Get(&w, 1, MPI_UINT64_T, peer, W_SEQ, 1, MPI_UINT64_T, d->ctl);
    MPI_Win_unlock(peer, d->ctl);
    t[i] = mgpu__now() - t0;
  }
  for (int i = 1; i < MGPU_RANK_RTT_SAMPLES; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[MGPU_RANK_RTT_SAMPLES / 2];
}

/* One process: exactly the runtime of a build without MPI; `how` (howlen
 * bytes) says which communicator, for --info. */
static mgpu_status_t init_alone(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, bool use, char *how,
                                size_t howlen, mgpu_runtime_t **rt_p) {
  mgpu_runtime_t *rt;
  mgpu_status_t st = mgpu__init_test(cfg, test, &rt);
  if (st != MGPU_OK) return st;
  if (use) snprintf(how + strlen(how), howlen - strlen(how), ", 1 rank: this process alone");
  snprintf(rt->cfg.text[MGPU_SET_MPI], sizeof rt->cfg.text[0], "%s", how);
  *rt_p = rt;
  return MGPU_OK;
}

/* The state of a runtime across the `size` ranks of communicator user, on a
 * duplicate of it that keeps the runtime's messages apart from the
 * program's: *d_p, or a failure (d freed, or left to MPI where the
 * duplication never completed and may still write d->comm). */
static mgpu_status_t new_dist(const mgpu__config_t *c, MPI_Comm user, int size, double deadline,
                              struct mgpu__dist **d_p) {
  struct mgpu__dist *d = calloc(1, sizeof *d);
  if (!d) return mgpu__fail(MGPU_ENOMEM, "mgpu_init: out of memory");
  pthread_mutex_init(&d->lock, NULL);
  d->comm = MPI_COMM_NULL;
  d->ctl = d->data = MPI_WIN_NULL;
  d->timeout = c->v.timeout;
  MPI_Query_thread(&d->level);
  d->size = size;
  MPI_Comm_rank(user, &d->rank);
  if (d->level < MPI_THREAD_SERIALIZED) {
    int is_main = 0;
    MPI_Is_thread_main(&is_main);
    if (!is_main) {
      dist_free(d);
      return mgpu__fail(MGPU_ESTATE, "mgpu_init: MPI was initialised with %s, and a runtime across ranks makes its "
                        "MPI calls in the calling thread: call mgpu_init from the thread that initialised MPI",
                        level_name(d->level));
    }
  }
  /* A rank that never comes would hold the others in the duplication:
   * nonblocking, under the deadline. */
  MPI_Request req;
  int rc = MPI_Comm_idup(user, &d->comm, &req);
  if (rc != MPI_SUCCESS) {
    mgpu_status_t st = mgpu__dist_mpi(d, "mgpu_init", "MPI_Comm_idup", rc);
    dist_free(d);
    return st;
  }
  mgpu_status_t st = mgpu__dist_wait(d, "mgpu_init", &req, deadline, "mgpu_init");
  if (st != MGPU_OK) {
    mgpu__dist_leave(d);
    return st;
  }
  MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
  *d_p = d;
  return MGPU_OK;
}

/* The ranks' init records (all; st: the exchange's outcome) into d: every
 * rank's workers and this rank's first GPU; the first rank that could not
 * start makes mgpu_init fail on every rank. */
static mgpu_status_t read_init_records(struct mgpu__dist *d, const char *all, const init_rec_t *mine,
                                       mgpu_status_t st) {
  int failed = -1;
  for (int r = 0; r < d->size && st == MGPU_OK; r++) {
    init_rec_t o;
    memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
    if (o.status != MGPU_OK && failed < 0) failed = r;
    d->ncpu[r] = o.ncpu;
    d->ngpus[r] = o.ngpus;
    if (r < d->rank) d->gpu_base += o.ngpus;
    d->gpu_total += o.ngpus;
  }
  if (st == MGPU_OK && failed >= 0) {
    init_rec_t o;
    memcpy(&o, all + (size_t)failed * MGPU_DIST_PAYLOAD, sizeof o);
    st = mine->status != MGPU_OK ? (mgpu_status_t)mine->status
                                 : mgpu__fail(MGPU_EREMOTE, "mgpu_init: rank %d could not start its runtime: %s",
                                              failed, o.why);
    if (mine->status != MGPU_OK) mgpu__fail_quiet(st, "%s", mine->why);
  }
  return st;
}

/* Every rank starts its runtime (*rt_p), then all learn whether all did;
 * on a failure this rank's runtime is finalized (its trace not written) and
 * d freed. */
static mgpu_status_t start_ranks(struct mgpu__dist *d, const mgpu_config_t *cfg, const mgpu__testcfg_t *test,
                                 double deadline, mgpu_runtime_t **rt_p) {
  mgpu_runtime_t *rt = NULL;
  init_rec_t mine = {0};
  mine.status = mgpu__init_rank(cfg, test, d->rank, &rt);
  if (mine.status != MGPU_OK) snprintf(mine.why, sizeof mine.why, "%s", mgpu_last_error());
  else mine.ncpu = rt->ncpu, mine.ngpus = rt->ngpus;
  if (rt && rt->trace_fp) {
    mine.traced = 1;
    mine.trace_dev = (uint64_t)rt->trace_dev;
    mine.trace_ino = (uint64_t)rt->trace_ino;
    if (gethostname(mine.host, sizeof mine.host - 1) != 0) snprintf(mine.host, sizeof mine.host, "localhost");
  }
  int size = d->size;
  char *all = malloc((size_t)size * MGPU_DIST_PAYLOAD);
  d->ncpu = calloc((size_t)size, sizeof *d->ncpu);
  d->ngpus = calloc((size_t)size, sizeof *d->ngpus);
  d->plan_share = calloc((size_t)size, sizeof *d->plan_share);
  d->plan_rate = calloc((size_t)size, sizeof *d->plan_rate);
  d->ctl_mem = calloc(W_WORDS, sizeof *d->ctl_mem);
  mgpu_status_t st;
  if (!all || !d->ncpu || !d->ngpus || !d->plan_share || !d->plan_rate || !d->ctl_mem) {
    /* The others wait for this rank's record: it cannot give one. */
    free(all);
    if (rt) mgpu__node_finalize(rt);
    st = mgpu__dist_break(d, "mgpu_init", "out of memory");
    dist_free(d);
    return st;
  }
  st = mgpu__dist_exchange(d, "mgpu_init", MGPU_DOP_INIT, &mine, sizeof mine, all, deadline);
  st = read_init_records(d, all, &mine, st);
  if (st == MGPU_OK) st = check_traces(all, size, rt);
  free(all);
  if (st != MGPU_OK) {
    /* MPI_Comm_free is local enough: it does not wait for the others. */
    if (!d->broken) MPI_Comm_free(&d->comm);
    if (rt) mgpu__trace_discard(rt);
    if (rt) mgpu__node_finalize(rt);
    char why[512];
    snprintf(why, sizeof why, "%s", mgpu_last_error());
    dist_free(d);
    return mgpu__fail_quiet(st, "%s", why);
  }
  *rt_p = rt;
  return MGPU_OK;
}

/* The control and data windows, made once every rank is here: their
 * collective creations cannot wait for one that is gone. On a failure rt is
 * finalized and d freed. */
static mgpu_status_t make_windows(struct mgpu__dist *d, mgpu_runtime_t *rt) {
  int rc = MPI_Win_create(d->ctl_mem, W_WORDS * sizeof *d->ctl_mem, sizeof *d->ctl_mem, MPI_INFO_NULL, d->comm,
                          &d->ctl);
  if (rc == MPI_SUCCESS) rc = MPI_Win_create_dynamic(MPI_INFO_NULL, d->comm, &d->data);
  if (rc != MPI_SUCCESS) {
    /* Open MPI 4 picks its UCX one-sided component wherever UCX is built in,
     * and that fails where UCX finds no network (one host, a container). */
    char s[MPI_MAX_ERROR_STRING];
    mgpu_status_t st = mgpu__dist_break(
        d, "mgpu_init",
        "MPI_Win_create failed: %s: this MPI gives no one-sided window over the communicator, which the steals "
        "between ranks need; with Open MPI 4, OMPI_MCA_osc=pt2pt selects one that works without RDMA hardware "
        "(doc/guide.md, \"Troubleshooting MPI\")",
        mpi_error(rc, s));
    mgpu__node_finalize(rt);
    dist_free(d);
    return st;
  }
  MPI_Win_set_errhandler(d->ctl, MPI_ERRORS_RETURN);
  MPI_Win_set_errhandler(d->data, MPI_ERRORS_RETURN);
  return MGPU_OK;
}

mgpu_status_t mgpu__dist_init(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, mgpu_runtime_t **rt_p) {
  mgpu__clear_error();
  if (!rt_p) return mgpu__fail(MGPU_EINVAL, "mgpu_init: rt_p is NULL");
  mgpu__config_t c;
  mgpu_status_t st = mgpu__config_parse(cfg, test, &c);
  if (st != MGPU_OK) return st;
  MPI_Comm user = MPI_COMM_NULL;
  bool use = false;
  char how[96];
  st = pick_comm(&c, &user, &use, how, sizeof how);
  if (st != MGPU_OK) return st;
  int size = 1;
  if (use && MPI_Comm_size(user, &size) != MPI_SUCCESS) size = 1;
  if (!use || size == 1) return init_alone(cfg, test, use, how, sizeof how, rt_p);
  double deadline = mgpu__deadline_s(c.v.timeout, 0);
  struct mgpu__dist *d = NULL;
  mgpu_runtime_t *rt = NULL;
  if ((st = new_dist(&c, user, size, deadline, &d)) != MGPU_OK) return st;
  if ((st = start_ranks(d, cfg, test, deadline, &rt)) != MGPU_OK) return st;
  if ((st = make_windows(d, rt)) != MGPU_OK) return st;
  d->bw = MGPU_RANK_BW_PRIOR;
  /* A steal: the victim's range (a lock, a get, a put), the inputs' get and
   * the outputs' put, the count at the owner; and a batch's start and wait. */
  d->xlat = MGPU_RANK_STEAL_TRIPS * round_trip(d) + MGPU_RANK_STEAL_START_S;
  rt->dist = d;
  rt->coll_ranks = size;
  rt->coll_gpu_total = d->gpu_total;
  rt->coll_gpu_base = d->gpu_base;
  snprintf(rt->cfg.text[MGPU_SET_MPI], sizeof rt->cfg.text[0], "%s %s, %d ranks (this is rank %d)",
           c.v.mpi_comm ? "on" : "auto:", how, size, d->rank);
  mgpu__log(MGPU_LOG_INFO, "rank %d of %d: %d CPU workers, %d GPUs; %d GPUs in all; a steal's fixed cost %.3g s",
            d->rank, size, rt->ncpu, rt->ngpus, d->gpu_total, d->xlat);
  *rt_p = rt;
  return MGPU_OK;
}

mgpu_status_t mgpu__dist_finalize(mgpu_runtime_t *rt) {
  struct mgpu__dist *d = rt->dist;
  MGPU_LOCK(&d->lock, MGPU_LK_DIST);
  int finalized = 0;
  MPI_Finalized(&finalized);
  mgpu_status_t st = MGPU_OK;
  if (finalized) {
    mgpu__log(MGPU_LOG_WARN, "mgpu_finalize: MPI was finalized before the runtime: its windows and communicator are "
                             "not freed");
  } else if (!d->broken) {
    char none = 0, *all = malloc((size_t)d->size * MGPU_DIST_PAYLOAD);
    st = all ? mgpu__dist_exchange(d, "mgpu_finalize", MGPU_DOP_FINALIZE, &none, 1, all, mgpu__dist_deadline(d, 0))
             : mgpu__dist_break(d, "mgpu_finalize", "out of memory");
    free(all);
  }
  if (!finalized && !d->broken) {
    MPI_Win_free(&d->data);
    MPI_Win_free(&d->ctl);
    MPI_Comm_free(&d->comm);
  } else if (!finalized) {
    /* The frees are collective: one could wait for a rank that is gone. */
    mgpu__log(MGPU_LOG_WARN, "mgpu_finalize: rank %d leaves the runtime's MPI windows and communicator: %s", d->rank,
              d->broken_why);
  }
  MGPU_UNLOCK(&d->lock);
  rt->dist = NULL;
  dist_free(d);
  char why[512] = "";
  if (st != MGPU_OK) snprintf(why, sizeof why, "%s", mgpu_last_error());
  mgpu_status_t nst = mgpu__node_finalize(rt);
  if (st != MGPU_OK) return mgpu__fail_quiet(st, "%s", why);
  return nst;
}

int mgpu__dist_rank(const mgpu_runtime_t *rt) { return rt->dist ? rt->dist->rank : 0; }
int mgpu__dist_size(const mgpu_runtime_t *rt) { return rt->dist ? rt->dist->size : 1; }
