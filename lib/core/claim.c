/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * claim.c: who computes which items. A worker takes chunks from the front of
 * its own range of a batch (plan.c), then steals from the back of the range
 * that would finish last the share that equalises both finish times, never a
 * piece it would finish later than the owner (the tail rule).
 */
#include "core/core.h"

#include <math.h>
#include <stdlib.h>

/* rt->lock guards the active list; a range lock guards one range, taken after
 * rt->lock and never two at once. Range fields are atomics, so that thieves
 * pick a victim without the lock; they change only under it. */
#define range_begin(r) atomic_load_explicit(&(r)->begin, memory_order_relaxed)

/* A range's lock, counted per thread so that the device back ends can refuse
 * a driver call made under it (mgpu__range_locks_held). */
void mgpu__range_lock(mgpu__range_t *r) {
  MGPU_LOCK(&r->lock, MGPU_LK_RANGE);
  mgpu__range_locks_held++;
}

void mgpu__range_unlock(mgpu__range_t *r) {
  mgpu__range_locks_held--;
  MGPU_UNLOCK(&r->lock);
}

/* Exact, unlike a look at the ranges: a steal empties part of one range
 * before it fills another, and a requeue drops its flag before it installs. */
bool mgpu__all_claimed(const mgpu__batch_t *b) {
  return atomic_load_explicit(&b->unclaimed, memory_order_acquire) == 0;
}

/* Chunk length for worker w from `first`, at most avail: the size its fit
 * asks for (mgpu__model_chunk), never cut to a fraction of what is left of
 * the range, as such chunks would pay their latency again and again. With a
 * cost profile a GPU's size is in items of average cost, and it takes the
 * items from `first` that cost as much. */
static size_t chunk_len(mgpu__batch_t *b, mgpu__worker_t *w, size_t first, size_t avail, size_t max_items,
                        double prior, double target_s) {
  bool by_cost = b->cost && w->kind == MGPU_WORKER_GPU;
  size_t n = mgpu__model_chunk(b->model, w->id, prior, target_s, by_cost ? SIZE_MAX : max_items,
                               w->kind == MGPU_WORKER_GPU, b->id + 1, b->desc.n);
  if (by_cost) n = MGPU_MIN(mgpu__cost_chunk(b->cost, first, n), max_items);
  /* Items a CPU worker handed back: target_s of work at what they cost it,
   * and no less than a kernel's cost per call asks (mgpu__fit_chunk). */
  double item_s = atomic_load_explicit(&b->ranges[w->id].item_s, memory_order_relaxed);
  if (item_s > 0 && w->kind == MGPU_WORKER_CPU) {
    double t = MGPU_MAX(target_s, MGPU_SAT_SHARE / (1 - MGPU_SAT_SHARE) * mgpu__worker_latency(b, w->id));
    n = MGPU_MIN(n, (size_t)(t / item_s));
  }
  n = MGPU_MIN(n, avail);
  return n < 1 ? 1 : n;
}

static uint64_t cost_ns(const mgpu__batch_t *b, size_t first, size_t count) {
  if (!b->cost) return 0;
  double c = mgpu__cost_at(b->cost, first + count) - mgpu__cost_at(b->cost, first);
  return c > 0 ? (uint64_t)llround(c * 1e9) : 0;
}

