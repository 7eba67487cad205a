/*
 * sched.c: who computes which items. Each active batch gives every eligible
 * worker one contiguous range proportional to its speed; a worker takes chunks
 * from the front of its own range, and when that is empty it steals from the
 * back of the range that would finish last, taking the share that equalises both
 * finish times, and never a piece it would finish later than the owner (the tail
 * rule).
 *
 * Locking: rt->lock guards the active list and batch activation/completion; a
 * range lock guards one worker's range of one batch. The order is rt->lock, then
 * a range lock; a thread never holds two range locks. Range fields are atomics
 * so that thieves may read them without the lock to pick a victim; they change
 * only under the lock.
 */
#include "mgpurt_int.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define SLOW_THIEF_MARGIN 4.0
#define SLOW_SPLIT_RATIO 8.0 /* "far slower": under 1/8 of the fastest */
#define SLOW_SPLIT_SHARE 0.1 /* ...and all of them together under 10% of the total */
#define MIN_SHARE_ITEMS 4.0
#define CPU_NEGLIGIBLE 0.02 /* CPU workers together under 2% of the machine: they sit out */
#define CPU_OUT_TRY 0.2     /* ...under 20%: auto also tries them all out */
#define ALIKE_TOL 0.2       /* GPUs of one kind measured within 20% of their median: split as equals */
#define range_begin(r) atomic_load_explicit(&(r)->begin, memory_order_relaxed)

/* A range's lock, counted per thread so that the device back ends can refuse
 * a driver call made under it (mgpu__range_locks_held). */
static void range_lock(mgpu__range_t *r) {
  MGPU_PTHREAD_CHECK(pthread_mutex_lock(&r->lock));
  mgpu__range_locks_held++;
}
static void range_unlock(mgpu__range_t *r) {
  mgpu__range_locks_held--;
  MGPU_PTHREAD_CHECK(pthread_mutex_unlock(&r->lock));
}

/* --------------------------------------------------------------- split */

void mgpu__split(const double *speed, int n, size_t items, size_t *share) {
  double total = 0;
  for (int i = 0; i < n; i++) total += speed[i] > 0 ? speed[i] : 0;
  for (int i = 0; i < n; i++) share[i] = 0;
  if (total <= 0 || items == 0) return;
  /* Each share is capped by what is left, so the total never passes items
   * nor wraps, however large items is (a double rounds SIZE_MAX up to 2^64). */
  size_t given = 0;
  for (int i = 0; i < n; i++) {
    if (speed[i] <= 0) continue;
    double exact = floor((double)items * (speed[i] / total));
    size_t left = items - given;
    share[i] = exact >= (double)left ? left : (size_t)exact;
    given += share[i];
  }
  /* Each leftover item goes to the worker that would finish it first, so no
   * worker receives the whole remainder and a slow worker gets none it would
   * finish after everyone else (the tail rule, applied to the split). */
  while (given < items) {
    int best = -1;
    double best_t = 0;
    for (int i = 0; i < n; i++) {
      if (speed[i] <= 0) continue;
      double t = (double)(share[i] + 1) / speed[i];
      if (best < 0 || t < best_t) best = i, best_t = t;
    }
    share[best]++;
    given++;
  }
}

/* --------------------------------------------------------------- speeds */

static bool worker_alive(const mgpu__worker_t *w) { return !atomic_load_explicit(&w->retired, memory_order_relaxed); }

static bool any_live_gpu(const mgpu_runtime_t *rt) {
  for (int i = rt->ncpu; i < rt->nworkers; i++)
    if (worker_alive(&rt->workers[i])) return true;
  return false;
}

static bool eligible(const mgpu_runtime_t *rt, const mgpu__batch_t *b, const mgpu__worker_t *w) {
  if (w->kind == MGPU_WORKER_GPU) return b->gpu_ok && worker_alive(w);
  /* Reserve workers take a batch that GPUs also run only once no GPU is left
   * to do it; so do all CPU workers with GPU-only work. */
  if (b->nreserve > 0 && w->id >= rt->ncpu - b->nreserve && b->gpu_ok && any_live_gpu(rt)) return false;
  return (b->cpu_ok && !b->cpu_out) || (b->gpu_ok && !any_live_gpu(rt));
}

/* Ratio of one GPU to one CPU worker before any measurement. */
static double prior_ratio(const mgpu_runtime_t *rt) {
  if (rt->cfg.v.device_to_core_ratio > 0) return rt->cfg.v.device_to_core_ratio;
  return rt->prior_ratio > 0 ? rt->prior_ratio : 1.0;
}

double mgpu__worker_speed(const mgpu__batch_t *b, int wi) {
  const mgpu_runtime_t *rt = b->rt;
  const mgpu__worker_t *w = &rt->workers[wi];
  if (!worker_alive(w)) return 0;
  const mgpu__model_t *m = b->model;
  double s = atomic_load_explicit(&m->speed[wi], memory_order_relaxed);
  /* The CPU workers are alike cores of one team: they share the team's mean
   * rate. A worker's own items/s reflects which items it happened to take
   * (items differ in cost), and judged by it a core that once took dear items
   * would look slow, get a small share and never steal back. */
  if (s > 0 && w->kind == MGPU_WORKER_GPU) return s;
  /* A CPU worker, or not measured: the mean of measured workers of the same
   * kind, else convert through the device-to-core ratio, else unit speeds. */
  double cpu = 0, gpu = 0;
  int ncpu = 0, ngpu = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    double v = atomic_load_explicit(&m->speed[i], memory_order_relaxed);
    if (v <= 0) continue;
    if (rt->workers[i].kind == MGPU_WORKER_CPU) cpu += v, ncpu++;
    else gpu += v, ngpu++;
  }
  double ratio = prior_ratio(rt);
  if (w->kind == MGPU_WORKER_CPU) {
    if (ncpu) return cpu / ncpu;
    if (ngpu) return gpu / ngpu / ratio;
    return 1.0;
  }
  if (ngpu) return gpu / ngpu;
  if (ncpu) return cpu / ncpu * ratio;
  return ratio;
}

/* Speed used for the first split: measured, or the prior. Static mode ignores
 * measurements: it is the fixed split by ratio of the older runtimes. */
