/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_chunk.c: a GPU's chunks, from issue to completion. A chunk that fails
 * goes back to its batch to be computed elsewhere; out of memory halves the
 * device's cap or, where one item does not fit, leaves the batch to the other
 * workers; a device that keeps failing is retired.
 */
#include "workers/workers.h"

#include <stdlib.h>
#include <string.h>

/* Whether the device has run out of work while its host thread stages: no
 * chunk in flight, or the newest one in flight has ended. Then the device
 * waits for the host's copy, and CPU workers are asked to help with it; while
 * the device computes, the copy hides behind it and helpers would only take
 * memory bandwidth from the device's transfers. */
static bool device_starved(mgpu__gpu_t *gp) {
  if (gp->inflight == 0 || !gp->timed || !gp->ops->event_query) return true;
  mgpu__slot_t *newest = &gp->slots[(gp->oldest + gp->inflight - 1) % gp->nslots];
  return gp->ops->event_query(gp->ctx, newest->ev_end) == 0;
}

/* mgpu__copy's question: share what is left of a staging copy now? Yes when
 * the device waits, or while its host side is known to be the bottleneck:
 * the device ran dry before one of its last chunks was issued, or one of
 * them ended before the host thread came to retire it. */
static bool copy_share(void *arg) {
  mgpu__gpu_t *gp = arg;
  return gp->share_ahead > 0 || device_starved(gp);
}

/* The same question for copying the results of the oldest chunk in flight
 * (the one retiring) out of staging: yes also once every item of its batch is
 * claimed. The batch then ends when its last chunks' results are
 * copied out, and one thread copying them alone would hold up the batch's
 * end (doc/tuning.md, "Internal constants"). */
static bool copy_out_share(void *arg) {
  mgpu__gpu_t *gp = arg;
  return copy_share(gp) || mgpu__all_claimed(gp->slots[gp->oldest].claim.b);
}

/* Bytes of a chunk of n items' pageable arrays, which go through staging. */
static size_t staged_bytes(const mgpu_kernel_t *k, size_t n, const bool *pin_in, const bool *pin_out) {
  size_t stage = 0;
  for (int i = 0; i < k->nin; i++)
    if (!pin_in[i]) stage += mgpu__gpu_round_up(k->in_size[i] * n);
  for (int i = 0; i < k->nout; i++)
    if (!pin_out[i]) stage += mgpu__gpu_round_up(k->out_size[i] * n);
  return stage;
}

/* Slot s's buffers for its chunk: device memory, the batch's constants on
 * the device, pinned staging for its pageable arrays; a buffer that grew is
 * traced (MGPU_TEV_ALLOC, MGPU_TEV_PIN). */
static int issue_buffers(mgpu__gpu_t *gp, mgpu__slot_t *s) {
  mgpu__claim_t *c = &s->claim;
  mgpu__batch_t *b = c->b;
  const mgpu_kernel_t *k = &b->kernel;
  size_t n = c->count;
  double t_alloc = mgpu__now();
  void *dbuf0 = s->dbuf, *hbuf0 = s->hbuf;
  int rc = mgpu__gpu_ensure_dbuf(gp, s, mgpu__gpu_dev_bytes(k, n));
  double t_dbuf = mgpu__now();
  if (rc != 0) return rc;
  for (int i = 0; i < b->desc.nconsts; i++)
    if ((rc = mgpu__gpu_const_on_device(gp, b->desc.consts[i], s->stream, &s->consts[i])) != 0) return rc;
  mgpu__room_pin(&gp->room, b);
  size_t stage = staged_bytes(k, n, gp->room.pin_in, gp->room.pin_out);
  double t_hbuf = mgpu__now();
  s->stage_bytes = stage;
  if (stage && (rc = mgpu__gpu_ensure_hbuf(gp, s, stage)) != 0) return rc;
  if (gp->rt->trace_on) {
    mgpu__tev_t ev = {.t0 = t_alloc, .t1 = t_dbuf, .kind = MGPU_TEV_ALLOC, .stream = -1, .name = b->kernel.name,
                      .batch = b->id, .first = c->first, .count = n, .bytes = s->dbuf_bytes};
    if (s->dbuf != dbuf0) mgpu__trace_add(gp->rt, gp->w, &ev);
    ev.kind = MGPU_TEV_PIN, ev.t0 = t_hbuf, ev.t1 = mgpu__now(), ev.bytes = s->hbuf_bytes;
    if (s->hbuf != hbuf0) mgpu__trace_add(gp->rt, gp->w, &ev);
  }
  return 0;
}

