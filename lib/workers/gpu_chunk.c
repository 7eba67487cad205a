/*
 * gpu_chunk.c: a GPU's chunks, from issue to completion. A claimed chunk is
 * put in flight on its slot (copies in through staging where arrays are
 * pageable, the kernel, copies out), and the oldest one in flight is waited
 * for, its results copied out of staging, its device time learnt and its
 * claim completed. A chunk that fails goes back to its batch to be computed
 * elsewhere; out of memory halves the device's cap, and where one item does
 * not fit, leaves the batch to the other workers; a device that keeps
 * failing is retired.
 */
#include "workers/workers.h"

#include <stdlib.h>
#include <string.h>

/* Whether the device has run out of work while its host thread stages: no
 * chunk in flight, or the newest one in flight has ended. Then the device
 * waits for the host's copy, and CPU workers are asked to help with it;
 * while the device computes, the copy hides behind it and helpers would only
 * take memory bandwidth from the device's transfers (doc/tuning.md, "Internal constants"). */
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

/* Put one claimed chunk in flight on slot s. Returns 0 or an MGPU_E* code. */
int mgpu__gpu_issue(mgpu__gpu_t *gp, mgpu__slot_t *s) {
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

  /* Stage pageable arrays through pinned memory. */
  size_t stage = 0;
  mgpu__room_pin(&gp->room, b);
  const bool *pin_in = gp->room.pin_in, *pin_out = gp->room.pin_out;
  for (int i = 0; i < k->nin; i++)
    if (!pin_in[i]) stage += mgpu__gpu_round_up(k->in_size[i] * n);
  for (int i = 0; i < k->nout; i++)
    if (!pin_out[i]) stage += mgpu__gpu_round_up(k->out_size[i] * n);
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
  /* The chunk's time starts here, once its buffers are there: growing a
   * pinned buffer is slow, and counted in the chunk it would make the device
   * look slow, keep its chunks small and make them grow, and pin, again. */
  s->t_issue = mgpu__now();
  /* A device that ran dry with chunks in flight waited for this one: its
   * host side, not the device, sets the pace. */
  if (stage) gp->share_ahead = mgpu__share_ahead(gp->rt, gp->share_ahead, gp->inflight > 0 && device_starved(gp));
  if (gp->timed && gp->ops->event_record(gp->ctx, s->ev_start, s->stream) != 0) gp->timed = false;
  char *dp = s->dbuf;
  char *hp = s->hbuf;
  for (int i = 0; i < k->nin; i++) {
    size_t bytes = k->in_size[i] * n;
    const char *src = (const char *)b->desc.in[i] + c->first * k->in_size[i];
    s->in[i] = dp;
    if (bytes) {
      if (!pin_in[i]) {
        mgpu__copy(gp->rt, gp->w, b, hp, src, bytes, false, copy_share, gp);
        src = hp;
        hp += mgpu__gpu_round_up(bytes);
      }
      if ((rc = gp->ops->copy_h2d(gp->ctx, dp, src, bytes, s->stream)) != 0) return rc;
    }
    dp += mgpu__gpu_round_up(bytes);
  }
  for (int i = 0; i < k->nout; i++) {
    s->out[i] = dp;
    dp += mgpu__gpu_round_up(k->out_size[i] * n);
  }
  bool tracing = gp->rt->trace_on && gp->timed;
  if (tracing && gp->ops->event_record(gp->ctx, s->ev_h2d, s->stream) != 0) tracing = false;
  void *scratch = k->scratch_per_item ? dp : NULL;

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
                            .first = b->base + c->first, .count = n, .stream = s->stream, .worker = gp->w->id};
  if (mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_LAUNCH, gp->g, gp->launches++)) {
    mgpu__log(MGPU_LOG_INFO, "GPU %d: injected kernel failure on chunk %lld", gp->g, gp->launches - 1);
    return MGPU_EKERNEL;
  }
  if (mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_HANG, gp->g, gp->launches - 1)) {
    mgpu__log(MGPU_LOG_INFO, "GPU %d: injected hang of chunk %lld", gp->g, gp->launches - 1);
    if ((rc = gp->ops->hang(gp->ctx, s->stream)) != 0) return rc;
  }
  if ((rc = gp->ops->launch(gp->ctx, k, &s->chunk, s->stream)) != 0) return rc;
  if (tracing && gp->ops->event_record(gp->ctx, s->ev_kern, s->stream) != 0) tracing = false;
  s->h2d_bytes = s->d2h_bytes = 0;
  for (int i = 0; i < k->nin; i++) s->h2d_bytes += k->in_size[i] * n;
  for (int i = 0; i < k->nout; i++) s->d2h_bytes += k->out_size[i] * n;

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
  if (gp->timed && gp->ops->event_record(gp->ctx, s->ev_end, s->stream) != 0) gp->timed = false;
  return 0;
}