static double split_speed(const mgpu__batch_t *b, int wi) {
  const mgpu_runtime_t *rt = b->rt;
  const mgpu__worker_t *w = &rt->workers[wi];
  if (!eligible(rt, b, w)) return 0;
  if (!b->steal_ok) return w->kind == MGPU_WORKER_GPU ? prior_ratio(rt) : 1.0;
  return mgpu__worker_speed(b, wi);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void mgpu__pool_alike(double *speed, const int *group, int n, double tol) {
  double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
  if (!v) MGPU_PANIC("out of memory splitting a batch");
  for (int g = 0; g < n; g++) {
    if (group[g] != g) continue; /* each group once, at its first member */
    int k = 0;
    for (int i = 0; i < n; i++)
      if (group[i] == g && speed[i] > 0) v[k++] = speed[i];
    if (k < 2) continue;
    /* Around the median, so that one really slower GPU does not move the
     * centre away from the others. */
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    double mid = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2, pool = 0;
    int np = 0;
    for (int i = 0; i < n; i++)
      if (group[i] == g && speed[i] > 0 && fabs(speed[i] - mid) <= tol * mid) pool += speed[i], np++;
    if (np < 2) continue;
    for (int i = 0; i < n; i++)
      if (group[i] == g && speed[i] > 0 && fabs(speed[i] - mid) <= tol * mid) speed[i] = pool / np;
  }
  free(v);
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

bool mgpu__ranges_in_flight(const double *speed, int n, size_t items, int streams) {
  double total = 0;
  for (int i = 0; i < n; i++) total += speed[i];
  return total > 0 && (double)items / total < (streams + 1) * MGPU_GPU_TARGET_S;
}

/* Exact, unlike a look at the ranges: a steal empties part of one range
 * before it fills another, and a requeue drops its flag before it installs. */
bool mgpu__all_claimed(const mgpu__batch_t *b) {
  return atomic_load_explicit(&b->unclaimed, memory_order_acquire) == 0;
}

/* GPUs of one kind start a short batch with equal shares unless their
 * measured speeds differ by more than ALIKE_TOL. Each GPU's learned speed
 * carries its own bias, stable from batch to batch (when its chunks start
 * and end against the others', the host thread's timing), and where a GPU's
 * whole range goes in flight at once (mgpu__ranges_in_flight) nothing is
 * left to steal, so a share too large stays too large. On 4 x H200, GPU-only
 * mulmod 10000 (4 chunks a GPU) gave the four GPUs 249 000 to 274 000 of the
 * 1 048 576 items, batch after batch, where equal shares ended within 0.1 ms
 * of each other; past about 270 000 items a GPU needs another wave of its
 * multiprocessors, and steal took 7.0-7.2 ms against static's 6.3 (0.955x;
 * 1.005x pooled). Longer batches keep each GPU's own speed: stealing
 * corrects their split, and on pageable arrays the GPUs' speeds really
 * differ (their host threads' share of the copying): pooled there, mulmod 10
 * and sha256 ran 2-5% slower on 4 x H200. A GPU slower than the tolerance
 * keeps its own speed in any batch. */
static void pool_alike_gpus(const mgpu_runtime_t *rt, double *speed) {
  if (rt->ngpus >= 2) mgpu__pool_alike(speed, rt->gpu_group, rt->nworkers, ALIKE_TOL);
}

/* When the far slower workers add little in all, each starts with the share
 * of a worker SLOW_THIEF_MARGIN times slower still, and steals the rest later
 * under the same margin. Its range then ends early instead of late: the fast workers do
 * not finish the batch by stealing many small ranges, one launch each, and an
 * expensive item cannot strand a slow worker at the very end. */
static void damp_slow(double *speed, int n) {
  double fastest = 0, total = 0, slow = 0;
  for (int i = 0; i < n; i++) fastest = MGPU_MAX(fastest, speed[i]), total += speed[i];
  for (int i = 0; i < n; i++)
    if (speed[i] > 0 && speed[i] * SLOW_SPLIT_RATIO < fastest) slow += speed[i];
  /* Only when the slow workers add little: where they carry a real part of the
   * batch, their full share is worth more than a clean tail. */
  if (slow > SLOW_SPLIT_SHARE * total) return;
  for (int i = 0; i < n; i++)
    if (speed[i] > 0 && speed[i] * SLOW_SPLIT_RATIO < fastest) speed[i] /= SLOW_THIEF_MARGIN;
}

/* Whether there are two GPU workers or more, all of one kind (every GPU
 * worker follows the CPU workers). */
static bool gpus_of_one_kind(const mgpu_runtime_t *rt) {
  if (rt->nworkers - rt->ncpu < 2) return false;
  for (int i = rt->ncpu; i < rt->nworkers; i++)
    if (rt->gpu_group[i] != rt->ncpu) return false;
  return true;
}

/* Where the kernel's items differ in cost by position (mgpu__prof_cuts), the
 * GPUs that have a share divide the GPUs' part of the batch, [a, n) after the
 * CPU workers' ranges, into parts of equal cost instead of equal items per
 * learnt speed. They are of one kind, so equal cost is equal time; a GPU that
 * is slower all the same (its host thread's copying) shows as dearer items
 * where it worked, and gets fewer. */
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

/* The longest one item of this kernel is known to take a CPU worker: the
 * inverse of the slowest chunk rate any of them has seen (a CPU worker far
 * slower than a GPU has chunks of an item or a few; a GPU's slowest chunk says
 * nothing of one item). 0 before any measurement. */
static double cpu_item_s(const mgpu__batch_t *b) {
  const mgpu_runtime_t *rt = b->rt;
  double slowest = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    if (rt->workers[i].kind != MGPU_WORKER_CPU) continue;
    double v = atomic_load_explicit(&b->model->slow[i], memory_order_relaxed);
    if (v > 0 && (slowest == 0 || v < slowest)) slowest = v;
  }
  return slowest > 0 ? 1.0 / slowest : 0;
}

/* A worker that would finish fewer than MIN_SHARE_ITEMS items in the time the
 * whole batch is expected to take, or a far slower CPU worker when an item
 * has taken a CPU worker longer than that time, gets no first share: one item on it could
 * outlast everyone (an image row on a CPU core against a GPU that does the
 * whole image in less). It can still steal under the tail rule. */
static void skip_coarse(const mgpu__batch_t *b, double *speed, size_t items) {
  const mgpu_runtime_t *rt = b->rt;
  int n = rt->nworkers;
  double total = 0, fastest = 0;
  for (int i = 0; i < n; i++) total += speed[i], fastest = MGPU_MAX(fastest, speed[i]);
  if (total <= 0) return;
  double makespan = (double)items / total;
  /* Only far slower CPU workers are judged by the longest item, as thieves
   * are in mgpu__steal_share. */
  double item_s = cpu_item_s(b);
  for (int i = 0; i < n; i++) {
    bool far_slow_cpu = rt->workers[i].kind == MGPU_WORKER_CPU && speed[i] * SLOW_SPLIT_RATIO < fastest;
    if (speed[i] > 0 && speed[i] < fastest &&
        (speed[i] * makespan < MIN_SHARE_ITEMS || (far_slow_cpu && item_s > makespan)))
      speed[i] = 0;
  }
}

/* Whether the CPU workers should sit out a batch: all of them together are
 * measured to add less than CPU_NEGLIGIBLE to what the GPUs (also measured) do
 * on this kernel. What they would add is then less than what they cost the
 * GPUs: busy cores delay the GPU host threads' wake-ups and staging copies,
 * and their thieves cut GPU ranges short. On 4 x H200 with 60 CPU workers,
 * where those add 0.5% (mulmod 1000) or 0.15% (mulmod 10000), steal ran at
 * 0.54-0.96 of the GPUs alone, and 0.74 on pinned arrays. Idle, they still
 * help with the GPUs' staging copies. */
static bool cpus_sit_out(const mgpu__batch_t *b, const double *speed) {
  const mgpu_runtime_t *rt = b->rt;
  if (!b->steal_ok || !b->gpu_ok || !b->cpu_ok) return false;
  double cpu = 0, gpu = 0;
  bool cpu_measured = false, gpu_measured = false;
  for (int i = 0; i < rt->nworkers; i++) {
    bool measured = atomic_load_explicit(&b->model->samples[i], memory_order_relaxed) > 0;
    if (rt->workers[i].kind == MGPU_WORKER_CPU) cpu += speed[i], cpu_measured |= measured;
    else gpu += speed[i], gpu_measured |= measured && speed[i] > 0;
  }
  return cpu_measured && gpu_measured && cpu > 0 && cpu < CPU_NEGLIGIBLE * (cpu + gpu);
}

/* --------------------------------------------------------------- activation */

static void list_remove(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  if (b->prev) b->prev->next = b->next;
  else rt->active_head = b->next;
  if (b->next) b->next->prev = b->prev;
  else rt->active_tail = b->prev;
  b->next = b->prev = NULL;
}


/* How many of the last CPU workers sit out batch b (MGPU_RESERVE_THREADS):
 * a fixed count, or under auto the one that the kernel's timed batches found
 * faster (mgpu__reserve_pick). Only batches that a GPU runs, and that CPU
 * workers could otherwise take, have a reserve. Under rt->lock. */
static void choose_reserve(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  b->nreserve = 0;
  b->reserve_timed = false;
  if (!b->gpu_ok || !b->cpu_ok || !any_live_gpu(rt)) return;
  int r = rt->cfg.v.reserve_threads;
  if (r != MGPU_RESERVE_AUTO) {
    b->nreserve = r;
    return;
  }
  int cand = mgpu__auto_reserve(rt->ncpu);
  if (cand <= 0) return;
  /* All CPU workers out is a fourth way where they add little, since what
   * they cost the GPUs' host side can be more: on two H100s (16 cores),
   * mulmod 100's 15 CPU workers added 2.4% and steal ran at 0.87 of the GPU
   * alone, while on a third they paid. The trials tell whether keeping them
   * out is what helps. */
  double cpu = 0, gpu = 0;
  bool cpu_measured = false, gpu_measured = false;
  for (int i = 0; i < rt->nworkers; i++) {
    double s = mgpu__worker_speed(b, i);
    bool measured = atomic_load_explicit(&b->model->samples[i], memory_order_relaxed) > 0;
    if (rt->workers[i].kind == MGPU_WORKER_CPU) cpu += s, cpu_measured |= measured;
    else gpu += s, gpu_measured |= measured;
  }
  /* Half out is a way of its own: where busy cores are taken from the
   * process (a virtual machine's vCPUs taken by its host), stalls grow
   * with every worker that computes (mgpu__auto_reserve_half). */
  const int out[MGPU_RESERVE_LEVELS] = {0, cand, mgpu__auto_reserve_half(rt->ncpu), rt->ncpu};
  unsigned offered = 3u | (out[2] > 0 ? 4u : 0u) |
                     (cpu_measured && gpu_measured && cpu < CPU_OUT_TRY * (cpu + gpu) ? 8u : 0u);
  bool record;
  int level = mgpu__reserve_pick(b->model, b->desc.n, offered, &record);
  b->nreserve = out[level];
  b->reserve_level = level;
  b->reserve_timed = record;
}

void mgpu__activate(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  b->t_start = mgpu__now();
  if (atomic_load(&b->dep_failed)) {
    atomic_store(&b->status, MGPU_EDEP);
    mgpu__finish(rt, b);
    return;
  }
  if (b->task) {
    mgpu__task_start(rt, b);
    return;
  }
  if (b->desc.n == 0) {
    mgpu__finish(rt, b);
    return;
  }
  pthread_mutex_lock(&rt->lock);
  b->model = mgpu__model_get(rt, &b->kernel);
  choose_reserve(rt, b);
  double *speed = calloc((size_t)rt->nworkers, sizeof(double));
  size_t *share = calloc((size_t)rt->nworkers, sizeof(size_t));
  if (!speed || !share) MGPU_PANIC("out of memory splitting a batch");
  bool any = false;
  for (int i = 0; i < rt->nworkers; i++) {
    speed[i] = split_speed(b, i);
    any |= speed[i] > 0;
  }
  if (!any) {
    /* No worker can take it (every GPU retired and no CPU worker). */
    free(speed);
    free(share);
    pthread_mutex_unlock(&rt->lock);
    atomic_store(&b->status, MGPU_EDEVICE);
    mgpu__fail_quiet(MGPU_EDEVICE, "batch of kernel '%s': no worker left that can run it", b->kernel.name);
    mgpu__finish(rt, b);
    return;
  }
  if (cpus_sit_out(b, speed)) {
    b->cpu_out = true;
    b->nreserve = 0; /* the reserve plays no part: every CPU worker is out */
    b->reserve_timed = false;
    for (int i = 0; i < rt->ncpu; i++) speed[i] = 0;
  }
  if (b->steal_ok) {
    if (mgpu__ranges_in_flight(speed, rt->nworkers, b->desc.n, rt->cfg.v.streams_per_gpu)) pool_alike_gpus(rt, speed);
    damp_slow(speed, rt->nworkers);
    skip_coarse(b, speed, b->desc.n);
  }
  mgpu__split(speed, rt->nworkers, b->desc.n, share);
  /* (Under MGPU_PROF_BINS items some bins stay empty: never a profile.) */
  if (b->steal_ok && b->gpu_ok && b->desc.n >= MGPU_PROF_BINS && gpus_of_one_kind(rt)) {
    b->prof_sums = calloc((size_t)rt->ngpus * 2 * MGPU_PROF_BINS, sizeof *b->prof_sums);
    if (!b->prof_sums) MGPU_PANIC("out of memory for a batch's cost profile");
    split_gpus_by_cost(rt, b, share);
  }
  size_t at = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    atomic_store_explicit(&b->ranges[i].begin, at, memory_order_relaxed);
    b->ranges[i].last = 0;
    at += share[i];
    atomic_store_explicit(&b->ranges[i].end, at, memory_order_relaxed);
  }
  free(speed);
  free(share);
  atomic_store(&b->unclaimed, b->desc.n);
  atomic_store(&b->remaining, b->desc.n);
  atomic_store(&b->active, true); /* after remaining: mgpu_event_progress reads them in this order */
  b->prev = rt->active_tail;
  b->next = NULL;
  if (rt->active_tail) rt->active_tail->next = b;
  else rt->active_head = b;
  rt->active_tail = b;
  if (!b->gpu_ok) atomic_fetch_add(&rt->n_active_cpu_only, 1);
  pthread_mutex_unlock(&rt->lock);
  mgpu__wake_all(rt);
}

