/*
 * gpu_worker.c: one host thread per GPU, written once against the device
 * interface (CUDA or emulated). It keeps up to MGPU_STREAMS_PER_GPU chunks in
 * flight, each in its own slot (stream, device buffer, pinned staging buffer,
 * all allocated on first need and reused), so the copy-in of one chunk overlaps
 * the kernel of another and the copy-out of a third. A chunk that fails goes
 * back to its batch to be computed elsewhere; out of memory halves the device's
 * cap; a device that keeps failing is retired.
 *
 * Deadlines (MGPU_TIMEOUT): before it waits for its oldest chunk, the thread
 * publishes the time by which that chunk must end; past it, the watchdog
 * (watchdog.c) gives the device up on the thread's behalf, since the thread
 * may never come back from the driver. A task part (collective, copy) that
 * passes its deadline fails its task and, where the collectives use NCCL,
 * has every GPU abort its communicator; a part still running after a second
 * deadline gives the device up. A device given up is retired, what it held
 * goes back to the other workers, its gate is shut so that nothing it
 * computes late reaches the caller's arrays, and nothing is asked of it again
 * (not even to free its memory: the driver could block on it).
 */
#include "mgpurt_int.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN_DEV 256
#define FAILURES_TO_RETIRE 3
#define TASKS_IN_FLIGHT 64 /* task parts enqueued on the task stream at once */
/* Pinned staging of one slot, allocated once at this size, and the most
 * pageable bytes a chunk may stage. Pinning is slow and unpredictable, and
 * buffers sized to the need grow again as chunks grow; 32 MiB is about a
 * chunk's target time of copying (doc/tuning.md, "Internal constants"). */
#define STAGE_SLOT_BYTES ((size_t)32 << 20)

/* A task part in flight on this GPU's task stream. */
typedef struct {
  mgpu__task_t *t;
  int phase;
  void *ev0, *ev1; /* device times of the part */
  double t0;       /* host time it was enqueued */
  bool late;       /* it passed its first deadline */
} tflight_t;

typedef struct {
  void *stream;
  void *dbuf;
  size_t dbuf_bytes;
  void *hbuf; /* pinned staging for pageable user arrays */
  size_t hbuf_bytes;
  bool busy;
  void *ev_start, *ev_end; /* device timestamps of the chunk */
  void *ev_h2d, *ev_kern;  /* with MGPU_TRACE: copies in done, kernel done */
  size_t h2d_bytes, d2h_bytes;
  mgpu__claim_t claim;
  double t_issue;
  int nstaged;
  struct { void *user; const void *staged; size_t bytes; } staged_out[MGPU_MAX_ARGS];
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  const void *consts[MGPU_MAX_CONSTS];
  /* The chunk's copy of the batch's argument: a device that runs it late
   * (hung, then given up) reads this, not the batch's, which is gone. */
  void *arg;
  size_t arg_cap;
  mgpu_chunk_t chunk;
} slot_t;

struct mgpu__gpu {
  mgpu_runtime_t *rt;
  int g;
  mgpu__worker_t *w;
  const mgpu_dev_ops_t *ops;
  void *ctx;
  pthread_t thread;
  bool started;
  int nslots;
  slot_t *slots;
  int oldest;                 /* FIFO of busy slots: oldest .. oldest+inflight-1 */
  int inflight;
  _Atomic size_t slot_bytes;  /* device bytes one slot may use; halved on OOM */
  _Atomic size_t cap_items;   /* last computed cap, for statistics */
  size_t max_batch;
  /* Which arrays of one batch are pinned, found once per batch (a driver
   * query per array) for the chunk cap and every chunk's issue. */
  uint64_t pin_batch;         /* that batch's id + 1 (0: none yet) */
  bool pin_in[MGPU_MAX_ARGS], pin_out[MGPU_MAX_ARGS];
  size_t stage_per_item;      /* its pageable bytes per item (0: all pinned) */
  long long launches, allocs, const_uploads;
  int failures;               /* consecutive failed chunks */
  double last_done;           /* host time of the last completion (fallback) */
  int share_ahead;            /* chunks whose copies are shared from their start (mgpu__share_ahead) */
  double last_end_dev;        /* device time when the last chunk ended */
  double epoch_host;          /* host clock at the device's time 0 (open) */
  bool timed;                 /* the back end has timing events */
  /* Device start and end times of the last chunks (ring), for tests and reports. */
  pthread_mutex_t tl_lock;
  double tl_start[MGPU_TIMELINE], tl_end[MGPU_TIMELINE];
  uint64_t tl_n;
  double estimate;
  /* Device tasks: posted by any thread (task.c, under tq.lock), run by this one. */
  mgpu__postq_t tq;
  void *task_stream;
  tflight_t tf[TASKS_IN_FLIGHT];
  int tf_head, tf_n;
  void *evpool[2 * TASKS_IN_FLIGHT];
  int nevpool;
  /* start-up handshake */
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int ready;                  /* 0 starting, 1 ok, -1 failed */
  mgpu_status_t open_status;
  bool exited;                /* under lock: the thread has returned */
  /* Deadlines: under hang_lock. */
  pthread_mutex_t hang_lock;
  double wait_until;          /* host time by which the awaited chunk must end; 0: not waiting */
  char wait_what[160];        /* that chunk, for the message */
  mgpu__post_t issuing;             /* the task part being enqueued (t NULL: none): its call may block */
  bool given_up;              /* hung: what it held went back, nothing more is asked of it */
  bool gate_ok;               /* results can be held on the device (ops->gate) */
  double task_done;           /* host time the last task part ended */
  bool comm_aborted;          /* its NCCL communicator was aborted (rt->comms_abort) */
  long long coll_parts;       /* task parts enqueued, for MGPU_FAULT_HANGCOLL */
};

