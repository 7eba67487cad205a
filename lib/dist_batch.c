/*
 * dist_batch.c: one batch run once over all the ranks of a runtime. Every
 * rank submits it with the same kernel and item count; the ranks exchange
 * their rates and latencies on the kernel and split the items so that all
 * are predicted to finish together (mgpu__split, the rule that splits a batch
 * among the workers of one process). Each rank owns a contiguous share,
 * whose inputs and outputs are in its own memory, and runs it in parts
 * claimed from the front of its range in the control window (dist.h): each
 * part a batch of its own workers (mgpu__node_submit), which balance it
 * among themselves. A rank with nothing of its own left steals from the back
 * of the range of the rank predicted to finish last, the share that
 * equalises both finish times with the time to move the items' bytes
 * counted (mgpu__rank_steal_share): it fetches their inputs from the owner's
 * memory (MPI_Get), runs them, puts the outputs back (MPI_Put) and counts
 * them done at the owner (MPI_Accumulate), so every item is computed once
 * and its result lands in its owner's memory. A rank's part of the batch ends
 * when every item of its share is done and no range is left to take; then
 * the ranks exchange their figures and outcomes, so that a failure on one
 * ends the batch on all, with the same message.
 *
 * The batch is driven by the calls on its event (mgpu_event_wait, _test,
 * _release), from the caller's thread, which makes every MPI call; the
 * workers run the parts meanwhile. mgpu_submit returns once the first parts
 * run.
 */
#include "dist.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { DB_RUNNING = 0, DB_ENDING, DB_DONE };

/* A part of the batch running on this rank's workers. */
typedef struct {
  mgpu_event_t *ev;          /* NULL: a free slot */
  size_t first, count;
  int victim;                /* the owner it was stolen from; -1: this rank's own */
  void *buf[2 * MGPU_MAX_ARGS]; /* a stolen part's inputs, then its outputs */
  double t0;                 /* when its workers could start it */
} part_t;

/* A rank's record at a batch's submission. */
typedef struct {
  int32_t check;             /* its own checks of the batch: MGPU_OK or their failure */
  int32_t dep_failed;
  int32_t planned;           /* it holds mgpu_batch_plan's split for this kernel and n */
  int32_t nin, nout, nconsts;
  uint64_t n, arg_size, arg_hash;
  uint64_t in_size[MGPU_MAX_ARGS], out_size[MGPU_MAX_ARGS];
  uint64_t addr[2 * MGPU_MAX_ARGS]; /* the address of item 0 of in[k], then out[k] */
  double rate, latency;      /* its model of the kernel (rate 0: not known) */
  char kernel[64];
  char why[360];             /* the failed check's message */
} submit_rec_t;

/* A rank's record at a batch's end. */
typedef struct {
  int32_t status;            /* its own outcome: MGPU_OK, a failure of its own, or MGPU_EREMOTE */
  int32_t origin;            /* 1: the failure began on it */
  mgpu_rank_stats_t s;
  char why[640];
} end_rec_t;

typedef struct mgpu__dbatch {
  mgpu_runtime_t *rt;
  struct mgpu__dist *d;
  uint64_t seq;
  int state;
  mgpu_batch_t desc;         /* this rank's arrays (item 0 of each), a copy of the argument */
  mgpu_kernel_t kernel;
  void *arg_copy;
  mgpu__dmodel_t *model;
  size_t n;
  int size, rank;
  size_t *first, *count;     /* every rank's share [size] */
  double *rate, *lat;        /* and its predicted rate and latency */
  uint64_t *addr;            /* every rank's item-0 addresses [size][2 * MGPU_MAX_ARGS] */
  void *att[2 * MGPU_MAX_ARGS]; /* regions of the data window this rank attached */
  int natt;
  size_t bytes_per_item;
  part_t part[MGPU_RANK_FLIGHT];
  int nflight;
  size_t own_flight;         /* items of its own parts running */
  bool own_empty;            /* its range has nothing left to claim */
  bool none_to_steal;        /* the last look found every range published and empty */
  size_t own_done;           /* items of its share it computed itself */
  uint64_t done_remote;      /* items of its share thieves computed (W_DONE, as last read) */
  double last_change;        /* when it last saw the batch move */
  double deadline;           /* seconds it waits without seeing the batch move */
  double t_start, t_end, busy_s, busy_from, last_end;
  /* Its outcome: failed is set at the first failure it sees. */
  bool failed;
  int status;
  int origin;
  char why[640];
  size_t failed_first, failed_count;
  _Atomic int cancel;
  _Atomic size_t progress;   /* items of its share done, for mgpu_event_progress */
  /* Its figures. */
  mgpu_worker_stats_t *wstats; /* [rt->nworkers] */
  mgpu_worker_stats_t *pws;    /* one part's [rt->nworkers] */
  uint64_t items, steals_in, items_in, bytes_moved;
  /* The end: every rank's record, then the batch's figures. */
  MPI_Request end_req;
  char *end_send, *end_recv;
  bool end_pending;          /* end_req runs: MPI owns the buffers until it completes */
  mgpu_status_t final;
  char final_why[768];
  mgpu_rank_stats_t *ranks;    /* [size] */
  bool released;
  uint64_t scan_sig;         /* what its last look at the other ranges saw, to tell that they moved */
} mgpu__dbatch_t;

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *c = p;
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

