/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist_batch.c: one batch run once over all the ranks of a runtime: its
 * submission, its event and its figures. The ranks exchange their records of
 * it (what differs is refused on every rank) and split its items so that all
 * are predicted to finish together (mgpu__split); each owns a contiguous share
 * in its own memory. The calls on its event drive it, from the caller's thread.
 */
#include "dist/dist_mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A rank's record at a batch's submission. */
typedef struct {
  int32_t check;             /* its own checks of the batch: MGPU_OK or their failure */
  int32_t dep_failed;
  int32_t planned;           /* it holds mgpu_batch_plan's split for this kernel and n */
  int32_t nin, nout, nconsts;
  uint64_t n, arg_size, arg_hash, footprint;
  uint64_t in_size[MGPU_MAX_ARGS], out_size[MGPU_MAX_ARGS];
  uint64_t addr[2 * MGPU_MAX_ARGS]; /* the address of item 0 of in[k], then out[k] */
  double rate, latency;      /* its model of the kernel (rate 0: not known) */
  char kernel[64];
  char why[360];             /* the failed check's message */
} submit_rec_t;

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
  mgpu__dist_drive(db, INFINITY);
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
 * region once, overlapping ones (an array both read and written) merged.
 * fn: the public call that submits it. */
static mgpu_status_t attach(mgpu__dbatch_t *db, const char *fn) {
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
    if (rc != MPI_SUCCESS) return mgpu__dist_mpi(db->d, fn, "MPI_Win_attach", rc);
    db->att[db->natt++] = r[i].lo;
  }
  return MGPU_OK;
}

static const char *kname(const mgpu_kernel_t *k) { return k->name ? k->name : "(unnamed)"; }

/* Whether the ranks' records disagree on the batch: then msg names what,
 * the same on every rank. */
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
    DIFF(z.footprint != o.footprint, "%s: the ranks disagree on batch->footprint: %llu on rank 0, %llu on rank %d", fn,
         (unsigned long long)z.footprint, (unsigned long long)o.footprint, r);
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
  mgpu__split(rate, lat, NULL, size, n, share);
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
  rec->arg_hash = b->arg && b->arg_size ? mgpu__dist_hash(b->arg, b->arg_size) : 0;
  rec->footprint = b->footprint;
  rec->planned = d->planned && d->plan_n == b->n && d->plan_footprint == b->footprint &&
                 mgpu__model_same_kernel(&d->plan_key, k);
  mgpu__dist_rate(mgpu__dist_model(d, k, b->footprint), &rec->rate, &rec->latency);
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
static mgpu_status_t check_local(mgpu_runtime_t *rt, const char *fn, const mgpu_batch_t *user, mgpu_batch_t *d,
                                 mgpu_kernel_t *k) {
  if (!user) return mgpu__fail(MGPU_EINVAL, "%s: batch is NULL", fn);
  mgpu_status_t st = mgpu__batch_in(fn, user, d, k);
  if (st != MGPU_OK) return st;
  return mgpu__batch_check(rt, fn, "batch->", d);
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
    d->plan_footprint = desc.footprint;
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
      if (dep->state != MGPU_DB_DONE) mgpu__dist_drive(dep, INFINITY);
      *failed_p |= dep->final != MGPU_OK;
      continue;
    }
    mgpu_status_t st = mgpu__check_deps(rt, fn, 1, &deps[i]);
    if (st != MGPU_OK) return st;
    *failed_p |= mgpu__node_event_wait(deps[i], NULL) != MGPU_OK;
  }
  return MGPU_OK;
}

/* A batch across `size` ranks of a runtime of nworkers workers, its arrays
 * allocated; NULL where out of memory. */
static mgpu__dbatch_t *dbatch_new(int size, int nworkers) {
  mgpu__dbatch_t *db = calloc(1, sizeof *db);
  if (!db) return NULL;
  db->first = calloc((size_t)size, sizeof *db->first);
  db->count = calloc((size_t)size, sizeof *db->count);
  db->rate = calloc((size_t)size, sizeof *db->rate);
  db->lat = calloc((size_t)size, sizeof *db->lat);
  db->addr = calloc((size_t)size * 2 * MGPU_MAX_ARGS, sizeof *db->addr);
  db->ranks = calloc((size_t)size, sizeof *db->ranks);
  db->wstats = calloc((size_t)nworkers, sizeof *db->wstats);
  db->pws = calloc((size_t)nworkers, sizeof *db->pws);
  if (db->first && db->count && db->rate && db->lat && db->addr && db->ranks && db->wstats && db->pws) return db;
  dbatch_free(db);
  return NULL;
}

/* MGPU_EDEP on every rank where a dependency failed on one (the ranks'
 * submission records in all). */
static mgpu_status_t deps_failed(const struct mgpu__dist *d, const char *fn, const char *all) {
  for (int r = 0; r < d->size; r++) {
    submit_rec_t o;
    memcpy(&o, all + (size_t)r * MGPU_DIST_PAYLOAD, sizeof o);
    if (o.dep_failed)
      return mgpu__fail(MGPU_EDEP, "%s: a batch that this one depends on failed on rank %d, so kernel '%s' did not "
                        "run", fn, r, o.kernel);
  }
  return MGPU_OK;
}

/* The batch as every rank agreed on it (their submission records in all):
 * its own copy of the argument, its model, every rank's rate, latency and
 * array addresses, and its split: mgpu_batch_plan's where the ranks hold
 * it, else by the rates. */