/* Copy slot s's inputs to the device, laid out from *dp, each pageable one
 * through the staging buffer at *hp; both move past what they took. */
static int copy_in(mgpu__gpu_t *gp, mgpu__slot_t *s, char **dp, char **hp) {
  const mgpu__claim_t *c = &s->claim;
  mgpu__batch_t *b = c->b;
  const mgpu_kernel_t *k = &b->kernel;
  const bool *pin_in = gp->room.pin_in;
  for (int i = 0; i < k->nin; i++) {
    size_t bytes = k->in_size[i] * c->count;
    const char *src = (const char *)b->desc.in[i] + c->first * k->in_size[i];
    s->in[i] = *dp;
    if (bytes) {
      if (!pin_in[i]) {
        mgpu__copy(gp->rt, gp->w, b, *hp, src, bytes, false, copy_share, gp);
        src = *hp;
        *hp += mgpu__gpu_round_up(bytes);
      }
      int rc = gp->ops->copy_h2d(gp->ctx, *dp, src, bytes, s->stream);
      if (rc != 0) return rc;
    }
    *dp += mgpu__gpu_round_up(bytes);
  }
  return 0;
}

/* Slot s's chunk as its kernel sees it, with the slot's own copy of the
 * batch's argument (mgpu__slot_t's arg says why). */
static int set_chunk(mgpu__gpu_t *gp, mgpu__slot_t *s, void *scratch) {
  const mgpu__claim_t *c = &s->claim;
  const mgpu__batch_t *b = c->b;
  const void *arg = b->desc.arg;
  if (arg && b->desc.arg_size) {
    if (s->arg_cap < b->desc.arg_size) {
      void *p = realloc(s->arg, b->desc.arg_size);
      if (!p) return MGPU_ENOMEM;
      s->arg = p;
      s->arg_cap = b->desc.arg_size;
    }
    memcpy(s->arg, arg, b->desc.arg_size);
    arg = s->arg;
  }
  s->chunk = (mgpu_chunk_t){.in = s->in, .out = s->out, .consts = s->consts, .arg = arg, .scratch = scratch,
                            .first = b->base + c->first, .count = c->count, .stream = s->stream, .worker = gp->w->id};
  return 0;
}

/* The test fault plan's failure or hang of this launch (MGPU_FAULT_LAUNCH,
 * MGPU_FAULT_HANG), counted in the GPU's launches. */
static int injected_fault(mgpu__gpu_t *gp, mgpu__slot_t *s) {
  if (mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_LAUNCH, gp->g, gp->launches++)) {
    mgpu__log(MGPU_LOG_INFO, "GPU %d: injected kernel failure on chunk %lld", gp->g, gp->launches - 1);
    return MGPU_EKERNEL;
  }
  if (mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_HANG, gp->g, gp->launches - 1)) {
    mgpu__log(MGPU_LOG_INFO, "GPU %d: injected hang of chunk %lld", gp->g, gp->launches - 1);
    return gp->ops->hang(gp->ctx, s->stream);
  }
  return 0;
}

/* Copy slot s's outputs back: a pinned array's straight into it, behind the
 * gate (which a device given up shuts), a pageable one's into staging at hp,
 * copied out when the chunk retires. */
