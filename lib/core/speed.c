/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * speed.c: which workers take part in a batch, and how fast each is taken to
 * be: the rate and latency its chunk-time fit predicts, the CPU team's mean,
 * or the prior device-to-core ratio before the fit is known. Read by the
 * first split, by claims and by thieves. Also the runtime's list of kernel
 * models, which these read.
 */
#include "core/core.h"

#include <string.h>

static bool mgpu__worker_alive(const mgpu__worker_t *w) { return !atomic_load_explicit(&w->retired, memory_order_relaxed); }

bool mgpu__any_live_gpu(const mgpu_runtime_t *rt) {
  for (int i = rt->ncpu; i < rt->nworkers; i++)
    if (mgpu__worker_alive(&rt->workers[i])) return true;
  return false;
}

/* Whether GPU worker w can run items of b: not retired, and with room for one. */
static bool gpu_runs(const mgpu__batch_t *b, const mgpu__worker_t *w) {
  return mgpu__worker_alive(w) && !atomic_load_explicit(&b->ranges[w->id].no_room, memory_order_relaxed);
}

static bool any_gpu_runs(const mgpu_runtime_t *rt, const mgpu__batch_t *b) {
  for (int i = rt->ncpu; i < rt->nworkers; i++)
    if (gpu_runs(b, &rt->workers[i])) return true;
  return false;
}

bool mgpu__eligible(const mgpu_runtime_t *rt, const mgpu__batch_t *b, const mgpu__worker_t *w) {
  if (w->kind == MGPU_WORKER_GPU) return b->gpu_ok && !b->gpu_out && gpu_runs(b, w);
  /* Reserve workers, and CPU workers that sit a batch out, take a batch that
   * GPUs also run only once no GPU is left to do it; so do all CPU workers
   * with GPU-only work. */
  bool gpus = b->gpu_ok && any_gpu_runs(rt, b);
  if (b->nreserve > 0 && w->id >= rt->ncpu - b->nreserve && gpus) return false;
  return (b->cpu_ok && !b->cpu_out) || (b->gpu_ok && !gpus);
}

/* Ratio of one GPU to one CPU worker before any measurement. */
double mgpu__prior_ratio(const mgpu_runtime_t *rt) {
  if (rt->cfg.v.device_to_core_ratio > 0) return rt->cfg.v.device_to_core_ratio;
  return rt->prior_ratio > 0 ? rt->prior_ratio : 1.0;
}

/* Whether batch b lies within the largest size class GPU wi has run: any
 * share of it is a chunk size its fit has timed. */
static bool within_reach(const mgpu__batch_t *b, int wi) {
  return atomic_load_explicit(&b->model->reach[wi], memory_order_relaxed) * MGPU_FIT_SIZE_CLASS >= (double)b->desc.n;
}

double mgpu__worker_speed(const mgpu__batch_t *b, int wi) {
  const mgpu_runtime_t *rt = b->rt;
  const mgpu__worker_t *w = &rt->workers[wi];
  if (w->kind == MGPU_WORKER_GPU && !gpu_runs(b, w)) return 0;
  const mgpu__model_t *m = b->model;
  double s = atomic_load_explicit(&m->speed[wi], memory_order_relaxed);
  /* The CPU workers are alike cores of one team and share its rate: its items
   * over its seconds, summed over their recent chunks, so that dear items
   * count in full. A worker's own rate reflects which items it happened to
   * take, and a core that once took dear ones would never steal back. */
  if (s > 0 && w->kind == MGPU_WORKER_GPU && atomic_load_explicit(&m->known[wi], memory_order_relaxed)) return s;
  /* A CPU worker, or a GPU whose fit is not known: the mean of measured
   * workers of the same kind (known GPUs only), else convert through the
   * device-to-core ratio, else unit speeds. */
  double items = 0, secs = 0, gpu = 0;
  int ncpu = 0, ngpu = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    if (rt->workers[i].kind == MGPU_WORKER_CPU) {
      double t = atomic_load_explicit(&m->mean_secs[i], memory_order_relaxed);
      if (t <= 0) continue;
      items += atomic_load_explicit(&m->mean_items[i], memory_order_relaxed);
      secs += t;
      ncpu++;
    } else if (atomic_load_explicit(&m->known[i], memory_order_relaxed)) {
      double v = atomic_load_explicit(&m->speed[i], memory_order_relaxed);
      if (v > 0) gpu += v, ngpu++;
    }
  }
  double ratio = mgpu__prior_ratio(rt);
  double cpu = ncpu ? items / secs : 0; /* the team's rate per worker */
  if (w->kind == MGPU_WORKER_CPU) {
    if (ncpu) return cpu;
    if (ngpu) return gpu / ngpu / ratio;
    return 1.0;
  }
  /* A GPU still growing its chunks is no slower than the prior: its small
   * first chunks show its latency more than its rate. Beside measured CPU
   * workers, on a batch within its largest size class, its fit has timed
   * every share the batch can give it, and its own speed stands. */
  if (s > 0 && ncpu && within_reach(b, wi)) return s;
  double prior = ngpu ? gpu / ngpu : ncpu ? cpu * ratio : ratio;
  return MGPU_MAX(s, prior);
}

