/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_mem.c: a GPU worker's memory: the slots' device and staging buffers,
 * grown on need and kept, and the device copies of constants, uploaded on
 * first use. (How many items one chunk may hold: room.c.)
 * All of it is used by the GPU's own host thread only.
 */
#include "workers/workers.h"

#include <stdlib.h>

size_t mgpu__gpu_round_up(size_t n) { return (n + MGPU_ALIGN_DEV - 1) & ~(size_t)(MGPU_ALIGN_DEV - 1); }

/* Device layout of a chunk of n items: inputs, outputs, scratch, each aligned. */
size_t mgpu__gpu_dev_bytes(const mgpu_kernel_t *k, size_t n) {
  size_t t = 0;
  for (int i = 0; i < k->nin; i++) t += mgpu__gpu_round_up(k->in_size[i] * n);
  for (int i = 0; i < k->nout; i++) t += mgpu__gpu_round_up(k->out_size[i] * n);
  t += mgpu__gpu_round_up(k->scratch_per_item * n);
  return t;
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
  size_t want = MGPU_MAX(need, MGPU_MIN(atomic_load(&gp->room.slot_bytes), 2 * s->dbuf_bytes));
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
  MGPU_LOCK(&c->lock, MGPU_LK_CONST);
  c->dev[gp->g] = d;
  MGPU_UNLOCK(&c->lock);
  atomic_fetch_add(&c->uploads, 1);
  *out = d;
  return 0;
}

int mgpu__gpu_const(const mgpu__devcall_t *dc, mgpu_const_t *c, const void **out) {
  return mgpu__gpu_const_on_device(dc->rt->gpus[dc->g], c, dc->stream, out);
}