static bool take_own(mgpu__batch_t *b, mgpu__worker_t *w, size_t max_items, double target_s, mgpu__claim_t *c) {
  mgpu__range_t *r = &b->ranges[w->id];
  if (range_begin(r) >= atomic_load_explicit(&r->end, memory_order_relaxed)) return false;
  /* A GPU's room may ask the driver (which arrays are pinned): never under
   * the range lock, which thieves wait on. */
  if (w->room) max_items = MGPU_MIN(max_items, mgpu__room_limit(w->room, b));
  double prior = mgpu__worker_speed(b, w->id);
  mgpu__range_lock(r);
  size_t begin = atomic_load_explicit(&r->begin, memory_order_relaxed);
  size_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
  if (begin >= end) {
    mgpu__range_unlock(r);
    return false;
  }
  size_t n = atomic_load(&b->failed) ? end - begin : chunk_len(b, w, begin, end - begin, max_items, prior, target_s);
  atomic_store_explicit(&r->begin, begin + n, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->pending, n, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->unclaimed, n, memory_order_release);
  c->cost_ns = cost_ns(b, begin, n);
  atomic_fetch_add_explicit(&r->pending_ns, c->cost_ns, memory_order_relaxed);
  mgpu__range_unlock(r);
  c->b = b;
  c->first = begin;
  c->count = n;
  c->from_share = true;
  mgpu__batch_ref(b);
  return true;
}

/* Put [first, first+count) into w's (empty) range of b, items that cost a CPU
 * worker item_s seconds each where one handed them back (0: not known). */
static void install(mgpu__batch_t *b, mgpu__worker_t *w, size_t first, size_t count, double item_s) {
  mgpu__range_t *r = &b->ranges[w->id];
  mgpu__range_lock(r);
  size_t begin = atomic_load_explicit(&r->begin, memory_order_relaxed);
  size_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
  if (begin < end) MGPU_PANIC("installing items into a non-empty range");
  atomic_store_explicit(&r->item_s, item_s, memory_order_relaxed);
  atomic_store_explicit(&r->begin, first, memory_order_relaxed);
  atomic_store_explicit(&r->end, first + count, memory_order_relaxed);
  mgpu__range_unlock(r);
}

/* A CPU worker's speed v on range r: no more than its items' handed-back
 * cost allows. */
static double cpu_speed_on(const mgpu__range_t *r, double v) {
  double item_s = atomic_load_explicit(&r->item_s, memory_order_relaxed);
  return item_s > 0 && item_s * v > 1 ? 1 / item_s : v;
}

static bool others_can_take(const mgpu_runtime_t *rt, const mgpu__batch_t *b, const mgpu__worker_t *w) {
  for (int i = 0; i < rt->nworkers; i++)
    if (i != w->id && mgpu__eligible(rt, b, &rt->workers[i])) return true;
  return false;
}

/* Whether CPU worker w takes span sp, handed back by a CPU worker: where it
 * is predicted to run it, at the cost seen, no later than the GPU that would
 * end it first after that GPU's own range; where no GPU can take it; or where
 * the batch has failed. A GPU with no range left takes such a span unjudged
 * (mgpu__claim), so the span waits for a live GPU at most that long. */
static bool cpu_takes(const mgpu_runtime_t *rt, const mgpu__batch_t *b, const mgpu__worker_t *w,
                      const mgpu__span_t *sp) {
  if (atomic_load_explicit(&b->failed, memory_order_relaxed)) return true;
  double best = INFINITY, k = (double)sp->count;
  for (int i = rt->ncpu; i < rt->nworkers; i++) {
    const mgpu__range_t *r = &b->ranges[i];
    double v = mgpu__worker_speed(b, i);
    if (v <= 0 || !mgpu__eligible(rt, b, &rt->workers[i])) continue;
    size_t begin = range_begin(r), end = atomic_load_explicit(&r->end, memory_order_relaxed);
    double left = (double)(end > begin ? end - begin : 0);
    left += (double)atomic_load_explicit(&r->pending, memory_order_relaxed);
    best = fmin(best, mgpu__share_time(v, mgpu__worker_latency(b, i), mgpu__worker_peak(b, i), left + k));
  }
  if (best == INFINITY) return true;
  double v = mgpu__worker_speed(b, w->id);
  return v > 0 && mgpu__worker_latency(b, w->id) + k * fmax(1 / v, sp->item_s) <= best;
}

/* A failed GPU chunk waiting to be recomputed, or items a CPU worker handed
 * back, move into w's empty range. */
