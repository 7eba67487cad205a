/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist_part.c: how a rank runs its part of a batch across ranks (dist_batch.c
 * submits it): its share in parts claimed from the front of its range in the
 * control window, each a batch of its own workers, then ranges stolen from the
 * back of the range predicted to finish last (mgpu__rank_steal_share). Every
 * MPI call here is the caller's thread's; the workers run the parts.
 */
#include "dist/dist_mpi.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A rank's record at a batch's end. */
typedef struct {
  int32_t status;            /* its own outcome: MGPU_OK, a failure of its own, or MGPU_EREMOTE */
  int32_t origin;            /* 1: the failure began on it */
  mgpu_rank_stats_t s;
  char why[640];
} end_rec_t;
_Static_assert(sizeof(end_rec_t) <= MGPU_DIST_PAYLOAD, "a batch's end record fits a record of the ranks");

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
void mgpu__dist_rate(const mgpu__dmodel_t *m, double *rate, double *lat) {
  *rate = m && m->fit.line.samples > 0 && m->fit.line.c > 0 ? 1 / m->fit.line.c : 0;
  *lat = *rate > 0 ? m->fit.line.a : 0;
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
  mgpu__dist_rate(db->model, &r, &l);
  return r > 0 ? r : db->rate[db->rank];
}

/* ------------------------------------------------------------- failures */

/* The batch fails on this rank: its parts stop at their next chunk, and where
 * the failure began here the other ranks are told to stop (W_ABORT). */