static size_t round_up(size_t n) { return (n + ALIGN_DEV - 1) & ~(size_t)(ALIGN_DEV - 1); }

static size_t bytes_per_item(const mgpu_kernel_t *k) {
  size_t n = k->scratch_per_item;
  for (int i = 0; i < k->nin; i++) n += k->in_size[i];
  for (int i = 0; i < k->nout; i++) n += k->out_size[i];
  return n ? n : 1;
}

/* Device layout of a chunk of n items: inputs, outputs, scratch, each aligned. */
static size_t dev_bytes(const mgpu_kernel_t *k, size_t n) {
  size_t t = 0;
  for (int i = 0; i < k->nin; i++) t += round_up(k->in_size[i] * n);
  for (int i = 0; i < k->nout; i++) t += round_up(k->out_size[i] * n);
  t += round_up(k->scratch_per_item * n);
  return t;
}

static size_t cap_for(mgpu__gpu_t *gp, const mgpu_kernel_t *k) {
  size_t per = bytes_per_item(k);
  size_t cap = atomic_load(&gp->slot_bytes) / (per + (size_t)(3 * ALIGN_DEV) / 8 + 1);
  if (gp->max_batch && cap > gp->max_batch) cap = gp->max_batch;
  if (cap < 1) cap = 1;
  atomic_store(&gp->cap_items, cap);
  return cap;
}

static bool array_pinned(mgpu__gpu_t *gp, const void *p, size_t bytes) {
  return gp->ops->host_is_pinned && gp->ops->host_is_pinned(p, bytes);
}

/* Find which arrays of batch b are pinned, and the bytes per item that chunks
 * stage through the slot's pinned buffer. Only this GPU's thread asks. */
static void pin_info(mgpu__gpu_t *gp, const mgpu__batch_t *b) {
  if (gp->pin_batch == b->id + 1) return;
  const mgpu_kernel_t *k = &b->kernel;
  size_t per = 0;
  for (int i = 0; i < k->nin; i++) {
    gp->pin_in[i] = array_pinned(gp, b->desc.in[i], b->desc.n * k->in_size[i]);
    if (!gp->pin_in[i]) per += k->in_size[i];
  }
  /* Without a gate, results go through staging, which a hung device's host
   * thread never copies out; with one, they may go straight to pinned arrays. */
  for (int i = 0; i < k->nout; i++) {
    gp->pin_out[i] = gp->gate_ok && array_pinned(gp, b->desc.out[i], b->desc.n * k->out_size[i]);
    if (!gp->pin_out[i]) per += k->out_size[i];
  }
  gp->pin_batch = b->id + 1;
  gp->stage_per_item = per;
}

/* Most items of b in one chunk: what a slot's device memory holds and, for
 * pageable arrays, what its staging buffer holds (at least one item). */
static size_t limit_fn(mgpu__worker_t *w, const mgpu__batch_t *b) {
  mgpu__gpu_t *gp = w->gpu >= 0 ? b->rt->gpus[w->gpu] : NULL;
  if (!gp) return SIZE_MAX;
  pin_info(gp, b);
  size_t cap = cap_for(gp, &b->kernel), per = gp->stage_per_item;
  /* Each staged array is rounded up to ALIGN_DEV in the buffer. */
  if (per) {
    cap = MGPU_MIN(cap, MGPU_MAX((size_t)1, (STAGE_SLOT_BYTES - 2 * MGPU_MAX_ARGS * ALIGN_DEV) / per));
    atomic_store(&gp->cap_items, cap);
  }
  return cap;
}

size_t mgpu__gpu_cap(mgpu_runtime_t *rt, int g) {
  return rt->gpus && rt->gpus[g] ? atomic_load(&rt->gpus[g]->cap_items) : 0;
}

double mgpu__gpu_estimate(mgpu_runtime_t *rt, int g) { return rt->gpus[g] ? rt->gpus[g]->estimate : 1.0; }

static bool alloc_fault(mgpu__gpu_t *gp) {
  if (!mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_ALLOC, gp->g, gp->allocs++)) return false;
  mgpu__log(MGPU_LOG_INFO, "GPU %d: injected allocation failure", gp->g);
  return true;
}

static int dev_alloc(mgpu__gpu_t *gp, size_t bytes, void **p) {
  return alloc_fault(gp) ? MGPU_ENOMEM : gp->ops->mem_alloc(gp->ctx, bytes, p);
}

/* A slot's buffer, in its stream's order: growing it waits for nothing that
 * the other slots run. */
static int slot_alloc(mgpu__gpu_t *gp, slot_t *s, size_t bytes) {
  return alloc_fault(gp) ? MGPU_ENOMEM : gp->ops->mem_alloc_on(gp->ctx, bytes, s->stream, &s->dbuf);
}

static void drop_dbuf(mgpu__gpu_t *gp, slot_t *s) {
  if (s->dbuf) gp->ops->mem_free_on(gp->ctx, s->dbuf, s->stream);
  s->dbuf = NULL;
  s->dbuf_bytes = 0;
}

/* Grow a slot's device buffer to hold `need` bytes (never shrinks). */
static int ensure_dbuf(mgpu__gpu_t *gp, slot_t *s, size_t need) {
  if (s->dbuf_bytes >= need) return 0;
  /* Grow geometrically within the slot's share, so the growing chunks of a
   * batch's start reallocate a few times, not at every chunk. */
  size_t want = MGPU_MAX(need, MGPU_MIN(atomic_load(&gp->slot_bytes), 2 * s->dbuf_bytes));
  drop_dbuf(gp, s);
  int rc = slot_alloc(gp, s, want);
  if (rc == MGPU_ENOMEM && want > need) {
    /* What the slots let go of may be what is missing. */
    gp->ops->mem_trim(gp->ctx);
    rc = slot_alloc(gp, s, want = need);
  }
  if (rc == 0) s->dbuf_bytes = want;
  return rc;
}

