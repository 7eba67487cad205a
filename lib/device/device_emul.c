/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_emul.c: the emulated device back end (MGPU_EMULATE_GPUS, tests only).
 * Device memory is host memory with a size limit; each stream is a thread
 * that runs its operations in order; a kernel runs the kernel's CPU function
 * on the staged buffers (chunk->stream != NULL tells it so). As cudaMalloc and
 * cudaFree, mem_alloc and mem_free first wait for the device's streams.
 */
#include "device/device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_COPY, OP_KERNEL, OP_EVENT, OP_GATE, OP_HANG } op_kind_t;

/* Injected hangs wait for this generation to move (mgpu__emul_release_hangs);
 * a shut gate waits for good. */
static pthread_mutex_t hang_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cv = PTHREAD_COND_INITIALIZER;
static uint64_t hang_gen;

void mgpu__emul_release_hangs(void) {
  MGPU_LOCK(&hang_lock, MGPU_LK_BACKEND);
  hang_gen++;
  pthread_cond_broadcast(&hang_cv);
  MGPU_UNLOCK(&hang_lock);
}

/* A device given up keeps its hung streams stopped whatever is released:
 * what they still hold (copies into buffers its caller has freed since) must
 * never run. */
static void hang_here(const _Atomic int *abandoned) {
  MGPU_LOCK(&hang_lock, MGPU_LK_BACKEND);
  uint64_t gen = hang_gen;
  while (hang_gen == gen || atomic_load(abandoned)) pthread_cond_wait(&hang_cv, &hang_lock);
  MGPU_UNLOCK(&hang_lock);
}

typedef struct op {
  op_kind_t kind;
  void *dst;
  const void *src;
  size_t bytes;
  mgpu_kernel_t kernel;
  mgpu_chunk_t chunk;
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  const void *consts[MGPU_MAX_CONSTS];
  struct op *next;
  /* A kernel in its device's launch order (emul_dev_t.kq), under its compute lock. */
  struct emul_stream *stream;
  struct op *kprev, *knext;
  bool in_kq;
} op_t;

typedef struct {
  double t;             /* host clock when the stream reached it */
  _Atomic int state;    /* 0 recorded, not reached; 1 reached */
  int error;            /* the stream's error when it reached it */
} emul_event_t;

typedef struct emul_dev {
  int index;
  double epoch;
  double speed, latency;
  size_t width;            /* items at once, 0: no limit */
  bool overlap;            /* launches of different streams run side by side */
  size_t mem_limit;
  pthread_mutex_t lock;    /* guards mem_used */
  size_t mem_used;
  /* The device's streams, for mem_alloc's wait; only the device's thread
   * creates, destroys and waits for them, so they need no lock. */
  struct emul_stream **streams;
  int nstreams, streams_cap;
  pthread_mutex_t compute; /* guards busy_until, engine_busy, kq and each stream's kq_off */
  pthread_cond_t engine_cv; /* the engine freed, or the launch order changed */
  double busy_until;       /* virtual end of the last kernel */
  bool engine_busy;        /* a kernel holds the compute engine */
  /* Kernels launched and not yet started, oldest first: one on the list
   * starts only at its head. A stream stopped for good or for a long time
   * (a shut gate, an injected hang, an error) takes its kernels off, so that
   * the other streams' kernels do not wait for them. */
  struct op *kq_head, *kq_tail;
  _Atomic int gate_shut;   /* gate_close: streams stop at their next gate */
  _Atomic int abandoned;   /* given up: a hung stream never goes on */
  struct emul_alloc *allocs; /* live allocations, under lock: a device given up keeps them reachable */
} emul_dev_t;

/* The header before each allocation's memory (a cache line, keeping it aligned). */
typedef struct emul_alloc {
  size_t bytes;
  struct emul_alloc *prev, *next;
  char pad[MGPU_CACHELINE - sizeof(size_t) - 2 * sizeof(void *)];
} emul_alloc_t;