void mgpu__dist_fail(mgpu__dbatch_t *db, int st, bool origin, const char *fmt, ...) {
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
  mgpu__dpart_t *p = &db->part[slot];
  mgpu_status_t st = mgpu__node_submit(db->rt, db->fn, "batch->", &b, first, 0, NULL, &p->ev);
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
 * work, at most 1 / MGPU_RANK_PARTS_MIN of the share, and before its speed is
 * known 1 / MGPU_RANK_PART_PROBE of that: the parts it has running cannot be
 * stolen, and a rank far slower than the split assumed would hold the end. */
static size_t part_size(const mgpu__dbatch_t *db) {
  size_t share = db->count[db->rank];
  size_t most = (share + MGPU_RANK_PARTS_MIN - 1) / MGPU_RANK_PARTS_MIN;
  double r, l;
  mgpu__dist_rate(db->model, &r, &l);
  size_t n = r > 0 ? (size_t)MGPU_MIN((double)most, ceil(r * MGPU_RANK_PART_S)) : most / MGPU_RANK_PART_PROBE;
  return n < 1 ? 1 : n;
}

/* Open an exclusive epoch on rank's window and read its range words into w;
 * the caller unlocks it whatever this returns. */
static int lock_range(MPI_Win win, int rank, uint64_t *w) {
  int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
  if (rc == MPI_SUCCESS) rc = MPI_Get(w, W_RANGE_WORDS, MPI_UINT64_T, rank, W_BEGIN, W_RANGE_WORDS, MPI_UINT64_T, win);
  if (rc == MPI_SUCCESS) rc = MPI_Win_flush(rank, win);
  return rc;
}

/* Claim the next part of this rank's share from the front of its range, in
 * an exclusive epoch of its own window (thieves change its end). */
static bool claim_own(mgpu__dbatch_t *db, int slot) {
  if (db->own_empty) return false;
  MPI_Win win = db->d->ctl;
  int me = db->rank;
  uint64_t w[W_RANGE_WORDS];
  int rc = lock_range(win, me, w);
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
    mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
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
    mgpu__dist_fail(db, st, true, "rank %d could not start items %zu..%zu: %s", me, first, first + take - 1, mgpu_last_error());
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
    mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
}

static size_t own_running(const mgpu__dbatch_t *db) {
  size_t n = 0;
  for (int i = 0; i < MGPU_RANK_FLIGHT; i++)
    if (db->part[i].ev) n += db->part[i].count;
  return n;
}

/* MPI counts are ints: a range's bytes go in pieces (MGPU_RANK_RMA_PIECE). The
 * origin buffer is the first argument of both calls (a put's source, a
 * get's destination). */
typedef int (*rma_fn)(void *buf, int count, MPI_Datatype t, int rank, MPI_Aint at, int tcount, MPI_Datatype tt,
                      MPI_Win w);
static int put(void *buf, int count, MPI_Datatype t, int rank, MPI_Aint at, int tcount, MPI_Datatype tt, MPI_Win w) {
  return MPI_Put(buf, count, t, rank, at, tcount, tt, w);
}
static int move(rma_fn fn, void *buf, size_t bytes, int rank, MPI_Aint at, MPI_Win w) {
  const size_t piece = MGPU_RANK_RMA_PIECE;
  int rc = MPI_SUCCESS;
  for (size_t off = 0; off < bytes && rc == MPI_SUCCESS; off += piece) {
    int n = (int)MGPU_MIN(piece, bytes - off);
    rc = fn((char *)buf + off, n, MPI_BYTE, rank, at + (MPI_Aint)off, n, MPI_BYTE, w);
  }
  return rc;
}

/* This rank's transfer rate, from a move of `bytes` in dt seconds. */
static void learn_bw(struct mgpu__dist *d, double bytes, double dt) {
  if (bytes > 0 && dt > 0) d->bw = (1 - MGPU_RANK_BW_WEIGHT) * d->bw + MGPU_RANK_BW_WEIGHT * bytes / dt;
}

/* The rank predicted to finish last, of those whose range has items left
 * (-1: none, or a read failed, which fails the batch); the ranks idle or
 * soon (nidle, their rates idle_v and items running idle_p) share it with a
 * thief. A change in what the ranges show is the batch moving. */
static int pick_victim(mgpu__dbatch_t *db, int *nidle, double *idle_v, double *idle_p) {
  int me = db->rank, victim = -1;
  double worst = 0;
  bool unpublished = false, any = false;
  uint64_t sig = 0;
  *nidle = 0;
  for (int r = 0; r < db->size; r++) {
    if (r == me) continue;
    uint64_t w[W_RANGE_WORDS];
    if (read_range(db, r, w) != MGPU_OK) {
      mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
      return -1;
    }
    sig = sig * MGPU_FNV_PRIME ^ mgpu__dist_hash(w, sizeof w);
    if (w[W_SEQ] != db->seq) {
      unpublished = true; /* it has not started the batch yet */
      continue;
    }
    double vo = bitsd(w[W_RATE]);
    if (!(vo > 0)) vo = db->rate[r];
    if (w[W_BEGIN] >= w[W_END]) {
      idle_v[*nidle] = vo, idle_p[(*nidle)++] = (double)w[W_FLIGHT];
      continue;
    }
    any = true;
    double t = vo > 0 ? db->lat[r] + (double)(w[W_END] - w[W_BEGIN] + w[W_FLIGHT]) / vo : INFINITY;
    if (victim < 0 || t > worst) victim = r, worst = t;
  }
  db->none_to_steal = !any && !unpublished;
  if (sig != db->scan_sig) db->scan_sig = sig, db->last_change = mgpu__now();
  return victim;
}

/* Run items first..first + take - 1, taken from victim, on slot's part: their
 * inputs fetched from its memory into buffers of this rank's. */
static bool run_stolen(mgpu__dbatch_t *db, int slot, int victim, size_t first, size_t take) {
  struct mgpu__dist *d = db->d;
  int me = db->rank;
  mgpu__dpart_t *p = &db->part[slot];
  const mgpu_kernel_t *k = &db->kernel;
  bool ok = true;
  for (int i = 0; i < k->nin; i++) ok &= (p->buf[i] = malloc(MGPU_MAX(take * k->in_size[i], 1))) != NULL;
  for (int i = 0; i < k->nout; i++)
    ok &= (p->buf[MGPU_MAX_ARGS + i] = malloc(MGPU_MAX(take * k->out_size[i], 1))) != NULL;
  if (!ok) {
    mgpu__dist_fail(db, MGPU_ENOMEM, true, "rank %d: out of memory for %zu items taken from rank %d", me, take, victim);
    return false;
  }
  double t0 = mgpu__now();
  const uint64_t *va = db->addr + (size_t)victim * 2 * MGPU_MAX_ARGS;
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, victim, 0, d->data);
  for (int i = 0; i < k->nin && rc == MPI_SUCCESS; i++)
    rc = move(MPI_Get, p->buf[i], take * k->in_size[i], victim, (MPI_Aint)(va[i] + first * k->in_size[i]), d->data);
  int urc = MPI_Win_unlock(victim, d->data);
  if (mpi(db, "fetching the inputs of a stolen range", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK) {
    mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    for (int i = 0; i < 2 * MGPU_MAX_ARGS; i++) free(p->buf[i]), p->buf[i] = NULL;
    return false;
  }
  double in_bytes = 0;
  for (int i = 0; i < k->nin; i++) in_bytes += (double)(take * k->in_size[i]);
  learn_bw(d, in_bytes, mgpu__now() - t0);
  db->bytes_moved += (uint64_t)in_bytes;
  mgpu_status_t st = start_part(db, slot, first, take, victim, (const void *const *)p->buf,
                                (void *const *)(p->buf + MGPU_MAX_ARGS));
  if (st != MGPU_OK) {
    mgpu__dist_fail(db, st, true, "rank %d could not start items %zu..%zu taken from rank %d: %s", me, first,
                    first + take - 1, victim, mgpu_last_error());
    for (int i = 0; i < 2 * MGPU_MAX_ARGS; i++) free(p->buf[i]), p->buf[i] = NULL;
    return false;
  }
  db->steals_in++;
  db->items_in += take;
  mgpu__log(MGPU_LOG_DEBUG, "rank %d took items %zu..%zu from rank %d", me, first, first + take - 1, victim);
  return true;
}

/* Steal from the rank predicted to finish last, when that pays: the share
 * comes off the back of its range in an exclusive epoch of its window. */
static bool steal(mgpu__dbatch_t *db, int slot) {
  struct mgpu__dist *d = db->d;
  if (db->none_to_steal) return false;
  int me = db->rank, nidle = 0;
  double idle_v[db->size], idle_p[db->size];
  int victim = pick_victim(db, &nidle, idle_v, idle_p);
  if (victim < 0) return false;

  MPI_Win win = d->ctl;
  uint64_t w[W_RANGE_WORDS];
  int rc = lock_range(win, victim, w);
  size_t take = 0;
  if (rc == MPI_SUCCESS && w[W_SEQ] == db->seq && w[W_BEGIN] < w[W_END]) {
    double vt, at;
    mgpu__dist_rate(db->model, &vt, &at);
    if (!(vt > 0)) vt = db->rate[me], at = db->lat[me];
    double vo = bitsd(w[W_RATE]);
    if (!(vo > 0)) vo = db->rate[victim];
    mgpu__rank_steal_view_t v = {.thief = {.speed = vt, .latency = at, .running = (double)own_running(db)},
                                 .owner = {.speed = vo, .latency = db->lat[victim], .running = (double)w[W_FLIGHT]},
                                 .left = (double)(w[W_END] - w[W_BEGIN]),
                                 .bytes_per_item = (double)db->bytes_per_item, .bw = d->bw, .fixed_s = d->xlat,
                                 .nothers = nidle, .others_speed = idle_v, .others_running = idle_p};
    take = mgpu__rank_steal_share(&v);
    if (take > 0) {
      uint64_t end = w[W_END] - take;
      rc = MPI_Put(&end, 1, MPI_UINT64_T, victim, W_END, 1, MPI_UINT64_T, win);
    }
  }
  int urc = MPI_Win_unlock(victim, win);
  if (mpi(db, "taking a rank's range", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK) {
    mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    return false;
  }
  if (take == 0) return false;
  db->last_change = mgpu__now();
  return run_stolen(db, slot, victim, (size_t)(w[W_END] - take), take);
}

/* Put a stolen part's outputs back into its owner's memory and count them
 * done there: the count only after the data, so that the owner, seeing its
 * count complete, has its results. */
static void return_part(mgpu__dbatch_t *db, mgpu__dpart_t *p) {
  struct mgpu__dist *d = db->d;
  const mgpu_kernel_t *k = &db->kernel;
  const uint64_t *va = db->addr + (size_t)p->victim * 2 * MGPU_MAX_ARGS + MGPU_MAX_ARGS;
  double t0 = mgpu__now(), bytes_all = 0;
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, p->victim, 0, d->data);
  for (int i = 0; i < k->nout && rc == MPI_SUCCESS; i++) {
    size_t bytes = p->count * k->out_size[i];
    rc = move(put, p->buf[MGPU_MAX_ARGS + i], bytes, p->victim, (MPI_Aint)(va[i] + p->first * k->out_size[i]), d->data);
    bytes_all += (double)bytes;
  }
  int urc = MPI_Win_unlock(p->victim, d->data);
  if (mpi(db, "putting a stolen range's outputs back", rc != MPI_SUCCESS ? rc : urc) != MGPU_OK) {
    mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    return;
  }
  double dt = mgpu__now() - t0;
  learn_bw(d, bytes_all, dt);
  db->bytes_moved += (uint64_t)bytes_all;
  uint64_t add[3] = {p->count, 1, p->count}; /* W_DONE, W_STEALS_OUT, W_ITEMS_OUT */
  if (accumulate(db, p->victim, W_DONE, add, 3, MPI_SUM) != MGPU_OK)
    mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
}

/* A part's workers are done (st its status): its figures, its model time,
 * and for a stolen one its outputs back to the owner. */
static void finish_part(mgpu__dbatch_t *db, mgpu__dpart_t *p) {
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
    if (!db->failed) {
      mgpu__dist_fail(db, st, true, "%s", why);
    } else if (st == MGPU_EKERNEL && db->origin && db->status == MGPU_ECANCELED) {
      /* As on one process (mgpu__status_open): a kernel's error replaces this
       * rank's cancel, which would hide items lost for another reason. */
      db->status = st;
      snprintf(db->why, sizeof db->why, "%s", why);
    }
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
  db->state = MGPU_DB_ENDING;
  if (d->broken) return;
  db->end_send = calloc(1, MGPU_DIST_REC);
  db->end_recv = malloc((size_t)db->size * MGPU_DIST_REC);
  if (!db->end_send || !db->end_recv) {
    mgpu__dist_break(d, "mgpu_event_wait", "out of memory at the end of a batch");
    return;
  }
  mgpu__dist_hdr_t h = mgpu__dist_hdr(d, MGPU_DOP_END, "mgpu_event_wait");
  memcpy(db->end_send, &h, sizeof h);
  memcpy(db->end_send + sizeof h, &mine, sizeof mine);
  int rc = MPI_Iallgather(db->end_send, MGPU_DIST_REC, MPI_BYTE, db->end_recv, MGPU_DIST_REC, MPI_BYTE, d->comm,
                          &db->end_req);
  if (rc != MPI_SUCCESS) mgpu__dist_mpi(d, "mgpu_event_wait", "MPI_Iallgather", rc);
  else db->end_pending = true;
  db->last_change = mgpu__now();
}

/* The ranks' end records: a rank whose record is of another call breaks the
 * runtime; the first rank where the failure began gives the batch's outcome
 * where that is not this rank. */
static void read_end_records(mgpu__dbatch_t *db) {
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
                             mgpu__dist_call_name(&h));
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
}

