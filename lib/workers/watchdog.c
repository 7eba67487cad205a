/*
 * watchdog.c: the runtime's deadline thread (MGPU_TIMEOUT). A GPU worker's
 * thread that waits for a chunk may never come back from the driver when the
 * device hangs, so another thread has to notice. This one wakes ten times per
 * shortest deadline (within MGPU_WATCH_PERIOD_MIN_S..MGPU_WATCH_PERIOD_MAX_S)
 * and when work is posted to a device given up; it asks each GPU worker
 * whether the chunk its thread waits for passed its deadline (mgpu__gpu_watch,
 * which then gives the device up), and fails the work posted to devices given
 * up. It runs where deadlines exist: with GPUs and MGPU_TIMEOUT not 0.
 */
#include "workers/workers.h"

#include <errno.h>
#include <time.h>

static void *watchdog_main(void *arg) {
  mgpu_runtime_t *rt = arg;
  double shortest = rt->cfg.v.timeout > 0 ? rt->cfg.v.timeout : MGPU_TIMEOUT_FLOOR_S;
  double period = MGPU_MIN(MGPU_WATCH_PERIOD_MAX_S, MGPU_MAX(MGPU_WATCH_PERIOD_MIN_S, shortest / 10));
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
