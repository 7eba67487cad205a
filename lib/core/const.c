/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * const.c: replicated read-only constants. The host copy is made at creation;
 * each GPU worker uploads its own device copy on first use and keeps it until the
 * constant is destroyed and no batch uses it any more. Device copies are freed by
 * their GPU worker (only it may touch its device), so a dead constant waits on
 * rt->dead_consts until every GPU has freed its copy.
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

MGPU_API mgpu_status_t mgpu_const_create(mgpu_runtime_t *rt, const void *host, size_t bytes, mgpu_const_t **const_p) {
  mgpu_status_t st = mgpu__check_rt(rt, "mgpu_const_create");
  if (st != MGPU_OK) return st;
  if (!const_p) return mgpu__fail(MGPU_EINVAL, "mgpu_const_create: const_p is NULL");
  if (bytes == 0) return mgpu__fail(MGPU_EINVAL, "mgpu_const_create: bytes is 0: expected 1 or more");
  if (!host) return mgpu__fail(MGPU_EINVAL, "mgpu_const_create: host is NULL with bytes = %zu", bytes);
  mgpu_const_t *c = calloc(1, sizeof *c);
  if (!c) return mgpu__fail(MGPU_ENOMEM, "mgpu_const_create: out of memory");
  c->host = malloc(bytes);
  if (!c->host) {
    free(c);
    return mgpu__fail(MGPU_ENOMEM, "mgpu_const_create: cannot allocate %zu bytes", bytes);
  }
  memcpy(c->host, host, bytes);
  c->bytes = bytes;
  c->rt = rt;
  atomic_init(&c->refs, 1);
  pthread_mutex_init(&c->lock, NULL);
  if (mgpu__handle_add(MGPU_H_CONST, c) != 0) {
    free(c->host);
    free(c);
    return mgpu__fail(MGPU_ENOMEM, "mgpu_const_create: out of memory");
  }
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  c->next_live = rt->consts;
  rt->consts = c;
  MGPU_UNLOCK(&rt->lock);
  *const_p = c;
  return MGPU_OK;
}

void mgpu__const_ref(mgpu_const_t *c) { atomic_fetch_add(&c->refs, 1); }

static void unlink_live(mgpu_runtime_t *rt, mgpu_const_t *c) {
  for (mgpu_const_t **p = &rt->consts; *p; p = &(*p)->next_live)
    if (*p == c) {
      *p = c->next_live;
      return;
    }
}

static void free_host(mgpu_const_t *c) {
  pthread_mutex_destroy(&c->lock);
  free(c->host);
  free(c);
}

static bool has_device_copy(const mgpu_const_t *c) {
  for (int g = 0; g < MGPU_MAX_DEVICES; g++)
    if (c->dev[g]) return true;
  return false;
}

void mgpu__const_unref(mgpu_const_t *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  mgpu_runtime_t *rt = c->rt;
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  unlink_live(rt, c);
  bool dev = has_device_copy(c);
  if (dev) {
    c->next_live = rt->dead_consts;
    rt->dead_consts = c;
    atomic_fetch_add(&rt->n_dead_consts, 1);
  }
  MGPU_UNLOCK(&rt->lock);
  if (dev) mgpu__wake_all(rt);
  else free_host(c);
}

MGPU_API void mgpu_const_destroy(mgpu_const_t *c) {
  if (!c) return;
  if (!mgpu__handle_del(MGPU_H_CONST, c)) {
    mgpu__log(MGPU_LOG_ERROR, "mgpu_const_destroy: %p is not a live constant (destroyed twice, or after mgpu_finalize?); "
                              "ignored", (void *)c);
    return;
  }
  mgpu__const_unref(c);
}

/* GPU g's copies are taken off the dead constants under rt->lock and freed
 * after it (a driver call, which may wait for the device, never runs under
 * the lock every claim takes), a few at a time. */
void mgpu__consts_reap(mgpu_runtime_t *rt, int g, void (*free_fn)(void *ctx, void *p), void *ctx) {
  enum { BATCH = 32 };
  void *dev[BATCH];
  mgpu_const_t *gone = NULL;
  int n;
  do {
    if (atomic_load_explicit(&rt->n_dead_consts, memory_order_relaxed) == 0) return;
    n = 0;
    MGPU_LOCK(&rt->lock, MGPU_LK_RT);
    for (mgpu_const_t **p = &rt->dead_consts; *p;) {
      mgpu_const_t *c = *p;
      if (c->dev[g] && n < BATCH) {
        dev[n++] = c->dev[g];
        c->dev[g] = NULL;
      }
      if (!has_device_copy(c)) {
        *p = c->next_live;
        atomic_fetch_sub(&rt->n_dead_consts, 1);
        c->next_live = gone;
        gone = c;
      } else {
        p = &c->next_live;
      }
    }
    MGPU_UNLOCK(&rt->lock);
    for (int i = 0; i < n; i++) free_fn(ctx, dev[i]);
    while (gone) {
      mgpu_const_t *next = gone->next_live;
      free_host(gone);
      gone = next;
    }
  } while (n == BATCH);
}

/* At finalize, after every worker stopped and freed its device copies. */
void mgpu__consts_free_all(mgpu_runtime_t *rt) {
  mgpu_const_t *lists[2] = {rt->consts, rt->dead_consts};
  rt->consts = rt->dead_consts = NULL;
  for (int l = 0; l < 2; l++) {
    mgpu_const_t *c = lists[l];
    while (c) {
      mgpu_const_t *next = c->next_live;
      mgpu__handle_del(MGPU_H_CONST, c); /* constants the caller never destroyed */
      free_host(c);
      c = next;
    }
  }
}
