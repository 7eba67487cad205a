/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * complete.c: the end of a claim. A chunk computed is counted and taught to
 * the model; a chunk of a failed batch is dropped; a failed GPU chunk goes
 * back to its batch to be computed by another worker, and so do the items a
 * CPU worker hands back (mgpu__handback). The claim that ends a batch's last
 * item finishes the batch (lifecycle.c).
 */
#include "core/core.h"

#include <stdlib.h>

/* Close claim c: computed (its kernel ran, kernel_rc its result) or dropped
 * (its batch had failed). Statistics count the items a kernel computed. */
static void close_claim(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, double busy_s, int kernel_rc,
                        bool computed) {
  mgpu__batch_t *b = c->b;
  mgpu_worker_stats_t *ws = &b->wstats[w->id];
  if (kernel_rc != 0) {
    MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
    bool first = mgpu__status_open(atomic_load(&b->status));
    if (first) {
      atomic_store(&b->status, MGPU_EKERNEL);
      b->failed_first = b->base + c->first;
      b->failed_count = c->count;
    }
    MGPU_UNLOCK(&b->lock);
    atomic_store(&b->failed, 1);
    if (first)
      mgpu__log(MGPU_LOG_ERROR, "kernel '%s' failed (returned %d) on items %zu..%zu; the batch fails with MGPU_EKERNEL",
                b->kernel.name, kernel_rc, b->base + c->first, b->base + c->first + c->count - 1);
  } else if (busy_s > 0) {
    /* A chunk that ran to its end teaches the model, also in a batch that
     * was canceled or failed elsewhere meanwhile: its time is what the
     * kernel cost. A GPU's host thread teaches its model itself
     * (gpu_chunk.c), since a chunk's device time is known only once the
     * chunks around it ended. */
    if (w->kind == MGPU_WORKER_CPU)
      mgpu__model_update(b->model, w->id,
                         &(mgpu__sample_t){.items = (double)c->count, .secs = busy_s, .calls = c->calls,
                                           .ncalls = c->ncalls});
    if (b->prof_sums && w->kind == MGPU_WORKER_GPU) {
      double *row = b->prof_sums + (size_t)(w->id - rt->ncpu) * 2 * MGPU_PROF_BINS;
      mgpu__prof_add(row, row + MGPU_PROF_BINS, b->desc.n, c->first, c->count, busy_s);
    }
  }
  if (!computed) atomic_fetch_add_explicit(&b->dropped, c->count, memory_order_relaxed);
  if (computed) {
    size_t items = kernel_rc == 0 ? c->count : 0;
    ws->items += items;
    ws->chunks++;
    atomic_fetch_add_explicit(&w->items, items, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->chunks, 1, memory_order_relaxed);
  }
  ws->busy_s += busy_s;
  atomic_fetch_add_explicit(&w->busy_ns, (uint64_t)(busy_s * 1e9), memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending, c->count, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending_ns, c->cost_ns, memory_order_relaxed);
  /* acq_rel: the thread that completes the last item sees every worker's stats. */
  if (atomic_fetch_sub_explicit(&b->remaining, c->count, memory_order_acq_rel) == c->count) mgpu__finish(rt, b);
  mgpu__batch_unref(b);
  c->b = NULL;
}

void mgpu__complete(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, double busy_s, int kernel_rc) {
  close_claim(rt, w, c, busy_s, kernel_rc, true);
}

void mgpu__drop(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c) { close_claim(rt, w, c, 0, 0, false); }

/* Part [from, from + count) of claim c, as a claim of its own holding its own
 * reference to the batch; the claim's cost goes with its first part. */
static mgpu__claim_t part(const mgpu__claim_t *c, size_t from, size_t count) {
  mgpu__claim_t p = *c;
  p.first = c->first + from;
  p.count = count;
  if (from) p.cost_ns = 0;
  mgpu__batch_ref(c->b);
  return p;
}

void mgpu__complete_failed(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, size_t done, size_t bad,
                           double busy_s, int kernel_rc) {
  /* The failing call first, so that the batch has failed before the items
   * computed before it close (a failed batch teaches its model nothing). */
  mgpu__claim_t f = part(c, done, bad);
  close_claim(rt, w, &f, busy_s, kernel_rc, true);
  if (c->count > done + bad) {
    mgpu__claim_t rest = part(c, done + bad, c->count - done - bad);
    close_claim(rt, w, &rest, 0, 0, false);
  }
  if (done) {
    mgpu__claim_t ok = part(c, 0, done);
    close_claim(rt, w, &ok, 0, 0, true);
  }
  mgpu__batch_unref(c->b);
  c->b = NULL;
}

