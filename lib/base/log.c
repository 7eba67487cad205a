/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c: logging at MGPU_DEBUG's level, each thread's last error, clocks,
 * panics, and the run-time check of the lock order of base.h in builds
 * configured with --enable-debug: each thread keeps the locks it holds with
 * their levels, and taking a lock whose level is not above every level held
 * is a broken invariant that aborts, naming both locks.
 */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic int log_level = MGPU_LOG_WARN;
static _Thread_local char last_error[1024];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

_Thread_local int mgpu__range_locks_held;
_Thread_local const mgpu_runtime_t *mgpu__self_rt;
_Thread_local int mgpu__self_gpu = -1;

static const char *const level_name[] = {"", "error", "warning", "info", "debug"};

void mgpu__log_set_level(int level) { atomic_store(&log_level, level); }
int mgpu__log_level(void) { return atomic_load(&log_level); }

static void vlog(int level, const char *fmt, va_list ap) {
  char buf[1200];
  vsnprintf(buf, sizeof buf, fmt, ap);
  /* One write per message, so lines of concurrent threads do not interleave. */
  MGPU_LOCK(&log_lock, MGPU_LK_LEAF);
  fprintf(stderr, "libmgpurt: %s: %s\n", level_name[level], buf);
  MGPU_UNLOCK(&log_lock);
}

void mgpu__log(int level, const char *fmt, ...) {
  if (level > atomic_load(&log_level)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

/* An error returned to the caller is the caller's to report: it goes to
 * mgpu_last_error, and to stderr only at MGPU_DEBUG=info and above, so that a
 * program decides what its users see. */
static mgpu_status_t record(mgpu_status_t st, bool loud, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  if (loud) mgpu__log(MGPU_LOG_INFO, "returns %s: %s", mgpu_status_name(st), last_error);
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

void mgpu__nap(double s) {
  if (!(s > 0)) return;
  /* A time past time_t (an emulated device's item at a speed near 0) is a
   * very long sleep, not undefined behaviour that returns at once. */
  if (!(s < MGPU_NAP_MAX_S)) s = MGPU_NAP_MAX_S;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* ------------------------------------------------------- lock order */
bool mgpu__lock_order_checked(void) {
#ifdef MGPU_DEBUG_LOCKS
  return true;
#else
  return false;
#endif
}

#ifdef MGPU_DEBUG_LOCKS
/* Deeper nesting than this is itself a sign of a broken order. */
#define HELD_MAX 16

typedef struct {
  const void *m;
  int level;
  const char *what, *file;
  int line;
} held_t;

static _Thread_local held_t held[HELD_MAX];
static _Thread_local int nheld;

void mgpu__lock_enter(const void *m, int level, const char *what, const char *file, int line) {
  for (int i = 0; i < nheld; i++)
    if (held[i].level >= level)
      mgpu__panic(file, line, "lock order: %s (level %d) taken while %s (level %d, taken at %s:%d) is held", what, level,
                  held[i].what, held[i].level, held[i].file, held[i].line);
  if (nheld == HELD_MAX) mgpu__panic(file, line, "lock order: %s taken with %d locks held", what, nheld);
  held[nheld++] = (held_t){m, level, what, file, line};
}

void mgpu__lock_leave(const void *m, const char *what, const char *file, int line) {
  for (int i = nheld - 1; i >= 0; i--)
    if (held[i].m == m) {
      held[i] = held[--nheld]; /* order among the rest does not matter: levels are checked against all */
      return;
    }
  mgpu__panic(file, line, "lock order: %s released but not held by this thread", what);
}
#endif