static int copy_out(mgpu__gpu_t *gp, mgpu__slot_t *s, char *hp) {
  const mgpu__claim_t *c = &s->claim;
  const mgpu__batch_t *b = c->b;
  const mgpu_kernel_t *k = &b->kernel;
  const bool *pin_out = gp->room.pin_out;
  size_t n = c->count;
  int rc;
  s->nstaged = 0;
  bool direct = false;
  for (int i = 0; i < k->nout; i++) direct |= pin_out[i] && k->out_size[i] * n > 0;
  if (direct && (rc = gp->ops->gate(gp->ctx, s->stream)) != 0) return rc;
  for (int i = 0; i < k->nout; i++) {
    size_t bytes = k->out_size[i] * n;
    char *dst = (char *)b->desc.out[i] + c->first * k->out_size[i];
    if (!bytes) continue;
    if (pin_out[i]) {
      rc = gp->ops->copy_d2h(gp->ctx, dst, s->out[i], bytes, s->stream);
    } else {
      s->staged_out[s->nstaged].user = dst;
      s->staged_out[s->nstaged].staged = hp;
      s->staged_out[s->nstaged].bytes = bytes;
      s->nstaged++;
      rc = gp->ops->copy_d2h(gp->ctx, hp, s->out[i], bytes, s->stream);
      hp += mgpu__gpu_round_up(bytes);
    }
    if (rc != 0) return rc;
  }
  return 0;
}

/* Put one claimed chunk in flight on slot s. Returns 0 or an MGPU_E* code. */
int mgpu__gpu_issue(mgpu__gpu_t *gp, mgpu__slot_t *s) {
  const mgpu_kernel_t *k = &s->claim.b->kernel;
  size_t n = s->claim.count;
  int rc = issue_buffers(gp, s);
  if (rc != 0) return rc;
  /* The chunk's time starts here, once its buffers are there: growing a
   * pinned buffer is slow, and counted in the chunk it would make the device
   * look slow, keep its chunks small and make them grow, and pin, again. */
  s->t_issue = mgpu__now();
  /* A device that ran dry with chunks in flight waited for this one: its
   * host side, not the device, sets the pace. */
  if (s->stage_bytes)
    gp->share_ahead = mgpu__share_ahead(gp->rt, gp->share_ahead, gp->inflight > 0 && device_starved(gp));
  if (gp->timed && gp->ops->event_record(gp->ctx, s->ev_start, s->stream) != 0) gp->timed = false;
  char *dp = s->dbuf, *hp = s->hbuf;
  if ((rc = copy_in(gp, s, &dp, &hp)) != 0) return rc;
  for (int i = 0; i < k->nout; i++) {
    s->out[i] = dp;
    dp += mgpu__gpu_round_up(k->out_size[i] * n);
  }
  bool tracing = gp->rt->trace_on && gp->timed;
  if (tracing && gp->ops->event_record(gp->ctx, s->ev_h2d, s->stream) != 0) tracing = false;
  if ((rc = set_chunk(gp, s, k->scratch_per_item ? dp : NULL)) != 0) return rc;
  if ((rc = injected_fault(gp, s)) != 0) return rc;
  if ((rc = gp->ops->launch(gp->ctx, k, &s->chunk, s->stream)) != 0) return rc;
  if (tracing && gp->ops->event_record(gp->ctx, s->ev_kern, s->stream) != 0) tracing = false;
  s->h2d_bytes = s->d2h_bytes = 0;
  for (int i = 0; i < k->nin; i++) s->h2d_bytes += k->in_size[i] * n;
  for (int i = 0; i < k->nout; i++) s->d2h_bytes += k->out_size[i] * n;
  if ((rc = copy_out(gp, s, hp)) != 0) return rc;
  if (gp->timed && gp->ops->event_record(gp->ctx, s->ev_end, s->stream) != 0) gp->timed = false;
  return 0;
}

/* GPU gp cannot allocate one item of s's batch with nothing else in flight
 * and its idle buffers freed: a limit of that kernel, not a fault of the
 * device. The GPU keeps its cap and takes nothing more of the batch; the
 * batch fails with MGPU_ENOMEM only where no worker is left that may run it. */