typedef struct emul_stream {
  emul_dev_t *dev;
  pthread_t thread;
  pthread_mutex_t lock;    /* guards the queue, running, error, stop */
  pthread_cond_t cv;
  op_t *head, *tail;
  uint64_t queued, done;   /* operations enqueued and finished so far */
  int running;
  int error;
  int stop;
  bool kq_off;             /* stopped at a hang or a shut gate: its kernels keep no place in the launch order */
  struct op *waiting;      /* the injected hang it waits in, if any */
  /* The creating GPU host thread's mgpu__self_rt and mgpu__self_gpu: the
   * kernels this thread runs stand for that thread's, as on a real device. */
  const mgpu_runtime_t *self_rt;
  int self_gpu;
} emul_stream_t;

/* Registry of "pinned" host allocations, so host_is_pinned can answer. */
static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { char *p; size_t n; } *pinned;
static int npinned, pinned_cap;

static int emul_count(void) { return MGPU_MAX_DEVICES; }

static int emul_props(int dev, mgpu_device_info_t *out) {
  memset(out, 0, sizeof *out);
  out->index = dev;
  snprintf(out->name, sizeof out->name, "emulated device %d", dev);
  snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "emulated:%02d", dev);
  out->sm_count = 1;
  out->cc_major = 0;
  out->cc_minor = 0;
  out->emulated = 1;
  return 0;
}

static int emul_can_peer(int a, int b) { return a != b; }

/* Put a kernel last in its device's launch order (under d->compute). */
static void kq_append(emul_dev_t *d, op_t *op) {
  op->in_kq = true;
  op->kprev = d->kq_tail;
  if (d->kq_tail) d->kq_tail->knext = op;
  else d->kq_head = op;
  d->kq_tail = op;
}

/* Take a kernel off its device's launch order (under d->compute). */
static void kq_unlink(emul_dev_t *d, op_t *op) {
  if (!op->in_kq) return;
  if (op->kprev) op->kprev->knext = op->knext;
  else d->kq_head = op->knext;
  if (op->knext) op->knext->kprev = op->kprev;
  else d->kq_tail = op->kprev;
  op->in_kq = false;
  pthread_cond_broadcast(&d->engine_cv);
}

/* The kernel holding the engine lets it go (under d->compute). */
static void engine_free(emul_dev_t *d) {
  d->engine_busy = false;
  pthread_cond_broadcast(&d->engine_cv);
}

/* Stream s stops (off) or goes on past a hang: while stopped its kernels,
 * queued or launched later, keep no place in the launch order. */
static void kq_stream_off(emul_stream_t *s, bool off) {
  emul_dev_t *d = s->dev;
  MGPU_LOCK(&d->compute, MGPU_LK_BACKEND);
  s->kq_off = off;
  for (op_t *op = d->kq_head, *next; off && op; op = next) {
    next = op->knext;
    if (op->stream == s) kq_unlink(d, op);
  }
  MGPU_UNLOCK(&d->compute);
}

static void sleep_until(double t) {
  double now = mgpu__now();
  if (t <= now) return;
  mgpu__nap(t - now);
}

/* Seconds a launch of n items takes on device d: MGPU_EMULATE_LATENCY plus
 * n / MGPU_EMULATE_SPEED, n rounded up to whole rounds of MGPU_EMULATE_WIDTH
 * items where set (a latency-bound kernel's shape: one launch costs about the
 * same for one item as for width items); 0: as long as its CPU function runs. */
static double kernel_time(const emul_dev_t *d, size_t n) {
  double items = (double)n;
  if (d->width > 0) items = ceil(items / (double)d->width) * (double)d->width;
  return d->latency + (d->speed > 0 ? items / d->speed : 0);
}

/* When a kernel that started at t0 and ran its CPU function ends (under
 * d->compute; 0: at once). */
