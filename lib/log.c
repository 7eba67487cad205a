/* log.c: logging at MGPU_DEBUG's level, each thread's last error, clocks, panics. */
#include "mgpurt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic int log_level = MGPU_LOG_WARN;
static _Thread_local char last_error[1024];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

_Thread_local int mgpu__range_locks_held;

static const char *const level_name[] = {"", "error", "warning", "info", "debug"};

void mgpu__log_set_level(int level) { atomic_store(&log_level, level); }
int mgpu__log_level(void) { return atomic_load(&log_level); }

static void vlog(int level, const char *fmt, va_list ap) {
  char buf[1200];
  vsnprintf(buf, sizeof buf, fmt, ap);
  /* One write per message, so lines of concurrent threads do not interleave. */
  pthread_mutex_lock(&log_lock);
  fprintf(stderr, "libmgpurt: %s: %s\n", level_name[level], buf);
  pthread_mutex_unlock(&log_lock);
}

void mgpu__log(int level, const char *fmt, ...) {
  if (level > atomic_load(&log_level)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

static mgpu_status_t record(mgpu_status_t st, bool loud, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  if (loud && MGPU_LOG_ERROR <= atomic_load(&log_level)) mgpu__log(MGPU_LOG_ERROR, "%s", last_error);
  return st;
}

mgpu_status_t mgpu__fail(mgpu_status_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(st, true, fmt, ap);
  va_end(ap);
  return st;
}

mgpu_status_t mgpu__fail_quiet(mgpu_status_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(st, false, fmt, ap);
  va_end(ap);
  return st;
}

void mgpu__clear_error(void) { last_error[0] = '\0'; }

MGPU_API const char *mgpu_last_error(void) { return last_error; }

void mgpu__panic(const char *file, int line, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "libmgpurt: fatal: %s:%d: %s\n", file, line, buf);
  abort();
}

double mgpu__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