static bool take_requeue(mgpu_runtime_t *rt, mgpu__batch_t *b, mgpu__worker_t *w) {
  if (!atomic_load_explicit(&b->has_requeue, memory_order_acquire)) return false;
  bool others = others_can_take(rt, b, w);
  bool got = false;
  mgpu__span_t sp;
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  for (int i = 0; i < b->nrequeue; i++) {
    if (b->requeue[i].avoid == w->id && others) continue;
    if (b->requeue[i].item_s > 0 && w->kind == MGPU_WORKER_CPU && !cpu_takes(rt, b, w, &b->requeue[i])) continue;
    sp = b->requeue[i];
    b->requeue[i] = b->requeue[--b->nrequeue];
    got = true;
    break;
  }
  if (b->nrequeue == 0) atomic_store_explicit(&b->has_requeue, 0, memory_order_release);
  MGPU_UNLOCK(&b->lock);
  if (got) {
    install(b, w, sp.first, sp.count, sp.item_s);
    /* Idle workers may steal from it now: they went to sleep while it
     * waited in the requeue, where no thief can take from it. */
    mgpu__wake_all(rt);
  }
  return got;
}

/* Seconds of GPU work in flight from range r of a batch with a cost. */
static double pending_s(const mgpu__range_t *r) {
  return 1e-9 * (double)atomic_load_explicit(&r->pending_ns, memory_order_relaxed);
}

/* Whether a thief that judges by `cost` (a GPU's, or NULL) judges victim i so:
 * another GPU that is not retired (vo > 0). */
static bool by_cost(const mgpu_runtime_t *rt, const mgpu__cost_t *cost, int i, double vo) {
  return cost && vo > 0 && rt->workers[i].kind == MGPU_WORKER_GPU;
}

/* Seconds before CPU worker i can start on its range of b: where it runs a
 * chunk of another batch, as long again as that chunk has run so far (its
 * end is not known; one dear item can hold it for seconds). A batch that
 * came while its owner was busy elsewhere would otherwise wait for that
 * chunk for its range's last item, which the tail rule leaves to the owner. */
static double busy_elsewhere(const mgpu_runtime_t *rt, const mgpu__batch_t *b, int i, double now) {
  const mgpu__worker_t *o = &rt->workers[i];
  if (o->kind != MGPU_WORKER_CPU) return 0;
  const mgpu__batch_t *rb = atomic_load_explicit(&o->run_batch, memory_order_acquire);
  if (!rb || rb == b) return 0;
  double since = 1e-9 * (double)atomic_load_explicit(&o->run_since_ns, memory_order_relaxed);
  return since > 0 && now > since ? now - since : 0;
}

/* A worker's latency and peak as thieves judge them: the CPU team's latency
 * (cpu_lat, read once per steal), a GPU's own; a CPU worker has no peak. */
#define LATENCY(i) (rt->workers[i].kind == MGPU_WORKER_CPU ? cpu_lat : mgpu__worker_latency(b, (i)))
#define PEAK(i) (rt->workers[i].kind == MGPU_WORKER_CPU ? 0 : mgpu__worker_peak(b, (i)))

/* The worker other than w whose range in b would finish last (-1: none has
 * items left): by predicted time, or by cost where the thief and the victim
 * judge by it (by_cost). */
static int pick_victim(const mgpu_runtime_t *rt, const mgpu__batch_t *b, const mgpu__worker_t *w,
                       const mgpu__cost_t *cost, double cpu_lat, double now) {
  int victim = -1;
  double worst = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    if (i == w->id) continue;
    const mgpu__range_t *r = &b->ranges[i];
    size_t begin = range_begin(r), end = atomic_load_explicit(&r->end, memory_order_relaxed);
    if (begin >= end) continue;
    double vo = mgpu__worker_speed(b, i);
    if (rt->workers[i].kind == MGPU_WORKER_CPU) vo = cpu_speed_on(r, vo);
    /* In static mode only a retired worker's range may be taken. */
    if (!b->steal_ok && vo > 0) continue;
    double left = (double)(end - begin) + (double)atomic_load_explicit(&r->pending, memory_order_relaxed);
    double t = vo > 0 ? mgpu__share_time(vo, LATENCY(i) + busy_elsewhere(rt, b, i, now), PEAK(i), left) : INFINITY;
    if (by_cost(rt, cost, i, vo)) t = pending_s(r) + mgpu__cost_at(cost, end) - mgpu__cost_at(cost, begin);
    if (victim < 0 || t > worst) victim = i, worst = t;
  }
  return victim;
}