/* GPU gp cannot allocate memory for one item of s's batch, with nothing
 * else of its own in flight and its idle buffers freed: a limit of that
 * kernel, not a fault of the device. The GPU takes nothing more of the batch
 * (its range goes to the other workers), keeps its cap and stays in use for
 * other batches; the batch fails with MGPU_ENOMEM only where no worker is
 * left that may run it. */
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

/* The sample of the chunk of slot s, which took `busy` seconds of the
 * device and `span` from its own start: held until the next chunk ends,
 * which joins it if it ended inside this one's time, or ran beside it and
 * ended just after it. Launches that run side by side (latency-bound
 * kernels) end together: the later one is credited only the moment between
 * their ends, far faster than the held one's rate, and learnt on its own it would
 * make its items look nearly free, batch after batch. Together they are what
 * the device did in that time, at the size of the largest of them. A chunk
 * queued behind the held one runs at about its rate and keeps a sample of
 * its own. In a batch with a cost
 * profile a GPU counts in items of average cost, as it sizes its chunks. */
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

/* Wait for the oldest in-flight chunk and complete it; false when the device
 * was given up while the thread waited. */
bool mgpu__gpu_retire_oldest(mgpu__gpu_t *gp) {
  mgpu__slot_t *s = &gp->slots[gp->oldest];
  /* The oldest chunk ended before the host thread, every slot taken and items
   * left to claim, came to retire it: the host's staging copies, not the
   * device, set the pace, and the next chunks' copies are shared from their
   * start (doc/tuning.md, "Internal constants"). */
  if (s->stage_bytes && gp->inflight == gp->nslots && gp->timed && gp->ops->event_query &&
      !mgpu__all_claimed(s->claim.b) && gp->ops->event_query(gp->ctx, s->ev_end) == 0) {
    int before = gp->share_ahead;
    gp->share_ahead = mgpu__share_ahead(gp->rt, before, true);
    if (gp->share_ahead > 0) gp->host_paced++;
    if (before == 0 && gp->share_ahead > 0)
      mgpu__log(MGPU_LOG_DEBUG, "GPU %d: a chunk ended before its host thread came to it: the next %d chunks' "
                "copies are shared from their start", gp->g, gp->share_ahead);
  }
  mgpu__gpu_watch_begin(gp, s);
  int rc = gp->ops->stream_sync(gp->ctx, s->stream);
  if (!mgpu__gpu_watch_end(gp)) return false;
  double now = mgpu__now();
  if (rc == 0) {
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
    /* The device's time for this chunk: from when it could start it (begun,
     * and the previous chunk ended) until it ended, by device timestamps. The
     * host only notices a completion when it gets round to it, so host times
     * would credit late-noticed chunks with too little time. */
    /* The host's view, from when this chunk could be handled (issued, and the
     * previous one done) until it was, includes the staging copies that bound
     * the worker when arrays are pageable; the device's view cannot be fooled
     * by the host noticing a completion late. The worker is as slow as the
     * slower of the two. */
    double busy = now - MGPU_MAX(s->t_issue, gp->last_done);
    double t0, t1, span = busy;
    bool inside = false; /* ended within device time already given to an earlier chunk */
    bool solo = true;    /* started with nothing else in flight on the device */
    if (gp->timed && gp->ops->event_time(gp->ctx, s->ev_start, &t0) == 0 &&
        gp->ops->event_time(gp->ctx, s->ev_end, &t1) == 0) {
      double dev = t1 - MGPU_MAX(t0, gp->last_end_dev);
      inside = gp->last_done > 0 && t1 <= gp->last_end_dev;
      solo = gp->last_done == 0 || t0 >= gp->last_end_dev;
      gp->last_end_dev = MGPU_MAX(gp->last_end_dev, t1);
      if (gp->last_done == 0 || dev > busy) busy = dev;
      span = t1 - t0;
      double th, tk;
      if (gp->rt->trace_on && gp->ops->event_time(gp->ctx, s->ev_h2d, &th) == 0 &&
          gp->ops->event_time(gp->ctx, s->ev_kern, &tk) == 0) {
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
      MGPU_LOCK(&gp->tl_lock, MGPU_LK_TIMELINE);
      gp->tl_start[gp->tl_n % MGPU_TIMELINE] = t0;
      gp->tl_end[gp->tl_n % MGPU_TIMELINE] = t1;
      gp->tl_n++;
      MGPU_UNLOCK(&gp->tl_lock);
    }
    gp->last_done = now;
    gp->failures = 0;
    learn(gp, s, busy, span, inside, solo); /* canceled or failed meanwhile too: it ran to its end */
    /* The last chunk in flight: no later one can join its sample (the next
     * starts solo), so it is taught now, before its claim completes. That
     * can end the batch and wake the caller, whose next batch of the kernel
     * is planned on the model: taught after it, a batch run as one chunk
     * could leave the next one planned on a GPU not yet measured. */
    if (gp->inflight == 1) learn_flush(gp);
    mgpu__complete(gp->rt, gp->w, &s->claim, busy > 0 ? busy : 1e-9, 0);
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