/* Completion of a batch: unlink, publish status and statistics, release
 * dependents. Called by the thread that completed its last item. */
void mgpu__finish(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  /* A cancel that came after the last item was handed out stopped nothing:
   * the batch completed. */
  pthread_mutex_lock(&b->lock);
  if (atomic_load(&b->status) == MGPU_ECANCELED && atomic_load(&b->dropped) == 0) atomic_store(&b->status, MGPU_OK);
  pthread_mutex_unlock(&b->lock);
  b->t_end = mgpu__now();
  if (b->t_start == 0) b->t_start = b->t_end;
  pthread_mutex_lock(&rt->lock);
  if (atomic_load_explicit(&b->active, memory_order_relaxed)) {
    list_remove(rt, b);
    atomic_store_explicit(&b->active, false, memory_order_relaxed);
    if (!b->gpu_ok) atomic_fetch_sub(&rt->n_active_cpu_only, 1);
  }
  mgpu__trace_batch(rt, b);
  if (b->prof_sums) {
    if (atomic_load(&b->status) == MGPU_OK) mgpu__prof_learn(b->model, b->desc.n, b->prof_sums, rt->ngpus);
    free(b->prof_sums);
    b->prof_sums = NULL;
  }
  if (b->reserve_timed && atomic_load(&b->status) == MGPU_OK && b->t_end > b->t_start) {
    double rate = (double)b->desc.n / (b->t_end - b->t_start);
    mgpu__reserve_learn(b->model, b->reserve_level, rate);
    mgpu__log(MGPU_LOG_DEBUG, "kernel '%s', %zu items: %.4g items/s with %d CPU workers kept out (auto reserve)",
              b->kernel.name ? b->kernel.name : "(unnamed)", b->desc.n, rate, b->nreserve);
  }
  pthread_mutex_unlock(&rt->lock);

  if (!b->task) atomic_fetch_add(&rt->batches_done, 1); /* batches, not device tasks */
  for (int i = 0; i < b->desc.nconsts; i++) mgpu__const_unref(b->desc.consts[i]);
  b->desc.nconsts = 0;

  pthread_mutex_lock(&b->lock);
  b->done = 1;
  mgpu__batch_t **deps = b->dependents;
  int ndeps = b->ndependents;
  b->dependents = NULL;
  b->ndependents = 0;
  pthread_cond_broadcast(&b->done_cv);
  pthread_mutex_unlock(&b->lock);

  bool failed = atomic_load(&b->status) != MGPU_OK;
  for (int i = 0; i < ndeps; i++) {
    mgpu__batch_t *d = deps[i];
    if (failed) atomic_store(&d->dep_failed, 1);
    if (atomic_fetch_sub(&d->deps_pending, 1) == 1) mgpu__activate(rt, d);
    mgpu__batch_unref(d);
  }
  free(deps);

  /* The runtime's reference, taken at submit. */
  pthread_mutex_lock(&rt->lock);
  rt->live_batches--;
  if (rt->live_batches == 0) pthread_cond_broadcast(&rt->idle_cv);
  pthread_mutex_unlock(&rt->lock);
  mgpu__batch_unref(b);
}