static double kernel_end(emul_dev_t *d, const op_t *op, double t0) {
  double took = kernel_time(d, op->chunk.count);
  if (d->overlap) {
    /* Side by side: the launch lasts its own time from its start, and its
     * items take their share of the device's speed after those of the
     * launches before it. */
    double items = d->speed > 0 ? (double)op->chunk.count / d->speed : 0;
    d->busy_until = (t0 < d->busy_until ? d->busy_until : t0) + items;
    return MGPU_MAX(t0 + took, d->busy_until);
  }
  if (took <= 0) return 0;
  /* A virtual clock of the compute engine: a kernel ends its time after the
   * later of its start and the previous kernel's end, so the host's sleep
   * overshoot does not pile up and a busy device runs at its declared speed. */
  d->busy_until = (t0 < d->busy_until ? d->busy_until : t0) + took;
  return d->busy_until;
}

/* A kernel of stream s: one at a time holds the device's compute engine, in
 * launch order (kq) as a device's launch queue gives them out, or the runtime
 * would time its chunks out of order; copies of other streams overlap. With
 * MGPU_EMULATE_OVERLAP, launches run side by side. skip: the stream's error. */
static int run_kernel(emul_dev_t *d, op_t *op, bool skip) {
  MGPU_LOCK(&d->compute, MGPU_LK_BACKEND);
  if (skip) {
    kq_unlink(d, op);
    MGPU_UNLOCK(&d->compute);
    return 0;
  }
  while (d->engine_busy || (op->in_kq && d->kq_head != op)) pthread_cond_wait(&d->engine_cv, &d->compute);
  kq_unlink(d, op);
  d->engine_busy = true;
  MGPU_UNLOCK(&d->compute);
  double t0 = mgpu__now();
  int rc = op->kernel.cpu(&op->chunk);
  MGPU_LOCK(&d->compute, MGPU_LK_BACKEND);
  double end = kernel_end(d, op, t0);
  /* One kernel at a time holds the engine until its time is over. */
  bool hold = !d->overlap;
  if (!hold) engine_free(d);
  MGPU_UNLOCK(&d->compute);
  sleep_until(end);
  if (hold) {
    MGPU_LOCK(&d->compute, MGPU_LK_BACKEND);
    engine_free(d);
    MGPU_UNLOCK(&d->compute);
  }
  return rc;
}

/* An event reached: the host clock, and the stream's error. */
static void run_event(emul_stream_t *s, emul_event_t *e) {
  e->t = mgpu__now();
  MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
  e->error = s->error;
  MGPU_UNLOCK(&s->lock);
  atomic_store(&e->state, 1);
}

/* A shut gate: the stream stops for good, and nothing behind it runs. */
static _Noreturn void stop_for_good(emul_stream_t *s, op_t *op) {
  free(op);
  kq_stream_off(s, true);
  MGPU_LOCK(&hang_lock, MGPU_LK_BACKEND);
  for (;;) pthread_cond_wait(&hang_cv, &hang_lock);
}

/* An injected hang: the stream waits until hangs are released; what it holds
 * stays reachable from it meanwhile. */
static void run_hang(emul_stream_t *s, op_t *op) {
  s->waiting = op;
  kq_stream_off(s, true);
  hang_here(&s->dev->abandoned);
  kq_stream_off(s, false);
  s->waiting = NULL;
}

/* Run op on stream s; skip: after a fault the stream does nothing until synced. */
static int run_op(emul_stream_t *s, op_t *op, bool skip) {
  switch (op->kind) {
  case OP_EVENT: run_event(s, op->dst); break;
  case OP_GATE:
    if (atomic_load(&s->dev->gate_shut)) stop_for_good(s, op);
    break;
  case OP_HANG: run_hang(s, op); break;
  case OP_COPY:
    if (!skip) memcpy(op->dst, op->src, op->bytes);
    break;
  case OP_KERNEL: return run_kernel(s->dev, op, skip);
  }
  return 0;
}

static void *stream_main(void *arg) {
  emul_stream_t *s = arg;
  mgpu__self_rt = s->self_rt;
  mgpu__self_gpu = s->self_gpu;
  MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->lock);
    if (!s->head && s->stop) break;
    op_t *op = s->head;
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    s->running = 1;
    bool skip = s->error != 0;
    MGPU_UNLOCK(&s->lock);
    int rc = run_op(s, op, skip);
    free(op);
    MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
    if (rc != 0 && s->error == 0) s->error = MGPU_EKERNEL;
    s->running = 0;
    s->done++;
    pthread_cond_broadcast(&s->cv);
  }
  MGPU_UNLOCK(&s->lock);
  return NULL;
}

