/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.c: the live handles (runtimes, events, constants, ...) the caller
 * holds, so that one used after mgpu_finalize, released twice or never made
 * by the library is an error, not a crash. A handle leaves the set when the
 * caller gives it back, even where its object lives on (a batch still using a
 * destroyed constant). Best effort: reused memory makes a stale one live again.
 */
#include "core/core.h"

#include <stdlib.h>
#include <unistd.h>

/* Open addressing with linear probing; a slot holds a key or is empty. */
typedef struct {
  uintptr_t key; /* pointer | kind in the low bits (objects are 8-aligned) */
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *table;
static size_t cap, used;

/* Fibonacci hashing: a multiple of 2^64 over the golden ratio spreads the
 * pointer's bits upward, and HASH_FOLD brings high ones down to the low bits
 * that the table's mask keeps. */
#define HASH_GOLDEN 0x9E3779B97F4A7C15ull
#define HASH_FOLD 29

static size_t hash(uintptr_t k) {
  uint64_t x = (uint64_t)k * HASH_GOLDEN;
  return (size_t)(x ^ (x >> HASH_FOLD));
}

static uintptr_t key_of(mgpu__handle_kind_t kind, const void *p) { return (uintptr_t)p | (uintptr_t)kind; }

static size_t find(uintptr_t k) {
  size_t i = hash(k) & (cap - 1);
  while (table[i].key && table[i].key != k) i = (i + 1) & (cap - 1);
  return i;
}

static int grow(void) {
  size_t ncap = cap ? 2 * cap : 256;
  slot_t *old = table, *nt = calloc(ncap, sizeof *nt);
  if (!nt) return -1;
  size_t ocap = cap;
  table = nt;
  cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].key) table[find(old[i].key)] = old[i];
  free(old);
  return 0;
}

int mgpu__handle_add(mgpu__handle_kind_t kind, const void *p) {
  uintptr_t k = key_of(kind, p);
  MGPU_LOCK(&lock, MGPU_LK_LEAF);
  if ((used + 1) * 2 > cap && grow() != 0) {
    MGPU_UNLOCK(&lock);
    return -1;
  }
  size_t i = find(k);
  if (!table[i].key) table[i].key = k, used++;
  MGPU_UNLOCK(&lock);
  return 0;
}

bool mgpu__handle_live(mgpu__handle_kind_t kind, const void *p) {
  if (!p) return false;
  uintptr_t k = key_of(kind, p);
  MGPU_LOCK(&lock, MGPU_LK_LEAF);
  bool live = cap && table[find(k)].key == k;
  MGPU_UNLOCK(&lock);
  return live;
}

bool mgpu__handle_del(mgpu__handle_kind_t kind, const void *p) {
  if (!p) return false;
  uintptr_t k = key_of(kind, p);
  MGPU_LOCK(&lock, MGPU_LK_LEAF);
  bool found = false;
  if (cap) {
    size_t i = find(k);
    if (table[i].key == k) {
      found = true;
      /* Backward-shift deletion keeps probe chains intact without tombstones. */
      table[i].key = 0;
      used--;
      for (size_t j = (i + 1) & (cap - 1); table[j].key; j = (j + 1) & (cap - 1)) {
        uintptr_t moved = table[j].key;
        table[j].key = 0;
        table[find(moved)].key = moved;
      }
    }
    if (used == 0) {
      free(table);
      table = NULL;
      cap = 0;
    }
  }
  MGPU_UNLOCK(&lock);
  return found;
}

/* MGPU_ESTATE where the calling process did not start rt, which is live. */
static mgpu_status_t live_forked(const mgpu_runtime_t *rt, const char *fn) {
  if (rt->pid == getpid()) return MGPU_OK;
  return mgpu__fail(MGPU_ESTATE, "%s: the runtime was started by process %ld, and this is process %ld (a child of "
                    "fork), which has none of its workers: every call would wait for good. Start a runtime in the "
                    "child (mgpu_init), or fork before mgpu_init: refused", fn, (long)rt->pid, (long)getpid());
}

mgpu_status_t mgpu__check_rt(const mgpu_runtime_t *rt, const char *fn) {
  if (!rt) return mgpu__fail(MGPU_EINVAL, "%s: rt is NULL", fn);
  if (!mgpu__handle_live(MGPU_H_RUNTIME, rt))
    return mgpu__fail(MGPU_ESTATE, "%s: rt %p is not a live runtime (used after mgpu_finalize?)", fn, (const void *)rt);
  return live_forked(rt, fn);
}

mgpu_status_t mgpu__refuse_forked(const mgpu_runtime_t *rt, const char *fn) {
  /* A runtime finalized already is not read (an event may outlive it). */
  if (!rt || !mgpu__handle_live(MGPU_H_RUNTIME, rt)) return MGPU_OK;
  return live_forked(rt, fn);
}

mgpu_status_t mgpu__refuse_in_worker(const mgpu_runtime_t *rt, const char *fn) {
  mgpu_status_t st = mgpu__refuse_forked(rt, fn);
  if (st != MGPU_OK) return st;
  if (!rt || mgpu__self_rt != rt) return MGPU_OK;
  return mgpu__fail(MGPU_ESTATE, "%s: called from a worker of the runtime (inside a kernel function?), which would "
                                 "wait for batches while computing nothing, and for items it holds itself: refused",
                    fn);
}
