/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.c: a batch's first split: one range per eligible worker, sized so that
 * all are predicted to end together, then adjusted: alike GPUs split as
 * equals, far slower workers and CPU workers that add too little sit out, the
 * reserve keeps some out, probes measure what the prior rules out, and GPUs
 * split by cost where items differ in cost by position.
 */
#include "core/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Speed used for the first split: measured, or the prior. Static mode is the
 * fixed split by ratio and ignores measurements. */
static double split_speed(const mgpu__batch_t *b, int wi) {
  const mgpu_runtime_t *rt = b->rt;
  const mgpu__worker_t *w = &rt->workers[wi];
  if (!mgpu__eligible(rt, b, w)) return 0;
  if (!b->steal_ok) return w->kind == MGPU_WORKER_GPU ? mgpu__prior_ratio(rt) : 1.0;
  return mgpu__worker_speed(b, wi);
}

/* A worker's latency in the first split: its chunks' (mgpu__worker_latency),
 * and for a CPU worker the team's start (mgpu__start_cost), which no chunk
 * time holds. */
static double split_latency(const mgpu__batch_t *b, int wi) {
  double a = mgpu__worker_latency(b, wi);
  return b->rt->workers[wi].kind == MGPU_WORKER_CPU ? a + mgpu__start_cost(b->rt) : a;
}

/* GPUs of one kind measured within MGPU_ALIKE_TOL of each other split a batch
 * whose ranges go in flight whole (mgpu__ranges_in_flight) as equals: each
 * one's learnt speed carries a bias of its own, and with nothing left to
 * steal a share too large stays too large. In longer batches stealing
 * corrects the split, and each GPU keeps its own speed. */
static void pool_alike_gpus(const mgpu_runtime_t *rt, double *speed) {
  if (rt->ngpus >= 2) mgpu__pool_alike(speed, rt->gpu_group, rt->nworkers, MGPU_ALIKE_TOL);
}

/* GPUs of one group that split as equals (the same pooled speed) take the
 * mean of their latencies and peaks too, so that noise in each one's fit
 * does not tilt their shares. */
static void pool_latencies(const mgpu_runtime_t *rt, const double *speed, double *latency, double *peak) {
  for (int i = rt->ncpu; i < rt->nworkers; i++) {
    if (speed[i] <= 0 || rt->gpu_group[i] != i) continue;
    double sum = 0, sum_peak = 0;
    int n = 0;
    for (int j = i; j < rt->nworkers; j++)
      if (rt->gpu_group[j] == i && speed[j] == speed[i]) sum += latency[j], sum_peak += peak[j], n++;
    for (int j = i; j < rt->nworkers && n > 1; j++)
      if (rt->gpu_group[j] == i && speed[j] == speed[i]) latency[j] = sum / n, peak[j] = sum_peak / n;
  }
}

/* The predicted end of a split: the latest time (mgpu__share_time) of the
 * workers with a share. */
static double split_end(const double *speed, const double *latency, const double *peak, const size_t *share,
                        int n) {
  double t = 0;
  for (int i = 0; i < n; i++)
    if (share[i] > 0 && speed[i] > 0)
      t = MGPU_MAX(t, mgpu__share_time(speed[i], latency[i], peak ? peak[i] : 0, (double)share[i]));
  return t;
}

/* Whether there are two GPU workers or more, all of one kind (every GPU
 * worker follows the CPU workers). */
static bool gpus_of_one_kind(const mgpu_runtime_t *rt) {
  if (rt->nworkers - rt->ncpu < 2) return false;
  for (int i = rt->ncpu; i < rt->nworkers; i++)
    if (rt->gpu_group[i] != rt->ncpu) return false;
  return true;
}

/* Where items differ in cost by position (mgpu__prof_cuts), the GPUs with a
 * share divide the GPUs' part of the batch, [a, n) after the CPU workers'
 * ranges, into parts of equal cost. They are of one kind, so equal cost is
 * equal time; a GPU slower all the same shows dearer items and gets fewer. */