static void no_room(mgpu__gpu_t *gp, mgpu__slot_t *s) {
  mgpu__batch_t *b = s->claim.b;
  size_t bytes = mgpu__gpu_dev_bytes(&b->kernel, 1);
  mgpu__batch_ref(b);
  atomic_store(&b->no_room_bytes, bytes);
  atomic_store(&b->ranges[gp->w->id].no_room, true);
  mgpu__log(MGPU_LOG_WARN, "GPU %d: no room for one item of '%s' (%zu bytes of device memory); this batch's items "
                           "go to the other workers", gp->g, b->kernel.name ? b->kernel.name : "", bytes);
  mgpu__giveback(gp->rt, gp->w, &s->claim);
  mgpu__fail_orphans(gp->rt, MGPU_ENOMEM, "no GPU left to it has room for one of its items, and no CPU worker may run it");
  mgpu__batch_unref(b);
}

void mgpu__gpu_on_failure(mgpu__gpu_t *gp, mgpu__slot_t *s, int rc, const char *when) {
  mgpu__batch_t *b = s->claim.b;
  if (rc == MGPU_ENOMEM) {
    /* Memory held by idle slots may be what is missing: let them reallocate. */
    size_t freed = 0;
    int others = 0;
    for (int i = 0; i < gp->nslots; i++) {
      mgpu__slot_t *o = &gp->slots[i];
      if (o == s) continue;
      if (o->busy) others++;
      else freed += o->dbuf_bytes, mgpu__gpu_drop_dbuf(gp, o);
    }
    gp->ops->mem_trim(gp->ctx);
    if (s->claim.count == 1) {
      /* One item: a smaller cap cannot help. Retry it once nothing else of
       * this GPU holds memory; then it does not fit (no_room). */
      if (others == 0 && freed == 0) {
        no_room(gp, s);
        return;
      }
      gp->oom_drain = others > 0;
      mgpu__log(MGPU_LOG_INFO, "GPU %d: out of device memory %s one item of '%s'; it is retried once the device's "
                               "other buffers are free", gp->g, when, b->kernel.name ? b->kernel.name : "");
      mgpu__giveback(gp->rt, gp->w, &s->claim);
      return;
    }
    size_t now = atomic_load(&gp->room.slot_bytes) / 2;
    atomic_store(&gp->room.slot_bytes, now);
    mgpu__log(MGPU_LOG_WARN, "GPU %d: out of device memory %s a chunk of %zu items of '%s'; the device's cap is halved "
                             "to %zu items and the chunk is retried",
              gp->g, when, s->claim.count, b->kernel.name ? b->kernel.name : "", mgpu__room_cap(&gp->room, &b->kernel));
    mgpu__giveback(gp->rt, gp->w, &s->claim);
    return;
  }
  mgpu__log(MGPU_LOG_WARN, "GPU %d: chunk of items %zu..%zu of '%s' failed (%s) %s; it will be computed elsewhere", gp->g,
            s->claim.first, s->claim.first + s->claim.count - 1, b->kernel.name ? b->kernel.name : "",
            mgpu_strerror((mgpu_status_t)rc), when);
  mgpu__giveback(gp->rt, gp->w, &s->claim);
  if (++gp->failures >= MGPU_FAILURES_TO_RETIRE) mgpu__retire(gp->rt, gp->w, "its last chunks failed");
}

/* Teach the model the sample held, if any. */
static void learn_flush(mgpu__gpu_t *gp) {
  if (gp->held_model && gp->held_s > 0) {
    mgpu__sample_t smp = {.items = gp->held_items, .launch = gp->held_launch, .secs = gp->held_s,
                          .span = gp->held_span, .solo = gp->held_solo, .tag = gp->held_tag};
    mgpu__model_update(gp->held_model, gp->w->id, &smp);
  }
  gp->held_model = NULL;
}

/* Hold the sample of slot s's chunk (`busy` s of the device, `span` from its
 * start) until the next chunk ends, which joins it where it ended inside this
 * one's time or ran beside it (mgpu__fit_beside): launches side by side end
 * together, and the later one, credited only the moment between their ends,
 * would make its items look nearly free. Items count at average cost. */