static int ensure_hbuf(mgpu__gpu_t *gp, slot_t *s, size_t need) {
  if (s->hbuf_bytes >= need) return 0;
  if (s->hbuf) gp->ops->host_free(s->hbuf);
  s->hbuf = NULL;
  s->hbuf_bytes = 0;
  /* Once, at the size that chunks are limited to (more only for a single
   * item that needs more). */
  size_t want = MGPU_MAX(need, STAGE_SLOT_BYTES);
  if (gp->ops->host_alloc(want, &s->hbuf) != 0) {
    if (gp->ops->host_alloc(need, &s->hbuf) != 0) return MGPU_ENOMEM;
    want = need;
  }
  s->hbuf_bytes = want;
  return 0;
}

/* Device copy of constant c for this GPU, uploaded on first use (through stream). */
static int const_on_device(mgpu__gpu_t *gp, mgpu_const_t *c, void *stream, const void **out) {
  if (c->dev[gp->g]) {
    *out = c->dev[gp->g];
    return 0;
  }
  void *d;
  int rc = dev_alloc(gp, c->bytes, &d);
  if (rc != 0) return rc;
  if (mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_CONST, gp->g, gp->const_uploads++)) {
    mgpu__log(MGPU_LOG_INFO, "GPU %d: injected constant-upload failure", gp->g);
    gp->ops->mem_free(gp->ctx, d);
    return MGPU_EDEVICE;
  }
  rc = gp->ops->copy_h2d(gp->ctx, d, c->host, c->bytes, stream);
  if (rc == 0) rc = gp->ops->stream_sync(gp->ctx, stream);
  if (rc != 0) {
    gp->ops->mem_free(gp->ctx, d);
    return rc;
  }
  /* Only this thread writes dev[g]; the lock orders it with the reaper. */
  pthread_mutex_lock(&c->lock);
  c->dev[gp->g] = d;
  pthread_mutex_unlock(&c->lock);
  atomic_fetch_add(&c->uploads, 1);
  *out = d;
  return 0;
}

/* Whether the device has run out of work while its host thread stages: no
 * chunk in flight, or the newest one in flight has ended. Then the device
 * waits for the host's copy, and CPU workers are asked to help with it;
 * while the device computes, the copy hides behind it and helpers would only
 * take memory bandwidth from the device's transfers (doc/tuning.md, "Internal constants"). */
static bool device_starved(mgpu__gpu_t *gp) {
  if (gp->inflight == 0 || !gp->timed || !gp->ops->event_query) return true;
  slot_t *newest = &gp->slots[(gp->oldest + gp->inflight - 1) % gp->nslots];
  return gp->ops->event_query(gp->ctx, newest->ev_end) == 0;
}

/* mgpu__copy's question: share what is left of a staging copy now? Yes when
 * the device waits, or while its host side is known to be the bottleneck:
 * the device ran dry before one of its last chunks was issued. */
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
static int issue(mgpu__gpu_t *gp, slot_t *s) {
  mgpu__claim_t *c = &s->claim;
  mgpu__batch_t *b = c->b;
  const mgpu_kernel_t *k = &b->kernel;
  size_t n = c->count;
  double t_alloc = mgpu__now();
  void *dbuf0 = s->dbuf, *hbuf0 = s->hbuf;
  int rc = ensure_dbuf(gp, s, dev_bytes(k, n));
  double t_dbuf = mgpu__now();
  if (rc != 0) return rc;
  for (int i = 0; i < b->desc.nconsts; i++)
    if ((rc = const_on_device(gp, b->desc.consts[i], s->stream, &s->consts[i])) != 0) return rc;

  /* Stage pageable arrays through pinned memory. */
  size_t stage = 0;
  pin_info(gp, b);
  const bool *pin_in = gp->pin_in, *pin_out = gp->pin_out;
  for (int i = 0; i < k->nin; i++)
    if (!pin_in[i]) stage += round_up(k->in_size[i] * n);
  for (int i = 0; i < k->nout; i++)
    if (!pin_out[i]) stage += round_up(k->out_size[i] * n);
  double t_hbuf = mgpu__now();
  if (stage && (rc = ensure_hbuf(gp, s, stage)) != 0) return rc;
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
        hp += round_up(bytes);
      }
      if ((rc = gp->ops->copy_h2d(gp->ctx, dp, src, bytes, s->stream)) != 0) return rc;
    }
    dp += round_up(bytes);
  }
  for (int i = 0; i < k->nout; i++) {
    s->out[i] = dp;
    dp += round_up(k->out_size[i] * n);
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
                            .first = c->first, .count = n, .stream = s->stream, .worker = gp->w->id};
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
      hp += round_up(bytes);
    }
    if (rc != 0) return rc;
  }
  if (gp->timed && gp->ops->event_record(gp->ctx, s->ev_end, s->stream) != 0) gp->timed = false;
  return 0;
}