/* --------------------------------------------------------------- claims */

size_t mgpu__chunk_plan(double speed, size_t last, size_t avail, size_t max_items, double target_s,
                        size_t *planned) {
  size_t want, n;
  if (speed <= 0) {
    want = n = last ? last * 4 : 1;
  } else {
    double x = speed * target_s;
    want = n = x < 1 ? 1 : x > (double)SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)x;
    if (last && n > last * 4) n = last * 4;
  }
  if (want > max_items) want = max_items;
  if (n > max_items) n = max_items;
  /* The size the model asks for, not the one the growth limit allows: after
   * a run of small stolen chunks (a batch's tail) the growth limit keeps the
   * next ones small too, and judged against that limit their launch latency
   * looked like a slow device. On 4 x H200 that pulled the GPUs' learnt speed
   * on mulmod 10000 from 4e7 to 1.3e5 items/s by each batch's end, and the
   * next batch gave the 60 CPU workers a third of it. */
  *planned = want;
  if (n > avail) n = avail;
  return n < 1 ? 1 : n;
}

/* Chunk length for worker w: about target_s of work at its speed, growing at
 * most fourfold from its last chunk while the speed is still being learned.
 * (Cutting a GPU's chunks to a fraction of what is left of its range, to fill
 * its streams on short ranges, was tried: with many CPU thieves cutting GPU
 * ranges short it made GPU chunks so small that their launch latency set the
 * measured rate, which kept the chunks small; on 4 x H200 that took steal on
 * mulmod 10000 from 0.89 to 0.27 of CPU + GPU.) */
