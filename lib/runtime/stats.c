/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats.c: the runtime's statistics over its life (mgpu_runtime_stats) and
 * their printout.
 */
#include "runtime/runtime.h"

#include <stdio.h>
#include <string.h>

MGPU_API mgpu_status_t mgpu_runtime_stats(const mgpu_runtime_t *rt, mgpu_stats_t *user) {
  mgpu_status_t st = mgpu__check_rt(rt, "mgpu_runtime_stats");
  if (st != MGPU_OK) return st;
  if (!user) return mgpu__fail(MGPU_EINVAL, "mgpu_runtime_stats: stats is NULL");
  mgpu__stats_ref_t ref;
  st = mgpu__stats_ref("mgpu_runtime_stats", user, &ref);
  if (st != MGPU_OK) return st;
  mgpu_stats_t s;
  mgpu__runtime_stats(rt, &s, &ref);
  mgpu__stats_put(&ref, &s);
  return MGPU_OK;
}

void mgpu__runtime_stats(const mgpu_runtime_t *rt, mgpu_stats_t *s, const mgpu__stats_ref_t *r) {
  memset(s, 0, sizeof *s);
  s->nworkers = rt->nworkers;
  s->batches = atomic_load(&rt->batches_done);
  s->gpus_out_batches = atomic_load(&rt->gpus_out_batches);
  for (int i = 0; i < rt->nworkers; i++) {
    mgpu__worker_t *w = &rt->workers[i];
    mgpu_worker_stats_t ws = {
        .kind = w->kind,
        .device = w->gpu >= 0 ? rt->gpu_index[w->gpu] : -1,
        .items = atomic_load(&w->items),
        .chunks = atomic_load(&w->chunks),
        .steals = atomic_load(&w->steals),
        .retries = atomic_load(&w->retries),
        .busy_s = 1e-9 * (double)atomic_load(&w->busy_ns),
        .batch_cap = w->gpu >= 0 ? mgpu__gpu_cap((mgpu_runtime_t *)rt, w->gpu) : 0,
        .staged_bytes = atomic_load(&w->staged),
    };
    s->items += ws.items;
    s->chunks += ws.chunks;
    s->steals += ws.steals;
    s->retries += ws.retries;
    mgpu__stats_put_worker(r, i, &ws);
  }
  s->wall_s = mgpu__now() - rt->t_init;
}

MGPU_API void mgpu_stats_print(const mgpu_runtime_t *rt, const mgpu_stats_t *user, FILE *fp) {
  if (!user || !fp) return;
  mgpu__stats_ref_t ref;
  if (mgpu__stats_ref("mgpu_stats_print", user, &ref) != MGPU_OK) {
    fprintf(fp, "(statistics not printed: %s)\n", mgpu_last_error());
    return;
  }
  const mgpu_stats_t *s = &ref.in;
  uint64_t total = s->items ? s->items : 1;
  fprintf(fp, "%-8s %-7s %12s %7s %9s %7s %8s %7s %11s\n", "worker", "kind", "items", "share", "chunks", "steals",
          "retries", "busy", "staged MiB");
  int n = ref.worker ? MGPU_MIN(s->nworkers, ref.worker_cap) : 0;
  for (int i = 0; i < n; i++) {
    mgpu_worker_stats_t ws;
    mgpu__stats_get_worker(&ref, i, &ws);
    const mgpu_worker_stats_t *w = &ws;
    char kind[16];
    if (w->kind == MGPU_WORKER_GPU) snprintf(kind, sizeof kind, "gpu%d", w->device);
    else snprintf(kind, sizeof kind, "cpu");
    double busy = s->wall_s > 0 ? 100.0 * w->busy_s / s->wall_s : 0;
    fprintf(fp, "%-8d %-7s %12llu %6.1f%% %9llu %7llu %8llu %6.1f%% %11.1f\n", i, kind, (unsigned long long)w->items,
            100.0 * (double)w->items / (double)total, (unsigned long long)w->chunks, (unsigned long long)w->steals,
            (unsigned long long)w->retries, busy > 100 ? 100 : busy, (double)w->staged_bytes / (1 << 20));
  }
  fprintf(fp, "total: %llu items, %llu chunks, %llu steals, %llu retries, %.6f s\n", (unsigned long long)s->items,
          (unsigned long long)s->chunks, (unsigned long long)s->steals, (unsigned long long)s->retries, s->wall_s);
  MGPU_UNUSED(rt);
}
