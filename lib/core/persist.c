/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * persist.c: what a runtime keeps of its kernel models between processes,
 * through the store (lib/store): each worker's class, a named kernel's
 * stored lines read at its first batch as a prior, and what its workers
 * learnt written at finalize and, in a long run, by the first submit or
 * mgpu_run MGPU_STORE_PERIOD_S after the last write.
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void mgpu__persist_init(mgpu_runtime_t *rt) {
  char cls[MGPU_STORE_CLASS_LEN];
  rt->nclasses = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    const mgpu__worker_t *w = &rt->workers[i];
    if (w->kind == MGPU_WORKER_CPU) {
      mgpu__store_class_cpu(rt->ncpu, cls, sizeof cls);
    } else {
      /* An emulated device is the hardware its settings describe. */
      char emul[160];
      const mgpu__testcfg_t *t = &rt->cfg.test;
      snprintf(emul, sizeof emul, "speed%g_latency%g_width%lld_overlap%d_mem%lld", t->emulate_speed,
               t->emulate_latency, t->emulate_width, t->emulate_overlap, t->emulate_mem);
      mgpu__store_class_gpu(&rt->gpu_info[w->gpu], emul, cls, sizeof cls);
    }
    int c = 0;
    while (c < rt->nclasses && strcmp(rt->classes[c], cls) != 0) c++;
    if (c == rt->nclasses) snprintf(rt->classes[rt->nclasses++], sizeof rt->classes[0], "%s", cls);
    rt->worker_class[i] = c;
  }
  rt->store_saved = mgpu__now();
}

static bool stored(const mgpu_runtime_t *rt, const mgpu_kernel_t *k) {
  return rt->cfg.v.model_dir && k->name && k->name[0];
}

void mgpu__persist_load(mgpu_runtime_t *rt, mgpu__model_t *m) {
  if (!stored(rt, &m->key)) return;
  double now = (double)time(NULL);
  bool warned = false, found = false;
  char other[1400] = "";
  for (int c = 0; c < rt->nclasses; c++) {
    mgpu__store_entry_t e;
    char why[1400] = "";
    int rc = mgpu__store_lookup(rt->cfg.v.model_dir, &m->key, m->footprint, rt->classes[c], now, MGPU_STORE_MAX_AGE_S,
                                &e, why, sizeof why);
    if (rc < 0 && !warned) {
      mgpu__log(MGPU_LOG_WARN, "kernel '%s': the stored model is not used: %s", m->key.name, why);
      warned = true;
    }
    if (rc == 2 && !other[0]) snprintf(other, sizeof other, "%s", why);
    if (rc != 0) continue;
    found = true;
    for (int w = 0; w < rt->nworkers; w++)
      if (rt->worker_class[w] == c) mgpu__model_seed(m, w, e.latency, e.cost, e.knee);
    if (e.reserve >= 0 && rt->workers[0].kind == MGPU_WORKER_CPU && rt->worker_class[0] == c)
      mgpu__reserve_prefer(m, e.reserve);
    mgpu__log(MGPU_LOG_DEBUG, "kernel '%s': stored model of %s: latency %.3g s, %.3g s/item, knee %.0f items",
              m->key.name, rt->classes[c], e.latency, e.cost, e.knee);
  }
  /* A class that ran nothing of the kernel (the CPU team of a GPU-only run)
   * has no entry: only a file of other machines' classes alone is news. */
  if (!found && !warned && other[0])
    mgpu__log(MGPU_LOG_WARN, "kernel '%s': the stored model is not used: %s", m->key.name, other);
}

/* One kernel's entries as its workers published them: per class, the
 * worker of that class that learnt from the most chunks. */
typedef struct {
  mgpu__model_t *model;
  uint64_t news;  /* mgpu__model_news of the model when taken */
  mgpu_kernel_t key;
  uint64_t footprint;
  int n;
  mgpu__store_entry_t e[MGPU_STORE_MAX_ENTRIES];
} snap_t;