static size_t chunk_len(mgpu__batch_t *b, mgpu__worker_t *w, size_t first, size_t avail, size_t max_items,
                        double target_s, size_t *planned) {
  mgpu__range_t *r = &b->ranges[w->id];
  double s = atomic_load_explicit(&b->model->speed[w->id], memory_order_relaxed);
  if (b->cost && w->kind == MGPU_WORKER_GPU)
    return mgpu__cost_plan(b->cost, s, &r->last, first, avail, max_items, target_s, planned);
  size_t n = mgpu__chunk_plan(s, r->last, avail, max_items, target_s, planned);
  r->last = n;
  return n;
}

size_t mgpu__cost_plan(const mgpu__cost_t *c, double speed, size_t *last, size_t first, size_t avail,
                       size_t max_items, double target_s, size_t *planned) {
  /* The plan in items of average cost, then the items from `first` that cost
   * as much. *last, which limits growth, stays in average items too: counted
   * in items, chunks in a stretch over four times the average cost shrank
   * fourfold each time, and on 2 x H200 one GPU ran 155 one-row chunks of a
   * mandelbrot batch at half static's speed. */
  size_t avg = mgpu__chunk_plan(speed, *last, SIZE_MAX, SIZE_MAX, target_s, planned);
  *planned = MGPU_MIN(mgpu__cost_chunk(c, first, *planned), max_items);
  size_t n = MGPU_MIN(mgpu__cost_chunk(c, first, avg), MGPU_MIN(avail, max_items));
  *last = mgpu__cost_items(c, first, n);
  return n;
}

static uint64_t cost_ns(const mgpu__batch_t *b, size_t first, size_t count) {
  if (!b->cost) return 0;
  double c = mgpu__cost_at(b->cost, first + count) - mgpu__cost_at(b->cost, first);
  return c > 0 ? (uint64_t)llround(c * 1e9) : 0;
}

static bool take_own(mgpu__batch_t *b, mgpu__worker_t *w, size_t max_items, double target_s, mgpu__claim_t *c) {
  mgpu__range_t *r = &b->ranges[w->id];
  if (range_begin(r) >= atomic_load_explicit(&r->end, memory_order_relaxed)) return false;
  /* The GPU's limit may call the driver: never under the range lock, which
   * thieves wait on. */
  if (w->limit) max_items = MGPU_MIN(max_items, w->limit(w, b));
  range_lock(r);
  size_t begin = atomic_load_explicit(&r->begin, memory_order_relaxed);
  size_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
  if (begin >= end) {
    range_unlock(r);
    return false;
  }
  size_t planned = 0;
  size_t n =
      atomic_load(&b->failed) ? end - begin : chunk_len(b, w, begin, end - begin, max_items, target_s, &planned);
  atomic_store_explicit(&r->begin, begin + n, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->pending, n, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->unclaimed, n, memory_order_release);
  c->cost_ns = cost_ns(b, begin, n);
  atomic_fetch_add_explicit(&r->pending_ns, c->cost_ns, memory_order_relaxed);
  range_unlock(r);
  c->b = b;
  c->first = begin;
  c->count = n;
  c->stolen = false;
  c->planned = planned;
  mgpu__batch_ref(b);
  return true;
}

/* Put [first, first+count) into w's (empty) range of b. */
static void install(mgpu__batch_t *b, mgpu__worker_t *w, size_t first, size_t count) {
  mgpu__range_t *r = &b->ranges[w->id];
  range_lock(r);
  size_t begin = atomic_load_explicit(&r->begin, memory_order_relaxed);
  size_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
  if (begin < end) MGPU_PANIC("installing items into a non-empty range");
  atomic_store_explicit(&r->begin, first, memory_order_relaxed);
  atomic_store_explicit(&r->end, first + count, memory_order_relaxed);
  range_unlock(r);
}

static bool others_can_take(const mgpu_runtime_t *rt, const mgpu__batch_t *b, const mgpu__worker_t *w) {
  for (int i = 0; i < rt->nworkers; i++)
    if (i != w->id && eligible(rt, b, &rt->workers[i])) return true;
  return false;
}

/* A failed GPU chunk waiting to be recomputed moves into w's empty range. */
static bool take_requeue(mgpu_runtime_t *rt, mgpu__batch_t *b, mgpu__worker_t *w) {
  if (!atomic_load_explicit(&b->has_requeue, memory_order_acquire)) return false;
  bool others = others_can_take(rt, b, w);
  bool got = false;
  mgpu__span_t sp;
  pthread_mutex_lock(&b->lock);
  for (int i = 0; i < b->nrequeue; i++) {
    if (b->requeue[i].avoid == w->id && others) continue;
    sp = b->requeue[i];
    b->requeue[i] = b->requeue[--b->nrequeue];
    got = true;
    break;
  }
  if (b->nrequeue == 0) atomic_store_explicit(&b->has_requeue, 0, memory_order_release);
  pthread_mutex_unlock(&b->lock);
  if (got) install(b, w, sp.first, sp.count);
  return got;
}