static int emul_open(int dev, const mgpu__config_t *cfg, void **ctx) {
  emul_dev_t *d = calloc(1, sizeof *d);
  if (!d) return MGPU_ENOMEM;
  d->index = dev;
  d->speed = cfg->test.emulate_speed;
  d->latency = cfg->test.emulate_latency > 0 ? cfg->test.emulate_latency : 0;
  d->width = cfg->test.emulate_width > 0 ? (size_t)cfg->test.emulate_width : 0;
  d->overlap = cfg->test.emulate_overlap > 0;
  d->epoch = mgpu__now(); /* device time 0, as the CUDA back end's epoch event */
  d->mem_limit = (size_t)cfg->test.emulate_mem;
  pthread_mutex_init(&d->lock, NULL);
  pthread_mutex_init(&d->compute, NULL);
  pthread_cond_init(&d->engine_cv, NULL);
  *ctx = d;
  return 0;
}

_Atomic size_t mgpu__emul_left_bytes;
_Atomic uint64_t mgpu__emul_allocs, mgpu__emul_frees;

static void emul_close(void *ctx) {
  emul_dev_t *d = ctx;
  /* Device memory still allocated at close was leaked: tests read the count. */
  if (d->mem_used) atomic_fetch_add(&mgpu__emul_left_bytes, d->mem_used);
  pthread_mutex_destroy(&d->lock);
  pthread_mutex_destroy(&d->compute);
  pthread_cond_destroy(&d->engine_cv);
  free(d->streams);
  free(d);
}

/* Wait until s has run what was queued on it so far. */
static void drain_stream(emul_stream_t *s) {
  MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
  uint64_t upto = s->queued;
  while (s->done < upto) pthread_cond_wait(&s->cv, &s->lock);
  MGPU_UNLOCK(&s->lock);
}

/* Wait until every operation queued on the device's streams so far has run. */
static void drain_device(emul_dev_t *d) {
  for (int i = 0; i < d->nstreams; i++) drain_stream(d->streams[i]);
}

/* Each allocation carries a header (emul_alloc_t) so free can account for it. */
static int emul_mem_alloc_on(void *ctx, size_t bytes, void *s, void **p) {
  emul_dev_t *d = ctx;
  MGPU_UNUSED(s);
  emul_alloc_t *h = malloc(bytes + sizeof *h);
  if (!h) return MGPU_ENOMEM;
  MGPU_LOCK(&d->lock, MGPU_LK_BACKEND);
  if (bytes > d->mem_limit - d->mem_used) {
    MGPU_UNLOCK(&d->lock);
    free(h);
    return MGPU_ENOMEM;
  }
  d->mem_used += bytes;
  h->bytes = bytes;
  h->prev = NULL;
  h->next = d->allocs;
  if (d->allocs) d->allocs->prev = h;
  d->allocs = h;
  MGPU_UNLOCK(&d->lock);
  atomic_fetch_add(&mgpu__emul_allocs, 1);
  *p = h + 1;
  return 0;
}

static void release(emul_dev_t *d, void *p) {
  if (!p) return;
  emul_alloc_t *h = (emul_alloc_t *)p - 1;
  MGPU_LOCK(&d->lock, MGPU_LK_BACKEND);
  d->mem_used -= h->bytes;
  if (h->prev) h->prev->next = h->next;
  else d->allocs = h->next;
  if (h->next) h->next->prev = h->prev;
  MGPU_UNLOCK(&d->lock);
  atomic_fetch_add(&mgpu__emul_frees, 1);
  free(h);
}

/* A driver call under a range lock would hold up every thief of the range. */
static void not_under_range_lock(const char *op) {
  if (mgpu__range_locks_held) MGPU_PANIC("emulated device: %s called under a range lock", op);
}

