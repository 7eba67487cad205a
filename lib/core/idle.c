/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * idle.c: idle workers and their wake-ups. A worker with nothing to claim
 * spins briefly on the runtime's work generation, then sleeps; whoever makes
 * work claimable bumps the generation and wakes the sleepers, GPU host
 * threads first and apart from the CPU workers.
 */
#include "core/core.h"

#include <sched.h>

static void wake_gpu_threads(mgpu_runtime_t *rt) {
  if (atomic_load(&rt->gpu_sleepers) > 0) {
    MGPU_LOCK(&rt->gpu_sleep_lock, MGPU_LK_SLEEP);
    pthread_cond_broadcast(&rt->gpu_cv);
    MGPU_UNLOCK(&rt->gpu_sleep_lock);
  }
}

void mgpu__wake_all(mgpu_runtime_t *rt) {
  atomic_fetch_add(&rt->work_gen, 1);
  /* The GPU host threads first: each feeds a device. */
  wake_gpu_threads(rt);
  if (atomic_load(&rt->sleepers) > 0) {
    MGPU_LOCK(&rt->sleep_lock, MGPU_LK_SLEEP);
    pthread_cond_broadcast(&rt->work_cv);
    MGPU_UNLOCK(&rt->sleep_lock);
  }
}

void mgpu__wake_gpus(mgpu_runtime_t *rt) {
  atomic_fetch_add(&rt->work_gen, 1);
  wake_gpu_threads(rt);
}

void mgpu__wake_watchdog(mgpu_runtime_t *rt) {
  if (!rt->watchdog_on) return;
  MGPU_LOCK(&rt->watchdog_lock, MGPU_LK_THREADS);
  pthread_cond_signal(&rt->watchdog_cv);
  MGPU_UNLOCK(&rt->watchdog_lock);
}

void mgpu__wake_helpers(mgpu_runtime_t *rt, int n) {
  /* copy_open was raised before this reads sleepers, and a sleeper counts
   * itself before it reads copy_open: one of the two sees the other. */
  if (n <= 0 || atomic_load(&rt->sleepers) == 0) return;
  MGPU_LOCK(&rt->sleep_lock, MGPU_LK_SLEEP);
  for (int i = 0; i < n; i++) pthread_cond_signal(&rt->work_cv);
  MGPU_UNLOCK(&rt->sleep_lock);
}

/* Whether the idle thread has something to do: new work, a copy to help with
 * (CPU workers only; not while enough threads copy, or idle workers would
 * spin on it), or the runtime stops. */
static bool idle_over(mgpu_runtime_t *rt, uint64_t seen, bool gpu_thread) {
  return atomic_load(&rt->work_gen) != seen || atomic_load(&rt->stop) || (!gpu_thread && mgpu__copy_wanted(rt));
}

void mgpu__idle_wait(mgpu_runtime_t *rt, uint64_t seen, bool gpu_thread) {
  /* Spin briefly: a batch that follows closely finds its workers awake. */
  double until = mgpu__now() + MGPU_IDLE_SPIN_S;
  do {
    if (idle_over(rt, seen, gpu_thread)) return;
    sched_yield();
  } while (mgpu__now() < until);
  /* GPU threads sleep apart, so that a device task wakes them without waking
   * every CPU worker. */
  pthread_cond_t *cv = gpu_thread ? &rt->gpu_cv : &rt->work_cv;
  pthread_mutex_t *lock = gpu_thread ? &rt->gpu_sleep_lock : &rt->sleep_lock;
  _Atomic int *count = gpu_thread ? &rt->gpu_sleepers : &rt->sleepers;
  MGPU_LOCK(lock, MGPU_LK_SLEEP);
  atomic_fetch_add(count, 1);
  while (!idle_over(rt, seen, gpu_thread)) pthread_cond_wait(cv, lock);
  atomic_fetch_sub(count, 1);
  MGPU_UNLOCK(lock);
}

/* ------------------------------------------------------------ copy helpers */

/* Threads copying pieces at once, GPU threads included (MGPU_COPY_THREADS_*). */
int mgpu__copy_threads_max(const mgpu_runtime_t *rt) {
  return MGPU_MAX(MGPU_COPY_THREADS_MIN, MGPU_COPY_THREADS_PER_GPU * rt->ngpus);
}

bool mgpu__copy_wanted(mgpu_runtime_t *rt) {
  return atomic_load_explicit(&rt->copy_open, memory_order_relaxed) > 0 &&
         atomic_load_explicit(&rt->copiers, memory_order_relaxed) < mgpu__copy_threads_max(rt);
}