size_t mgpu__steal_share(const mgpu__steal_view_t *v) {
  if (v->vo <= 0) return (size_t)v->left; /* a retired owner: take it all */
  /* Equal finish: (pt + s)/vt == (po + left - s)/vo. A thief far slower than
   * the owner plans with its worst case, the slower of a quarter of its speed
   * and the slowest rate it has seen on this kernel: items differ in cost (a
   * row of the Mandelbrot set), and one expensive item on a slow worker would
   * outlast the owner, so it takes only what it surely finishes first. */
  double vt = v->vt;
  if (vt * SLOW_SPLIT_RATIO < v->vo) {
    /* Nor does it take anything once the owner has less left than the
     * longest item any worker of its kind has taken: the item it would take
     * may be such a one. (Only as a gate: planning the amount with that
     * worst rate made the CPUs take too little of evenly costly work.) */
    if (v->worst_item_s > 0 && (v->po + v->left) / v->vo < v->worst_item_s) return 0;
    vt /= SLOW_THIEF_MARGIN;
    if (v->slowest > 0 && v->slowest < vt) vt = v->slowest;
  }
  double s = (vt * (v->po + v->left) - v->vo * v->pt) / (v->vo + vt);
  if (s > v->left) s = v->left;
  return s >= 1 ? (size_t)floor(s) : 0;
}

/* Seconds of GPU work in flight from range r of a batch with a cost. */
static double pending_s(const mgpu__range_t *r) {
  return 1e-9 * (double)atomic_load_explicit(&r->pending_ns, memory_order_relaxed);
}

/* Whether a thief that judges by `cost` (a GPU's, or NULL) judges victim i so:
 * another GPU that is not retired (vo > 0). */
static bool by_cost(const mgpu_runtime_t *rt, const mgpu__cost_t *cost, int i, double vo) {
  return cost && vo > 0 && rt->workers[i].kind == MGPU_WORKER_GPU;
}

/* Steal from the back of the range in b that would finish last. In a batch
 * its GPUs split by cost, a GPU judges another GPU's range by cost, and
 * takes by cost (mgpu__cost_steal). */
static bool steal(mgpu_runtime_t *rt, mgpu__batch_t *b, mgpu__worker_t *w) {
  double vt = mgpu__worker_speed(b, w->id);
  if (vt <= 0) return false;
  const mgpu__cost_t *cost = w->kind == MGPU_WORKER_GPU ? b->cost : NULL;
  double pt = (double)atomic_load_explicit(&b->ranges[w->id].pending, memory_order_relaxed);
  double slowest = atomic_load_explicit(&b->model->slow[w->id], memory_order_relaxed);
  double item_s = w->kind == MGPU_WORKER_CPU ? cpu_item_s(b) : 0;
  for (int attempt = 0; attempt < 4; attempt++) {
    int victim = -1;
    double worst = 0;
    for (int i = 0; i < rt->nworkers; i++) {
      if (i == w->id) continue;
      mgpu__range_t *r = &b->ranges[i];
      size_t begin = range_begin(r), end = atomic_load_explicit(&r->end, memory_order_relaxed);
      if (begin >= end) continue;
      double vo = mgpu__worker_speed(b, i);
      /* In static mode only a retired worker's range may be taken. */
      if (!b->steal_ok && vo > 0) continue;
      double left = (double)(end - begin) + (double)atomic_load_explicit(&r->pending, memory_order_relaxed);
      double t = vo > 0 ? left / vo : INFINITY;
      if (by_cost(rt, cost, i, vo)) t = pending_s(r) + mgpu__cost_at(cost, end) - mgpu__cost_at(cost, begin);
      if (victim < 0 || t > worst) victim = i, worst = t;
    }
    if (victim < 0) return false;
    mgpu__range_t *r = &b->ranges[victim];
    double vo = mgpu__worker_speed(b, victim);
    range_lock(r);
    size_t begin = atomic_load_explicit(&r->begin, memory_order_relaxed);
    size_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
    if (begin >= end) {
      range_unlock(r);
      continue;
    }
    double R = (double)(end - begin), po = (double)atomic_load_explicit(&r->pending, memory_order_relaxed);
    mgpu__steal_view_t sv = {.vt = vt, .pt = pt, .vo = vo, .po = po, .left = R, .slowest = slowest,
                             .worst_item_s = item_s};
    size_t take = by_cost(rt, cost, victim, vo)
                      ? mgpu__cost_steal(cost, begin, end, pending_s(&b->ranges[w->id]), pending_s(r))
                      : mgpu__steal_share(&sv);
    if (take == 0) {
      /* The tail rule: one more item would finish after the owner. */
      range_unlock(r);
      return false;
    }
    atomic_store_explicit(&r->end, end - take, memory_order_relaxed);
    range_unlock(r);
    install(b, w, end - take, take);
    if (rt->trace_on) {
      double now = mgpu__now();
      mgpu__tev_t ev = {.t0 = now, .t1 = now, .kind = MGPU_TEV_STEAL, .stream = -1, .other = victim,
                        .name = b->kernel.name, .batch = b->id, .first = end - take, .count = take};
      mgpu__trace_add(rt, w, &ev);
    }
    b->wstats[w->id].steals++;
    atomic_fetch_add_explicit(&w->steals, 1, memory_order_relaxed);
    return true;
  }
  return false;
}

/* Collect every batch worker w may work on into w->cand, in the order it
 * prefers them; returns how many. Every active batch is looked at: a worker
 * that skipped some would sleep while they still hold items (the tail rule
 * keeps the other workers from taking its share). */
static int candidates(mgpu_runtime_t *rt, mgpu__worker_t *w) {
  int n = 0;
  pthread_mutex_lock(&rt->lock);
  /* CPU workers first look at work only CPUs can do. */
  for (int pass = (w->kind == MGPU_WORKER_CPU ? 0 : 1); pass < 2; pass++) {
    for (mgpu__batch_t *b = rt->active_head; b; b = b->next) {
      bool cpu_only = !b->gpu_ok;
      if (w->kind == MGPU_WORKER_CPU && (pass == 0) != cpu_only) continue;
      if (!eligible(rt, b, w)) continue;
      if (n == w->cand_cap) {
        int cap = w->cand_cap ? 2 * w->cand_cap : 64;
        mgpu__batch_t **p = realloc(w->cand, sizeof *p * (size_t)cap);
        if (!p) MGPU_PANIC("out of memory listing the active batches");
        w->cand = p;
        w->cand_cap = cap;
      }
      mgpu__batch_ref(b);
      w->cand[n++] = b;
    }
  }
  pthread_mutex_unlock(&rt->lock);
  return n;
}