static void split_gpus_by_cost(const mgpu_runtime_t *rt, mgpu__batch_t *b, size_t *share) {
  const mgpu__model_t *m = b->model;
  if (m->prof_n != b->desc.n) return;
  size_t a = 0;
  int k = 0;
  for (int i = 0; i < rt->ncpu; i++) a += share[i];
  for (int i = rt->ncpu; i < rt->nworkers; i++) k += share[i] > 0;
  if (k < 2) return;
  size_t *cut = malloc((size_t)k * sizeof *cut);
  if (!cut) MGPU_PANIC("out of memory splitting a batch");
  if (mgpu__prof_cuts(m->prof, b->desc.n, a, k, cut)) {
    mgpu__log(MGPU_LOG_DEBUG, "kernel '%s', %zu items: %d GPUs split items %zu..%zu by the cost profile",
              b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n, k, a, b->desc.n - 1);
    int p = 0;
    for (int i = rt->ncpu; i < rt->nworkers; i++)
      if (share[i] > 0) share[i] = cut[p++];
    b->cost = malloc(sizeof *b->cost);
    if (!b->cost) MGPU_PANIC("out of memory splitting a batch");
    mgpu__cost_init(b->cost, m->prof, b->desc.n);
  }
  free(cut);
}

/* Workers that would finish fewer than MGPU_MIN_SHARE_ITEMS items in the
 * batch's predicted time, and far slower CPU workers where one item has taken
 * a CPU worker longer than that, get no first share (one item on them could
 * outlast everyone), where the others end no later than with them plus one
 * such item. They can still steal. `share` is scratch. */
static void skip_coarse(const mgpu__batch_t *b, double *speed, const double *latency, const double *peak,
                        size_t items, size_t *share) {
  const mgpu_runtime_t *rt = b->rt;
  int n = rt->nworkers;
  mgpu__split(speed, latency, peak, n, items, share);
  double end = split_end(speed, latency, peak, share, n), fastest = 0;
  if (end <= 0) return;
  for (int i = 0; i < n; i++) fastest = MGPU_MAX(fastest, speed[i]);
  /* Only far slower CPU workers are judged by the longest item, as thieves
   * are in mgpu__steal_share. */
  double item_s = mgpu__cpu_item_s(b), risk = 0;
  double *rest = malloc((size_t)n * sizeof *rest);
  if (!rest) MGPU_PANIC("out of memory splitting a batch");
  bool any = false;
  for (int i = 0; i < n; i++) {
    rest[i] = speed[i];
    bool far_slow_cpu = rt->workers[i].kind == MGPU_WORKER_CPU && speed[i] * MGPU_SLOW_SPLIT_RATIO < fastest;
    bool dear = far_slow_cpu && item_s > end;
    if (speed[i] > 0 && speed[i] < fastest && (speed[i] * end < MGPU_MIN_SHARE_ITEMS || dear)) {
      rest[i] = 0;
      any = true;
      risk = MGPU_MAX(risk, MGPU_MAX(1 / speed[i], dear ? item_s : 0));
    }
  }
  if (any) {
    mgpu__split(rest, latency, peak, n, items, share);
    double without = split_end(rest, latency, peak, share, n);
    if (without <= end + risk) {
      memcpy(speed, rest, (size_t)n * sizeof *speed);
      mgpu__log(MGPU_LOG_DEBUG,
                "kernel '%s', %zu items: workers under %g items or an item's %.3g s get no first share "
                "(predicted end %.3g s without them, %.3g s with)",
                b->kernel.name ? b->kernel.name : "(unnamed)", items, MGPU_MIN_SHARE_ITEMS, item_s, without, end);
    }
  }
  free(rest);
}

/* A probe for worker i: one item of the largest share among workers
 * [lo, hi), which holds at least one. */
static void give_probe(size_t *share, int lo, int hi, int i) {
  int from = lo;
  for (int j = lo + 1; j < hi; j++)
    if (share[j] > share[from]) from = j;
  share[from]--;
  share[i] = 1;
}

/* A CPU team that has never run the kernel and that the split leaves out
 * takes one item per eligible CPU worker from the GPUs' shares, once the GPUs
 * have spent MGPU_PROBE_MIN_S on it (these shares included) and the shares
 * outlast the team's start: the prior ratio can rate it too slow ever to get a
 * share or steal. A batch of two items or more keeps one for the GPUs. */