static int emul_mem_alloc(void *ctx, size_t bytes, void **p) {
  not_under_range_lock("mem_alloc");
  drain_device(ctx);
  return emul_mem_alloc_on(ctx, bytes, NULL, p);
}

static void emul_mem_free(void *ctx, void *p) {
  drain_device(ctx);
  release(ctx, p);
}

/* In stream order: released once s has run what was queued on it before (an
 * error of s stays for its next sync). */
static void emul_mem_free_on(void *ctx, void *p, void *sp) {
  drain_stream(sp);
  release(ctx, p);
}

static void emul_mem_trim(void *ctx) { MGPU_UNUSED(ctx); }

static int emul_mem_info(void *ctx, size_t *free_b, size_t *total_b) {
  not_under_range_lock("mem_info");
  emul_dev_t *d = ctx;
  MGPU_LOCK(&d->lock, MGPU_LK_BACKEND);
  *free_b = d->mem_limit - d->mem_used;
  *total_b = d->mem_limit;
  MGPU_UNLOCK(&d->lock);
  return 0;
}

static int emul_host_alloc(size_t bytes, void **p) {
  size_t rounded = (bytes + MGPU_CACHELINE - 1) & ~(size_t)(MGPU_CACHELINE - 1);
  if (rounded < bytes) return MGPU_ENOMEM;
  char *m = aligned_alloc(MGPU_CACHELINE, rounded);
  if (!m) return MGPU_ENOMEM;
  MGPU_LOCK(&pinned_lock, MGPU_LK_BACKEND);
  if (npinned == pinned_cap) {
    int cap = pinned_cap ? 2 * pinned_cap : 16;
    void *n = realloc(pinned, sizeof *pinned * (size_t)cap);
    if (!n) {
      MGPU_UNLOCK(&pinned_lock);
      free(m);
      return MGPU_ENOMEM;
    }
    pinned = n;
    pinned_cap = cap;
  }
  pinned[npinned].p = m;
  pinned[npinned].n = bytes;
  npinned++;
  MGPU_UNLOCK(&pinned_lock);
  atomic_fetch_add(&mgpu__emul_allocs, 1);
  *p = m;
  return 0;
}

static void emul_host_free(void *p) {
  MGPU_LOCK(&pinned_lock, MGPU_LK_BACKEND);
  for (int i = 0; i < npinned; i++)
    if (pinned[i].p == p) {
      pinned[i] = pinned[--npinned];
      break;
    }
  if (npinned == 0) {
    free(pinned);
    pinned = NULL;
    pinned_cap = 0;
  }
  MGPU_UNLOCK(&pinned_lock);
  if (p) atomic_fetch_add(&mgpu__emul_frees, 1);
  free(p);
}

static int emul_host_is_pinned(const void *p, size_t bytes) {
  not_under_range_lock("host_is_pinned");
  const char *c = p;
  int yes = 0;
  MGPU_LOCK(&pinned_lock, MGPU_LK_BACKEND);
  for (int i = 0; i < npinned && !yes; i++)
    yes = c >= pinned[i].p && c + bytes <= pinned[i].p + pinned[i].n;
  MGPU_UNLOCK(&pinned_lock);
  return yes;
}

static int emul_stream_create(void *ctx, void **out) {
  emul_stream_t *s = calloc(1, sizeof *s);
  if (!s) return MGPU_ENOMEM;
  emul_dev_t *d = ctx;
  s->dev = d;
  if (d->nstreams == d->streams_cap) {
    int cap = d->streams_cap ? 2 * d->streams_cap : 8;
    emul_stream_t **ss = realloc(d->streams, sizeof *ss * (size_t)cap);
    if (!ss) {
      free(s);
      return MGPU_ENOMEM;
    }
    d->streams = ss;
    d->streams_cap = cap;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->self_rt = mgpu__self_rt;
  s->self_gpu = mgpu__self_gpu;
  if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cv);
    free(s);
    return MGPU_ESYSTEM;
  }
  d->streams[d->nstreams++] = s;
  *out = s;
  return 0;
}