static void snap_model(const mgpu_runtime_t *rt, mgpu__model_t *m, double now, snap_t *s) {
  s->model = m;
  s->news = mgpu__model_news(m);
  s->key = m->key;
  s->footprint = m->footprint;
  s->n = 0;
  int best = mgpu__reserve_best(m);
  for (int c = 0; c < rt->nclasses && s->n < MGPU_STORE_MAX_ENTRIES; c++) {
    mgpu__store_entry_t e = {.reserve = -1, .saved = now};
    bool any = false;
    for (int w = 0; w < rt->nworkers; w++) {
      double a, cost, knee, samples;
      if (rt->worker_class[w] != c || !mgpu__model_learnt(m, w, &a, &cost, &knee, &samples) || samples <= e.samples)
        continue;
      e.latency = a, e.cost = cost, e.knee = knee, e.samples = samples;
      any = true;
    }
    if (!any) continue;
    if (rt->workers[0].kind == MGPU_WORKER_CPU && rt->worker_class[0] == c) e.reserve = best;
    snprintf(e.cls, sizeof e.cls, "%s", rt->classes[c]);
    s->e[s->n++] = e;
  }
}

void mgpu__persist_save(mgpu_runtime_t *rt) {
  const char *dir = rt->cfg.v.model_dir;
  if (!dir) return;
  double now = (double)time(NULL);
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  int n = 0;
  for (const mgpu__model_t *m = rt->models; m; m = m->next) n += stored(rt, &m->key);
  snap_t *snaps = n ? malloc((size_t)n * sizeof *snaps) : NULL;
  mgpu__store_put_t *puts = n ? malloc((size_t)n * sizeof *puts) : NULL;
  int k = 0;
  for (mgpu__model_t *m = rt->models; m && snaps && puts; m = m->next) {
    if (!stored(rt, &m->key) || mgpu__model_news(m) == m->stored_news) continue;
    snap_model(rt, m, now, &snaps[k]);
    if (snaps[k].n) k++;
  }
  MGPU_UNLOCK(&rt->lock);
  /* The files are written with no lock held: the workers go on meanwhile. */
  for (int i = 0; i < k; i++)
    puts[i] = (mgpu__store_put_t){
        .k = &snaps[i].key, .footprint = snaps[i].footprint, .e = snaps[i].e, .n = snaps[i].n};
  char why[1400];
  if (k && mgpu__store_write_many(dir, puts, k, why, sizeof why) != 0 && !atomic_exchange(&rt->store_warned, 1))
    mgpu__log(MGPU_LOG_WARN, "the model store is not written: %s", why);
  /* A model counts as stored once its file is written (or kept): one that
   * failed is tried again at the next save. */
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  for (int i = 0; i < k; i++)
    if (puts[i].rc == 0) snaps[i].model->stored_news = snaps[i].news;
  MGPU_UNLOCK(&rt->lock);
  free(puts);
  free(snaps);
}

void mgpu__persist_tick(mgpu_runtime_t *rt) {
  /* Never from a kernel on a worker's thread: a save must not hold up a chunk. */
  if (!rt->cfg.v.model_dir || mgpu__self_rt == rt) return;
  double now = mgpu__now(), last = atomic_load(&rt->store_saved);
  if (now - last < MGPU_STORE_PERIOD_S || !atomic_compare_exchange_strong(&rt->store_saved, &last, now)) return;
  mgpu__persist_save(rt);
}

MGPU_API int mgpu_model_stored(const mgpu_runtime_t *rt, const mgpu_kernel_t *k, uint64_t footprint,
                               mgpu_worker_kind_t kind) {
  if (mgpu__check_rt(rt, "mgpu_model_stored") != MGPU_OK) return 0;
  if (!k || !stored(rt, k) || (kind != MGPU_WORKER_CPU && kind != MGPU_WORKER_GPU)) return 0;
  double now = (double)time(NULL);
  int classes = 0;
  for (int c = 0; c < rt->nclasses; c++) {
    bool used = false;
    for (int w = 0; w < rt->nworkers; w++) used |= rt->worker_class[w] == c && rt->workers[w].kind == kind;
    if (!used) continue;
    mgpu__store_entry_t e;
    char why[1400];
    if (mgpu__store_lookup(rt->cfg.v.model_dir, k, footprint, rt->classes[c], now, MGPU_STORE_MAX_AGE_S, &e, why,
                           sizeof why) != 0)
      return 0;
    classes++;
  }
  return classes > 0;
}