/* A trace instant: w stole [first, first + count) of b from victim. */
static void trace_steal(mgpu_runtime_t *rt, mgpu__worker_t *w, const mgpu__batch_t *b, int victim, size_t first,
                        size_t count) {
  double t = mgpu__now();
  mgpu__tev_t ev = {.t0 = t, .t1 = t, .kind = MGPU_TEV_STEAL, .stream = -1, .other = victim,
                    .name = b->kernel.name, .batch = b->id, .first = first, .count = count};
  mgpu__trace_add(rt, w, &ev);
}

/* Steal from the back of the range in b that would finish last. In a batch
 * its GPUs split by cost, a GPU judges another GPU's range by cost, and
 * takes by cost (mgpu__cost_steal). */
static bool steal(mgpu_runtime_t *rt, mgpu__batch_t *b, mgpu__worker_t *w) {
  double vt = mgpu__worker_speed(b, w->id);
  if (vt <= 0) return false;
  double at = mgpu__worker_latency(b, w->id);
  double cpu_lat = rt->ncpu ? mgpu__worker_latency(b, 0) : 0; /* the CPU team's, once */
  const mgpu__cost_t *cost = w->kind == MGPU_WORKER_GPU ? b->cost : NULL;
  double pt = (double)atomic_load_explicit(&b->ranges[w->id].pending, memory_order_relaxed);
  double slowest = atomic_load_explicit(&b->model->slow[w->id], memory_order_relaxed);
  double item_s = w->kind == MGPU_WORKER_CPU ? mgpu__cpu_item_s(b) : 0;
  double now = mgpu__now();
  for (int attempt = 0; attempt < MGPU_STEAL_ATTEMPTS; attempt++) {
    int victim = pick_victim(rt, b, w, cost, cpu_lat, now);
    if (victim < 0) return false;
    mgpu__range_t *r = &b->ranges[victim];
    mgpu__range_lock(r);
    size_t begin = atomic_load_explicit(&r->begin, memory_order_relaxed);
    size_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
    if (begin >= end) {
      mgpu__range_unlock(r);
      continue;
    }
    /* Items a CPU worker handed back cost any CPU worker what they cost it. */
    double r_item_s = atomic_load_explicit(&r->item_s, memory_order_relaxed);
    double vo = mgpu__worker_speed(b, victim), vt_r = w->kind == MGPU_WORKER_CPU ? cpu_speed_on(r, vt) : vt;
    if (rt->workers[victim].kind == MGPU_WORKER_CPU) vo = cpu_speed_on(r, vo);
    double R = (double)(end - begin), po = (double)atomic_load_explicit(&r->pending, memory_order_relaxed);
    mgpu__steal_view_t sv = {.thief = {.speed = vt_r, .latency = at, .peak = PEAK(w->id), .pending = pt},
                             .owner = {.speed = vo, .latency = LATENCY(victim) + busy_elsewhere(rt, b, victim, now),
                                       .peak = PEAK(victim), .pending = po},
                             .left = R, .slowest = slowest, .worst_item_s = item_s};
    size_t take = by_cost(rt, cost, victim, vo)
                      ? mgpu__cost_steal(cost, begin, end, pending_s(&b->ranges[w->id]), pending_s(r))
                      : mgpu__steal_share(&sv);
    if (take == 0) {
      /* The tail rule: one more item would finish after the owner. */
      mgpu__range_unlock(r);
      return false;
    }
    atomic_store_explicit(&r->end, end - take, memory_order_relaxed);
    mgpu__range_unlock(r);
    install(b, w, end - take, take, r_item_s);
    if (rt->trace_on) trace_steal(rt, w, b, victim, end - take, take);
    b->wstats[w->id].steals++;
    atomic_fetch_add_explicit(&w->steals, 1, memory_order_relaxed);
    return true;
  }
  return false;
#undef LATENCY
#undef PEAK
}