static void emul_stream_destroy(void *ctx, void *sp) {
  emul_stream_t *s = sp;
  emul_dev_t *d = ctx;
  for (int i = 0; i < d->nstreams; i++)
    if (d->streams[i] == s) {
      d->streams[i] = d->streams[--d->nstreams];
      break;
    }
  MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  MGPU_UNLOCK(&s->lock);
  pthread_join(s->thread, NULL);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cv);
  free(s);
}

static int enqueue(emul_stream_t *s, op_t *op) {
  op->next = NULL;
  MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  s->queued++;
  pthread_cond_broadcast(&s->cv);
  MGPU_UNLOCK(&s->lock);
  return 0;
}

static int emul_copy(void *ctx, void *dst, const void *src, size_t bytes, void *s) {
  not_under_range_lock("copy");
  MGPU_UNUSED(ctx);
  op_t *op = calloc(1, sizeof *op);
  if (!op) return MGPU_ENOMEM;
  op->kind = OP_COPY;
  op->dst = dst;
  op->src = src;
  op->bytes = bytes;
  return enqueue(s, op);
}

/* Whether [p, p + bytes) lies in one live allocation of d. A copy that does
 * not is refused, as CUDA refuses a copy past its allocation's end or into
 * memory freed, where a host memcpy would write over what the heap keeps
 * there. */
static bool in_device(emul_dev_t *d, const void *p, size_t bytes) {
  if (bytes == 0) return true;
  uintptr_t a = (uintptr_t)p;
  bool ok = false;
  MGPU_LOCK(&d->lock, MGPU_LK_BACKEND);
  for (const emul_alloc_t *h = d->allocs; h && !ok; h = h->next) {
    uintptr_t lo = (uintptr_t)(h + 1);
    ok = a >= lo && a - lo <= h->bytes && bytes <= h->bytes - (a - lo);
  }
  MGPU_UNLOCK(&d->lock);
  return ok;
}

static int emul_copy_h2d(void *ctx, void *dst, const void *src, size_t bytes, void *s) {
  return in_device(ctx, dst, bytes) ? emul_copy(ctx, dst, src, bytes, s) : MGPU_EINVAL;
}

static int emul_copy_d2h(void *ctx, void *dst, const void *src, size_t bytes, void *s) {
  return in_device(ctx, src, bytes) ? emul_copy(ctx, dst, src, bytes, s) : MGPU_EINVAL;
}

static int emul_copy_d2d(void *ctx, void *dst, const void *src, size_t bytes, void *s) {
  return in_device(ctx, dst, bytes) && in_device(ctx, src, bytes) ? emul_copy(ctx, dst, src, bytes, s) : MGPU_EINVAL;
}

static int emul_launch(void *ctx, const mgpu_kernel_t *k, const mgpu_chunk_t *c, void *s) {
  not_under_range_lock("launch");
  MGPU_UNUSED(ctx);
  op_t *op = calloc(1, sizeof *op);
  if (!op) return MGPU_ENOMEM;
  op->kind = OP_KERNEL;
  op->kernel = *k;
  op->chunk = *c;
  for (int i = 0; i < k->nin; i++) op->in[i] = c->in[i];
  for (int i = 0; i < k->nout; i++) op->out[i] = c->out[i];
  for (int i = 0; i < MGPU_MAX_CONSTS && c->consts; i++) op->consts[i] = c->consts[i];
  op->chunk.in = op->in;
  op->chunk.out = op->out;
  op->chunk.consts = op->consts;
  op->chunk.stream = s;
  emul_stream_t *st = s;
  emul_dev_t *d = st->dev;
  op->stream = st;
  MGPU_LOCK(&d->compute, MGPU_LK_BACKEND);
  if (!st->kq_off) kq_append(d, op);
  MGPU_UNLOCK(&d->compute);
  return enqueue(s, op);
}

static int mark(void *s, op_kind_t kind) {
  op_t *op = calloc(1, sizeof *op);
  if (!op) return MGPU_ENOMEM;
  op->kind = kind;
  return enqueue(s, op);
}

static int emul_gate(void *ctx, void *s) {
  MGPU_UNUSED(ctx);
  return mark(s, OP_GATE);
}