static void probe_cpus(const mgpu__batch_t *b, size_t *share) {
  const mgpu_runtime_t *rt = b->rt;
  const mgpu__model_t *m = b->model;
  if (!b->steal_ok || !b->cpu_ok || !b->gpu_ok || b->cpu_out) return;
  size_t gpu = 0;
  double gpu_s = 0, spent = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    bool learnt = atomic_load_explicit(&m->samples[i], memory_order_relaxed) > 0;
    if (i < rt->ncpu && (share[i] > 0 || learnt)) return;
    if (i < rt->ncpu || !learnt) continue;
    spent += atomic_load_explicit(&m->spent[i], memory_order_relaxed);
    if (share[i] == 0) continue;
    gpu += share[i];
    double v = atomic_load_explicit(&m->speed[i], memory_order_relaxed);
    if (v > 0)
      gpu_s = MGPU_MAX(gpu_s, mgpu__share_time(v, atomic_load_explicit(&m->latency[i], memory_order_relaxed),
                                               atomic_load_explicit(&m->peak[i], memory_order_relaxed),
                                               (double)share[i]));
  }
  if (spent + gpu_s < MGPU_PROBE_MIN_S || gpu_s <= mgpu__start_cost(rt)) return;
  int probed = 0;
  size_t keep = b->desc.n > 1 ? 1 : 0;
  for (int i = 0; i < rt->ncpu && gpu > keep; i++) {
    if (!mgpu__eligible(rt, b, &rt->workers[i])) continue;
    give_probe(share, rt->ncpu, rt->nworkers, i);
    gpu--;
    probed++;
  }
  if (probed)
    mgpu__log(MGPU_LOG_DEBUG,
              "kernel '%s', %zu items: %d CPU workers probe it, one item each (GPU share %.3g s, GPUs' time on it "
              "%.3g s)",
              b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n, probed, gpu_s, spent);
}

/* The mirror of probe_cpus: a GPU that has never run the kernel and that the
 * split leaves out takes one item from the CPU workers' shares once they have
 * spent MGPU_PROBE_MIN_S on it (these shares included): a ratio set far too
 * low rates it too slow to get a share or, as a thief, to take anything. A
 * batch of two items or more keeps one for the CPU workers. */
static void probe_gpus(const mgpu__batch_t *b, size_t *share) {
  const mgpu_runtime_t *rt = b->rt;
  const mgpu__model_t *m = b->model;
  if (!b->steal_ok || !b->cpu_ok || !b->gpu_ok || b->cpu_out) return;
  size_t cpu = 0;
  double cpu_s = 0, spent = 0;
  for (int i = 0; i < rt->ncpu; i++) {
    spent += atomic_load_explicit(&m->spent[i], memory_order_relaxed);
    if (share[i] == 0) continue;
    cpu += share[i];
    /* Only a measured team's time counts: unmeasured, its speed is a unit. */
    double v = atomic_load_explicit(&m->samples[i], memory_order_relaxed) > 0 ? mgpu__worker_speed(b, i) : 0;
    if (v > 0) cpu_s = MGPU_MAX(cpu_s, mgpu__worker_latency(b, i) + (double)share[i] / v);
  }
  if (spent + cpu_s < MGPU_PROBE_MIN_S) return;
  int probed = 0;
  size_t keep = b->desc.n > 1 ? 1 : 0;
  for (int i = rt->ncpu; i < rt->nworkers && cpu > keep; i++) {
    if (share[i] > 0 || atomic_load_explicit(&m->samples[i], memory_order_relaxed) > 0 ||
        !mgpu__eligible(rt, b, &rt->workers[i]))
      continue;
    give_probe(share, 0, rt->ncpu, i);
    cpu--;
    probed++;
  }
  if (probed)
    mgpu__log(MGPU_LOG_DEBUG,
              "kernel '%s', %zu items: %d GPUs probe it, one item each (CPU share %.3g s, CPU workers' time on it "
              "%.3g s)",
              b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n, probed, cpu_s, spent);
}

/* Whether the CPU workers sit the batch out: with both kinds measured, the
 * GPUs alone are predicted to end it less than MGPU_CPU_NEGLIGIBLE later than
 * with them, so that they add less than they cost the GPUs' host threads
 * (wake-ups, staging copies, ranges cut short). The team's start is left out,
 * as the GPUs' host-side start is in no model. `share` is scratch. */
