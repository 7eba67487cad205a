/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * room.c: how many items of a batch fit in one chunk of a GPU worker: what a
 * slot's share of the device's memory holds, at most MGPU_MAX_BATCH_SIZE, and
 * for pageable arrays what the slot's staging buffer holds. The GPU's host
 * thread asks when it claims (claim.c, before any range lock: finding which
 * arrays are pinned is a driver query) and when it issues a chunk.
 */
#include "core/core.h"

#include <stdint.h>

size_t mgpu__room_bytes_per_item(const mgpu_kernel_t *k) {
  size_t n = k->scratch_per_item;
  for (int i = 0; i < k->nin; i++) n += k->in_size[i];
  for (int i = 0; i < k->nout; i++) n += k->out_size[i];
  return n ? n : 1;
}

size_t mgpu__room_cap(mgpu__room_t *r, const mgpu_kernel_t *k) {
  size_t per = mgpu__room_bytes_per_item(k);
  size_t cap = atomic_load(&r->slot_bytes) / (per + MGPU_ROOM_PAD_PER_ITEM);
  if (r->max_batch && cap > r->max_batch) cap = r->max_batch;
  if (cap < 1) cap = 1;
  atomic_store(&r->cap_items, cap);
  return cap;
}

static bool array_pinned(mgpu__room_t *r, const void *p, size_t bytes) {
  return r->ops->host_is_pinned && r->ops->host_is_pinned(p, bytes);
}

/* Only the GPU's own thread asks, from its claims and its chunks' issue. */
void mgpu__room_pin(mgpu__room_t *r, const mgpu__batch_t *b) {
  if (r->pin_batch == b->id + 1) return;
  const mgpu_kernel_t *k = &b->kernel;
  size_t per = 0;
  for (int i = 0; i < k->nin; i++) {
    r->pin_in[i] = array_pinned(r, b->desc.in[i], b->desc.n * k->in_size[i]);
    if (!r->pin_in[i]) per += k->in_size[i];
  }
  /* Without a gate, results go through staging, which a hung device's host
   * thread never copies out; with one, they may go straight to pinned arrays. */
  for (int i = 0; i < k->nout; i++) {
    r->pin_out[i] = r->gate_ok && array_pinned(r, b->desc.out[i], b->desc.n * k->out_size[i]);
    if (!r->pin_out[i]) per += k->out_size[i];
  }
  r->pin_batch = b->id + 1;
  r->stage_per_item = per;
}

size_t mgpu__room_limit(mgpu__room_t *r, const mgpu__batch_t *b) {
  mgpu__room_pin(r, b);
  size_t cap = mgpu__room_cap(r, &b->kernel), per = r->stage_per_item;
  /* Each staged array is rounded up to MGPU_ALIGN_DEV in the buffer. */
  if (per) {
    cap = MGPU_MIN(cap, MGPU_MAX((size_t)1, (MGPU_STAGE_SLOT_BYTES - 2 * MGPU_MAX_ARGS * MGPU_ALIGN_DEV) / per));
    atomic_store(&r->cap_items, cap);
  }
  return cap;
}