/* Collect every batch worker w may work on into w->cand, in the order it
 * prefers them; returns how many. Every active batch is looked at: a worker
 * that skipped some would sleep while they still hold items (the tail rule
 * keeps the other workers from taking its share). */
static int candidates(mgpu_runtime_t *rt, mgpu__worker_t *w) {
  int n = 0;
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  /* CPU workers first look at work only CPUs can do. */
  for (int pass = (w->kind == MGPU_WORKER_CPU ? 0 : 1); pass < 2; pass++) {
    for (mgpu__batch_t *b = rt->active_head; b; b = b->next) {
      bool cpu_only = !b->gpu_ok;
      if (w->kind == MGPU_WORKER_CPU && (pass == 0) != cpu_only) continue;
      if (!mgpu__eligible(rt, b, w)) continue;
      if (n == w->cand_cap) {
        int cap = w->cand_cap ? 2 * w->cand_cap : 64;
        mgpu__batch_t **p = realloc(w->cand, sizeof *p * (size_t)cap);
        if (!p) MGPU_PANIC("out of memory listing the active batches");
        w->cand = p;
        w->cand_cap = cap;
      }
      mgpu__batch_ref(b);
      w->cand[n++] = b;
    }
  }
  MGPU_UNLOCK(&rt->lock);
  return n;
}

static void set_current(mgpu__worker_t *w, mgpu__batch_t *b) {
  if (w->cur == b) return;
  if (b) mgpu__batch_ref(b);
  if (w->cur) mgpu__batch_unref(w->cur);
  w->cur = b;
}

bool mgpu__claim(mgpu_runtime_t *rt, mgpu__worker_t *w, size_t max_items, double target_s, mgpu__claim_t *c) {
  if (max_items == 0) max_items = 1;
  mgpu__batch_t *b = w->cur;
  /* Fast path: keep taking from the current batch's own range, unless a CPU
   * worker should move to work that only CPUs can do, or items went into a
   * requeue since this worker last looked at every batch. */
  uint64_t requeued = atomic_load_explicit(&rt->requeue_gen, memory_order_acquire);
  if (b && atomic_load_explicit(&b->active, memory_order_relaxed) && mgpu__eligible(rt, b, w) &&
      requeued == w->requeue_seen &&
      !(w->kind == MGPU_WORKER_CPU && b->gpu_ok && atomic_load_explicit(&rt->n_active_cpu_only, memory_order_relaxed))) {
    if (take_own(b, w, max_items, target_s, c)) return true;
  }
  w->requeue_seen = requeued;
  int n = candidates(rt, w);
  mgpu__batch_t **cand = w->cand;
  bool got = false;
  /* Batch by batch, oldest first: the own range, then the requeue, so that
   * items handed back or given back in a batch go before the own ranges of
   * later batches (the batch is waiting on them alone); then steals. */
  for (int phase = 0; phase < 2 && !got; phase++) {
    for (int i = 0; i < n && !got; i++) {
      mgpu__batch_t *cb = cand[i];
      bool own = phase == 0 && take_own(cb, w, max_items, target_s, c);
      if (own) got = true;
      else if (phase == 0) got = take_requeue(rt, cb, w) && take_own(cb, w, max_items, target_s, c);
      else got = steal(rt, cb, w) && take_own(cb, w, max_items, target_s, c);
      if (got) {
        set_current(w, cb);
        c->from_share = own;
      }
    }
  }
  for (int i = 0; i < n; i++) mgpu__batch_unref(cand[i]);
  if (!got) set_current(w, NULL);
  return got;
}