static void learn(mgpu__gpu_t *gp, const mgpu__slot_t *s, double busy, double span, bool inside, bool solo) {
  const mgpu__claim_t *c = &s->claim;
  const mgpu__batch_t *b = c->b;
  double items = b->cost ? (double)mgpu__cost_items(b->cost, c->first, c->count) : (double)c->count;
  if (gp->held_model == b->model &&
      (inside || (!solo && mgpu__fit_beside(gp->held_items, gp->held_s, items, busy, span)))) {
    if (!inside)
      mgpu__log(MGPU_LOG_DEBUG, "model of '%s', worker %d: %.0f items in %.3g s ran beside the %.0f items before "
                "them (%.3g s): learnt with them", b->kernel.name, gp->w->id, items, busy, gp->held_items, gp->held_s);
    gp->held_items += items;
    gp->held_launch = MGPU_MAX(gp->held_launch, items);
    if (!inside) gp->held_s += busy;
    return;
  }
  learn_flush(gp);
  gp->held_model = b->model;
  gp->held_tag = b->id + 1;
  gp->held_items = items;
  gp->held_launch = items;
  gp->held_s = busy;
  gp->held_span = span;
  gp->held_solo = solo;
}

/* The oldest chunk ended before the host thread, every slot taken and items
 * left to claim, came to retire it: the host's staging copies, not the
 * device, set the pace, and the next chunks' copies are shared from their
 * start (doc/tuning.md, "Internal constants"). */
static void note_host_paced(mgpu__gpu_t *gp, const mgpu__slot_t *s) {
  if (!(s->stage_bytes && gp->inflight == gp->nslots && gp->timed && gp->ops->event_query &&
        !mgpu__all_claimed(s->claim.b) && gp->ops->event_query(gp->ctx, s->ev_end) == 0))
    return;
  int before = gp->share_ahead;
  gp->share_ahead = mgpu__share_ahead(gp->rt, before, true);
  if (gp->share_ahead > 0) gp->host_paced++;
  if (before == 0 && gp->share_ahead > 0)
    mgpu__log(MGPU_LOG_DEBUG, "GPU %d: a chunk ended before its host thread came to it: the next %d chunks' "
              "copies are shared from their start", gp->g, gp->share_ahead);
}

/* Copy slot s's staged outputs into the caller's arrays (MGPU_TEV_UNSTAGE
 * from now). */
static void unstage(mgpu__gpu_t *gp, const mgpu__slot_t *s, double now) {
  size_t unstaged = 0;
  for (int i = 0; i < s->nstaged; i++) {
    mgpu__copy(gp->rt, gp->w, s->claim.b, s->staged_out[i].user, s->staged_out[i].staged, s->staged_out[i].bytes,
               true, copy_out_share, gp);
    unstaged += s->staged_out[i].bytes;
  }
  if (unstaged && gp->rt->trace_on) {
    mgpu__batch_t *b = s->claim.b;
    mgpu__tev_t ev = {.t0 = now, .t1 = mgpu__now(), .kind = MGPU_TEV_UNSTAGE, .stream = -1, .name = b->kernel.name,
                      .batch = b->id, .first = s->claim.first, .count = s->claim.count, .bytes = unstaged};
    mgpu__trace_add(gp->rt, gp->w, &ev);
  }
}

/* Slot s's copies in, kernel and copies out in the trace, by device time
 * from t0 (its start) to t1 (its end). */
static void trace_stages(mgpu__gpu_t *gp, const mgpu__slot_t *s, double t0, double t1) {
  double th, tk;
  if (gp->ops->event_time(gp->ctx, s->ev_h2d, &th) != 0 || gp->ops->event_time(gp->ctx, s->ev_kern, &tk) != 0)
    return;
  mgpu__batch_t *b = s->claim.b;
  int slot = (int)(s - gp->slots);
  double e = gp->epoch_host;
  mgpu__tev_t ev = {.stream = slot, .name = b->kernel.name, .batch = b->id, .first = s->claim.first,
                    .count = s->claim.count};
  ev.kind = MGPU_TEV_H2D, ev.t0 = e + t0, ev.t1 = e + th, ev.bytes = s->h2d_bytes;
  mgpu__trace_add(gp->rt, gp->w, &ev);
  ev.kind = MGPU_TEV_KERNEL, ev.t0 = e + th, ev.t1 = e + tk, ev.bytes = 0;
  mgpu__trace_add(gp->rt, gp->w, &ev);
  ev.kind = MGPU_TEV_D2H, ev.t0 = e + tk, ev.t1 = e + t1, ev.bytes = s->d2h_bytes;
  mgpu__trace_add(gp->rt, gp->w, &ev);
}