static void on_failure(mgpu__gpu_t *gp, slot_t *s, int rc, const char *when) {
  mgpu__batch_t *b = s->claim.b;
  if (rc == MGPU_ENOMEM) {
    size_t old = atomic_load(&gp->slot_bytes), now = old / 2;
    atomic_store(&gp->slot_bytes, now);
    /* Memory held by idle slots may be what is missing: let them reallocate. */
    for (int i = 0; i < gp->nslots; i++)
      if (!gp->slots[i].busy) drop_dbuf(gp, &gp->slots[i]);
    gp->ops->mem_trim(gp->ctx);
    mgpu__log(MGPU_LOG_WARN, "GPU %d: out of device memory %s a chunk of %zu items of '%s'; the device's cap is halved "
                             "to %zu items and the chunk is retried",
              gp->g, when, s->claim.count, b->kernel.name ? b->kernel.name : "", cap_for(gp, &b->kernel));
    mgpu__giveback(gp->rt, gp->w, &s->claim);
    if (now < bytes_per_item(&b->kernel)) {
      if (++gp->failures >= FAILURES_TO_RETIRE) mgpu__retire(gp->rt, gp->w, "it cannot hold even one item");
    }
    return;
  }
  mgpu__log(MGPU_LOG_WARN, "GPU %d: chunk of items %zu..%zu of '%s' failed (%s) %s; it will be computed elsewhere", gp->g,
            s->claim.first, s->claim.first + s->claim.count - 1, b->kernel.name ? b->kernel.name : "",
            mgpu_strerror((mgpu_status_t)rc), when);
  mgpu__giveback(gp->rt, gp->w, &s->claim);
  if (++gp->failures >= FAILURES_TO_RETIRE) mgpu__retire(gp->rt, gp->w, "its last chunks failed");
}

/* ------------------------------------------------------------ hung devices */

/* What a device held when it was given up. */
typedef struct {
  mgpu__claim_t claims[32]; /* MGPU_STREAMS_PER_GPU is at most 32 */
  tflight_t parts[TASKS_IN_FLIGHT + 1];
  int nclaims, nparts;
} held_t;

/* Take its chunks and task parts in flight. Under hang_lock, by its thread,
 * or by the watchdog while the thread waits in the driver. */
static void take_held(mgpu__gpu_t *gp, held_t *h) {
  h->nclaims = h->nparts = 0;
  for (int i = 0; i < gp->inflight; i++) h->claims[h->nclaims++] = gp->slots[(gp->oldest + i) % gp->nslots].claim;
  gp->inflight = 0;
  for (int i = 0; i < gp->tf_n; i++) h->parts[h->nparts++] = gp->tf[(gp->tf_head + i) % TASKS_IN_FLIGHT];
  gp->tf_n = 0;
  if (gp->issuing.t) h->parts[h->nparts++] = (tflight_t){gp->issuing.t, gp->issuing.phase, NULL, NULL, 0, false};
  gp->issuing.t = NULL;
  gp->given_up = true;
}

/* Fail the task parts posted to a device given up (any thread). */
static void fail_posts(mgpu__gpu_t *gp) {
  for (;;) {
    mgpu__post_t p;
    if (!mgpu__post_take(&gp->tq, &p)) return;
    mgpu__task_fail(p.t, MGPU_EDEVICE, "%s: GPU %d is hung (given up after a deadline, MGPU_TIMEOUT)",
                    p.t->b->kernel.name, gp->g);
    mgpu__task_part_done(gp->rt, p.t, gp->g, p.phase, MGPU_EDEVICE, 0);
  }
}

/* Hand back what a hung device held (taken by take_held) and retire it. */
static void give_up(mgpu__gpu_t *gp, held_t *h, const char *why) {
  mgpu_runtime_t *rt = gp->rt;
  /* First the gate: nothing the device finishes late may land in the
   * caller's arrays once other workers own those items. */
  if (gp->ops->gate_close) gp->ops->gate_close(gp->ctx);
  if (gp->ops->abandon) gp->ops->abandon(gp->ctx);
  mgpu__log(MGPU_LOG_ERROR, "GPU %d (device %d) is hung: %s; it is given up for the rest of the runtime's life: "
                            "%d chunk%s in flight go%s to the other workers, %d collective or copy part%s fail%s",
            gp->g, rt->gpu_index[gp->g], why, h->nclaims, h->nclaims == 1 ? "" : "s", h->nclaims == 1 ? "es" : "",
            h->nparts, h->nparts == 1 ? "" : "s", h->nparts == 1 ? "s" : "");
  atomic_fetch_add(&rt->gpus_given_up, 1);
  mgpu__retire(rt, gp->w, "it is hung");
  for (int i = 0; i < h->nclaims; i++) mgpu__giveback(rt, gp->w, &h->claims[i]);
  for (int i = 0; i < h->nparts; i++) {
    mgpu__task_t *t = h->parts[i].t;
    mgpu__task_fail(t, MGPU_EDEVICE, "%s: GPU %d is hung: %s", t->b->kernel.name, gp->g, why);
    mgpu__task_part_done(rt, t, gp->g, h->parts[i].phase, MGPU_EDEVICE, 0);
  }
  fail_posts(gp);
  /* mgpu__gpu_join waits for the thread or for this. */
  pthread_mutex_lock(&gp->lock);
  pthread_cond_broadcast(&gp->cv);
  pthread_mutex_unlock(&gp->lock);
}

void mgpu__gpu_watch(mgpu_runtime_t *rt, int g, double now) {
  mgpu__gpu_t *gp = rt->gpus[g];
  if (!gp) return;
  held_t h;
  char why[sizeof gp->wait_what];
  bool act = false, gone;
  pthread_mutex_lock(&gp->hang_lock);
  gone = gp->given_up;
  if (!gone && gp->wait_until > 0 && now >= gp->wait_until) {
    snprintf(why, sizeof why, "%s", gp->wait_what);
    take_held(gp, &h);
    act = true;
  }
  pthread_mutex_unlock(&gp->hang_lock);
  if (act) give_up(gp, &h, why);
  else if (gone) fail_posts(gp);
}