static uint64_t dbits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static double bitsd(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* This rank's rate (items/s) and latency (s) on the batch's kernel; rate 0
 * where its model has learnt nothing yet. */
static void model_rate(const mgpu__dmodel_t *m, double *rate, double *lat) {
  *rate = m && m->fit.samples > 0 && m->fit.c > 0 ? 1 / m->fit.c : 0;
  *lat = *rate > 0 ? m->fit.a : 0;
}

/* ---------------------------------------------------------- the windows */

static mgpu_status_t mpi(mgpu__dbatch_t *db, const char *call, int rc) {
  return mgpu__dist_mpi(db->d, "a batch across ranks", call, rc);
}

/* Words [W_BEGIN, W_RANGE_WORDS) of rank r's control window. */
static mgpu_status_t read_range(mgpu__dbatch_t *db, int r, uint64_t *w) {
  MPI_Win win = db->d->ctl;
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, r, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Get(w, W_RANGE_WORDS, MPI_UINT64_T, r, W_BEGIN, W_RANGE_WORDS, MPI_UINT64_T, win);
  if (rc == MPI_SUCCESS) rc = MPI_Win_unlock(r, win);
  return mpi(db, "reading a rank's range", rc);
}

/* One of the atomic words of rank r's control window. */
static mgpu_status_t read_atomic(mgpu__dbatch_t *db, int r, int word, uint64_t *v) {
  MPI_Win win = db->d->ctl;
  uint64_t none = 0;
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, r, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Fetch_and_op(&none, v, MPI_UINT64_T, r, word, MPI_NO_OP, win);
  if (rc == MPI_SUCCESS) rc = MPI_Win_unlock(r, win);
  return mpi(db, "reading a rank's counters", rc);
}

static mgpu_status_t accumulate(mgpu__dbatch_t *db, int r, int word, const uint64_t *v, int nwords, MPI_Op op) {
  MPI_Win win = db->d->ctl;
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, r, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Accumulate(v, nwords, MPI_UINT64_T, r, word, nwords, MPI_UINT64_T, op, win);
  if (rc == MPI_SUCCESS) rc = MPI_Win_unlock(r, win);
  return mpi(db, "updating a rank's counters", rc);
}

/* This rank's rate as thieves should judge it: its model's, else the split's. */
static double own_rate(const mgpu__dbatch_t *db) {
  double r, l;
  model_rate(db->model, &r, &l);
  return r > 0 ? r : db->rate[db->rank];
}

/* ------------------------------------------------------------- failures */

/* The batch fails on this rank: its parts stop at their next chunk, and where
 * the failure began here the other ranks are told to stop (W_ABORT). */
static void fail(mgpu__dbatch_t *db, int st, bool origin, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail(mgpu__dbatch_t *db, int st, bool origin, const char *fmt, ...) {
  if (db->failed) return;
  db->failed = true;
  db->status = st;
  db->origin = origin;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(db->why, sizeof db->why, fmt, ap);
  va_end(ap);
  for (int i = 0; i < MGPU_RANK_FLIGHT; i++)
    if (db->part[i].ev) mgpu__node_event_cancel(db->part[i].ev);
  if (!origin || db->d->broken) return;
  /* The batch's number: a later batch is not stopped by this one's word. */
  for (int r = 0; r < db->size; r++)
    if (r != db->rank && accumulate(db, r, W_ABORT, &db->seq, 1, MPI_MAX) != MGPU_OK) break;
}

/* ---------------------------------------------------------------- parts */

static int free_slot(const mgpu__dbatch_t *db) {
  for (int i = 0; i < MGPU_RANK_FLIGHT; i++)
    if (!db->part[i].ev) return i;
  return -1;
}

static void flight_add(mgpu__dbatch_t *db, int delta) {
  double now = mgpu__now();
  if (db->nflight == 0 && delta > 0) db->busy_from = now;
  db->nflight += delta;
  if (db->nflight == 0) db->busy_s += now - db->busy_from;
}

/* Start a part on this rank's workers: in and out hold its own items
 * (item `first` at index 0). */
static mgpu_status_t start_part(mgpu__dbatch_t *db, int slot, size_t first, size_t count, int victim,
                                const void *const *in, void *const *out) {
  mgpu_batch_t b = db->desc;
  b.n = count;
  for (int k = 0; k < db->kernel.nin; k++) b.in[k] = in[k];
  for (int k = 0; k < db->kernel.nout; k++) b.out[k] = out[k];
  part_t *p = &db->part[slot];
  mgpu_status_t st = mgpu__node_submit(db->rt, &b, first, 0, NULL, &p->ev);
  if (st != MGPU_OK) {
    p->ev = NULL;
    return st;
  }
  p->first = first;
  p->count = count;
  p->victim = victim;
  p->t0 = mgpu__now();
  flight_add(db, 1);
  return MGPU_OK;
}

/* Items of the next part of this rank's own share: MGPU_RANK_PART_S of its
 * work, at most 1 / MGPU_RANK_PARTS_MIN of the share. Before its speed is
 * known, an eighth of that: the parts it has running cannot be stolen, and
 * a rank far slower than the split assumed would hold the batch's end. */
static size_t part_size(const mgpu__dbatch_t *db) {
  size_t share = db->count[db->rank];
  size_t most = (share + MGPU_RANK_PARTS_MIN - 1) / MGPU_RANK_PARTS_MIN;
  double r, l;
  model_rate(db->model, &r, &l);
  size_t n = r > 0 ? (size_t)MGPU_MIN((double)most, ceil(r * MGPU_RANK_PART_S)) : most / 8;
  return n < 1 ? 1 : n;
}

/* Claim the next part of this rank's share from the front of its range, in
 * an exclusive epoch of its own window (thieves change its end). */
static bool claim_own(mgpu__dbatch_t *db, int slot) {
  if (db->own_empty) return false;
  MPI_Win win = db->d->ctl;
  int me = db->rank;
  uint64_t w[W_RANGE_WORDS];
  int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Get(w, W_RANGE_WORDS, MPI_UINT64_T, me, W_BEGIN, W_RANGE_WORDS, MPI_UINT64_T, win);
  if (rc == MPI_SUCCESS) rc = MPI_Win_flush(me, win);
  size_t take = 0;
  if (rc == MPI_SUCCESS && w[W_BEGIN] < w[W_END]) {
    take = MGPU_MIN(part_size(db), (size_t)(w[W_END] - w[W_BEGIN]));
    uint64_t nw[3] = {w[W_BEGIN] + take, w[W_END], db->own_flight + take};
    rc = MPI_Put(nw, 3, MPI_UINT64_T, me, W_BEGIN, 3, MPI_UINT64_T, win);
    uint64_t rate = dbits(own_rate(db));
    if (rc == MPI_SUCCESS) rc = MPI_Put(&rate, 1, MPI_UINT64_T, me, W_RATE, 1, MPI_UINT64_T, win);
  }
  int urc = MPI_Win_unlock(me, win);
  if (mpi(db, "claiming a part", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK) {
    fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    return false;
  }
  if (take == 0) {
    db->own_empty = true;
    return false;
  }
  size_t first = w[W_BEGIN];
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  for (int k = 0; k < db->kernel.nin; k++) in[k] = (const char *)db->desc.in[k] + first * db->kernel.in_size[k];
  for (int k = 0; k < db->kernel.nout; k++) out[k] = (char *)db->desc.out[k] + first * db->kernel.out_size[k];
  db->own_flight += take;
  mgpu_status_t st = start_part(db, slot, first, take, -1, in, out);
  if (st != MGPU_OK) {
    db->own_flight -= take;
    fail(db, st, true, "rank %d could not start items %zu..%zu: %s", me, first, first + take - 1, mgpu_last_error());
    return false;
  }
  return true;
}

/* Publish this rank's items running (its parts' ends change it). */
static void publish_flight(mgpu__dbatch_t *db) {
  MPI_Win win = db->d->ctl;
  int me = db->rank;
  uint64_t f = db->own_flight, rate = dbits(own_rate(db));
  int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Put(&f, 1, MPI_UINT64_T, me, W_FLIGHT, 1, MPI_UINT64_T, win);
  if (rc == MPI_SUCCESS) rc = MPI_Put(&rate, 1, MPI_UINT64_T, me, W_RATE, 1, MPI_UINT64_T, win);
  int urc = MPI_Win_unlock(me, win);
  if (mpi(db, "publishing a rank's work", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK)
    fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
}

static size_t own_running(const mgpu__dbatch_t *db) {
  size_t n = 0;
  for (int i = 0; i < MGPU_RANK_FLIGHT; i++)
    if (db->part[i].ev) n += db->part[i].count;
  return n;
}

/* Steal from the rank predicted to finish last, when that pays. */
static bool steal(mgpu__dbatch_t *db, int slot) {
  struct mgpu__dist *d = db->d;
  if (db->none_to_steal) return false;
  int me = db->rank, victim = -1, nidle = 0;
  double worst = 0, idle_v[db->size], idle_p[db->size];
  bool unpublished = false, any = false;
  uint64_t sig = 0;
  for (int r = 0; r < db->size; r++) {
    if (r == me) continue;
    uint64_t w[W_RANGE_WORDS];
    if (read_range(db, r, w) != MGPU_OK) {
      fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
      return false;
    }
    sig = sig * 1099511628211ull ^ fnv(w, sizeof w);
    if (w[W_SEQ] != db->seq) {
      unpublished = true; /* it has not started the batch yet */
      continue;
    }
    double vo = bitsd(w[W_RATE]);
    if (!(vo > 0)) vo = db->rate[r];
    if (w[W_BEGIN] >= w[W_END]) {
      /* Idle, or soon: a thief too, with which this one shares the victim. */
      idle_v[nidle] = vo, idle_p[nidle++] = (double)w[W_FLIGHT];
      continue;
    }
    any = true;
    double t = vo > 0 ? db->lat[r] + (double)(w[W_END] - w[W_BEGIN] + w[W_FLIGHT]) / vo : INFINITY;
    if (victim < 0 || t > worst) victim = r, worst = t;
  }
  db->none_to_steal = !any && !unpublished;
  /* Other ranks claiming their parts is the batch moving, for the deadline. */
  if (sig != db->scan_sig) db->scan_sig = sig, db->last_change = mgpu__now();
  if (victim < 0) return false;

  MPI_Win win = d->ctl;
  uint64_t w[W_RANGE_WORDS];
  int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, victim, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Get(w, W_RANGE_WORDS, MPI_UINT64_T, victim, W_BEGIN, W_RANGE_WORDS, MPI_UINT64_T, win);
  if (rc == MPI_SUCCESS) rc = MPI_Win_flush(victim, win);
  size_t take = 0;
  if (rc == MPI_SUCCESS && w[W_SEQ] == db->seq && w[W_BEGIN] < w[W_END]) {
    double vt, at;
    model_rate(db->model, &vt, &at);
    if (!(vt > 0)) vt = db->rate[me], at = db->lat[me];
    double vo = bitsd(w[W_RATE]);
    if (!(vo > 0)) vo = db->rate[victim];
    mgpu__rank_steal_view_t v = {.vt = vt, .at = at, .pt = (double)own_running(db), .vo = vo, .ao = db->lat[victim],
                                 .po = (double)w[W_FLIGHT], .left = (double)(w[W_END] - w[W_BEGIN]),
                                 .bytes_per_item = (double)db->bytes_per_item, .bw = d->bw, .fixed_s = d->xlat,
                                 .nothers = nidle, .ov = idle_v, .op = idle_p};
    take = mgpu__rank_steal_share(&v);
    if (take > 0) {
      uint64_t end = w[W_END] - take;
      rc = MPI_Put(&end, 1, MPI_UINT64_T, victim, W_END, 1, MPI_UINT64_T, win);
    }
  }
  int urc = MPI_Win_unlock(victim, win);
  if (mpi(db, "taking a rank's range", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK) {
    fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    return false;
  }
  if (take == 0) return false;
  size_t first = (size_t)(w[W_END] - take);
  db->last_change = mgpu__now();

  /* Its inputs, from the owner's memory, into buffers of this rank's. */
  part_t *p = &db->part[slot];
  const mgpu_kernel_t *k = &db->kernel;
  bool ok = true;
  for (int i = 0; i < k->nin; i++) ok &= (p->buf[i] = malloc(MGPU_MAX(take * k->in_size[i], 1))) != NULL;
  for (int i = 0; i < k->nout; i++)
    ok &= (p->buf[MGPU_MAX_ARGS + i] = malloc(MGPU_MAX(take * k->out_size[i], 1))) != NULL;
  if (!ok) {
    fail(db, MGPU_ENOMEM, true, "rank %d: out of memory for %zu items taken from rank %d", me, take, victim);
    return false;
  }
  double t0 = mgpu__now();
  const uint64_t *va = db->addr + (size_t)victim * 2 * MGPU_MAX_ARGS;
  rc = MPI_Win_lock(MPI_LOCK_SHARED, victim, 0, d->data);
  for (int i = 0; i < k->nin && rc == MPI_SUCCESS; i++) {
    size_t bytes = take * k->in_size[i];
    if (bytes == 0) continue;
    if (bytes > INT_MAX) {
      rc = MPI_ERR_COUNT;
      break;
    }
    MPI_Aint at = (MPI_Aint)(va[i] + first * k->in_size[i]);
    rc = MPI_Get(p->buf[i], (int)bytes, MPI_BYTE, victim, at, (int)bytes, MPI_BYTE, d->data);
  }
  urc = MPI_Win_unlock(victim, d->data);
  if (mpi(db, "fetching the inputs of a stolen range", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK) {
    fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    for (int i = 0; i < 2 * MGPU_MAX_ARGS; i++) free(p->buf[i]), p->buf[i] = NULL;
    return false;
  }
  double in_bytes = 0;
  for (int i = 0; i < k->nin; i++) in_bytes += (double)(take * k->in_size[i]);
  double dt = mgpu__now() - t0;
  if (in_bytes > 0 && dt > 0) d->bw = 0.5 * d->bw + 0.5 * in_bytes / dt;
  db->bytes_moved += (uint64_t)in_bytes;
  mgpu_status_t st = start_part(db, slot, first, take, victim, (const void *const *)p->buf,
                                (void *const *)(p->buf + MGPU_MAX_ARGS));
  if (st != MGPU_OK) {
    fail(db, st, true, "rank %d could not start items %zu..%zu taken from rank %d: %s", me, first, first + take - 1,
         victim, mgpu_last_error());
    for (int i = 0; i < 2 * MGPU_MAX_ARGS; i++) free(p->buf[i]), p->buf[i] = NULL;
    return false;
  }
  db->steals_in++;
  db->items_in += take;
  mgpu__log(MGPU_LOG_DEBUG, "rank %d took items %zu..%zu from rank %d", me, first, first + take - 1, victim);
  return true;
}

/* Put a stolen part's outputs back into its owner's memory and count them
 * done there: the count only after the data, so that the owner, seeing its
 * count complete, has its results. */
static void return_part(mgpu__dbatch_t *db, part_t *p) {
  struct mgpu__dist *d = db->d;
  const mgpu_kernel_t *k = &db->kernel;
  const uint64_t *va = db->addr + (size_t)p->victim * 2 * MGPU_MAX_ARGS + MGPU_MAX_ARGS;
  double t0 = mgpu__now(), bytes_all = 0;
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, p->victim, 0, d->data);
  for (int i = 0; i < k->nout && rc == MPI_SUCCESS; i++) {
    size_t bytes = p->count * k->out_size[i];
    if (bytes == 0) continue;
    if (bytes > INT_MAX) {
      rc = MPI_ERR_COUNT;
      break;
    }
    MPI_Aint at = (MPI_Aint)(va[i] + p->first * k->out_size[i]);
    rc = MPI_Put(p->buf[MGPU_MAX_ARGS + i], (int)bytes, MPI_BYTE, p->victim, at, (int)bytes, MPI_BYTE, d->data);
    bytes_all += (double)bytes;
  }
  int urc = MPI_Win_unlock(p->victim, d->data);
  if (mpi(db, "putting a stolen range's outputs back", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK) {
    fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    return;
  }
  double dt = mgpu__now() - t0;
  if (bytes_all > 0 && dt > 0) d->bw = 0.5 * d->bw + 0.5 * bytes_all / dt;
  db->bytes_moved += (uint64_t)bytes_all;
  uint64_t add[3] = {p->count, 1, p->count}; /* W_DONE, W_STEALS_OUT, W_ITEMS_OUT */
  if (accumulate(db, p->victim, W_DONE, add, 3, MPI_SUM) != MGPU_OK)
    fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
}

/* A part's workers are done (st its status): its figures, its model time,
 * and for a stolen one its outputs back to the owner. */
static void finish_part(mgpu__dbatch_t *db, part_t *p) {
  mgpu_runtime_t *rt = db->rt;
  mgpu__stats_ref_t ref;
  mgpu__stats_ref_own(&ref, db->pws, rt->nworkers);
  mgpu_stats_t s;
  mgpu_status_t st = mgpu__event_wait(p->ev, &s, &ref);
  char why[512];
  snprintf(why, sizeof why, "%s", mgpu_last_error());
  mgpu__node_event_release(p->ev);
  p->ev = NULL;
  double now = mgpu__now();
  flight_add(db, -1);
  for (int i = 0; i < rt->nworkers; i++) {
    mgpu_worker_stats_t *a = &db->wstats[i];
    const mgpu_worker_stats_t *b = &db->pws[i];
    a->kind = b->kind;
    a->device = b->device;
    a->items += b->items, a->chunks += b->chunks, a->steals += b->steals, a->retries += b->retries;
    a->busy_s += b->busy_s, a->staged_bytes += b->staged_bytes;
    a->batch_cap = b->batch_cap;
  }
  db->items += s.items;
  if (p->victim < 0) {
    db->own_flight -= p->count;
    if (st == MGPU_OK) db->own_done += p->count;
  }
  if (st != MGPU_OK) {
    if (st == MGPU_EKERNEL) db->failed_first = s.failed_first, db->failed_count = s.failed_count;
    if (!db->failed) fail(db, st, true, "%s", why);
  } else {
    /* The time its workers gave it alone: parts overlap by one at a time. */
    double t = now - MGPU_MAX(p->t0, db->last_end);
    if (t > 0) mgpu__fit_add(&db->model->fit, (double)p->count, t);
    db->last_end = now;
    db->last_change = now;
    if (p->victim >= 0 && !db->failed) return_part(db, p);
  }
  for (int i = 0; i < 2 * MGPU_MAX_ARGS; i++) free(p->buf[i]), p->buf[i] = NULL;
  if (p->victim < 0 && !db->failed) publish_flight(db);
  atomic_store(&db->progress, db->own_done + (size_t)db->done_remote);
}

/* -------------------------------------------------------------- the end */

static void start_end(mgpu__dbatch_t *db) {
  struct mgpu__dist *d = db->d;
  end_rec_t mine;
  memset(&mine, 0, sizeof mine);
  uint64_t out[2] = {0, 0};
  if (!d->broken && read_atomic(db, db->rank, W_STEALS_OUT, &out[0]) == MGPU_OK)
    read_atomic(db, db->rank, W_ITEMS_OUT, &out[1]);
  mine.status = db->failed ? db->status : MGPU_OK;
  mine.origin = db->failed && db->origin;
  snprintf(mine.why, sizeof mine.why, "%s", db->failed ? db->why : "");
  mgpu_rank_stats_t *s = &mine.s;
  s->rank = db->rank;
  s->status = (mgpu_status_t)mine.status;
  s->ncpu = db->rt->ncpu;
  s->ngpus = db->rt->ngpus;
  s->share_first = db->first[db->rank];
  s->share_count = db->count[db->rank];
  s->items = db->items;
  s->steals_in = db->steals_in;
  s->items_in = db->items_in;
  s->steals_out = out[0];
  s->items_out = out[1];
  s->bytes_moved = db->bytes_moved;
  s->busy_s = db->busy_s;
  db->t_end = mgpu__now();
  s->wall_s = db->t_end - db->t_start;
  s->rate = db->rate[db->rank];
  db->state = DB_ENDING;
  if (d->broken) return;
  db->end_send = calloc(1, MGPU_DIST_REC);
  db->end_recv = malloc((size_t)db->size * MGPU_DIST_REC);
  if (!db->end_send || !db->end_recv) {
    mgpu__dist_break(d, "mgpu_event_wait", "out of memory at the end of a batch");
    return;
  }
  mgpu__dist_hdr_t h = {.op = MGPU_DOP_END, .rank = (uint32_t)db->rank, .call = d->calls};
  memcpy(db->end_send, &h, sizeof h);
  memcpy(db->end_send + sizeof h, &mine, sizeof mine);
  int rc = MPI_Iallgather(db->end_send, MGPU_DIST_REC, MPI_BYTE, db->end_recv, MGPU_DIST_REC, MPI_BYTE, d->comm,
                          &db->end_req);
  if (rc != MPI_SUCCESS) mgpu__dist_mpi(d, "mgpu_event_wait", "MPI_Iallgather", rc);
  else db->end_pending = true;
  db->last_change = mgpu__now();
}

/* Every rank's record is here (or the exchange failed): the batch's outcome
 * on this rank. */
static void close_batch(mgpu__dbatch_t *db) {
  struct mgpu__dist *d = db->d;
  int origin = -1;
  for (int r = 0; r < db->size && !d->broken; r++) {
    mgpu__dist_hdr_t h;
    end_rec_t o;
    memcpy(&h, db->end_recv + (size_t)r * MGPU_DIST_REC, sizeof h);
    memcpy(&o, db->end_recv + (size_t)r * MGPU_DIST_REC + sizeof h, sizeof o);
    if (h.op != MGPU_DOP_END) {
      d->broken = true;
      snprintf(d->broken_why, sizeof d->broken_why, "the ranks made different calls");
      db->final = mgpu__fail(MGPU_EINVAL, "mgpu_event_wait: rank %d called %s where this rank ends a batch: every "
                             "rank makes the same calls on a runtime across ranks, in the same order", r,
                             mgpu__dist_op_name((int)h.op));
      snprintf(db->final_why, sizeof db->final_why, "%s", mgpu_last_error());
      break;
    }
    db->ranks[r] = o.s;
    if (o.origin && origin < 0) {
      origin = r;
      if (r != db->rank) {
        db->final = o.status == MGPU_ECANCELED ? MGPU_ECANCELED : MGPU_EREMOTE;
        snprintf(db->final_why, sizeof db->final_why, "rank %d: %s", r, o.why);
      }
    }
  }
  if (d->broken && db->final == MGPU_OK) {
    db->final = MGPU_EREMOTE;
    snprintf(db->final_why, sizeof db->final_why, "the runtime across ranks no longer works: %s", d->broken_why);
  }
  if (db->failed && db->origin) {
    db->final = (mgpu_status_t)db->status;
    snprintf(db->final_why, sizeof db->final_why, "%s", db->why);
  } else if (db->failed && db->final == MGPU_OK) {
    /* It saw the others stop, but no record names a cause (the exchange failed). */
    db->final = (mgpu_status_t)db->status;
    snprintf(db->final_why, sizeof db->final_why, "%s", db->why);
  }
  if (d->broken) {
    /* Its own figures at least. */
    db->ranks[db->rank].rank = db->rank;
    db->ranks[db->rank].items = db->items;
  }
  /* Buffers of an exchange that never completed are left to MPI. */
  if (!db->end_pending) {
    free(db->end_send);
    free(db->end_recv);
  } else {
    mgpu__dist_leave(db->end_send);
    mgpu__dist_leave(db->end_recv);
  }
  db->end_send = db->end_recv = NULL;
  /* No rank reads this rank's arrays any more: every rank has ended. */
  if (!d->broken)
    for (int i = 0; i < db->natt; i++) MPI_Win_detach(d->data, db->att[i]);
  db->natt = 0;
  db->state = DB_DONE;
  if (d->cur == db) d->cur = NULL;
  if (db->final == MGPU_OK) atomic_store(&db->progress, db->count[db->rank]);
}

/* ------------------------------------------------------------ the drive */

/* Seconds between looks at the windows while parts run: their ends are seen
 * within it, and the next part is started before the last one ends. */
#define POLL_S 5e-4
#define POLL_IDLE_MAX_S 2e-3

/* Run the batch for at most block_s seconds (<= 0: one look; INFINITY: to its end). */
static void drive(mgpu__dbatch_t *db, double block_s) {
  struct mgpu__dist *d = db->d;
  double t0 = mgpu__now(), idle = POLL_S;
  while (db->state == DB_RUNNING) {
    bool moved = false;
    if (!db->failed && atomic_load(&db->cancel))
      fail(db, MGPU_ECANCELED, true, "batch of kernel '%s' canceled on rank %d", db->kernel.name, db->rank);
    if (!db->failed) {
      uint64_t ab = 0;
      if (read_atomic(db, db->rank, W_ABORT, &ab) != MGPU_OK) fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
      else if (ab >= db->seq) fail(db, MGPU_EREMOTE, false, "another rank stopped the batch");
    }
    for (int i = 0; i < MGPU_RANK_FLIGHT; i++)
      if (db->part[i].ev && mgpu__node_event_test(db->part[i].ev) != MGPU_ESTATE) {
        finish_part(db, &db->part[i]);
        moved = true;
      }
    int slot;
    while (!db->failed && (slot = free_slot(db)) >= 0) {
      if (claim_own(db, slot) || steal(db, slot)) moved = true;
      else break;
    }
    if (db->nflight == 0) {
      if (db->failed || d->broken) {
        start_end(db);
        break;
      }
      if (db->own_empty) {
        uint64_t done = 0;
        if (read_atomic(db, db->rank, W_DONE, &done) != MGPU_OK) {
          fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
          continue;
        }
        if (done != db->done_remote) db->done_remote = done, moved = true;
        atomic_store(&db->progress, db->own_done + (size_t)done);
        if (db->own_done + done >= db->count[db->rank] && db->none_to_steal) {
          start_end(db);
          break;
        }
      }
    }
    double now = mgpu__now();
    if (moved) db->last_change = now, idle = POLL_S;
    else if (db->deadline > 0 && now - db->last_change > db->deadline && db->nflight == 0)
      fail(db, MGPU_EREMOTE, true, "rank %d saw no progress of the batch for %g s (MGPU_TIMEOUT): a rank stopped or "
           "hangs", db->rank, db->deadline);
    if (block_s <= 0 || now - t0 >= block_s) return;
    nap(db->nflight ? POLL_S : idle);
    if (!db->nflight) idle = MGPU_MIN(2 * idle, POLL_IDLE_MAX_S);
  }
  if (db->state == DB_ENDING) {
    if (!d->broken) {
      int flag = 0;
      if (block_s > 0) {
        mgpu__dist_wait(d, "mgpu_event_wait", &db->end_req, db->deadline, "the end of a batch");
        flag = !d->broken;
      } else {
        int rc = MPI_Test(&db->end_req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) mgpu__dist_mpi(d, "mgpu_event_test", "MPI_Test", rc);
        else if (!flag && db->deadline > 0 && mgpu__now() - db->last_change > db->deadline)
          mgpu__dist_break(d, "mgpu_event_test", "the end of a batch: not every rank took part within %g s "
                           "(MGPU_TIMEOUT)", db->deadline);
      }
      if (!flag && !d->broken) return;
      if (flag) d->calls++, db->end_pending = false;
    }
    close_batch(db);
  }
}

/* --------------------------------------------------------- submission */

static void dbatch_free(mgpu__dbatch_t *db) {
  if (!db) return;
  for (int i = 0; i < MGPU_RANK_FLIGHT; i++)
    for (int j = 0; j < 2 * MGPU_MAX_ARGS; j++) free(db->part[i].buf[j]);
  free(db->arg_copy);
  free(db->first);
  free(db->count);
  free(db->rate);
  free(db->lat);
  free(db->addr);
  free(db->wstats);
  free(db->pws);
  free(db->ranks);
  free(db->end_send);
  free(db->end_recv);
  free(db);
}

/* Close the batch across ranks that is still open (before another call that
 * the ranks make together). Under the ranks' lock. */
void mgpu__dist_close_open(struct mgpu__dist *d) {
  mgpu__dbatch_t *db = d->cur;
  if (!db) return;
  drive(db, INFINITY);
  d->cur = NULL;
  if (db->released) dbatch_free(db);
}

void mgpu__dist_close(mgpu_runtime_t *rt) {
  struct mgpu__dist *d = rt->dist;
  MGPU_LOCK(&d->lock, MGPU_LK_DIST);
  mgpu__dist_close_open(d);
  MGPU_UNLOCK(&d->lock);
}

/* Attach this rank's share of the batch's arrays to the data window: each
 * region once, overlapping ones (an array both read and written) merged. */
static mgpu_status_t attach(mgpu__dbatch_t *db) {
  struct { char *lo, *hi; } r[2 * MGPU_MAX_ARGS];
  int n = 0;
  size_t first = db->first[db->rank], count = db->count[db->rank];
  if (count == 0) return MGPU_OK;
  for (int k = 0; k < db->kernel.nin; k++)
    if (db->kernel.in_size[k]) {
      r[n].lo = (char *)db->desc.in[k] + first * db->kernel.in_size[k];
      r[n].hi = r[n].lo + count * db->kernel.in_size[k];
      n++;
    }
  for (int k = 0; k < db->kernel.nout; k++)
    if (db->kernel.out_size[k]) {
      r[n].lo = (char *)db->desc.out[k] + first * db->kernel.out_size[k];
      r[n].hi = r[n].lo + count * db->kernel.out_size[k];
      n++;
    }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && r[j].lo < r[j - 1].lo; j--) {
      char *lo = r[j].lo, *hi = r[j].hi;
      r[j] = r[j - 1];
      r[j - 1].lo = lo, r[j - 1].hi = hi;
    }
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m > 0 && r[i].lo <= r[m - 1].hi) {
      if (r[i].hi > r[m - 1].hi) r[m - 1].hi = r[i].hi;
    } else {
      r[m++] = r[i];
    }
  }
  for (int i = 0; i < m; i++) {
    int rc = MPI_Win_attach(db->d->data, r[i].lo, (MPI_Aint)(r[i].hi - r[i].lo));
    if (rc != MPI_SUCCESS) return mgpu__dist_mpi(db->d, "mgpu_submit", "MPI_Win_attach", rc);
    db->att[db->natt++] = r[i].lo;
  }
  return MGPU_OK;
}

/* The rank's range for this batch, published in its control window: the
 * counters first, so that no thief's count lands before them. */
static mgpu_status_t publish(mgpu__dbatch_t *db) {
  MPI_Win win = db->d->ctl;
  int me = db->rank;
  uint64_t zero[3] = {0, 0, 0}; /* W_DONE, W_STEALS_OUT, W_ITEMS_OUT */
  mgpu_status_t st = accumulate(db, me, W_DONE, zero, 3, MPI_REPLACE);
  if (st != MGPU_OK) return st;
  uint64_t w[W_RANGE_WORDS] = {db->first[me], db->first[me] + db->count[me], 0, db->seq, dbits(db->rate[me])};
  int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Put(w, W_RANGE_WORDS, MPI_UINT64_T, me, W_BEGIN, W_RANGE_WORDS, MPI_UINT64_T, win);
  int urc = MPI_Win_unlock(me, win);
  return mpi(db, "publishing a rank's range", rc != MPI_SUCCESS ? rc : urc);
}

static const char *kname(const mgpu_kernel_t *k) { return k->name ? k->name : "(unnamed)"; }

/* Where the ranks' records disagree on the batch: a message naming what,
 * the same on every rank; NULL where they agree. */
static bool disagree(const struct mgpu__dist *d, const char *fn, const char *all, char *msg, size_t len) {
  submit_rec_t z, o;
  memcpy(&z, all, sizeof z);
  for (int r = 1; r < d->size; r++) {
    memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
#define DIFF(cond, ...)                  \
  if (cond) {                            \
    snprintf(msg, len, __VA_ARGS__);     \
    return true;                         \
  }
    DIFF(strcmp(z.kernel, o.kernel) != 0, "%s: the ranks disagree on the kernel: rank 0 submits '%s', rank %d '%s' (a "
         "batch runs once over all ranks: every rank submits it with the same kernel and item count)", fn, z.kernel, r,
         o.kernel);
    DIFF(z.n != o.n, "%s: the ranks disagree on batch->n: rank 0 has %llu items, rank %d has %llu (a batch runs once "
         "over all ranks: every rank submits it with the same kernel and item count)", fn, (unsigned long long)z.n, r,
         (unsigned long long)o.n);
    DIFF(z.nin != o.nin, "%s: the ranks disagree on kernel '%s': nin is %d on rank 0, %d on rank %d", fn, z.kernel,
         z.nin, o.nin, r);
    DIFF(z.nout != o.nout, "%s: the ranks disagree on kernel '%s': nout is %d on rank 0, %d on rank %d", fn, z.kernel,
         z.nout, o.nout, r);
    for (int k = 0; k < z.nin; k++)
      DIFF(z.in_size[k] != o.in_size[k], "%s: the ranks disagree on kernel '%s': in_size[%d] is %llu on rank 0, %llu "
           "on rank %d", fn, z.kernel, k, (unsigned long long)z.in_size[k], (unsigned long long)o.in_size[k], r);
    for (int k = 0; k < z.nout; k++)
      DIFF(z.out_size[k] != o.out_size[k], "%s: the ranks disagree on kernel '%s': out_size[%d] is %llu on rank 0, "
           "%llu on rank %d", fn, z.kernel, k, (unsigned long long)z.out_size[k], (unsigned long long)o.out_size[k], r);
    DIFF(z.arg_size != o.arg_size, "%s: the ranks disagree on batch->arg_size: %llu bytes on rank 0, %llu on rank %d "
         "(a rank computes items of others with its own argument)", fn, (unsigned long long)z.arg_size,
         (unsigned long long)o.arg_size, r);
    DIFF(z.arg_hash != o.arg_hash, "%s: the ranks disagree on batch->arg: its %llu bytes differ between rank 0 and "
         "rank %d (a rank computes items of others with its own argument)", fn, (unsigned long long)z.arg_size, r);
    DIFF(z.nconsts != o.nconsts, "%s: the ranks disagree on batch->nconsts: %d on rank 0, %d on rank %d", fn,
         z.nconsts, o.nconsts, r);
    DIFF(z.planned != o.planned, "%s: rank %d %s mgpu_batch_plan's split for this batch, rank 0 %s", fn, r,
         o.planned ? "holds" : "does not hold", z.planned ? "does" : "does not");
#undef DIFF
  }
  return false;
}

/* The split of n items among the ranks by their rates and latencies: equal
 * where none is known, the known ones' mean for a rank that knows none. */
static void split(int size, size_t n, double *rate, double *lat, size_t *share) {
  double sum = 0;
  int known = 0;
  for (int r = 0; r < size; r++)
    if (rate[r] > 0) sum += rate[r], known++;
  for (int r = 0; r < size; r++)
    if (!(rate[r] > 0)) rate[r] = known ? sum / known : 1, lat[r] = 0;
  mgpu__split(rate, lat, size, n, share);
}

/* A rank's record of the batch in user (checked on this rank: chk), and its model. */
static void fill_rec(struct mgpu__dist *d, const mgpu_batch_t *b, const mgpu_kernel_t *k, mgpu_status_t chk,
                     const char *why, submit_rec_t *rec) {
  memset(rec, 0, sizeof *rec);
  rec->check = chk;
  /* A rank whose checks failed is named before any difference is looked for. */
  if (chk != MGPU_OK) {
    snprintf(rec->why, sizeof rec->why, "%s", why);
    return;
  }
  snprintf(rec->kernel, sizeof rec->kernel, "%s", kname(k));
  rec->n = b->n;
  rec->nin = k->nin;
  rec->nout = k->nout;
  for (int i = 0; i < k->nin && i < MGPU_MAX_ARGS; i++) {
    rec->in_size[i] = k->in_size[i];
    rec->addr[i] = (uint64_t)(uintptr_t)b->in[i];
  }
  for (int i = 0; i < k->nout && i < MGPU_MAX_ARGS; i++) {
    rec->out_size[i] = k->out_size[i];
    rec->addr[MGPU_MAX_ARGS + i] = (uint64_t)(uintptr_t)b->out[i];
  }
  rec->nconsts = b->nconsts;
  rec->arg_size = b->arg_size;
  rec->arg_hash = b->arg && b->arg_size ? fnv(b->arg, b->arg_size) : 0;
  rec->planned = d->planned && d->plan_n == b->n && mgpu__model_same_kernel(&d->plan_key, k);
  model_rate(mgpu__dist_model(d, k), &rec->rate, &rec->latency);
}

/* The records of every rank's call (op MGPU_DOP_SUBMIT or _PLAN): the
 * first rank's failed check, then any disagreement; MGPU_OK where the
 * batch can run. */
static mgpu_status_t agree(struct mgpu__dist *d, const char *fn, int op, const submit_rec_t *mine, char *all) {
  mgpu_status_t st = mgpu__dist_exchange(d, fn, op, mine, sizeof *mine, all, mgpu__dist_deadline(d, 0));
  if (st != MGPU_OK) return st;
  for (int r = 0; r < d->size; r++) {
    submit_rec_t o;
    memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
    if (o.check == MGPU_OK) continue;
    if (r == d->rank) return mgpu__fail_quiet((mgpu_status_t)o.check, "%s", o.why);
    return mgpu__fail((mgpu_status_t)o.check, "%s: rank %d refused the batch: %s", fn, r, o.why);
  }
  char msg[512];
  if (disagree(d, fn, all, msg, sizeof msg)) return mgpu__fail(MGPU_EINVAL, "%s", msg);
  return MGPU_OK;
}

/* This rank's checks of a batch, as the runtime of one process makes them. */
static mgpu_status_t check_local(mgpu_runtime_t *rt, const mgpu_batch_t *user, mgpu_batch_t *d, mgpu_kernel_t *k) {
  if (!user) return mgpu__fail(MGPU_EINVAL, "mgpu_submit: batch is NULL");
  mgpu_status_t st = mgpu__batch_in("mgpu_submit", user, d, k);
  if (st != MGPU_OK) return st;
  return mgpu__batch_check(rt, d);
}

mgpu_status_t mgpu__dist_plan(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t *first_p, size_t *count_p) {
  struct mgpu__dist *d = rt->dist;
  const char *fn = "mgpu_batch_plan";
  mgpu_status_t st = mgpu__dist_thread_ok(d, fn);
  if (st != MGPU_OK) return st;
  MGPU_LOCK(&d->lock, MGPU_LK_DIST);
  mgpu__dist_close_open(d);
  mgpu_batch_t desc;
  mgpu_kernel_t kernel;
  memset(&kernel, 0, sizeof kernel);
  memset(&desc, 0, sizeof desc);
  mgpu_status_t chk = batch ? mgpu__batch_in(fn, batch, &desc, &kernel) : mgpu__fail(MGPU_EINVAL, "%s: batch is NULL", fn);
  if (chk == MGPU_OK && !desc.kernel) chk = mgpu__fail(MGPU_EINVAL, "%s: batch->kernel is NULL", fn);
  if (chk == MGPU_OK && !kernel.cpu)
    chk = mgpu__fail(MGPU_EINVAL, "%s: kernel '%s' has no cpu function (it is required)", fn, kname(&kernel));
  submit_rec_t mine;
  fill_rec(d, &desc, &kernel, chk, mgpu_last_error(), &mine);
  mine.planned = 0;
  char *all = malloc((size_t)d->size * MGPU_DIST_PAYLOAD);
  st = all ? agree(d, fn, MGPU_DOP_PLAN, &mine, all) : mgpu__dist_break(d, fn, "out of memory");
  if (st == MGPU_OK) {
    double lat[d->size];
    for (int r = 0; r < d->size; r++) {
      submit_rec_t o;
      memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
      d->plan_rate[r] = o.rate;
      lat[r] = o.latency;
    }
    split(d->size, desc.n, d->plan_rate, lat, d->plan_share);
    d->planned = true;
    d->plan_key = kernel;
    d->plan_n = desc.n;
    size_t first = 0;
    for (int r = 0; r < d->rank; r++) first += d->plan_share[r];
    *first_p = first;
    *count_p = d->plan_share[d->rank];
  }
  free(all);
  MGPU_UNLOCK(&d->lock);
  return st;
}

mgpu_status_t mgpu__dist_deps(mgpu_runtime_t *rt, const char *fn, size_t ndeps, mgpu_event_t *const *deps,
                              bool *failed_p) {
  *failed_p = false;
  if (ndeps > 0 && !deps) return mgpu__fail(MGPU_EINVAL, "%s: deps is NULL with ndeps = %zu", fn, ndeps);
  for (size_t i = 0; i < ndeps; i++) {
    if (!deps[i]) return mgpu__fail(MGPU_EINVAL, "%s: deps[%zu] is NULL", fn, i);
    if (mgpu__handle_live(MGPU_H_DEVENT, deps[i])) {
      mgpu__dbatch_t *dep = (mgpu__dbatch_t *)deps[i];
      if (dep->state != DB_DONE) drive(dep, INFINITY);
      *failed_p |= dep->final != MGPU_OK;
      continue;
    }
    mgpu_status_t st = mgpu__check_deps(rt, fn, 1, &deps[i]);
    if (st != MGPU_OK) return st;
    *failed_p |= mgpu__node_event_wait(deps[i], NULL) != MGPU_OK;
  }
  return MGPU_OK;
}

mgpu_status_t mgpu__dist_submit(mgpu_runtime_t *rt, const mgpu_batch_t *user, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  struct mgpu__dist *d = rt->dist;
  const char *fn = "mgpu_submit";
  if (!done_p) return mgpu__fail(MGPU_EINVAL, "mgpu_submit: done_p is NULL");
  mgpu_status_t st = mgpu__dist_thread_ok(d, fn);
  if (st != MGPU_OK) return st;
  /* Dependencies end first: a batch across ranks starts at once. */
  bool dep_failed = false;
  MGPU_LOCK(&d->lock, MGPU_LK_DIST);
  mgpu__dist_close_open(d);
  st = mgpu__dist_deps(rt, fn, ndeps, deps, &dep_failed);
  if (st != MGPU_OK) {
    MGPU_UNLOCK(&d->lock);
    return st;
  }
  mgpu__dbatch_t *db = calloc(1, sizeof *db);
  char *all = malloc((size_t)d->size * MGPU_DIST_PAYLOAD);
  if (db) {
    db->first = calloc((size_t)d->size, sizeof *db->first);
    db->count = calloc((size_t)d->size, sizeof *db->count);
    db->rate = calloc((size_t)d->size, sizeof *db->rate);
    db->lat = calloc((size_t)d->size, sizeof *db->lat);
    db->addr = calloc((size_t)d->size * 2 * MGPU_MAX_ARGS, sizeof *db->addr);
    db->ranks = calloc((size_t)d->size, sizeof *db->ranks);
    db->wstats = calloc((size_t)rt->nworkers, sizeof *db->wstats);
    db->pws = calloc((size_t)rt->nworkers, sizeof *db->pws);
  }
  bool mem = db && all && db->first && db->count && db->rate && db->lat && db->addr && db->ranks && db->wstats &&
             db->pws;
  mgpu_status_t chk = mem ? check_local(rt, user, &db->desc, &db->kernel)
                          : mgpu__fail(MGPU_ENOMEM, "mgpu_submit: out of memory");
  submit_rec_t mine;
  fill_rec(d, mem ? &db->desc : NULL, mem ? &db->kernel : NULL, chk, mgpu_last_error(), &mine);
  mine.dep_failed = dep_failed;
  st = all ? agree(d, fn, MGPU_DOP_SUBMIT, &mine, all) : mgpu__dist_break(d, fn, "out of memory");
  if (st == MGPU_OK) {
    for (int r = 0; r < d->size; r++) {
      submit_rec_t o;
      memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
      if (o.dep_failed) {
        st = mgpu__fail(MGPU_EDEP, "mgpu_submit: a batch that this one depends on failed on rank %d, so kernel '%s' "
                        "did not run", r, o.kernel);
        break;
      }
    }
  }
  if (st != MGPU_OK) {
    free(all);
    dbatch_free(db);
    MGPU_UNLOCK(&d->lock);
    return st;
  }
  db->rt = rt;
  db->d = d;
  db->seq = d->calls;
  db->size = d->size;
  db->rank = d->rank;
  db->n = db->desc.n;
  db->final = MGPU_OK;
  db->t_start = db->last_change = db->last_end = mgpu__now();
  db->desc.kernel = &db->kernel;
  if (db->desc.arg_size) {
    db->arg_copy = malloc(db->desc.arg_size);
    if (db->arg_copy) memcpy(db->arg_copy, db->desc.arg, db->desc.arg_size);
    db->desc.arg = db->arg_copy;
  }
  db->model = mgpu__dist_model(d, &db->kernel);
  for (int k = 0; k < db->kernel.nin; k++) db->bytes_per_item += db->kernel.in_size[k];
  for (int k = 0; k < db->kernel.nout; k++) db->bytes_per_item += db->kernel.out_size[k];
  bool planned = false;
  for (int r = 0; r < d->size; r++) {
    submit_rec_t o;
    memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
    db->rate[r] = o.rate;
    db->lat[r] = o.latency;
    planned = o.planned;
    memcpy(db->addr + (size_t)r * 2 * MGPU_MAX_ARGS, o.addr, sizeof o.addr);
  }
  free(all);
  if (planned) {
    for (int r = 0; r < d->size; r++) db->count[r] = d->plan_share[r], db->rate[r] = d->plan_rate[r];
    for (int r = 0; r < d->size; r++)
      if (!(db->rate[r] > 0)) db->lat[r] = 0;
    d->planned = false;
  } else {
    split(d->size, db->n, db->rate, db->lat, db->count);
  }
  for (int r = 1; r < d->size; r++) db->first[r] = db->first[r - 1] + db->count[r - 1];
  if (!db->model || (db->desc.arg_size && !db->arg_copy)) st = mgpu__fail(MGPU_ENOMEM, "mgpu_submit: out of memory");
  /* No rank can leave now that all agreed: a failure from here on is the
   * batch's, and ends it on every rank. */
  d->cur = db;
  double rmax = 0;
  for (int r = 0; r < d->size; r++) rmax = MGPU_MAX(rmax, db->rate[r] > 0 ? (double)db->count[r] / db->rate[r] : 0);
  db->deadline = mgpu__dist_deadline(d, db->model && db->model->fit.samples ? rmax : 0);
  if (st == MGPU_OK) st = attach(db);
  if (st == MGPU_OK) st = publish(db);
  if (st != MGPU_OK) fail(db, st, true, "%s", mgpu_last_error());
  if (db->count[db->rank] == 0) db->own_empty = true;
  if (mgpu__handle_add(MGPU_H_DEVENT, db) != 0) MGPU_PANIC("out of memory registering an event");
  mgpu__log(MGPU_LOG_DEBUG, "rank %d: batch %llu of kernel '%s', %zu items: its share %zu..+%zu at %.4g items/s",
            d->rank, (unsigned long long)db->seq, kname(&db->kernel), db->n, db->first[d->rank], db->count[d->rank],
            db->rate[d->rank]);
  drive(db, 0);
  MGPU_UNLOCK(&d->lock);
  *done_p = (mgpu_event_t *)db;
  return MGPU_OK;
}

/* ------------------------------------------------------------- events */

bool mgpu__dist_is_event(const mgpu_event_t *ev) { return ev && mgpu__handle_live(MGPU_H_DEVENT, ev); }

static void fill_stats(const mgpu__dbatch_t *db, mgpu_stats_t *s, const mgpu__stats_ref_t *r) {
  memset(s, 0, sizeof *s);
  s->status = db->final;
  s->wall_s = db->t_end - db->t_start;
  s->batches = 1;
  s->failed_first = db->failed_first;
  s->failed_count = db->failed_count;
  s->nworkers = db->rt ? db->rt->nworkers : 0;
  for (int i = 0; i < s->nworkers; i++) {
    const mgpu_worker_stats_t *w = &db->wstats[i];
    s->items += w->items;
    s->chunks += w->chunks;
    s->steals += w->steals;
    s->retries += w->retries;
    mgpu__stats_put_worker(r, i, w);
  }
  s->nranks = db->size;
  for (int i = 0; i < db->size; i++) mgpu__stats_put_rank(r, i, &db->ranks[i]);
}

static mgpu_status_t outcome(const mgpu__dbatch_t *db) {
  if (db->final != MGPU_OK) return mgpu__fail_quiet(db->final, "%s", db->final_why);
  return MGPU_OK;
}

mgpu_status_t mgpu__dist_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats) {
  mgpu__dbatch_t *db = (mgpu__dbatch_t *)ev;
  mgpu__stats_ref_t ref;
  mgpu_status_t st = mgpu__stats_ref("mgpu_event_wait", stats, &ref);
  if (st != MGPU_OK) return st;
  if (db->state != DB_DONE) {
    struct mgpu__dist *d = db->d;
    if ((st = mgpu__dist_thread_ok(d, "mgpu_event_wait")) != MGPU_OK) return st;
    MGPU_LOCK(&d->lock, MGPU_LK_DIST);
    if (db->state != DB_DONE) drive(db, INFINITY);
    MGPU_UNLOCK(&d->lock);
  }
  if (stats) {
    mgpu_stats_t s;
    fill_stats(db, &s, &ref);
    mgpu__stats_put(&ref, &s);
  }
  return outcome(db);
}

mgpu_status_t mgpu__dist_event_test(mgpu_event_t *ev) {
  mgpu__dbatch_t *db = (mgpu__dbatch_t *)ev;
  if (db->state != DB_DONE) {
    struct mgpu__dist *d = db->d;
    mgpu_status_t st = mgpu__dist_thread_ok(d, "mgpu_event_test");
    if (st != MGPU_OK) return st;
    MGPU_LOCK(&d->lock, MGPU_LK_DIST);
    if (db->state != DB_DONE) drive(db, 0);
    MGPU_UNLOCK(&d->lock);
  }
  return db->state == DB_DONE ? db->final : MGPU_ESTATE;
}

/* Any thread: the drive sees the flag at its next look. */
mgpu_status_t mgpu__dist_event_cancel(mgpu_event_t *ev) {
  atomic_store(&((mgpu__dbatch_t *)ev)->cancel, 1);
  return MGPU_OK;
}

/* Any thread, without MPI: this rank's share. */
mgpu_status_t mgpu__dist_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p) {
  mgpu__dbatch_t *db = (mgpu__dbatch_t *)ev;
  size_t total = db->count[db->rank], done = MGPU_MIN(total, atomic_load(&db->progress));
  if (done_p) *done_p = done;
  if (total_p) *total_p = total;
  return MGPU_OK;
}

/* The other ranks need this one until the batch's end: a batch released
 * before it is run to it here. */
void mgpu__dist_event_release(mgpu_event_t *ev) {
  mgpu__dbatch_t *db = (mgpu__dbatch_t *)ev;
  if (!mgpu__handle_del(MGPU_H_DEVENT, ev)) {
    mgpu__log(MGPU_LOG_ERROR, "mgpu_event_release: %p is not a live event (released twice?); ignored", (void *)ev);
    return;
  }
  if (db->state != DB_DONE) {
    struct mgpu__dist *d = db->d;
    if (mgpu__dist_thread_ok(d, "mgpu_event_release") != MGPU_OK) {
      /* Another thread may not drive it: the next call of the runtime does. */
      mgpu__log(MGPU_LOG_WARN, "%s; the batch is run to its end by the runtime's next call", mgpu_last_error());
      db->released = true;
      return;
    }
    MGPU_LOCK(&d->lock, MGPU_LK_DIST);
    if (db->state != DB_DONE) drive(db, INFINITY);
    MGPU_UNLOCK(&d->lock);
  }
  dbatch_free(db);
}
