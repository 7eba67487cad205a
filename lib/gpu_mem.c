/*
 * gpu_mem.c: a GPU worker's memory: how many items of a batch one chunk may
 * hold (a slot's share of the device's memory, and for pageable arrays its
 * pinned staging buffer), the slots' device and staging buffers, grown on
 * need and kept, and the device copies of constants, uploaded on first use.
 * All of it is used by the GPU's own host thread only.
 */
#include "mgpurt_int.h"

#include <stdlib.h>

size_t mgpu__gpu_round_up(size_t n) { return (n + MGPU_ALIGN_DEV - 1) & ~(size_t)(MGPU_ALIGN_DEV - 1); }

size_t mgpu__gpu_bytes_per_item(const mgpu_kernel_t *k) {
  size_t n = k->scratch_per_item;
  for (int i = 0; i < k->nin; i++) n += k->in_size[i];
  for (int i = 0; i < k->nout; i++) n += k->out_size[i];
  return n ? n : 1;
}

/* Device layout of a chunk of n items: inputs, outputs, scratch, each aligned. */
size_t mgpu__gpu_dev_bytes(const mgpu_kernel_t *k, size_t n) {
  size_t t = 0;
  for (int i = 0; i < k->nin; i++) t += mgpu__gpu_round_up(k->in_size[i] * n);
  for (int i = 0; i < k->nout; i++) t += mgpu__gpu_round_up(k->out_size[i] * n);
  t += mgpu__gpu_round_up(k->scratch_per_item * n);
  return t;
}

size_t mgpu__gpu_cap_for(mgpu__gpu_t *gp, const mgpu_kernel_t *k) {
  size_t per = mgpu__gpu_bytes_per_item(k);
  size_t cap = atomic_load(&gp->slot_bytes) / (per + (size_t)(3 * MGPU_ALIGN_DEV) / 8 + 1);
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
void mgpu__gpu_pin_info(mgpu__gpu_t *gp, const mgpu__batch_t *b) {
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
size_t mgpu__gpu_limit(mgpu__worker_t *w, const mgpu__batch_t *b) {
  mgpu__gpu_t *gp = w->gpu >= 0 ? b->rt->gpus[w->gpu] : NULL;
  if (!gp) return SIZE_MAX;
  mgpu__gpu_pin_info(gp, b);
  size_t cap = mgpu__gpu_cap_for(gp, &b->kernel), per = gp->stage_per_item;
  /* Each staged array is rounded up to MGPU_ALIGN_DEV in the buffer. */
  if (per) {
    cap = MGPU_MIN(cap, MGPU_MAX((size_t)1, (MGPU_STAGE_SLOT_BYTES - 2 * MGPU_MAX_ARGS * MGPU_ALIGN_DEV) / per));
    atomic_store(&gp->cap_items, cap);
  }
  return cap;
}

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
static int slot_alloc(mgpu__gpu_t *gp, mgpu__slot_t *s, size_t bytes) {
  return alloc_fault(gp) ? MGPU_ENOMEM : gp->ops->mem_alloc_on(gp->ctx, bytes, s->stream, &s->dbuf);
}

void mgpu__gpu_drop_dbuf(mgpu__gpu_t *gp, mgpu__slot_t *s) {
  if (s->dbuf) gp->ops->mem_free_on(gp->ctx, s->dbuf, s->stream);
  s->dbuf = NULL;
  s->dbuf_bytes = 0;
}

/* Grow a slot's device buffer to hold `need` bytes (never shrinks). */
int mgpu__gpu_ensure_dbuf(mgpu__gpu_t *gp, mgpu__slot_t *s, size_t need) {
  if (s->dbuf_bytes >= need) return 0;
  /* Grow geometrically within the slot's share, so the growing chunks of a
   * batch's start reallocate a few times, not at every chunk. */
  size_t want = MGPU_MAX(need, MGPU_MIN(atomic_load(&gp->slot_bytes), 2 * s->dbuf_bytes));
  mgpu__gpu_drop_dbuf(gp, s);
  int rc = slot_alloc(gp, s, want);
  if (rc == MGPU_ENOMEM && want > need) {
    /* What the slots let go of may be what is missing. */
    gp->ops->mem_trim(gp->ctx);
    rc = slot_alloc(gp, s, want = need);
  }
  if (rc == 0) s->dbuf_bytes = want;
  return rc;
}

int mgpu__gpu_ensure_hbuf(mgpu__gpu_t *gp, mgpu__slot_t *s, size_t need) {
  if (s->hbuf_bytes >= need) return 0;
  if (s->hbuf) gp->ops->host_free(s->hbuf);
  s->hbuf = NULL;
  s->hbuf_bytes = 0;
  /* Once, at the size that chunks are limited to (more only for a single
   * item that needs more). */
  size_t want = MGPU_MAX(need, MGPU_STAGE_SLOT_BYTES);
  if (gp->ops->host_alloc(want, &s->hbuf) != 0) {
    if (gp->ops->host_alloc(need, &s->hbuf) != 0) return MGPU_ENOMEM;
    want = need;
  }
  s->hbuf_bytes = want;
  return 0;
}

/* Device copy of constant c for this GPU, uploaded on first use (through stream). */
int mgpu__gpu_const_on_device(mgpu__gpu_t *gp, mgpu_const_t *c, void *stream, const void **out) {
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

int mgpu__gpu_const(const mgpu__devcall_t *dc, mgpu_const_t *c, const void **out) {
  return mgpu__gpu_const_on_device(dc->rt->gpus[dc->g], c, dc->stream, out);
}