/* The time of slot s's chunk, retired at host time now: busy is the slower
 * of the host's view, from when it could handle the chunk (issued, the one
 * before done) until it did, which holds the staging copies that bound it,
 * and the device's, which a host that notices an end late cannot stretch.
 * span: from its start; inside, solo: see learn(). */
static void chunk_time(mgpu__gpu_t *gp, const mgpu__slot_t *s, double now, double *busy, double *span, bool *inside,
                       bool *solo) {
  double t0, t1;
  *busy = *span = now - MGPU_MAX(s->t_issue, gp->last_done);
  *inside = false; /* ended within device time already given to an earlier chunk */
  *solo = true;    /* started with nothing else in flight on the device */
  if (!gp->timed || gp->ops->event_time(gp->ctx, s->ev_start, &t0) != 0 ||
      gp->ops->event_time(gp->ctx, s->ev_end, &t1) != 0)
    return;
  double dev = t1 - MGPU_MAX(t0, gp->last_end_dev);
  *inside = gp->last_done > 0 && t1 <= gp->last_end_dev;
  *solo = gp->last_done == 0 || t0 >= gp->last_end_dev;
  gp->last_end_dev = MGPU_MAX(gp->last_end_dev, t1);
  if (gp->last_done == 0 || dev > *busy) *busy = dev;
  *span = t1 - t0;
  if (gp->rt->trace_on) trace_stages(gp, s, t0, t1);
  MGPU_LOCK(&gp->tl_lock, MGPU_LK_TIMELINE);
  gp->tl_start[gp->tl_n % MGPU_TIMELINE] = t0;
  gp->tl_end[gp->tl_n % MGPU_TIMELINE] = t1;
  gp->tl_n++;
  MGPU_UNLOCK(&gp->tl_lock);
}

/* Wait for the oldest in-flight chunk and complete it; false when the device
 * was given up while the thread waited. */
bool mgpu__gpu_retire_oldest(mgpu__gpu_t *gp) {
  mgpu__slot_t *s = &gp->slots[gp->oldest];
  note_host_paced(gp, s);
  mgpu__gpu_watch_begin(gp, s);
  int rc = gp->ops->stream_sync(gp->ctx, s->stream);
  if (!mgpu__gpu_watch_end(gp)) return false;
  double now = mgpu__now();
  if (rc == 0) {
    unstage(gp, s, now);
    double busy, span;
    bool inside, solo;
    chunk_time(gp, s, now, &busy, &span, &inside, &solo);
    gp->last_done = now;
    gp->failures = 0;
    learn(gp, s, busy, span, inside, solo); /* canceled or failed meanwhile too: it ran to its end */
    /* The last chunk in flight: no later one can join its sample, so it is
     * taught now, before its claim completes, which can end the batch: the
     * caller's next batch of the kernel is planned on the model, and could
     * otherwise be planned on a GPU not yet measured. */
    if (gp->inflight == 1) learn_flush(gp);
    mgpu__complete(gp->rt, gp->w, &s->claim, busy > 0 ? busy : MGPU_CHUNK_MIN_S, 0);
    if (mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_STALL, gp->g, gp->completions++)) mgpu__nap(MGPU_FAULT_STALL_S);
  } else {
    mgpu__gpu_on_failure(gp, s, rc, "while running");
  }
  s->busy = false;
  gp->oldest = (gp->oldest + 1) % gp->nslots;
  gp->inflight--;
  if (gp->inflight == 0) learn_flush(gp);
  return true;
}