/* Every rank's record is here (or the exchange failed): the batch's outcome
 * on this rank. */
static void close_batch(mgpu__dbatch_t *db) {
  struct mgpu__dist *d = db->d;
  read_end_records(db);
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
  db->state = MGPU_DB_DONE;
  if (d->cur == db) d->cur = NULL;
  if (db->final == MGPU_OK) atomic_store(&db->progress, db->count[db->rank]);
}

/* ------------------------------------------------------------ the drive */

/* What one look at a running batch found. */
enum { LOOK_STILL, LOOK_MOVED, LOOK_AGAIN, LOOK_ENDED };

/* One look at a running batch: a cancel or another rank's stop, parts that
 * ended, new parts claimed or stolen into free slots, and, with none
 * running, whether this rank's part is over (LOOK_ENDED: its end began;
 * LOOK_AGAIN: a failure to act on at once). */
static int look(mgpu__dbatch_t *db) {
  struct mgpu__dist *d = db->d;
  bool moved = false;
  if (!db->failed && atomic_load(&db->cancel))
    mgpu__dist_fail(db, MGPU_ECANCELED, true, "batch of kernel '%s' canceled on rank %d", db->kernel.name, db->rank);
  if (!db->failed) {
    uint64_t ab = 0;
    if (read_atomic(db, db->rank, W_ABORT, &ab) != MGPU_OK)
      mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
    else if (ab >= db->seq) mgpu__dist_fail(db, MGPU_EREMOTE, false, "another rank stopped the batch");
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
      return LOOK_ENDED;
    }
    if (db->own_empty) {
      uint64_t done = 0;
      if (read_atomic(db, db->rank, W_DONE, &done) != MGPU_OK) {
        mgpu__dist_fail(db, MGPU_EREMOTE, true, "%s", mgpu_last_error());
        return LOOK_AGAIN;
      }
      if (done != db->done_remote) db->done_remote = done, moved = true;
      atomic_store(&db->progress, db->own_done + (size_t)done);
      if (db->own_done + done >= db->count[db->rank] && db->none_to_steal) {
        start_end(db);
        return LOOK_ENDED;
      }
    }
  }
  return moved ? LOOK_MOVED : LOOK_STILL;
}