static void emul_gate_close(void *ctx) {
  emul_dev_t *d = ctx;
  atomic_store(&d->gate_shut, 1);
}

/* Its stream threads may wait for good: they are detached, not joined. */
static void emul_abandon(void *ctx) {
  emul_dev_t *d = ctx;
  atomic_store(&d->abandoned, 1);
  for (int i = 0; i < d->nstreams; i++) pthread_detach(d->streams[i]->thread);
}

static int emul_hang(void *ctx, void *s) {
  MGPU_UNUSED(ctx);
  return mark(s, OP_HANG);
}

static int emul_stream_sync(void *ctx, void *sp) {
  emul_stream_t *s = sp;
  MGPU_UNUSED(ctx);
  MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
  while (s->head || s->running) pthread_cond_wait(&s->cv, &s->lock);
  int err = s->error;
  s->error = 0;
  MGPU_UNLOCK(&s->lock);
  return err;
}

static int emul_stream_query(void *ctx, void *sp) {
  emul_stream_t *s = sp;
  MGPU_UNUSED(ctx);
  MGPU_LOCK(&s->lock, MGPU_LK_BACKEND);
  int r = (s->head || s->running) ? 1 : s->error;
  MGPU_UNLOCK(&s->lock);
  return r;
}

static double emul_speed_estimate(void *ctx) {
  MGPU_UNUSED(ctx);
  return 1.0; /* nothing is known about an emulated device before measuring it */
}


static int emul_event_create(void *ctx, void **ev) {
  MGPU_UNUSED(ctx);
  emul_event_t *e = calloc(1, sizeof *e);
  if (!e) return MGPU_ENOMEM;
  *ev = e;
  return 0;
}

static void emul_event_destroy(void *ctx, void *ev) {
  MGPU_UNUSED(ctx);
  free(ev);
}

static int emul_event_record(void *ctx, void *ev, void *s) {
  MGPU_UNUSED(ctx);
  op_t *op = calloc(1, sizeof *op);
  if (!op) return MGPU_ENOMEM;
  op->kind = OP_EVENT;
  op->dst = ev;
  atomic_store(&((emul_event_t *)ev)->state, 0);
  return enqueue(s, op);
}

static int emul_event_query(void *ctx, void *ev) {
  emul_event_t *e = ev;
  MGPU_UNUSED(ctx);
  if (!atomic_load(&e->state)) return 1;
  return e->error ? e->error : 0;
}

static int emul_event_time(void *ctx, void *ev, double *t) {
  *t = ((emul_event_t *)ev)->t - ((emul_dev_t *)ctx)->epoch;
  return 0;
}

const mgpu_dev_ops_t mgpu__dev_emul = {
    .name = "emulated",
    .emulated = 1,
    .count = emul_count,
    .props = emul_props,
    .can_peer = emul_can_peer,
    .open = emul_open,
    .close = emul_close,
    .mem_alloc = emul_mem_alloc,
    .mem_free = emul_mem_free,
    .mem_alloc_on = emul_mem_alloc_on,
    .mem_free_on = emul_mem_free_on,
    .mem_trim = emul_mem_trim,
    .mem_info = emul_mem_info,
    .host_alloc = emul_host_alloc,
    .host_free = emul_host_free,
    .host_is_pinned = emul_host_is_pinned,
    .stream_create = emul_stream_create,
    .stream_destroy = emul_stream_destroy,
    .copy_h2d = emul_copy_h2d,
    .copy_d2h = emul_copy_d2h,
    .launch = emul_launch,
    .stream_sync = emul_stream_sync,
    .stream_query = emul_stream_query,
    .speed_estimate = emul_speed_estimate,
    .event_create = emul_event_create,
    .event_destroy = emul_event_destroy,
    .event_record = emul_event_record,
    .event_time = emul_event_time,
    .event_query = emul_event_query,
    .copy_d2d = emul_copy_d2d,
    .gate = emul_gate,
    .gate_close = emul_gate_close,
    .abandon = emul_abandon,
    .hang = emul_hang,
};
