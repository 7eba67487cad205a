/* SPDX-License-Identifier: BSD-3-Clause */
/* testutil.h: helpers shared by the Check suites. */
#ifndef MGPU_TESTUTIL_H
#define MGPU_TESTUTIL_H

#include "config.h" /* first: it selects the GNU extensions */

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Run a suite; exit 0 when every test passed. Check's CK_TIMEOUT_MULTIPLIER
 * stretches the per-test timeouts on slow machines. */
static inline int mgpu_test_main(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* What a suite starts a runtime with: the public settings, and those for
 * tests only (emulated devices, injected faults), which no public struct has. */
typedef struct {
  mgpu_config_t cfg;
  mgpu__testcfg_t test;
} mgpu_test_config_t;

/* Settings that ignore the environment, with n CPU workers and e emulated GPUs. */
static inline mgpu_test_config_t mgpu_test_config(int cpus, int emulated) {
  mgpu_test_config_t c;
  mgpu_config_init(&c.cfg);
  mgpu__testcfg_init(&c.test);
  c.cfg.ignore_env = 1;
  c.cfg.num_threads = cpus;
  c.cfg.num_gpus = emulated;
  /* MGPU_TEST_DEBUG=4 shows the library's debug log (splits, chunks) in a test. */
  const char *dbg = getenv("MGPU_TEST_DEBUG");
  c.cfg.debug = dbg && *dbg >= '0' && *dbg <= '4' && !dbg[1] ? *dbg - '0' : 1;
  c.test.emulate_gpus = emulated;
  return c;
}

/* mgpu_init with both. */
static inline mgpu_status_t mgpu_test_init(const mgpu_test_config_t *c, mgpu_runtime_t **rt_p) {
  return mgpu__init_test(&c->cfg, &c->test, rt_p);
}

static inline void mgpu_test_sleep(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Spend s seconds of an item's cost in a test kernel: sleep, less what this
 * thread overslept before (a wake-up comes ~0.1 ms late on a virtual
 * machine), so that a kernel costs its items' sum however many calls its
 * chunks take. A call sleeps at least half of s, and at most 1 ms owed
 * carries over. */
static inline void mgpu_test_spend(double s) {
  static _Thread_local double owed;
  if (s <= 0) return;
  double use = owed < s / 2 ? owed : s / 2;
  s -= use;
  owed -= use;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  mgpu_test_sleep(s);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double took = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
  if (took > s) owed += took - s;
  if (owed > 1e-3) owed = 1e-3;
}

/* Timing assertions are skipped when MGPURT_NO_TIMING is set, as make
 * check-valgrind and the sanitizer runs of CI do: there everything runs many
 * times slower. Behaviour, results and leaks are still checked. */
static inline int mgpu_test_timing(void) { return getenv("MGPURT_NO_TIMING") == NULL; }

/* Timing claims. A scenario test states a batch's time, a split, or a way
 * chosen by measured speeds, as they come out where the clocks keep the
 * emulated costs; a virtual machine's stalls and late wake-ups break such a
 * claim in some runs. So such a test is an MGPU_TIMED_TEST: its body runs
 * again, from a fresh runtime, up to MGPU_TEST_ATTEMPTS times in all, and
 * the test fails when every run missed a claim. Behaviour (every item once and correct, errors
 * reported) is asserted at once by ck_assert; a timing claim by
 * mgpu_timing_check, which notes the first miss of a run and lets the run go
 * on to its end, so that its runtime is finalized. Under MGPURT_NO_TIMING
 * these claims are not checked. mgpu_speed_check is the same for a claim
 * that follows from the measured speeds and so holds on a slowed machine too
 * (under valgrind and the sanitizers): it is checked there as well. */
#define MGPU_TEST_ATTEMPTS 4

static struct {
  int missed;
  char first[512];
} mgpu__timing;

static void mgpu__timing_check(int ok, int always, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6), unused));
static void mgpu__timing_check(int ok, int always, const char *file, int line, const char *fmt, ...) {
  if (ok || !(always || mgpu_test_timing())) return;
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("timing claim missed at %s:%d: %s\n", file, line, msg);
  if (!mgpu__timing.missed++) snprintf(mgpu__timing.first, sizeof mgpu__timing.first, "%s:%d: %s", file, line, msg);
}

#define mgpu_timing_check(ok, ...) mgpu__timing_check(!!(ok), 0, __FILE__, __LINE__, __VA_ARGS__)
#define mgpu_speed_check(ok, ...) mgpu__timing_check(!!(ok), 1, __FILE__, __LINE__, __VA_ARGS__)

/* Runs body(i) until a run misses no claim, MGPU_TEST_ATTEMPTS times at
 * most; the number of runs, negative when every one missed. */
static int mgpu__timed_runs(const char *name, void (*body)(int), int i) __attribute__((unused));
static int mgpu__timed_runs(const char *name, void (*body)(int), int i) {
  for (int attempt = 1;; attempt++) {
    mgpu__timing.missed = 0;
    body(i);
    if (!mgpu__timing.missed) return attempt;
    printf("%s: run %d of %d missed %d timing claim(s)\n", name, attempt, MGPU_TEST_ATTEMPTS, mgpu__timing.missed);
    fflush(stdout);
    if (attempt == MGPU_TEST_ATTEMPTS) return -attempt;
  }
}

static void mgpu__timed_run(const char *name, void (*body)(int), int i) __attribute__((unused));
static void mgpu__timed_run(const char *name, void (*body)(int), int i) {
  if (mgpu__timed_runs(name, body, i) < 0)
    ck_abort_msg("%s: every one of %d runs missed a timing claim; the last run's first: %s", name, MGPU_TEST_ATTEMPTS,
                 mgpu__timing.first);
}

/* MGPU_TIMED_TEST(name) { body } END_TEST, as START_TEST; a loop test's
 * index is _i in the body, as there. */
#define MGPU_TIMED_TEST(name)                                                                                          \
  static void name##_body(int _i);                                                                                     \
  START_TEST(name) { mgpu__timed_run(#name, name##_body, _i); }                                                        \
  END_TEST                                                                                                             \
  static void name##_body(int _i __attribute__((unused)))

/* Deterministic pseudo-random numbers for tests. */
static inline uint64_t mgpu_test_rand(uint64_t *state) {
  uint64_t x = *state += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

#endif