/* Publish the deadline of the chunk in slot s before waiting for it: from
 * when the device could start it, the model's predicted time under the
 * MGPU_TIMEOUT rule (mgpu__deadline_s). */
static void watch_begin(mgpu__gpu_t *gp, const slot_t *s) {
  const mgpu__batch_t *b = s->claim.b;
  int id = gp->w->id;
  double speed = mgpu__worker_speed(b, id), predicted = 0;
  if (atomic_load_explicit(&b->model->samples[id], memory_order_relaxed) > 0 && speed > 0)
    predicted = (double)s->claim.count / speed;
  double limit = mgpu__deadline_s(gp->rt->cfg.v.timeout, predicted);
  if (limit == 0) return;
  pthread_mutex_lock(&gp->hang_lock);
  gp->wait_until = MGPU_MAX(s->t_issue, gp->last_done) + limit;
  snprintf(gp->wait_what, sizeof gp->wait_what, "its chunk of items %zu..%zu of '%s' did not end within %.3g s",
           s->claim.first, s->claim.first + s->claim.count - 1, b->kernel.name ? b->kernel.name : "(unnamed)", limit);
  pthread_mutex_unlock(&gp->hang_lock);
}

/* After the wait: false when the device was given up meanwhile (what it held
 * went back already; the thread must leave without touching anything). */
static bool watch_end(mgpu__gpu_t *gp) {
  pthread_mutex_lock(&gp->hang_lock);
  bool ok = !gp->given_up;
  gp->wait_until = 0;
  pthread_mutex_unlock(&gp->hang_lock);
  return ok;
}

/* Wait for the oldest in-flight chunk and complete it; false when the device
 * was given up while the thread waited. */
static bool retire_oldest(mgpu__gpu_t *gp) {
  slot_t *s = &gp->slots[gp->oldest];
  watch_begin(gp, s);
  int rc = gp->ops->stream_sync(gp->ctx, s->stream);
  if (!watch_end(gp)) return false;
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
    double t0, t1;
    if (gp->timed && gp->ops->event_time(gp->ctx, s->ev_start, &t0) == 0 &&
        gp->ops->event_time(gp->ctx, s->ev_end, &t1) == 0) {
      double dev = t1 - MGPU_MAX(t0, gp->last_end_dev);
      gp->last_end_dev = t1;
      if (gp->last_done == 0 || dev > busy) busy = dev;
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
      pthread_mutex_lock(&gp->tl_lock);
      gp->tl_start[gp->tl_n % MGPU_TIMELINE] = t0;
      gp->tl_end[gp->tl_n % MGPU_TIMELINE] = t1;
      gp->tl_n++;
      pthread_mutex_unlock(&gp->tl_lock);
    }
    gp->last_done = now;
    gp->failures = 0;
    mgpu__complete(gp->rt, gp->w, &s->claim, busy > 0 ? busy : 1e-9, 0);
  } else {
    on_failure(gp, s, rc, "while running");
  }
  s->busy = false;
  gp->oldest = (gp->oldest + 1) % gp->nslots;
  gp->inflight--;
  return true;
}

/* ------------------------------------------------------------ device tasks */

int mgpu__gpu_const(const mgpu__devcall_t *dc, mgpu_const_t *c, const void **out) {
  return const_on_device(dc->rt->gpus[dc->g], c, dc->stream, out);
}

static int pool_event(mgpu__gpu_t *gp, void **ev) {
  if (gp->nevpool > 0) {
    *ev = gp->evpool[--gp->nevpool];
    return 0;
  }
  return gp->ops->event_create(gp->ctx, ev);
}

static void pool_put(mgpu__gpu_t *gp, void *ev) {
  if (!ev) return;
  if (gp->nevpool < (int)(sizeof gp->evpool / sizeof *gp->evpool)) gp->evpool[gp->nevpool++] = ev;
  else gp->ops->event_destroy(gp->ctx, ev);
}

/* Take the next posted part and enqueue it on the task stream; false when
 * the device was given up while a call of the part blocked (an allocation
 * waits for the device). */
static bool task_issue(mgpu__gpu_t *gp) {
  mgpu__post_t p;
  mgpu__post_take(&gp->tq, &p); /* one is posted, and only this thread takes */
  double limit = mgpu__deadline_s(gp->rt->cfg.v.timeout, 0);
  pthread_mutex_lock(&gp->hang_lock);
  gp->issuing = p;
  if (limit > 0) {
    gp->wait_until = mgpu__now() + limit;
    snprintf(gp->wait_what, sizeof gp->wait_what, "its part of %s did not return from the driver within %.3g s",
             p.t->b->kernel.name, limit);
  }
  pthread_mutex_unlock(&gp->hang_lock);

  mgpu__devcall_t dc = {gp->rt, gp->g, gp->ops, gp->ctx, gp->task_stream};
  tflight_t f = {p.t, p.phase, NULL, NULL, mgpu__now(), false};
  int rc = pool_event(gp, &f.ev0);
  if (rc == 0) rc = pool_event(gp, &f.ev1);
  if (rc == 0) rc = gp->ops->event_record(gp->ctx, f.ev0, gp->task_stream);
  if (rc == 0 && mgpu__fault_hit(&gp->rt->faults, MGPU_FAULT_HANGCOLL, gp->g, gp->coll_parts++)) {
    mgpu__log(MGPU_LOG_INFO, "GPU %d: injected hang of task part %lld", gp->g, gp->coll_parts - 1);
    rc = gp->ops->hang(gp->ctx, gp->task_stream);
  }
  if (rc == 0) rc = p.t->part(p.t, &dc, p.phase);
  if (rc == 0) rc = gp->ops->event_record(gp->ctx, f.ev1, gp->task_stream);
  if (!watch_end(gp)) return false;
  pthread_mutex_lock(&gp->hang_lock);
  gp->issuing.t = NULL;
  pthread_mutex_unlock(&gp->hang_lock);
  if (rc != 0) {
    /* What was enqueued must end before the task is reported. */
    gp->ops->stream_sync(gp->ctx, gp->task_stream);
    pool_put(gp, f.ev0);
    pool_put(gp, f.ev1);
    mgpu__task_part_done(gp->rt, p.t, gp->g, p.phase, rc, 0);
    return true;
  }
  gp->tf[(gp->tf_head + gp->tf_n) % TASKS_IN_FLIGHT] = f;
  gp->tf_n++;
  return true;
}

