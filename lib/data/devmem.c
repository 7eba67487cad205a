/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem.c: the record of the device memory that mgpu_device_alloc gave out
 * (rt->dev_allocs, under rt->alloc_lock), so that mgpu_device_free refuses a
 * stranger, finalize frees what the caller left (array.c), and the copies
 * (array.c) and collectives (coll.c) that name memory in one of these
 * allocations are held within it.
 */
#include "data/data.h"

#include <stdlib.h>

int mgpu__devmem_record(mgpu_runtime_t *rt, int gpu, void *p, size_t bytes) {
  MGPU_LOCK(&rt->alloc_lock, MGPU_LK_ALLOC);
  if (rt->ndev_allocs == rt->dev_allocs_cap) {
    int cap = rt->dev_allocs_cap ? 2 * rt->dev_allocs_cap : 16;
    void *n = realloc(rt->dev_allocs, sizeof *rt->dev_allocs * (size_t)cap);
    if (!n) {
      MGPU_UNLOCK(&rt->alloc_lock);
      return -1;
    }
    rt->dev_allocs = n;
    rt->dev_allocs_cap = cap;
  }
  rt->dev_allocs[rt->ndev_allocs].p = p;
  rt->dev_allocs[rt->ndev_allocs].bytes = bytes;
  rt->dev_allocs[rt->ndev_allocs].gpu = gpu;
  rt->ndev_allocs++;
  MGPU_UNLOCK(&rt->alloc_lock);
  return 0;
}

bool mgpu__devmem_forget(mgpu_runtime_t *rt, int gpu, void *p) {
  bool found = false;
  MGPU_LOCK(&rt->alloc_lock, MGPU_LK_ALLOC);
  for (int i = 0; i < rt->ndev_allocs && !found; i++)
    if (rt->dev_allocs[i].p == p && rt->dev_allocs[i].gpu == gpu) {
      rt->dev_allocs[i] = rt->dev_allocs[--rt->ndev_allocs];
      found = true;
    }
  MGPU_UNLOCK(&rt->alloc_lock);
  return found;
}

mgpu_status_t mgpu__devmem_check(mgpu_runtime_t *rt, const char *fn, const char *name, int gpu, const void *dev,
                                 size_t bytes, const char *what) {
  uintptr_t a = (uintptr_t)dev;
  bool found = false;
  uintptr_t lo = 0;
  size_t size = 0;
  int on = -1;
  MGPU_LOCK(&rt->alloc_lock, MGPU_LK_ALLOC);
  for (int i = 0; i < rt->ndev_allocs && !found; i++) {
    lo = (uintptr_t)rt->dev_allocs[i].p;
    size = rt->dev_allocs[i].bytes;
    on = rt->dev_allocs[i].gpu;
    found = a >= lo && a - lo < size;
  }
  MGPU_UNLOCK(&rt->alloc_lock);
  if (!found) return MGPU_OK;
  if (on != gpu)
    return mgpu__fail(MGPU_EINVAL, "%s: %s %p is memory of GPU %d (mgpu_device_alloc), not of GPU %d", fn, name, dev,
                      on, gpu);
  size_t off = a - lo;
  if (bytes > size - off)
    return mgpu__fail(MGPU_EINVAL, "%s: %zu bytes at %s %p%s%s%s run %zu bytes past the end of its allocation (%zu "
                      "bytes at %p on GPU %d; the call asks for its bytes %zu..%zu)", fn, bytes, name, dev,
                      what ? " (" : "", what ? what : "", what ? ")" : "", bytes - (size - off), size, (void *)lo,
                      gpu, off, off + bytes - 1);
  return MGPU_OK;
}