static bool cpus_sit_out(const mgpu__batch_t *b, const double *speed, const double *latency, const double *peak,
                         size_t *share) {
  const mgpu_runtime_t *rt = b->rt;
  if (!b->steal_ok || !b->gpu_ok || !b->cpu_ok) return false;
  double cpu = 0;
  bool cpu_measured = false, gpu_measured = false;
  for (int i = 0; i < rt->nworkers; i++) {
    bool measured = atomic_load_explicit(&b->model->samples[i], memory_order_relaxed) > 0;
    if (rt->workers[i].kind == MGPU_WORKER_CPU) cpu += speed[i], cpu_measured |= measured;
    else gpu_measured |= measured && speed[i] > 0;
  }
  if (!cpu_measured || !gpu_measured || cpu <= 0) return false;
  /* The whole team is judged, the reserve's workers too: with only the
   * workers a reserve trial leaves in, they would sit out that trial, and
   * the trial would never be timed. */
  double *all = malloc((size_t)rt->nworkers * 3 * sizeof *all), *lat = all + rt->nworkers, *gpus = lat + rt->nworkers;
  if (!all) MGPU_PANIC("out of memory splitting a batch");
  for (int i = 0; i < rt->nworkers; i++) {
    bool cpu_worker = rt->workers[i].kind == MGPU_WORKER_CPU;
    all[i] = cpu_worker ? mgpu__worker_speed(b, i) : speed[i];
    lat[i] = cpu_worker ? mgpu__worker_latency(b, i) : latency[i];
    gpus[i] = cpu_worker ? 0 : speed[i];
  }
  mgpu__split(all, lat, peak, rt->nworkers, b->desc.n, share);
  double with = split_end(all, lat, peak, share, rt->nworkers);
  mgpu__split(gpus, lat, peak, rt->nworkers, b->desc.n, share);
  double without = split_end(gpus, lat, peak, share, rt->nworkers);
  free(all);
  if (with <= (1 - MGPU_CPU_NEGLIGIBLE) * without) return false;
  mgpu__log(MGPU_LOG_DEBUG, "kernel '%s', %zu items: the CPU workers sit out (predicted end %.3g s with them, %.3g s without)",
            b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n, with, without);
  return true;
}

/* How many of the last CPU workers sit out batch b (MGPU_RESERVE_THREADS):
 * a fixed count, or under auto the one that the kernel's timed batches found
 * faster (mgpu__reserve_pick). Only batches that a GPU runs, and that CPU
 * workers could otherwise take, have a reserve. Under rt->lock. */
static void choose_reserve(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  b->nreserve = 0;
  b->reserve_timed = false;
  b->gpu_out = false;
  if (!b->gpu_ok || !b->cpu_ok || !mgpu__any_live_gpu(rt)) return;
  int r = rt->cfg.v.reserve_threads;
  if (r != MGPU_RESERVE_AUTO) {
    b->nreserve = r;
    return;
  }
  /* A fixed split is the one its ratio names: auto's trials would change it. */
  if (!b->steal_ok) return;
  int cand = mgpu__auto_reserve(rt->ncpu);
  if (cand <= 0) return;
  /* All CPU workers out is a way where they add little, as they can cost the
   * GPUs' host side more; half out, where busy cores are taken from the
   * process (a virtual machine's vCPUs), as stalls grow with every worker that
   * computes; every GPU out, where they add little and the batch steals, as
   * their staging copies take host memory bandwidth. The trials judge. */
  double cpu = 0, gpu = 0;
  bool cpu_measured = false, gpu_measured = false;
  for (int i = 0; i < rt->nworkers; i++) {
    double s = mgpu__worker_speed(b, i);
    bool measured = atomic_load_explicit(&b->model->samples[i], memory_order_relaxed) > 0;
    if (rt->workers[i].kind == MGPU_WORKER_CPU) cpu += s, cpu_measured |= measured;
    else gpu += s, gpu_measured |= measured;
  }
  const int out[MGPU_RESERVE_LEVELS] = {[MGPU_RESERVE_ALL_IN] = 0,
                                        [MGPU_RESERVE_QUARTER_OUT] = cand,
                                        [MGPU_RESERVE_HALF_OUT] = mgpu__auto_reserve_half(rt->ncpu),
                                        [MGPU_RESERVE_CPUS_OUT] = rt->ncpu,
                                        [MGPU_RESERVE_GPUS_OUT] = 0};
  bool both = cpu_measured && gpu_measured;
  unsigned offered = MGPU_RESERVE_BIT(MGPU_RESERVE_ALL_IN) | MGPU_RESERVE_BIT(MGPU_RESERVE_QUARTER_OUT);
  if (out[MGPU_RESERVE_HALF_OUT] > 0) offered |= MGPU_RESERVE_BIT(MGPU_RESERVE_HALF_OUT);
  if (both && cpu < MGPU_CPU_OUT_TRY * (cpu + gpu)) offered |= MGPU_RESERVE_BIT(MGPU_RESERVE_CPUS_OUT);
  if (both && b->steal_ok && gpu < MGPU_GPU_OUT_TRY * (cpu + gpu)) offered |= MGPU_RESERVE_BIT(MGPU_RESERVE_GPUS_OUT);
  bool record;
  int level = mgpu__reserve_pick(b->model, b->desc.n, offered, &record);
  b->nreserve = out[level];
  b->gpu_out = level == MGPU_RESERVE_GPUS_OUT;
  b->reserve_level = level;
  b->reserve_timed = record;
}