static void set_current(mgpu__worker_t *w, mgpu__batch_t *b) {
  if (w->cur == b) return;
  if (b) mgpu__batch_ref(b);
  if (w->cur) mgpu__batch_unref(w->cur);
  w->cur = b;
}

bool mgpu__claim(mgpu_runtime_t *rt, mgpu__worker_t *w, size_t max_items, double target_s, mgpu__claim_t *c) {
  if (max_items == 0) max_items = 1;
  mgpu__batch_t *b = w->cur;
  /* Fast path: keep taking from the current batch's own range, unless a CPU
   * worker should move to work that only CPUs can do. */
  if (b && atomic_load_explicit(&b->active, memory_order_relaxed) && eligible(rt, b, w) &&
      !(w->kind == MGPU_WORKER_CPU && b->gpu_ok && atomic_load_explicit(&rt->n_active_cpu_only, memory_order_relaxed))) {
    if (take_own(b, w, max_items, target_s, c)) return true;
  }
  int n = candidates(rt, w);
  mgpu__batch_t **cand = w->cand;
  bool got = false;
  for (int phase = 0; phase < 3 && !got; phase++) {
    for (int i = 0; i < n && !got; i++) {
      mgpu__batch_t *cb = cand[i];
      if (phase == 0) got = take_own(cb, w, max_items, target_s, c);
      else if (phase == 1) got = take_requeue(rt, cb, w) && take_own(cb, w, max_items, target_s, c);
      else got = steal(rt, cb, w) && take_own(cb, w, max_items, target_s, c);
      if (got) {
        set_current(w, cb);
        c->stolen = phase == 2;
      }
    }
  }
  for (int i = 0; i < n; i++) mgpu__batch_unref(cand[i]);
  if (!got) set_current(w, NULL);
  return got;
}

/* --------------------------------------------------------------- completion */

/* Close claim c: computed (its kernel ran, kernel_rc its result) or dropped
 * (its batch had failed). Statistics count the items a kernel computed. */
static void close_claim(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, double busy_s, int kernel_rc,
                        bool computed) {
  mgpu__batch_t *b = c->b;
  mgpu_worker_stats_t *ws = &b->wstats[w->id];
  if (kernel_rc != 0) {
    pthread_mutex_lock(&b->lock);
    if (atomic_load(&b->status) == MGPU_OK) {
      atomic_store(&b->status, MGPU_EKERNEL);
      b->failed_first = c->first;
      b->failed_count = c->count;
    }
    pthread_mutex_unlock(&b->lock);
    if (!atomic_exchange(&b->failed, 1))
      mgpu__log(MGPU_LOG_ERROR, "kernel '%s' failed (returned %d) on items %zu..%zu; the batch fails with MGPU_EKERNEL",
                b->kernel.name, kernel_rc, c->first, c->first + c->count - 1);
  } else if (busy_s > 0 && !atomic_load(&b->failed)) {
    mgpu__model_update(b->model, w->id, c->count, busy_s, w->kind == MGPU_WORKER_GPU ? c->planned : 0);
    if (b->prof_sums && w->kind == MGPU_WORKER_GPU) {
      double *row = b->prof_sums + (size_t)(w->id - rt->ncpu) * 2 * MGPU_PROF_BINS;
      mgpu__prof_add(row, row + MGPU_PROF_BINS, b->desc.n, c->first, c->count, busy_s);
    }
  }
  if (!computed) atomic_fetch_add_explicit(&b->dropped, c->count, memory_order_relaxed);
  if (computed) {
    size_t items = kernel_rc == 0 ? c->count : 0;
    ws->items += items;
    ws->chunks++;
    atomic_fetch_add_explicit(&w->items, items, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->chunks, 1, memory_order_relaxed);
  }
  ws->busy_s += busy_s;
  atomic_fetch_add_explicit(&w->busy_ns, (uint64_t)(busy_s * 1e9), memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending, c->count, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending_ns, c->cost_ns, memory_order_relaxed);
  /* acq_rel: the thread that completes the last item sees every worker's stats. */
  if (atomic_fetch_sub_explicit(&b->remaining, c->count, memory_order_acq_rel) == c->count) mgpu__finish(rt, b);
  mgpu__batch_unref(b);
  c->b = NULL;
}

void mgpu__complete(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, double busy_s, int kernel_rc) {
  close_claim(rt, w, c, busy_s, kernel_rc, true);
}

void mgpu__drop(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c) { close_claim(rt, w, c, 0, 0, false); }

void mgpu__cancel(mgpu_runtime_t *rt, mgpu__batch_t *b) {
  /* The status first, under the lock, so that a kernel failing meanwhile
   * does not overwrite it; then the drain flag every claim checks. */
  pthread_mutex_lock(&b->lock);
  bool live = !b->done && atomic_load(&b->status) == MGPU_OK;
  if (live) atomic_store(&b->status, MGPU_ECANCELED);
  pthread_mutex_unlock(&b->lock);
  if (!live) return;
  atomic_store(&b->failed, 1);
  mgpu__wake_all(rt);
}

void mgpu__giveback(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c) {
  mgpu__batch_t *b = c->b;
  if (atomic_load(&b->failed)) {
    /* The batch has failed already: the items are dropped, not recomputed. */
    mgpu__drop(rt, w, c);
    return;
  }
  atomic_fetch_add_explicit(&b->unclaimed, c->count, memory_order_release);
  pthread_mutex_lock(&b->lock);
  if (b->nrequeue == b->requeue_cap) {
    int cap = b->requeue_cap ? 2 * b->requeue_cap : 8;
    mgpu__span_t *p = realloc(b->requeue, sizeof *p * (size_t)cap);
    if (!p) MGPU_PANIC("out of memory requeueing a failed chunk");
    b->requeue = p;
    b->requeue_cap = cap;
  }
  b->requeue[b->nrequeue++] = (mgpu__span_t){c->first, c->count, w->id};
  if (rt->trace_on) {
    double now = mgpu__now();
    mgpu__tev_t ev = {.t0 = now, .t1 = now, .kind = MGPU_TEV_RETRY, .stream = -1, .name = b->kernel.name,
                      .batch = b->id, .first = c->first, .count = c->count};
    mgpu__trace_add(rt, w, &ev);
  }
  atomic_store_explicit(&b->has_requeue, 1, memory_order_release);
  pthread_mutex_unlock(&b->lock);
  b->wstats[w->id].retries++;
  atomic_fetch_add_explicit(&w->retries, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending, c->count, memory_order_relaxed);
  atomic_fetch_sub_explicit(&b->ranges[w->id].pending_ns, c->cost_ns, memory_order_relaxed);
  mgpu__batch_unref(b);
  c->b = NULL;
  mgpu__wake_all(rt);
}