/* The oldest task part in flight has not ended: past its deadline it fails
 * its task (and the NCCL communicators are aborted, which ends a collective
 * that waits for a peer); past a second one the device is given up. Returns
 * false when it was. */
static bool task_late(mgpu__gpu_t *gp, tflight_t *f) {
  mgpu_runtime_t *rt = gp->rt;
  double limit = mgpu__deadline_s(rt->cfg.v.timeout, 0);
  double start = MGPU_MAX(f->t0, gp->task_done), now = mgpu__now();
  if (limit == 0 || now < start + (f->late ? 2 : 1) * limit) return true;
  const char *name = f->t->b->kernel.name;
  if (!f->late) {
    f->late = true;
    bool nccl = mgpu__coll_uses_nccl(rt);
    mgpu__task_fail(f->t, MGPU_EDEVICE, "%s did not end on GPU %d within %.3g s (MGPU_TIMEOUT)%s", name, gp->g, limit,
                    nccl ? "; the NCCL communicators are aborted" : "");
    mgpu__log(MGPU_LOG_ERROR, "%s did not end on GPU %d within %.3g s (MGPU_TIMEOUT): it fails%s", name, gp->g, limit,
              nccl ? ", and every GPU aborts its NCCL communicator" : "");
    if (nccl) atomic_store(&rt->comms_abort, 1);
    return true;
  }
  held_t h;
  char why[160];
  snprintf(why, sizeof why, "its part of %s did not end within %.3g s, twice its deadline", name, 2 * limit);
  pthread_mutex_lock(&gp->hang_lock);
  take_held(gp, &h);
  pthread_mutex_unlock(&gp->hang_lock);
  give_up(gp, &h, why);
  return false;
}

/* Report the oldest part in flight if its stream got past it: 1 if it did,
 * 0 if not yet, -1 when the device was given up. */
static int task_poll(mgpu__gpu_t *gp) {
  tflight_t *f = &gp->tf[gp->tf_head];
  int q = gp->ops->event_query(gp->ctx, f->ev1);
  if (q == 1) return task_late(gp, f) ? 0 : -1;
  double dev = 0, t0, t1;
  int rc = 0;
  if (q < 0) {
    rc = gp->ops->stream_sync(gp->ctx, gp->task_stream); /* takes the error off the stream */
    if (rc == 0) rc = q;
  } else if (gp->ops->event_time(gp->ctx, f->ev0, &t0) == 0 && gp->ops->event_time(gp->ctx, f->ev1, &t1) == 0) {
    dev = t1 - t0;
  }
  tflight_t done = *f;
  gp->tf_head = (gp->tf_head + 1) % TASKS_IN_FLIGHT;
  gp->tf_n--;
  pool_put(gp, done.ev0);
  pool_put(gp, done.ev1);
  gp->task_done = mgpu__now();
  mgpu__task_part_done(gp->rt, done.t, gp->g, done.phase, rc, dev > 0 ? dev : 0);
  return 1;
}

static void free_slots(mgpu__gpu_t *gp) {
  for (int i = 0; i < gp->nslots; i++) {
    slot_t *s = &gp->slots[i];
    if (s->stream) drop_dbuf(gp, s);
    if (s->hbuf) gp->ops->host_free(s->hbuf);
    if (s->ev_start) gp->ops->event_destroy(gp->ctx, s->ev_start);
    if (s->ev_end) gp->ops->event_destroy(gp->ctx, s->ev_end);
    if (s->ev_h2d) gp->ops->event_destroy(gp->ctx, s->ev_h2d);
    if (s->ev_kern) gp->ops->event_destroy(gp->ctx, s->ev_kern);
    if (s->stream) gp->ops->stream_destroy(gp->ctx, s->stream);
    free(s->arg);
  }
  free(gp->slots);
  gp->slots = NULL;
  for (int i = 0; i < gp->nevpool; i++) gp->ops->event_destroy(gp->ctx, gp->evpool[i]);
  gp->nevpool = 0;
  if (gp->task_stream) gp->ops->stream_destroy(gp->ctx, gp->task_stream);
  gp->task_stream = NULL;
}

static void free_const_copies(mgpu__gpu_t *gp) {
  mgpu_runtime_t *rt = gp->rt;
  pthread_mutex_lock(&rt->lock);
  mgpu_const_t *lists[2] = {rt->consts, rt->dead_consts};
  for (int l = 0; l < 2; l++)
    for (mgpu_const_t *c = lists[l]; c; c = c->next_live)
      if (c->dev[gp->g]) {
        gp->ops->mem_free(gp->ctx, c->dev[gp->g]);
        c->dev[gp->g] = NULL;
      }
  pthread_mutex_unlock(&rt->lock);
}