double mgpu__worker_peak(const mgpu__batch_t *b, int wi) {
  const mgpu__model_t *m = b->model;
  if (b->rt->workers[wi].kind != MGPU_WORKER_GPU) return 0;
  double s = atomic_load_explicit(&m->speed[wi], memory_order_relaxed);
  if (!(s > 0) || !atomic_load_explicit(&m->known[wi], memory_order_relaxed)) return 0;
  return atomic_load_explicit(&m->peak[wi], memory_order_relaxed);
}

double mgpu__worker_latency(const mgpu__batch_t *b, int wi) {
  const mgpu_runtime_t *rt = b->rt;
  const mgpu__model_t *m = b->model;
  if (rt->workers[wi].kind == MGPU_WORKER_GPU) return atomic_load_explicit(&m->latency[wi], memory_order_relaxed);
  double sum = 0;
  int n = 0;
  for (int i = 0; i < rt->ncpu; i++)
    if (atomic_load_explicit(&m->samples[i], memory_order_relaxed) > 0)
      sum += atomic_load_explicit(&m->latency[i], memory_order_relaxed), n++;
  return n ? sum / n : 0;
}

double mgpu__start_cost(const mgpu_runtime_t *rt) {
  return atomic_load_explicit(&rt->start_cost, memory_order_relaxed);
}

void mgpu__start_cost_learn(mgpu_runtime_t *rt, double s) {
  if (!(s >= 0)) return;
  /* A start far over the mean (a worker descheduled, or finishing a staging
   * copy) counts as MGPU_FIT_CLIP times the mean at most, as a stalled chunk
   * does in a fit: one would otherwise keep the CPU workers out of short
   * batches for many batches. A start that stays longer still raises it. */
  double old = atomic_load_explicit(&rt->start_cost, memory_order_relaxed), next;
  do next = old > 0 ? old + MGPU_TEAM_START_WEIGHT * (MGPU_MIN(s, MGPU_FIT_CLIP * old) - old) : s;
  while (!atomic_compare_exchange_weak_explicit(&rt->start_cost, &old, next, memory_order_relaxed,
                                                memory_order_relaxed));
}

mgpu__model_t *mgpu__model_get(mgpu_runtime_t *rt, const mgpu_kernel_t *k, uint64_t footprint) {
  for (mgpu__model_t *m = rt->models; m; m = m->next)
    if (m->footprint == footprint && mgpu__model_same_kernel(&m->key, k)) return m;
  mgpu__model_t *m = mgpu__model_new(k, footprint, rt->nworkers);
  if (!m) MGPU_PANIC("out of memory for a kernel model");
  m->next = rt->models;
  rt->models = m;
  mgpu__persist_load(rt, m);
  return m;
}

void mgpu__models_free(mgpu_runtime_t *rt) {
  mgpu__model_t *m = rt->models;
  while (m) {
    mgpu__model_t *next = m->next;
    mgpu__model_free(m);
    m = next;
  }
  rt->models = NULL;
}

/* Whether two GPUs are of one kind: the same model with the same
 * multiprocessors and clock (emulated devices, numbered in their names, are
 * all of one kind). */
static bool same_kind(const mgpu_device_info_t *a, const mgpu_device_info_t *b) {
  if (a->emulated != b->emulated || a->sm_count != b->sm_count || a->clock_khz != b->clock_khz ||
      a->cc_major != b->cc_major || a->cc_minor != b->cc_minor)
    return false;
  return a->emulated || strcmp(a->name, b->name) == 0;
}

void mgpu__gpu_groups(const mgpu_runtime_t *rt, int *group) {
  for (int i = 0; i < rt->nworkers; i++) {
    group[i] = -1;
    if (rt->workers[i].kind != MGPU_WORKER_GPU) continue;
    int g = rt->workers[i].gpu;
    for (int j = rt->ncpu; j <= i; j++)
      if (same_kind(&rt->gpu_info[rt->workers[j].gpu], &rt->gpu_info[g])) {
        group[i] = j;
        break;
      }
  }
}

double mgpu__cpu_items_cost(const mgpu__batch_t *b, int wi, double busy, size_t done, double calls_s) {
  if (done == 0) return 0;
  /* No less than the worker's line gives an item, nor than
   * MGPU_ITEM_COST_MIN_SHARE of the time over the items. */
  double peak = atomic_load_explicit(&b->model->peak[wi], memory_order_relaxed);
  double net = busy - calls_s;
  net = MGPU_MAX(net, MGPU_MAX(peak > 0 ? (double)done / peak : 0, MGPU_ITEM_COST_MIN_SHARE * busy));
  return net / (double)done;
}

/* The longest one item of this kernel is known to take a CPU worker: the
 * inverse of the slowest chunk rate any of them has seen (a CPU worker far
 * slower than a GPU has chunks of an item or a few; a GPU's slowest chunk says
 * nothing of one item). 0 before any measurement. */
double mgpu__cpu_item_s(const mgpu__batch_t *b) {
  const mgpu_runtime_t *rt = b->rt;
  double slowest = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    if (rt->workers[i].kind != MGPU_WORKER_CPU) continue;
    double v = atomic_load_explicit(&b->model->slow[i], memory_order_relaxed);
    if (v > 0 && (slowest == 0 || v < slowest)) slowest = v;
  }
  return slowest > 0 ? 1.0 / slowest : 0;
}