void mgpu__retire(mgpu_runtime_t *rt, mgpu__worker_t *w, const char *why) {
  if (atomic_exchange(&w->retired, 1)) return;
  mgpu__log(MGPU_LOG_WARN, "GPU %d (device %d) is retired for the rest of the run: %s; its items go to the other workers",
            w->gpu, rt->gpu_index[w->gpu], why);
  /* Batches that nobody can run any more fail instead of hanging. */
  for (;;) {
    mgpu__batch_t *orphan = NULL;
    pthread_mutex_lock(&rt->lock);
    for (mgpu__batch_t *b = rt->active_head; b; b = b->next) {
      bool someone = false;
      for (int i = 0; i < rt->nworkers && !someone; i++) someone = eligible(rt, b, &rt->workers[i]);
      if (!someone) {
        orphan = b;
        mgpu__batch_ref(b);
        break;
      }
    }
    pthread_mutex_unlock(&rt->lock);
    if (!orphan) break;
    /* Fail it and drop the unclaimed items; claimed ones complete as usual. */
    atomic_store(&orphan->status, MGPU_EDEVICE);
    atomic_store(&orphan->failed, 1);
    size_t dropped = 0;
    for (int i = 0; i < rt->nworkers; i++) {
      mgpu__range_t *r = &orphan->ranges[i];
      range_lock(r);
      size_t begin = atomic_load(&r->begin), end = atomic_load(&r->end);
      dropped += end - begin;
      atomic_store(&r->begin, end);
      range_unlock(r);
    }
    pthread_mutex_lock(&orphan->lock);
    for (int i = 0; i < orphan->nrequeue; i++) dropped += orphan->requeue[i].count;
    orphan->nrequeue = 0;
    atomic_store(&orphan->has_requeue, 0);
    pthread_mutex_unlock(&orphan->lock);
    mgpu__log(MGPU_LOG_ERROR, "batch of kernel '%s' fails with MGPU_EDEVICE: no worker is left that can run it",
              orphan->kernel.name);
    atomic_fetch_sub(&orphan->unclaimed, dropped);
    if (dropped && atomic_fetch_sub(&orphan->remaining, dropped) == dropped) {
      mgpu__finish(rt, orphan);
    } else if (!dropped) {
      /* Nothing unclaimed: in-flight chunks finish it. Avoid spinning on it. */
      mgpu__batch_unref(orphan);
      break;
    }
    mgpu__batch_unref(orphan);
  }
  mgpu__wake_all(rt);
}

/* --------------------------------------------------------------- idling */

static void wake_gpu_threads(mgpu_runtime_t *rt) {
  if (atomic_load(&rt->gpu_sleepers) > 0) {
    pthread_mutex_lock(&rt->gpu_sleep_lock);
    pthread_cond_broadcast(&rt->gpu_cv);
    pthread_mutex_unlock(&rt->gpu_sleep_lock);
  }
}

void mgpu__wake_all(mgpu_runtime_t *rt) {
  atomic_fetch_add(&rt->work_gen, 1);
  /* The GPU host threads first: each feeds a device. */
  wake_gpu_threads(rt);
  if (atomic_load(&rt->sleepers) > 0) {
    pthread_mutex_lock(&rt->sleep_lock);
    pthread_cond_broadcast(&rt->work_cv);
    pthread_mutex_unlock(&rt->sleep_lock);
  }
}

void mgpu__wake_gpus(mgpu_runtime_t *rt) {
  atomic_fetch_add(&rt->work_gen, 1);
  wake_gpu_threads(rt);
}

void mgpu__wake_helpers(mgpu_runtime_t *rt, int n) {
  /* copy_open was raised before this reads sleepers, and a sleeper counts
   * itself before it reads copy_open: one of the two sees the other. */
  if (n <= 0 || atomic_load(&rt->sleepers) == 0) return;
  pthread_mutex_lock(&rt->sleep_lock);
  for (int i = 0; i < n; i++) pthread_cond_signal(&rt->work_cv);
  pthread_mutex_unlock(&rt->sleep_lock);
}

/* Whether the idle thread has something to do: new work, a copy to help with
 * (CPU workers only; not while enough threads copy, or idle workers would
 * spin on it), or the runtime stops. */
static bool idle_over(mgpu_runtime_t *rt, uint64_t seen, bool gpu_thread) {
  return atomic_load(&rt->work_gen) != seen || atomic_load(&rt->stop) || (!gpu_thread && mgpu__copy_wanted(rt));
}

void mgpu__idle_wait(mgpu_runtime_t *rt, uint64_t seen, bool gpu_thread) {
  /* Spin briefly: a batch that follows closely finds its workers awake. */
  double until = mgpu__now() + 50e-6;
  do {
    if (idle_over(rt, seen, gpu_thread)) return;
    sched_yield();
  } while (mgpu__now() < until);
  /* GPU threads sleep apart, so that a device task wakes them without waking
   * every CPU worker. */
  pthread_cond_t *cv = gpu_thread ? &rt->gpu_cv : &rt->work_cv;
  pthread_mutex_t *lock = gpu_thread ? &rt->gpu_sleep_lock : &rt->sleep_lock;
  _Atomic int *count = gpu_thread ? &rt->gpu_sleepers : &rt->sleepers;
  pthread_mutex_lock(lock);
  atomic_fetch_add(count, 1);
  while (!idle_over(rt, seen, gpu_thread)) pthread_cond_wait(cv, lock);
  atomic_fetch_sub(count, 1);
  pthread_mutex_unlock(lock);
}