static void *gpu_main(void *arg) {
  mgpu__gpu_t *gp = arg;
  mgpu_runtime_t *rt = gp->rt;
  int dev = rt->gpu_index[gp->g];
  mgpu_status_t st = MGPU_OK;

  /* Before the device opens: the driver's threads inherit this mask. */
  mgpu__cpus_apply(&rt->cpus);
  if (gp->ops->open(dev, &rt->cfg, &gp->ctx) != 0) {
    st = mgpu__fail(MGPU_EDEVICE, "cannot open device %d", dev);
    goto report;
  }
  gp->epoch_host = mgpu__now();
  gp->slots = calloc((size_t)gp->nslots, sizeof *gp->slots);
  if (!gp->slots) {
    st = mgpu__fail(MGPU_ENOMEM, "GPU %d: out of memory", gp->g);
    goto report;
  }
  gp->timed = gp->ops->event_create != NULL;
  for (int i = 0; i < gp->nslots; i++) {
    slot_t *s = &gp->slots[i];
    if (gp->ops->stream_create(gp->ctx, &s->stream) != 0) {
      st = mgpu__fail(MGPU_EDEVICE, "device %d: cannot create stream %d", dev, i);
      goto report;
    }
    if (gp->timed && (gp->ops->event_create(gp->ctx, &s->ev_start) != 0 ||
                      gp->ops->event_create(gp->ctx, &s->ev_end) != 0 ||
                      (rt->trace_on && (gp->ops->event_create(gp->ctx, &s->ev_h2d) != 0 ||
                                        gp->ops->event_create(gp->ctx, &s->ev_kern) != 0))))
      gp->timed = false; /* chunks are then timed with host clocks, and not traced */
  }
  if (gp->ops->stream_create(gp->ctx, &gp->task_stream) != 0) {
    st = mgpu__fail(MGPU_EDEVICE, "device %d: cannot create its task stream", dev);
    goto report;
  }
  /* An open gate on the task stream tells whether the device has one. */
  gp->gate_ok = gp->ops->gate && gp->ops->gate(gp->ctx, gp->task_stream) == 0;
  size_t free_b = 0, total_b = 0;
  gp->ops->mem_info(gp->ctx, &free_b, &total_b);
  /* 85% of the free memory, shared by the slots; the rest is for constants,
   * the kernels' own needs and other users of the device. */
  atomic_store(&gp->slot_bytes, (size_t)((double)free_b * 0.85) / (size_t)gp->nslots);
  rt->gpu_info[gp->g].free_mem = free_b;
  rt->gpu_info[gp->g].total_mem = total_b;
  gp->estimate = gp->ops->speed_estimate ? gp->ops->speed_estimate(gp->ctx) : 1.0;
  if (!(gp->estimate > 0)) gp->estimate = 1.0;

report:
  pthread_mutex_lock(&gp->lock);
  gp->open_status = st;
  gp->ready = st == MGPU_OK ? 1 : -1;
  pthread_cond_broadcast(&gp->cv);
  pthread_mutex_unlock(&gp->lock);
  if (st != MGPU_OK) {
    if (gp->slots) free_slots(gp);
    if (gp->ctx) gp->ops->close(gp->ctx);
    gp->ctx = NULL;
    goto exit;
  }

  mgpu__worker_t *w = gp->w;
  while (!atomic_load_explicit(&rt->stop, memory_order_relaxed) || gp->inflight > 0 || gp->tf_n > 0) {
    uint64_t gen = atomic_load(&rt->work_gen);
    if (atomic_load(&rt->comms_abort) && !gp->comm_aborted) {
      gp->comm_aborted = true;
      mgpu__coll_abort(rt, gp->g);
    }
    mgpu__consts_reap(rt, gp->g, gp->ops->mem_free, gp->ctx);
    if (atomic_load(&gp->tq.count) > 0 && gp->tf_n < TASKS_IN_FLIGHT) {
      if (!task_issue(gp)) goto exit; /* given up while a call blocked */
      continue;
    }
    if (gp->tf_n > 0) {
      int polled = task_poll(gp);
      if (polled < 0) goto exit; /* given up: nothing of the runtime may be touched */
      if (polled > 0) continue;
    }
    if (gp->inflight < gp->nslots && !atomic_load(&w->retired) && !atomic_load(&rt->stop)) {
      slot_t *s = &gp->slots[(gp->oldest + gp->inflight) % gp->nslots];
      if (mgpu__claim(rt, w, SIZE_MAX, MGPU_GPU_TARGET_S, &s->claim)) {
        if (atomic_load(&s->claim.b->failed)) {
          mgpu__drop(rt, w, &s->claim);
          continue;
        }
        double t_claimed = mgpu__now(); /* issue() sets t_issue once the buffers are there */
        int rc = issue(gp, s);
        if (rt->trace_on) {
          mgpu__batch_t *b = s->claim.b;
          mgpu__tev_t ev = {.t0 = t_claimed, .t1 = mgpu__now(), .kind = MGPU_TEV_ISSUE, .stream = -1,
                            .name = b->kernel.name, .batch = b->id, .first = s->claim.first, .count = s->claim.count};
          mgpu__trace_add(rt, w, &ev);
        }
        if (rc != 0) {
          /* Work already queued on the stream must end before the slot is reused. */
          gp->ops->stream_sync(gp->ctx, s->stream);
          s->busy = true;
          on_failure(gp, s, rc, "while starting");
          s->busy = false;
        } else {
          s->busy = true;
          gp->inflight++;
        }
        continue;
      }
    }
    if (gp->inflight > 0) {
      if (!retire_oldest(gp)) goto exit; /* given up while it waited */
      continue;
    }
    if (gp->tf_n > 0) {
      /* A task part is in flight: poll it, without sleeping. */
      sched_yield();
      continue;
    }
    mgpu__idle_wait(rt, gen, true);
  }
  free_const_copies(gp);
  free_slots(gp);
  gp->ops->close(gp->ctx);
  gp->ctx = NULL;
exit:
  pthread_mutex_lock(&gp->lock);
  gp->exited = true;
  pthread_cond_broadcast(&gp->cv);
  pthread_mutex_unlock(&gp->lock);
  return NULL;
}