/* The batch's end exchange: waited for (block_s > 0) or tested once, under
 * the deadline; once every record is in, or the runtime broke, its close. */
static void drive_end(mgpu__dbatch_t *db, double block_s) {
  struct mgpu__dist *d = db->d;
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

/* Run the batch for at most block_s seconds (<= 0: one look; INFINITY: to its
 * end). Looks come every MGPU_RANK_POLL_S while parts run, so that their ends
 * are seen and the next part starts before the last one ends; further apart,
 * up to MGPU_RANK_POLL_IDLE_MAX_S, while none does. */
void mgpu__dist_drive(mgpu__dbatch_t *db, double block_s) {
  double t0 = mgpu__now(), idle = MGPU_RANK_POLL_S;
  while (db->state == MGPU_DB_RUNNING) {
    int l = look(db);
    if (l == LOOK_ENDED) break;
    if (l == LOOK_AGAIN) continue;
    double now = mgpu__now();
    if (l == LOOK_MOVED) db->last_change = now, idle = MGPU_RANK_POLL_S;
    else if (db->deadline > 0 && now - db->last_change > db->deadline && db->nflight == 0)
      mgpu__dist_fail(db, MGPU_EREMOTE, true, "rank %d saw no progress of the batch for %g s (MGPU_TIMEOUT): a rank stopped or "
           "hangs", db->rank, db->deadline);
    if (block_s <= 0 || now - t0 >= block_s) return;
    mgpu__nap(db->nflight ? MGPU_RANK_POLL_S : idle);
    if (!db->nflight) idle = MGPU_MIN(2 * idle, MGPU_RANK_POLL_IDLE_MAX_S);
  }
  if (db->state == MGPU_DB_ENDING) drive_end(db, block_s);
}

/* The rank's range for this batch, published in its control window: the
 * counters first, so that no thief's count lands before them. */
mgpu_status_t mgpu__dist_publish(mgpu__dbatch_t *db) {
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