bool mgpu__plan_split(mgpu_runtime_t *rt, mgpu__batch_t *b, size_t *share) {
  choose_reserve(rt, b);
  double *speed = calloc((size_t)rt->nworkers, sizeof(double));
  if (!speed) MGPU_PANIC("out of memory splitting a batch");
  bool any = false;
  for (int i = 0; i < rt->nworkers; i++) {
    speed[i] = split_speed(b, i);
    any |= speed[i] > 0;
  }
  if (!any) {
    free(speed);
    return false;
  }
  /* By predicted completion: each worker's latency counts against its share
   * (static mode splits by the ratio alone). */
  double *latency = NULL, *peak = NULL;
  if (b->steal_ok) {
    latency = calloc(2 * (size_t)rt->nworkers, sizeof *latency);
    if (!latency) MGPU_PANIC("out of memory splitting a batch");
    peak = latency + rt->nworkers;
    for (int i = 0; i < rt->nworkers; i++)
      if (speed[i] > 0) latency[i] = split_latency(b, i), peak[i] = mgpu__worker_peak(b, i);
  }
  if (cpus_sit_out(b, speed, latency, peak, share)) {
    b->cpu_out = true;
    b->nreserve = 0; /* the reserve plays no part: every CPU worker is out */
    b->reserve_timed = false;
    for (int i = 0; i < rt->ncpu; i++) speed[i] = 0;
  }
  if (b->steal_ok) {
    if (mgpu__ranges_in_flight(speed, rt->nworkers, b->desc.n, rt->cfg.v.streams_per_gpu)) pool_alike_gpus(rt, speed);
    pool_latencies(rt, speed, latency, peak);
    skip_coarse(b, speed, latency, peak, b->desc.n, share);
  }
  mgpu__split(speed, latency, peak, rt->nworkers, b->desc.n, share);
  probe_cpus(b, share);
  probe_gpus(b, share);
  if (mgpu__log_level() >= MGPU_LOG_DEBUG)
    for (int i = 0; i < rt->nworkers; i++)
      if (share[i] || speed[i] > 0)
        mgpu__log(MGPU_LOG_DEBUG,
                  "kernel '%s', %zu items: worker %d takes %zu (%.4g items/s, latency %.3g s, peak %.4g items/s)",
                  b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n, i, share[i], speed[i],
                  latency ? latency[i] : 0.0, peak ? peak[i] : 0.0);
  free(latency);
  /* (Under MGPU_PROF_BINS items some bins stay empty: never a profile.) */
  if (b->steal_ok && b->gpu_ok && b->desc.n >= MGPU_PROF_BINS && gpus_of_one_kind(rt)) {
    b->prof_sums = calloc((size_t)rt->ngpus * 2 * MGPU_PROF_BINS, sizeof *b->prof_sums);
    if (!b->prof_sums) MGPU_PANIC("out of memory for a batch's cost profile");
    split_gpus_by_cost(rt, b, share);
  }
  free(speed);
  return true;
}