mgpu_status_t mgpu__gpu_start(mgpu_runtime_t *rt, int g) {
  mgpu__gpu_t *gp = calloc(1, sizeof *gp);
  if (!gp) return mgpu__fail(MGPU_ENOMEM, "mgpu_init: out of memory");
  gp->rt = rt;
  gp->g = g;
  gp->w = &rt->workers[rt->ncpu + g];
  gp->w->limit = limit_fn;
  gp->ops = rt->dev;
  gp->nslots = rt->cfg.v.streams_per_gpu;
  gp->max_batch = rt->cfg.v.max_batch_size > 0 ? (size_t)rt->cfg.v.max_batch_size : 0;
  pthread_mutex_init(&gp->lock, NULL);
  pthread_mutex_init(&gp->tl_lock, NULL);
  pthread_mutex_init(&gp->tq.lock, NULL);
  pthread_mutex_init(&gp->hang_lock, NULL);
  pthread_cond_init(&gp->cv, NULL);
  rt->gpus[g] = gp;
  rt->postq[g] = &gp->tq;
  int rc = pthread_create(&gp->thread, NULL, gpu_main, gp);
  if (rc != 0) {
    rt->gpus[g] = NULL;
    rt->postq[g] = NULL;
    pthread_mutex_destroy(&gp->lock);
    pthread_mutex_destroy(&gp->tl_lock);
    pthread_mutex_destroy(&gp->tq.lock);
    pthread_mutex_destroy(&gp->hang_lock);
    pthread_cond_destroy(&gp->cv);
    free(gp);
    return mgpu__fail(MGPU_ESYSTEM, "cannot start the host thread of GPU %d: pthread_create returned %d", g, rc);
  }
  gp->started = true;
  pthread_mutex_lock(&gp->lock);
  while (gp->ready == 0) pthread_cond_wait(&gp->cv, &gp->lock);
  mgpu_status_t st = gp->open_status;
  pthread_mutex_unlock(&gp->lock);
  if (st != MGPU_OK) {
    mgpu__fail(st, "%s", mgpu_last_error()[0] ? mgpu_last_error() : "cannot start a GPU worker");
  }
  return st;
}

static bool is_given_up(mgpu__gpu_t *gp) {
  pthread_mutex_lock(&gp->hang_lock);
  bool gone = gp->given_up;
  pthread_mutex_unlock(&gp->hang_lock);
  return gone;
}

void mgpu__gpu_wait(mgpu_runtime_t *rt, int g) {
  mgpu__gpu_t *gp = rt->gpus ? rt->gpus[g] : NULL;
  if (!gp || !gp->started) return;
  pthread_mutex_lock(&gp->lock);
  while (!gp->exited && !is_given_up(gp)) pthread_cond_wait(&gp->cv, &gp->lock);
  pthread_mutex_unlock(&gp->lock);
}

/* Devices given up, with their threads: never freed (the thread may still
 * come back from the driver and look at its state), and kept reachable. */
static pthread_mutex_t gone_lock = PTHREAD_MUTEX_INITIALIZER;
static mgpu__gpu_t **gone;
static int ngone;

void mgpu__gpu_join(mgpu_runtime_t *rt, int g) {
  mgpu__gpu_t *gp = rt->gpus ? rt->gpus[g] : NULL;
  if (!gp) return;
  if (gp->started && is_given_up(gp)) {
    rt->gpu_gone[g] = true;
    rt->gpus[g] = NULL;
    rt->postq[g] = NULL;
    pthread_detach(gp->thread);
    pthread_mutex_lock(&gone_lock);
    mgpu__gpu_t **p = realloc(gone, sizeof *p * (size_t)(ngone + 1));
    if (p) gone = p, gone[ngone++] = gp;
    pthread_mutex_unlock(&gone_lock);
    return;
  }
  if (gp->started) pthread_join(gp->thread, NULL);
  pthread_mutex_destroy(&gp->lock);
  pthread_mutex_destroy(&gp->tl_lock);
  pthread_mutex_destroy(&gp->tq.lock);
  pthread_mutex_destroy(&gp->hang_lock);
  pthread_cond_destroy(&gp->cv);
  free(gp->tq.q);
  rt->gpus[g] = NULL;
  rt->postq[g] = NULL;
  free(gp);
}

int mgpu__gpu_timeline(mgpu_runtime_t *rt, int g, double *start, double *end, int max) {
  mgpu__gpu_t *gp = rt->gpus[g];
  pthread_mutex_lock(&gp->tl_lock);
  uint64_t n = gp->tl_n < MGPU_TIMELINE ? gp->tl_n : MGPU_TIMELINE;
  if ((uint64_t)max < n) n = (uint64_t)max;
  uint64_t first = gp->tl_n - n;
  for (uint64_t i = 0; i < n; i++) {
    start[i] = gp->tl_start[(first + i) % MGPU_TIMELINE];
    end[i] = gp->tl_end[(first + i) % MGPU_TIMELINE];
  }
  pthread_mutex_unlock(&gp->tl_lock);
  return (int)n;
}