/* Put span sp of b into its requeue, items that were in a claim (`claimed` of
 * them) or in w's range, and mark it: a trace instant of `kind`. */
static void requeue(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__batch_t *b, mgpu__span_t sp, size_t claimed,
                    int kind) {
  atomic_fetch_add_explicit(&b->unclaimed, claimed, memory_order_release);
  MGPU_LOCK(&b->lock, MGPU_LK_BATCH);
  if (b->nrequeue == b->requeue_cap) {
    int cap = b->requeue_cap ? 2 * b->requeue_cap : 8;
    mgpu__span_t *p = realloc(b->requeue, sizeof *p * (size_t)cap);
    if (!p) MGPU_PANIC("out of memory requeueing a batch's items");
    b->requeue = p;
    b->requeue_cap = cap;
  }
  b->requeue[b->nrequeue++] = sp;
  if (rt->trace_on) {
    double now = mgpu__now();
    mgpu__tev_t ev = {.t0 = now, .t1 = now, .kind = kind, .stream = -1, .name = b->kernel.name,
                      .batch = b->id, .first = sp.first, .count = sp.count};
    mgpu__trace_add(rt, w, &ev);
  }
  atomic_store_explicit(&b->has_requeue, 1, memory_order_release);
  MGPU_UNLOCK(&b->lock);
  atomic_fetch_add_explicit(&rt->requeue_gen, 1, memory_order_release);
}

void mgpu__giveback(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c) {
  mgpu__batch_t *b = c->b;
  if (atomic_load(&b->failed)) {
    /* The batch has failed already: the items are dropped, not recomputed. */
    mgpu__drop(rt, w, c);
    return;
  }
  requeue(rt, w, b, (mgpu__span_t){c->first, c->count, w->id, 0}, c->count, MGPU_TEV_RETRY);
  b->wstats[w->id].retries++;
  atomic_fetch_add_explicit(&w->retries, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending, c->count, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending_ns, c->cost_ns, memory_order_relaxed);
  mgpu__batch_unref(b);
  c->b = NULL;
  mgpu__wake_all(rt);
}

void mgpu__handback(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, size_t done, double busy_s,
                    double predicted_s, double item_s) {
  mgpu__batch_t *b = c->b;
  size_t first = c->first + done, rest = c->count - done, range = 0;
  if (atomic_load(&b->failed)) {
    /* The batch has failed: what is not computed is dropped. */
    if (rest) {
      mgpu__claim_t d = part(c, done, rest);
      mgpu__drop(rt, w, &d);
    }
    c->count = done;
    mgpu__complete(rt, w, c, busy_s, 0);
    return;
  }
  /* While w holds a claim of the batch, only w moves its range's begin
   * (activation sets it before, and retirement only in a batch no CPU
   * worker can run), so the range goes on where the claim ends; thieves may
   * have emptied it from the back. */
  mgpu__range_t *r = &b->ranges[w->id];
  mgpu__range_lock(r);
  size_t begin = atomic_load_explicit(&r->begin, memory_order_relaxed);
  size_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
  if (begin == c->first + c->count && begin < end) {
    range = end - begin;
    atomic_store_explicit(&r->begin, end, memory_order_relaxed);
  }
  mgpu__range_unlock(r);
  if (rest + range == 0) {
    mgpu__complete(rt, w, c, busy_s, 0);
    return;
  }
  mgpu__log(MGPU_LOG_DEBUG,
            "kernel '%s': CPU worker %d ran %zu items in %.3g s against %.3g s predicted: items %zu..%zu handed back",
            b->kernel.name ? b->kernel.name : "(unnamed)", w->id, done, busy_s, predicted_s, b->base + first,
            b->base + first + rest + range - 1);
  /* Not avoided by w: with no GPU to take it, w is as good a taker as any,
   * and its chunks from it are then sized by the cost seen. */
  requeue(rt, w, b, (mgpu__span_t){first, rest + range, -1, item_s}, rest, MGPU_TEV_HANDBACK);
  /* The claim now ends at `done`: its other items are requeued. */
  atomic_fetch_sub_explicit(&r->pending, rest, memory_order_relaxed);
  c->count = done;
  mgpu__complete(rt, w, c, busy_s, 0);
  mgpu__wake_all(rt);
}
