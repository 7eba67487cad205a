/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.c: the deadline thread (MGPU_TIMEOUT), where deadlines exist (GPUs,
 * MGPU_TIMEOUT not 0). A GPU thread waiting for a hung device may never come
 * back from the driver, so this one looks at each GPU (mgpu__gpu_watch) a few
 * times per shortest deadline, and fails work posted to devices given up.
 */
#include "workers/workers.h"

#include <errno.h>
#include <time.h>

static void *watchdog_main(void *arg) {
  mgpu_runtime_t *rt = arg;
  double shortest = rt->cfg.v.timeout > 0 ? rt->cfg.v.timeout : MGPU_TIMEOUT_FLOOR_S;
  double period = MGPU_MIN(MGPU_WATCH_PERIOD_MAX_S, MGPU_MAX(MGPU_WATCH_PERIOD_MIN_S, shortest / MGPU_WATCH_PER_DEADLINE));
  MGPU_LOCK(&rt->watchdog_lock, MGPU_LK_THREADS);
  while (!rt->watchdog_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)period;
    ts.tv_nsec += (long)((period - (double)(time_t)period) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    int rc = pthread_cond_timedwait(&rt->watchdog_cv, &rt->watchdog_lock, &ts);
    if (rc != 0 && rc != ETIMEDOUT) MGPU_PANIC("pthread_cond_timedwait failed: error %d", rc);
    if (rt->watchdog_stop) break;
    MGPU_UNLOCK(&rt->watchdog_lock);
    double now = mgpu__now();
    for (int g = 0; g < rt->ngpus; g++) mgpu__gpu_watch(rt, g, now);
    MGPU_LOCK(&rt->watchdog_lock, MGPU_LK_THREADS);
  }
  MGPU_UNLOCK(&rt->watchdog_lock);
  return NULL;
}

mgpu_status_t mgpu__watchdog_start(mgpu_runtime_t *rt) {
  if (rt->ngpus == 0 || rt->cfg.v.timeout == 0) return MGPU_OK;
  pthread_mutex_init(&rt->watchdog_lock, NULL);
  pthread_cond_init(&rt->watchdog_cv, NULL);
  rt->watchdog_stop = false;
  int rc = pthread_create(&rt->watchdog, NULL, watchdog_main, rt);
  if (rc != 0) {
    pthread_mutex_destroy(&rt->watchdog_lock);
    pthread_cond_destroy(&rt->watchdog_cv);
    return mgpu__fail(MGPU_ESYSTEM, "cannot start the deadline thread: pthread_create returned %d", rc);
  }
  rt->watchdog_on = true;
  return MGPU_OK;
}

void mgpu__watchdog_stop(mgpu_runtime_t *rt) {
  if (!rt->watchdog_on) return;
  MGPU_LOCK(&rt->watchdog_lock, MGPU_LK_THREADS);
  rt->watchdog_stop = true;
  pthread_cond_signal(&rt->watchdog_cv);
  MGPU_UNLOCK(&rt->watchdog_lock);
  pthread_join(rt->watchdog, NULL);
  pthread_mutex_destroy(&rt->watchdog_lock);
  pthread_cond_destroy(&rt->watchdog_cv);
  rt->watchdog_on = false;
}