static void dbatch_init(mgpu__dbatch_t *db, mgpu_runtime_t *rt, const char *fn, const char *all) {
  struct mgpu__dist *d = rt->dist;
  db->rt = rt;
  db->d = d;
  db->seq = d->calls;
  db->fn = fn;
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
  db->model = mgpu__dist_model(d, &db->kernel, db->desc.footprint);
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
  if (planned) {
    for (int r = 0; r < d->size; r++) db->count[r] = d->plan_share[r], db->rate[r] = d->plan_rate[r];
    for (int r = 0; r < d->size; r++)
      if (!(db->rate[r] > 0)) db->lat[r] = 0;
    d->planned = false;
  } else {
    split(d->size, db->n, db->rate, db->lat, db->count);
  }
  for (int r = 1; r < d->size; r++) db->first[r] = db->first[r - 1] + db->count[r - 1];
}

mgpu_status_t mgpu__dist_submit(mgpu_runtime_t *rt, const char *fn, const mgpu_batch_t *user, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p) {
  struct mgpu__dist *d = rt->dist;
  if (!done_p) return mgpu__fail(MGPU_EINVAL, "%s: done_p is NULL", fn);
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
  mgpu__dbatch_t *db = dbatch_new(d->size, rt->nworkers);
  char *all = malloc((size_t)d->size * MGPU_DIST_PAYLOAD);
  bool mem = db && all;
  mgpu_status_t chk = mem ? check_local(rt, fn, user, &db->desc, &db->kernel)
                          : mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  submit_rec_t mine;
  fill_rec(d, mem ? &db->desc : NULL, mem ? &db->kernel : NULL, chk, mgpu_last_error(), &mine);
  mine.dep_failed = dep_failed;
  st = all ? agree(d, fn, MGPU_DOP_SUBMIT, &mine, all) : mgpu__dist_break(d, fn, "out of memory");
  if (st == MGPU_OK) st = deps_failed(d, fn, all);
  if (st != MGPU_OK) {
    free(all);
    dbatch_free(db);
    MGPU_UNLOCK(&d->lock);
    return st;
  }
  dbatch_init(db, rt, fn, all);
  free(all);
  if (!db->model || (db->desc.arg_size && !db->arg_copy)) st = mgpu__fail(MGPU_ENOMEM, "%s: out of memory", fn);
  /* No rank can leave now that all agreed: a failure from here on is the
   * batch's, and ends it on every rank. */
  d->cur = db;
  double rmax = 0;
  for (int r = 0; r < d->size; r++) rmax = MGPU_MAX(rmax, db->rate[r] > 0 ? (double)db->count[r] / db->rate[r] : 0);
  db->deadline = mgpu__dist_deadline(d, db->model && db->model->fit.line.samples ? rmax : 0);
  if (st == MGPU_OK) st = attach(db, fn);
  if (st == MGPU_OK) st = mgpu__dist_publish(db);
  if (st != MGPU_OK) mgpu__dist_fail(db, st, true, "%s", mgpu_last_error());
  if (db->count[db->rank] == 0) db->own_empty = true;
  if (mgpu__handle_add(MGPU_H_DEVENT, db) != 0) MGPU_PANIC("out of memory registering an event");
  mgpu__log(MGPU_LOG_DEBUG, "rank %d: batch %llu of kernel '%s', %zu items: its share %zu..+%zu at %.4g items/s",
            d->rank, (unsigned long long)db->seq, kname(&db->kernel), db->n, db->first[d->rank], db->count[d->rank],
            db->rate[d->rank]);
  mgpu__dist_drive(db, 0);
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
  mgpu_status_t st = mgpu__refuse_in_worker(db->rt, "mgpu_event_wait");
  if (st != MGPU_OK) return st;
  mgpu__stats_ref_t ref;
  st = mgpu__stats_ref("mgpu_event_wait", stats, &ref);
  if (st != MGPU_OK) return st;
  if (db->state != MGPU_DB_DONE) {
    struct mgpu__dist *d = db->d;
    if ((st = mgpu__dist_thread_ok(d, "mgpu_event_wait")) != MGPU_OK) return st;
    MGPU_LOCK(&d->lock, MGPU_LK_DIST);
    if (db->state != MGPU_DB_DONE) mgpu__dist_drive(db, INFINITY);
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
  if (db->state != MGPU_DB_DONE) {
    struct mgpu__dist *d = db->d;
    mgpu_status_t st = mgpu__dist_thread_ok(d, "mgpu_event_test");
    if (st != MGPU_OK) return st;
    MGPU_LOCK(&d->lock, MGPU_LK_DIST);
    if (db->state != MGPU_DB_DONE) mgpu__dist_drive(db, 0);
    MGPU_UNLOCK(&d->lock);
  }
  return db->state == MGPU_DB_DONE ? db->final : MGPU_ESTATE;
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
  if (db->state != MGPU_DB_DONE) {
    struct mgpu__dist *d = db->d;
    if (mgpu__dist_thread_ok(d, "mgpu_event_release") != MGPU_OK) {
      /* Another thread may not drive it: the next call of the runtime does. */
      mgpu__log(MGPU_LOG_WARN, "%s; the batch is run to its end by the runtime's next call", mgpu_last_error());
      db->released = true;
      return;
    }
    MGPU_LOCK(&d->lock, MGPU_LK_DIST);
    if (db->state != MGPU_DB_DONE) mgpu__dist_drive(db, INFINITY);
    MGPU_UNLOCK(&d->lock);
  }
  dbatch_free(db);
}
