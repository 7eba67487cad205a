/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-runtime.c: the runtime end to end: events and dependencies, many
 * submitting threads, errors and bad arguments, batches in flight together,
 * the parallel loop and nested OpenMP, statistics, progress and traces,
 * cancel. The workers' own tests are in test-workers.c.
 */
#include "testkern.h"

#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(test_dependency_chain) {
  /* y1 = 3x + 1; y2 = 3*y1 + 2; y3 = 3*y2 + 3, as dependent batches. */
  mgpu_runtime_t *rt = start(2, 2);
  const size_t n = 50000;
  uint64_t *x = malloc(8 * n), *y1 = malloc(8 * n), *y2 = malloc(8 * n), *y3 = malloc(8 * n);
  for (size_t i = 0; i < n; i++) x[i] = i;
  axpk_arg_t a1 = {1, NULL}, a2 = {2, NULL}, a3 = {3, NULL};
  mgpu_batch_t b1 = axpk_batch(&axpk, n, x, y1, &a1), b2 = axpk_batch(&axpk_cpu_only, n, y1, y2, &a2),
               b3 = axpk_batch(&axpk, n, y2, y3, &a3);
  mgpu_event_t *e1, *e2, *e3;
  ck_assert_int_eq(mgpu_submit(rt, &b1, 0, NULL, &e1), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &b2, 1, &e1, &e2), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &b3, 1, &e2, &e3), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(e3, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_event_test(e1), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    if (y3[i] != ((i * 3 + 1) * 3 + 2) * 3 + 3) ck_abort_msg("item %zu wrong", i);
  mgpu_event_release(e1);
  mgpu_event_release(e2);
  mgpu_event_release(e3);
  free(x), free(y1), free(y2), free(y3);
  mgpu_finalize(rt);
}
END_TEST

/* A batch's footprint picks its kernel's model: batches of one kernel and
 * one footprint share one. A batch of version 1's size (without footprint),
 * with other bytes where footprint lies, is the kernel's own (footprint 0):
 * those bytes are not read. */
START_TEST(test_batch_footprint) {
  mgpu_runtime_t *rt = start(2, 0);
  const size_t n = 64;
  uint64_t x[64], y[64];
  for (size_t i = 0; i < n; i++) x[i] = i;
  axpk_arg_t a = {1, NULL};
  struct {
    _Alignas(16) unsigned char b[sizeof(mgpu_batch_t) + 64];
  } g;
  memset(g.b, 0x5a, sizeof g.b);
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
  b.size = MGPU__BATCH_SIZE_V1;
  memcpy(g.b, &b, MGPU__BATCH_SIZE_V1);
  ck_assert_msg(mgpu_run(rt, (const mgpu_batch_t *)(void *)g.b, NULL) == MGPU_OK, "%s", mgpu_last_error());
  for (size_t i = MGPU__BATCH_SIZE_V1; i < sizeof g.b; i++) ck_assert_int_eq(g.b[i], 0x5a);
  b.size = sizeof b;
  b.footprint = 7;
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  b.footprint = 0;
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  ck_assert_uint_eq(y[n - 1], (n - 1) * 3 + 1);
  int models = 0;
  uint64_t sum = 0;
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  for (const mgpu__model_t *m = rt->models; m; m = m->next) models++, sum += m->footprint;
  MGPU_UNLOCK(&rt->lock);
  ck_assert_int_eq(models, 2);
  ck_assert_uint_eq(sum, 7);
  mgpu_finalize(rt);
}
END_TEST

/* ------------------------------------------------------------ errors */

static int fail_at_cpu(const mgpu_chunk_t *c) {
  const uint64_t *bad = c->arg;
  for (size_t j = 0; j < c->count; j++)
    if (c->first + j == *bad) return 7;
  uint64_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) y[j] = 1;
  return 0;
}
static const mgpu_kernel_t failing = {
    .name = "failing", .cpu = fail_at_cpu, .nin = 0, .nout = 1, .out_size = {8}};

/* Fails on item `bad`, noting the range of the call that saw it. */
typedef struct {
  uint64_t bad;
  _Atomic size_t first, count;
} fail_note_t;
static int fail_noted_cpu(const mgpu_chunk_t *c) {
  fail_note_t *a = (fail_note_t *)c->arg;
  if (a->bad - c->first < c->count) {
    atomic_store(&a->first, c->first);
    atomic_store(&a->count, c->count);
    return 7;
  }
  uint64_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) y[j] = 1;
  return 0;
}
static const mgpu_kernel_t failing_noted = {
    .name = "failing", .cpu = fail_noted_cpu, .nin = 0, .nout = 1, .out_size = {8}};

/* A CPU worker's chunk runs as several calls in steal mode: the batch's failed
 * range is the call that failed, not the whole chunk, and the items computed
 * before it count. A first batch without a failure teaches the CPU workers
 * their rate (their chunks then run in parts). */
START_TEST(test_kernel_failure_range) {
  mgpu_runtime_t *rt = start(2, 0);
  const size_t n = 1000000;
  uint64_t *y = calloc(n, 8);
  fail_note_t a = {.bad = n};
  mgpu_batch_t fb = {.kernel = &failing_noted, .n = n, .out = {y}, .arg = &a};
  ck_assert_int_eq(mgpu_run(rt, &fb, NULL), MGPU_OK);
  a.bad = 654321;
  mgpu_stats_t st = {0};
  ck_assert_int_eq(mgpu_run(rt, &fb, &st), MGPU_EKERNEL);
  size_t call_first = atomic_load(&a.first), call_count = atomic_load(&a.count);
  printf("failed range %zu + %zu, the call %zu + %zu; items %llu\n", st.failed_first, st.failed_count, call_first,
         call_count, (unsigned long long)st.items);
  ck_assert_uint_eq(st.failed_first, call_first);
  ck_assert_uint_eq(st.failed_count, call_count);
  ck_assert_uint_le(st.items + st.failed_count, n);
  free(y);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_kernel_failure) {
  mgpu_runtime_t *rt = start(2, 1);
  const size_t n = 100000;
  uint64_t *y = calloc(n, 8), *x = malloc(8 * n), *z = malloc(8 * n);
  for (size_t i = 0; i < n; i++) x[i] = i;
  uint64_t bad = 4321;
  mgpu_batch_t fb = {.kernel = &failing, .n = n, .out = {y}, .arg = &bad, .arg_size = sizeof bad};
  axpk_arg_t a = {5, NULL};
  mgpu_batch_t ok = axpk_batch(&axpk, n, x, z, &a);
  mgpu_event_t *ef, *eo, *edep;
  ck_assert_int_eq(mgpu_submit(rt, &fb, 0, NULL, &ef), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &ok, 0, NULL, &eo), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &ok, 1, &ef, &edep), MGPU_OK);
  mgpu_stats_t st = {0};
  ck_assert_int_eq(mgpu_event_wait(ef, &st), MGPU_EKERNEL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "failing"));
  ck_assert(st.failed_first <= bad && bad < st.failed_first + st.failed_count);
  /* Statistics count what a kernel computed: not the failed chunk's items. */
  ck_assert_uint_le(st.items + st.failed_count, n);
  /* The other batch is unaffected; the dependent one fails with EDEP. */
  ck_assert_int_eq(mgpu_event_wait(eo, NULL), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    if (z[i] != i * 3 + 5) ck_abort_msg("item %zu wrong", i);
  ck_assert_int_eq(mgpu_event_wait(edep, NULL), MGPU_EDEP);
  /* Waiting again gives the same answer. */
  ck_assert_int_eq(mgpu_event_wait(ef, NULL), MGPU_EKERNEL);
  mgpu_event_release(ef);
  mgpu_event_release(eo);
  mgpu_event_release(edep);
  free(y), free(x), free(z);
  mgpu_finalize(rt);
}
END_TEST

/* An event of another runtime is refused as a dependency: the runtimes share
 * no workers, so the dependent batch could not be started on its own. */
START_TEST(test_dependency_on_other_runtime) {
  mgpu_runtime_t *r1 = start(1, 0), *r2 = start(1, 0);
  cost_arg_t ca = {1e-3};
  mgpu_batch_t slow = {.kernel = &cpu_sleep, .n = 50, .arg = &ca, .arg_size = sizeof ca};
  mgpu_event_t *e1, *e2 = NULL;
  ck_assert_int_eq(mgpu_submit(r1, &slow, 0, NULL, &e1), MGPU_OK);
  uint64_t x[16] = {0}, y[16];
  axpk_arg_t a = {1, NULL};
  mgpu_batch_t b = axpk_batch(&axpk_cpu_only, 16, x, y, &a);
  ck_assert_int_eq(mgpu_submit(r2, &b, 1, &e1, &e2), MGPU_EINVAL);
  ck_assert_ptr_null(e2);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "another runtime"));
  ck_assert_int_eq(mgpu_event_wait(e1, NULL), MGPU_OK);
  /* Finished makes no difference: the rule does not depend on timing. */
  ck_assert_int_eq(mgpu_submit(r2, &b, 1, &e1, &e2), MGPU_EINVAL);
  mgpu_event_release(e1);
  mgpu_finalize(r2);
  mgpu_finalize(r1);
}
END_TEST

/* The last error starts with "fn: what". */
static void assert_error_of(const char *fn, const char *what) {
  char want[160];
  snprintf(want, sizeof want, "%s: %s", fn, what);
  ck_assert_msg(strncmp(mgpu_last_error(), want, strlen(want)) == 0, "want \"%s...\", got \"%s\"", want,
                mgpu_last_error());
}

static int no_body(void *arg, size_t first, size_t count) { return 0; }

START_TEST(test_bad_arguments) {
  mgpu_runtime_t *rt = start(1, 0);
  mgpu__log_set_level(MGPU_LOG_NONE);
  uint64_t x[4] = {0}, y[4];
  axpk_arg_t a = {0, NULL};
  mgpu_event_t *ev = NULL;
  mgpu_batch_t b = axpk_batch(&axpk, 4, x, y, &a);
  /* Table of bad calls: each gets MGPU_EINVAL and a message naming the thing. */
  mgpu_batch_t nokernel = b;
  nokernel.kernel = NULL;
  ck_assert_int_eq(mgpu_submit(rt, &nokernel, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "kernel"));
  mgpu_batch_t nullin = b;
  nullin.in[0] = NULL;
  ck_assert_int_eq(mgpu_submit(rt, &nullin, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "in[0]"));
  mgpu_batch_t nullout = b;
  nullout.out[0] = NULL;
  ck_assert_int_eq(mgpu_submit(rt, &nullout, 0, NULL, &ev), MGPU_EINVAL);
  /* n = 0 with NULL arrays is fine. */
  mgpu_batch_t empty = nullin;
  empty.n = 0;
  ck_assert_int_eq(mgpu_run(rt, &empty, NULL), MGPU_OK);
  mgpu_batch_t huge = b;
  huge.n = SIZE_MAX / 4;
  ck_assert_int_eq(mgpu_submit(rt, &huge, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "overflows"));
  /* Items of no bytes: counts past MGPU_MAX_ITEMS are refused, at once. */
  static const mgpu_kernel_t nobytes = {.name = "nobytes", .cpu = sleep_item};
  cost_arg_t zero = {0};
  mgpu_batch_t many_items = {.kernel = &nobytes, .arg = &zero, .arg_size = sizeof zero};
  size_t counts[] = {SIZE_MAX, SIZE_MAX - 1, MGPU_MAX_ITEMS + 1};
  for (int i = 0; i < 3; i++) {
    many_items.n = counts[i];
    ck_assert_int_eq(mgpu_submit(rt, &many_items, 0, NULL, &ev), MGPU_EINVAL);
    ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_MAX_ITEMS"));
  }
  mgpu_kernel_t many = axpk;
  many.nin = MGPU_MAX_ARGS + 1;
  mgpu_batch_t toomany = b;
  toomany.kernel = &many;
  ck_assert_int_eq(mgpu_submit(rt, &toomany, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "nin"));
  many = axpk;
  many.nout = -1;
  ck_assert_int_eq(mgpu_submit(rt, &toomany, 0, NULL, &ev), MGPU_EINVAL);
  mgpu_kernel_t nocpu = axpk;
  nocpu.cpu = NULL;
  mgpu_batch_t nc = b;
  nc.kernel = &nocpu;
  ck_assert_int_eq(mgpu_submit(rt, &nc, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_submit(NULL, &b, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_submit(rt, NULL, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, NULL, &ev), MGPU_EINVAL);
  mgpu_event_t *nulldep = NULL;
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, &nulldep, &ev), MGPU_EINVAL);
  mgpu_batch_t noarg = b;
  noarg.arg = NULL;
  ck_assert_int_eq(mgpu_submit(rt, &noarg, 0, NULL, &ev), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_event_wait(NULL, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_parallel_for(rt, 10, NULL, NULL), MGPU_EINVAL);
  /* The calls that submit for the caller (mgpu_run, mgpu_parallel_for) name
   * themselves in the errors of the checks they share with mgpu_submit, and
   * mgpu_parallel_for names its n as its own argument. */
  many = axpk;
  many.nin = MGPU_MAX_ARGS + 1;
  ck_assert_int_eq(mgpu_run(rt, &toomany, NULL), MGPU_EINVAL);
  assert_error_of("mgpu_run", "kernel 'axpk' has nin = 9: expected 0..8");
  ck_assert_int_eq(mgpu_run(rt, &nullin, NULL), MGPU_EINVAL);
  assert_error_of("mgpu_run", "batch->in[0] is NULL");
  ck_assert_int_eq(mgpu_run(rt, NULL, NULL), MGPU_EINVAL);
  assert_error_of("mgpu_run", "batch is NULL");
  ck_assert_int_eq(mgpu_run(NULL, &b, NULL), MGPU_EINVAL);
  assert_error_of("mgpu_run", "rt is NULL");
  ck_assert_int_eq(mgpu_submit(rt, &nullin, 0, NULL, &ev), MGPU_EINVAL);
  assert_error_of("mgpu_submit", "batch->in[0] is NULL");
  ck_assert_int_eq(mgpu_parallel_for(rt, MGPU_MAX_ITEMS + 1, no_body, NULL), MGPU_EINVAL);
  assert_error_of("mgpu_parallel_for", "n = 9007199254740993 items: expected at most MGPU_MAX_ITEMS");
  mgpu_const_t *c;
  ck_assert_int_eq(mgpu_const_create(rt, NULL, 8, &c), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_const_create(rt, x, 0, &c), MGPU_EINVAL);
  ck_assert_ptr_null(mgpu_host_alloc(rt, 0));
  ck_assert_int_eq(mgpu_init(NULL, NULL), MGPU_EINVAL);
  /* A destroyed constant cannot be used by a new batch. A batch waiting on a
   * gated one holds it, so it is still there to be recognised as destroyed. */
  ck_assert_int_eq(mgpu_const_create(rt, x, 8, &c), MGPU_OK);
  _Atomic int open = 0, *gate = &open;
  mgpu_batch_t blocker = {.kernel = &gate_kernel, .n = 1, .arg = &gate, .arg_size = sizeof gate};
  mgpu_event_t *eb;
  ck_assert_int_eq(mgpu_submit(rt, &blocker, 0, NULL, &eb), MGPU_OK);
  mgpu_batch_t withc = b;
  withc.nconsts = 1;
  withc.consts[0] = c;
  ck_assert_int_eq(mgpu_submit(rt, &withc, 1, &eb, &ev), MGPU_OK); /* keeps c alive */
  mgpu_const_destroy(c);
  mgpu_event_t *ev2;
  ck_assert_int_eq(mgpu_submit(rt, &withc, 0, NULL, &ev2), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "destroyed"));
  atomic_store_explicit(&open, 1, memory_order_release);
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_OK);
  mgpu_event_release(ev);
  mgpu_event_release(eb);
  mgpu_finalize(rt);
  mgpu_finalize(NULL);
}
END_TEST

/* Handles used after they were given back: errors, not crashes. The table is
 * counted in the bad-input report of tests/test-config.c's neighbours. */
START_TEST(test_stale_handles) {
  mgpu_runtime_t *rt = start(1, 0);
  mgpu__log_set_level(MGPU_LOG_NONE);
  uint64_t x[4] = {0}, y[4];
  axpk_arg_t a = {0, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, 4, x, y, &a);
  mgpu_event_t *ev;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_OK);
  mgpu_event_release(ev);
  /* A released event: waiting, testing, depending on it and releasing again. */
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "not a live event"));
  ck_assert_int_eq(mgpu_event_test(ev), MGPU_EINVAL);
  mgpu_event_t *e2;
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, &ev, &e2), MGPU_EINVAL);
  mgpu_event_release(ev); /* logged, ignored */
  /* Something that was never a handle. */
  int junk = 0;
  ck_assert_int_eq(mgpu_event_wait((mgpu_event_t *)&junk, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_submit((mgpu_runtime_t *)&junk, &b, 0, NULL, &e2), MGPU_ESTATE);
  /* A constant destroyed twice. */
  mgpu_const_t *c;
  ck_assert_int_eq(mgpu_const_create(rt, x, 8, &c), MGPU_OK);
  mgpu_const_destroy(c);
  mgpu_const_destroy(c); /* logged, ignored */
  mgpu_batch_t withc = b;
  withc.nconsts = 1;
  withc.consts[0] = c;
  ck_assert_int_eq(mgpu_submit(rt, &withc, 0, NULL, &e2), MGPU_EINVAL);
  /* An event outlives its runtime; the runtime is gone after finalize. */
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  mgpu_const_t *kept;
  ck_assert_int_eq(mgpu_const_create(rt, x, 8, &kept), MGPU_OK); /* finalize frees it */
  mgpu_finalize(rt);
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_OK);
  mgpu_event_release(ev);
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &e2), MGPU_ESTATE);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "used after mgpu_finalize"));
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_ESTATE);
  ck_assert_int_eq(mgpu_parallel_for(rt, 4, NULL, NULL), MGPU_ESTATE);
  ck_assert_int_eq(mgpu_const_create(rt, x, 8, &c), MGPU_ESTATE);
  ck_assert_ptr_null(mgpu_host_alloc(rt, 64));
  mgpu_stats_t st = MGPU_STATS_INIT;
  ck_assert_int_eq(mgpu_runtime_stats(rt, &st), MGPU_ESTATE);
  ck_assert_int_eq(mgpu_num_workers(rt), 0);
  mgpu_const_destroy(kept); /* freed by finalize: logged, ignored */
  mgpu_finalize(rt);        /* twice: logged, ignored */
}
END_TEST

START_TEST(test_no_worker_for_kernel) {
  /* GPU-only runtime and a kernel without a GPU version: a clear error. */
  mgpu_test_config_t c = mgpu_test_config(0, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  uint64_t x[4] = {0}, y[4];
  axpk_arg_t a = {0, NULL};
  mgpu_batch_t b = axpk_batch(&axpk_cpu_only, 4, x, y, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_ENOTSUP);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_NUM_THREADS=0"));
  assert_error_of("mgpu_run", "kernel 'axpk-cpu' has no GPU function");
  b.kernel = &axpk;
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  ck_assert_uint_eq(y[3], 0);
  ck_assert_int_eq(mgpu_parallel_for(rt, 4, NULL, NULL), MGPU_EINVAL);
  mgpu_finalize(rt);
}
END_TEST

/* ------------------------------------------------------------ concurrency */

typedef struct {
  mgpu_runtime_t *rt;
  unsigned seed;
  int batches;
  int failures;
} submitter_t;

typedef struct {
  mgpu_event_t *ev;
  uint64_t *x, *y;
  size_t n;
  uint64_t k;
} held_t;

/* Wait for a held batch, count it as failed if it failed or is wrong, free it. */
static int retire_held(held_t *h) {
  int failures = mgpu_event_wait(h->ev, NULL) != MGPU_OK;
  for (size_t j = 0; j < h->n; j++)
    if (h->y[j] != h->x[j] * 3 + h->k) {
      failures++;
      break;
    }
  mgpu_event_release(h->ev);
  free(h->x);
  free(h->y);
  h->ev = NULL;
  return failures;
}

static void *submitter(void *p) {
  submitter_t *s = p;
  uint64_t rng = s->seed;
  enum { KEEP = 4 };
  held_t hist[KEEP] = {0};
  for (int i = 0; i < s->batches; i++) {
    int slot = i % KEEP;
    if (hist[slot].ev) s->failures += retire_held(&hist[slot]); /* the oldest */
    size_t n = (size_t)(mgpu_test_rand(&rng) % 5000);
    if (mgpu_test_rand(&rng) % 10 == 0) n = 0;
    uint64_t *x = malloc(8 * (n + 1)), *y = malloc(8 * (n + 1));
    for (size_t j = 0; j < n; j++) x[j] = mgpu_test_rand(&rng);
    axpk_arg_t a = {mgpu_test_rand(&rng), NULL};
    mgpu_batch_t b = axpk_batch(mgpu_test_rand(&rng) % 3 == 0 ? &axpk_cpu_only : &axpk, n, x, y, &a);
    /* Random dependencies on the batches still held. */
    mgpu_event_t *deps[KEEP];
    int nd = 0;
    for (int d = 0; d < KEEP; d++)
      if (hist[d].ev && mgpu_test_rand(&rng) % 2) deps[nd++] = hist[d].ev;
    mgpu_event_t *ev;
    if (mgpu_submit(s->rt, &b, (size_t)nd, deps, &ev) != MGPU_OK) {
      s->failures++;
      free(x), free(y);
      continue;
    }
    hist[slot] = (held_t){ev, x, y, n, a.k};
  }
  for (int d = 0; d < KEEP; d++)
    if (hist[d].ev) s->failures += retire_held(&hist[d]);
  return NULL;
}

/* T threads, each submitting `batches` batches; returns the failures. */
static int run_submitters(mgpu_runtime_t *rt, int T, unsigned seed, int batches) {
  pthread_t th[16];
  submitter_t s[16];
  ck_assert_int_le(T, 16);
  for (int i = 0; i < T; i++) {
    s[i] = (submitter_t){rt, seed + (unsigned)i, batches, 0};
    pthread_create(&th[i], NULL, submitter, &s[i]);
  }
  int failures = 0;
  for (int i = 0; i < T; i++) pthread_join(th[i], NULL), failures += s[i].failures;
  return failures;
}

START_TEST(test_many_submitters) {
  mgpu_runtime_t *rt = start(2, 2);
  int failures = run_submitters(rt, 8, 1234u, 100);
  ck_assert_int_eq(failures, 0);
  mgpu_stats_t st = {0};
  mgpu_runtime_stats(rt, &st);
  ck_assert_uint_eq(st.batches, 800);
  mgpu_finalize(rt);
}
END_TEST


/* Stress: 16 host threads, 60 batches each with random sizes and
 * dependencies, CPU-only and GPU-able kernels mixed, injected device faults;
 * every result checked. A watchdog fails the test if it has not finished in
 * a generous bound (a deadlock), also where Check does not fork. */
static _Atomic int stress_done;
static void *watchdog(void *arg) {
  double deadline = mgpu__now() + *(double *)arg;
  while (!atomic_load(&stress_done)) {
    if (mgpu__now() > deadline) {
      fprintf(stderr, "watchdog: the test did not finish in time (deadlock?)\n");
      _exit(1);
    }
    mgpu_test_sleep(0.05);
  }
  return NULL;
}

START_TEST(test_stress_16_threads) {
  mgpu_test_config_t c = mgpu_test_config(2, 2);
  c.test.fault_inject = "launch:0:7,launch:1:13,launch:0:29";
  c.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  double bound = mgpu_test_timing() ? 60 : 900;
  pthread_t wd;
  atomic_store(&stress_done, 0);
  pthread_create(&wd, NULL, watchdog, &bound);
  enum { T = 16 };
  int failures = run_submitters(rt, T, 777u, 60);
  atomic_store(&stress_done, 1);
  pthread_join(wd, NULL);
  mgpu_stats_t st = {0};
  mgpu_runtime_stats(rt, &st);
  printf("stress: %llu batches from 16 threads, %llu items, %llu retries, %d wrong or failed\n",
         (unsigned long long)st.batches, (unsigned long long)st.items, (unsigned long long)st.retries, failures);
  ck_assert_int_eq(failures, 0);
  ck_assert_uint_eq(st.batches, T * 60);
  mgpu_finalize(rt);
}
END_TEST

/* More batches in flight than any fixed window: T threads each submit their
 * share of NB small batches without waiting, then wait on all of them. Every
 * batch must complete with every item computed exactly once, in bounded time
 * (the watchdog), on CPU workers alone and with emulated GPUs. */
typedef struct {
  mgpu_runtime_t *rt;
  int first, count;
  uint64_t *x, *y;
  _Atomic uint32_t *hits;
  axpk_arg_t *args;
  int failures;
} inflight_t;

enum { INFLIGHT_ITEMS = 37 };

static void *inflight_submitter(void *arg) {
  inflight_t *s = arg;
  mgpu_event_t **ev = calloc((size_t)s->count, sizeof *ev);
  for (int i = 0; i < s->count; i++) {
    size_t off = (size_t)(s->first + i) * INFLIGHT_ITEMS;
    axpk_arg_t *a = &s->args[s->first + i];
    *a = (axpk_arg_t){.k = (uint64_t)(s->first + i), .count = s->hits + off};
    mgpu_batch_t b = axpk_batch(i % 3 ? &axpk_cpu_only : &axpk, INFLIGHT_ITEMS, s->x + off, s->y + off, a);
    if (mgpu_submit(s->rt, &b, 0, NULL, &ev[i]) != MGPU_OK) s->failures++, ev[i] = NULL;
  }
  for (int i = 0; i < s->count; i++)
    if (ev[i] && mgpu_event_wait(ev[i], NULL) != MGPU_OK) s->failures++;
  for (int i = 0; i < s->count; i++)
    if (ev[i]) mgpu_event_release(ev[i]);
  free(ev);
  return NULL;
}

static void run_inflight(int cpus, int emu) {
  enum { NB = 1000, T = 4 };
  mgpu_test_config_t c = mgpu_test_config(cpus, emu);
  c.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  size_t n = (size_t)NB * INFLIGHT_ITEMS;
  uint64_t *x = malloc(n * sizeof *x), *y = calloc(n, sizeof *y);
  _Atomic uint32_t *hits = calloc(n, sizeof *hits);
  axpk_arg_t *args = calloc(NB, sizeof *args);
  for (size_t i = 0; i < n; i++) x[i] = i * 7 + 1;
  double bound = mgpu_test_timing() ? 60 : 900;
  pthread_t wd, th[T];
  inflight_t s[T];
  atomic_store(&stress_done, 0);
  pthread_create(&wd, NULL, watchdog, &bound);
  for (int t = 0; t < T; t++) {
    s[t] = (inflight_t){rt, t * (NB / T), NB / T, x, y, hits, args, 0};
    pthread_create(&th[t], NULL, inflight_submitter, &s[t]);
  }
  int failures = 0;
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL), failures += s[t].failures;
  atomic_store(&stress_done, 1);
  pthread_join(wd, NULL);
  ck_assert_int_eq(failures, 0);
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_eq(atomic_load(&hits[i]), 1);
    ck_assert_uint_eq(y[i], x[i] * 3 + i / INFLIGHT_ITEMS);
  }
  mgpu_finalize(rt);
  free(x), free(y), free(hits), free(args);
}

START_TEST(test_many_batches_in_flight_cpu) { run_inflight(2, 0); }
END_TEST
START_TEST(test_many_batches_in_flight_gpu) { run_inflight(1, 2); }
END_TEST

/* Sleeps its items' cost (on CPU workers) and notes when its batch's chunks
 * ran: the first start and the last end. */
typedef struct {
  double cost;
  _Atomic double first, last;
} span_arg_t;
static int span_item(const mgpu_chunk_t *c) {
  span_arg_t *a = (span_arg_t *)c->arg;
  double t0 = mgpu__now(), none = 0;
  atomic_compare_exchange_strong(&a->first, &none, t0);
  if (!c->stream) mgpu_test_sleep(a->cost * (double)c->count);
  double t1 = mgpu__now(), seen = atomic_load(&a->last);
  while (t1 > seen && !atomic_compare_exchange_weak(&a->last, &seen, t1)) {
  }
  return 0;
}
static const mgpu_kernel_t cpu_span = {.name = "cpu-span", .cpu = span_item};
static const mgpu_kernel_t gpu_span = {.name = "gpu-span", .cpu = span_item, .gpu = marker_gpu};

START_TEST(test_overlap_cpu_and_gpu_batches) {
  /* A CPU-only batch (0.3 s on 2 workers) and a GPU-able one (0.3 s on the
   * emulated GPU) submitted together run at the same time: the spans of
   * their chunks overlap for most of the shorter one (one after the other
   * they would not overlap at all). Spans, not the wall time, so that a
   * loaded machine stretches both alike. */
  mgpu_test_config_t c = mgpu_test_config(2, 1);
  c.test.emulate_speed = 1e5;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  cost_arg_t wa = {1e-3};
  mgpu_batch_t warm = {.kernel = &gpu_sleep, .n = 3000, .arg = &wa, .arg_size = sizeof wa};
  ck_assert_int_eq(mgpu_run(rt, &warm, NULL), MGPU_OK);
  span_arg_t ca = {.cost = 1e-3}, ga = {.cost = 1e-3};
  /* The arguments are not copied (arg_size 0): the kernels write the spans. */
  mgpu_batch_t cb = {.kernel = &cpu_span, .n = 600, .arg = &ca};
  mgpu_batch_t gb = {.kernel = &gpu_span, .n = 30000, .arg = &ga};
  mgpu_event_t *e1, *e2;
  ck_assert_int_eq(mgpu_submit(rt, &gb, 0, NULL, &e2), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &cb, 0, NULL, &e1), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(e1, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(e2, NULL), MGPU_OK);
  double c0 = atomic_load(&ca.first), c1 = atomic_load(&ca.last), g0 = atomic_load(&ga.first), g1 = atomic_load(&ga.last);
  double both = MGPU_MIN(c1, g1) - MGPU_MAX(c0, g0), shorter = MGPU_MIN(c1 - c0, g1 - g0);
  printf("overlap: CPU batch %.3f s, GPU batch %.3f s, both at once %.3f s\n", c1 - c0, g1 - g0, both);
  ck_assert_msg(both > 0.5 * shorter, "the batches ran together %.3f s of the shorter's %.3f s", both, shorter);
  mgpu_event_release(e1);
  mgpu_event_release(e2);
  mgpu_finalize(rt);
}
END_TEST

/* ------------------------------------------------------------ constants */

static int sum_body(void *arg, size_t first, size_t count) {
  _Atomic uint64_t *sum = arg;
  uint64_t s = 0;
  for (size_t i = first; i < first + count; i++) s += i;
  atomic_fetch_add(sum, s);
  return 0;
}

static int nested_body(void *arg, size_t first, size_t count) {
  _Atomic int *maxthreads = arg;
  MGPU_UNUSED(first), MGPU_UNUSED(count);
#pragma omp parallel
  {
    int n = omp_get_num_threads();
    int cur = atomic_load(maxthreads);
    while (n > cur && !atomic_compare_exchange_weak(maxthreads, &cur, n)) {
    }
  }
  return 0;
}

/* A batch that comes while one CPU worker runs a long chunk of another
 * (one item of 1 s): its range there would start only after that chunk, and
 * the tail rule left its last item to it, so 100 no-op items took as long as
 * the dear item had left (2.8 s of 3 on four workers, found by hostile use).
 * The other workers take it all. */
static int dear_first(void *arg, size_t first, size_t count) {
  if (first == 0) mgpu_test_sleep(1.0);
  return 0;
}
static int nop_body(void *arg, size_t first, size_t count) { return 0; }
static void *dear_loop(void *rt) {
  ck_assert_int_eq(mgpu_parallel_for(rt, 4, dear_first, NULL), MGPU_OK);
  return NULL;
}

START_TEST(test_batch_beside_busy_worker) {
  mgpu_runtime_t *rt = start(4, 0);
  pthread_t th;
  /* The dear loop on a thread of its own, so that this one can run the next. */
  ck_assert_int_eq(pthread_create(&th, NULL, dear_loop, rt), 0);
  mgpu_test_sleep(0.2);
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_parallel_for(rt, 100, nop_body, NULL), MGPU_OK);
  double t = mgpu__now() - t0;
  printf("100 no-op items beside a worker busy with another batch's 1 s item: %.3f s\n", t);
  if (mgpu_test_timing()) ck_assert_msg(t < 0.5, "the batch waited %.3f s for the busy worker", t);
  pthread_join(th, NULL);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_parallel_for) {
  mgpu_runtime_t *rt = start(2, 1);
  _Atomic uint64_t sum = 0;
  const size_t n = 1000003;
  ck_assert_int_eq(mgpu_parallel_for(rt, n, sum_body, &sum), MGPU_OK);
  ck_assert_uint_eq(atomic_load(&sum), (uint64_t)n * (n - 1) / 2);
  /* A kernel's own OpenMP region gets one thread: no oversubscription. */
  _Atomic int maxthreads = 0;
  ck_assert_int_eq(mgpu_parallel_for(rt, 64, nested_body, &maxthreads), MGPU_OK);
  ck_assert_int_eq(atomic_load(&maxthreads), 1);
  mgpu_stats_t st = MGPU_STATS_INIT;
  mgpu_worker_stats_t ws[3];
  st.worker = ws;
  st.worker_cap = 3;
  ck_assert_int_eq(mgpu_runtime_stats(rt, &st), MGPU_OK);
  ck_assert_uint_eq(ws[2].items, 0); /* the GPU worker never runs a CPU-only loop */
  mgpu_finalize(rt);
}
END_TEST

/* MGPU_STATS (mgpu_config_t.stats): mgpu_finalize prints the runtime's
 * numbers, read before its handle goes: two batches of 1000 items on two CPU
 * workers and one emulated GPU. */
/* A negative count of entries of the worker or rank array is refused by
 * every call that fills statistics, naming the field, before a batch runs;
 * 0 takes none. */
START_TEST(test_stats_negative_cap) {
  mgpu_runtime_t *rt = start(2, 0);
  mgpu__log_set_level(MGPU_LOG_NONE);
  uint64_t x[4] = {1, 2, 3, 4}, y[4] = {0};
  axpk_arg_t a = {0, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, 4, x, y, &a);
  mgpu_worker_stats_t ws[2];
  mgpu_stats_t st = MGPU_STATS_INIT;
  st.worker = ws;
  st.worker_cap = -1;
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(), "mgpu_run: stats->worker_cap = -1: expected 0 or more, the entries of "
                                      "stats->worker");
  ck_assert_uint_eq(y[3], 0); /* the batch did not run */
  ck_assert_int_eq(mgpu_runtime_stats(rt, &st), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_runtime_stats: stats->worker_cap = -1"));
  mgpu_event_t *ev;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(ev, &st), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_event_wait: stats->worker_cap = -1"));
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_OK);
  mgpu_event_release(ev);
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  mgpu_stats_print(rt, &st, f);
  rewind(f);
  char line[256] = "";
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  fclose(f);
  ck_assert_ptr_nonnull(strstr(line, "(statistics not printed: mgpu_stats_print: stats->worker_cap = -1"));
  /* Without a worker array too: the count is no array's. */
  st.worker = NULL;
  ck_assert_int_eq(mgpu_runtime_stats(rt, &st), MGPU_EINVAL);
  y[3] = 0;
  st = (mgpu_stats_t)MGPU_STATS_INIT;
  mgpu_rank_stats_t rs[1];
  st.rank = rs;
  st.rank_cap = -3;
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(), "mgpu_run: stats->rank_cap = -3: expected 0 or more, the entries of "
                                      "stats->rank");
  ck_assert_uint_eq(y[3], 0);
  /* 0 entries: the totals alone. */
  st = (mgpu_stats_t)MGPU_STATS_INIT;
  st.worker = ws;
  st.worker_cap = 0;
  memset(ws, 0xA5, sizeof ws);
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  ck_assert_uint_eq(y[3], 12);
  ck_assert_uint_eq(st.items, 4);
  ck_assert_int_eq(st.nworkers, 2);
  ck_assert_int_eq(((unsigned char *)ws)[0], 0xA5);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_stats_at_finalize) {
  capture_t cap;
  capture_begin(&cap);
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.cfg.stats = 1;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  enum { N = 1000 };
  uint64_t x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (uint64_t)i;
  axpk_arg_t a = {5, NULL};
  mgpu_batch_t b = {.kernel = &axpk, .n = N, .in = {x}, .out = {y}, .arg = &a, .arg_size = sizeof a};
  for (int r = 0; r < 2; r++) ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  mgpu_finalize(rt);
  char text[4096];
  capture_end(&cap, text, sizeof text);
  printf("%s", text);
  ck_assert_ptr_null(strstr(text, "not a live runtime"));
  ck_assert_ptr_nonnull(strstr(text, "libmgpurt statistics: 2 batches, 2 CPU workers, 1 GPU"));
  ck_assert_ptr_nonnull(strstr(text, "total: 2000 items"));
}
END_TEST
START_TEST(test_progress_and_trace_events) {
  char path[] = "/tmp/mgpu-trace-test-XXXXXX";
  temp_file(path);
  mgpu_test_config_t c = mgpu_test_config(2, 1);
  c.cfg.trace = path;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  /* A gated batch: no progress until the gate opens, then all of it. */
  _Atomic int open = 0, *gate = &open;
  mgpu_batch_t blocker = {.kernel = &gate_kernel, .n = 1, .arg = &gate, .arg_size = sizeof gate};
  mgpu_event_t *eb, *ev;
  ck_assert_int_eq(mgpu_submit(rt, &blocker, 0, NULL, &eb), MGPU_OK);
  const size_t n = 5000;
  uint64_t *x = calloc(n, 8), *y = malloc(8 * n);
  axpk_arg_t a = {3, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, &eb, &ev), MGPU_OK);
  size_t done = 99, total = 0;
  ck_assert_int_eq(mgpu_event_progress(ev, &done, &total), MGPU_OK);
  ck_assert_uint_eq(done, 0);
  ck_assert_uint_eq(total, n);
  atomic_store_explicit(&open, 1, memory_order_release);
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_event_progress(ev, &done, &total), MGPU_OK);
  ck_assert_uint_eq(done, n);
  mgpu_event_release(ev);
  ck_assert_int_eq(mgpu_event_progress(ev, &done, &total), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_event_progress(NULL, &done, &total), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(), "mgpu_event_progress: event is NULL");
  mgpu_event_release(eb);
  /* The recorded events cover every item of the batch once. */
  size_t m;
  mgpu_trace_event_t *e = trace_copy(rt, &m);
  ck_assert_uint_gt(m, 0);
  size_t items = 0;
  uint64_t batch = UINT64_MAX;
  for (size_t i = 0; i < m; i++)
    if (!strcmp(e[i].kernel, "axpk") && (!strcmp(e[i].kind, "chunk") || !strcmp(e[i].kind, "kernel"))) {
      items += e[i].count;
      batch = e[i].batch;
      ck_assert(e[i].t1 >= e[i].t0 && e[i].t0 >= 0);
    }
  ck_assert_uint_eq(items, n);
  ck_assert_uint_eq(batch, 1); /* the second batch submitted */
  ck_assert_int_eq(check_batch_events(e, m), 2);
  free(e), free(x), free(y);
  mgpu_finalize(rt);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char head[64] = {0};
  ck_assert_uint_gt(fread(head, 1, sizeof head - 1, f), 0);
  ck_assert_ptr_nonnull(strstr(head, "traceEvents"));
  fclose(f);
  unlink(path);
  /* Tracing off: nothing recorded. */
  rt = start(1, 0);
  ck_assert_uint_eq(mgpu_trace_events(rt, NULL, 0), 0);
  mgpu_finalize(rt);
}
END_TEST

/* Whether the trace file at path parses as JSON and its chunks and batches are
 * of the kernel named `kernel` alone. */
static bool trace_file_of(const char *path, const char *kernel) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json, sys\n"
           "ev = json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
           "names = {e[\"name\"] for e in ev if e.get(\"cat\") in (\"chunk\", \"batch\")}\n"
           "sys.exit(names != {sys.argv[2]})' '%s' '%s'",
           path, kernel);
  return system(cmd) == 0;
}

/* Two live runtimes never write one trace file: each writes the whole file at
 * its mgpu_finalize, so the second would leave the tail of a longer trace
 * behind its own. The second is refused, also where its path is another
 * name of the file (a hard link); the file holds the first one's trace, and
 * is free for another runtime once the first is finalized. */
START_TEST(test_trace_one_writer) {
  if (system("python3 -c '' 2>/dev/null") != 0) return; /* nothing to parse the trace with */
  char path[] = "/tmp/mgpu-trace-test-XXXXXX", alias[sizeof path + 5];
  temp_file(path);
  snprintf(alias, sizeof alias, "%s.link", path);
  ck_assert_int_eq(link(path, alias), 0);
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.trace = path;
  mgpu_runtime_t *a, *b;
  ck_assert_int_eq(mgpu_test_init(&c, &a), MGPU_OK);
  const size_t n = 200000;
  uint64_t *x = calloc(n, 8), *y = malloc(8 * n);
  axpk_arg_t k = {3, NULL};
  mgpu_batch_t ba = axpk_batch(&axpk, n, x, y, &k), bb = axpk_batch(&axpk_cpu_only, 10, x, y, &k);
  ck_assert_int_eq(mgpu_run(a, &ba, NULL), MGPU_OK);
  c.cfg.num_threads = 1;
  c.cfg.trace = alias;
  mgpu_status_t st = mgpu_test_init(&c, &b);
  char why[512];
  snprintf(why, sizeof why, "%s", mgpu_last_error());
  if (st == MGPU_OK) ck_assert_int_eq(mgpu_run(b, &bb, NULL), MGPU_OK);
  mgpu_finalize(a);
  if (st == MGPU_OK) mgpu_finalize(b);
  ck_assert_msg(trace_file_of(path, "axpk"), "the trace file is not the first runtime's whole trace");
  ck_assert_int_eq(st, MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(why, "MGPU_TRACE='"));
  ck_assert_ptr_nonnull(strstr(why, alias));
  ck_assert_ptr_nonnull(strstr(why, "another live runtime of this process traces to this file"));
  /* The first one finalized, the file takes another runtime's trace. */
  ck_assert_int_eq(mgpu_test_init(&c, &b), MGPU_OK);
  ck_assert_int_eq(mgpu_run(b, &bb, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_finalize_checked(b), MGPU_OK);
  ck_assert_msg(trace_file_of(path, "axpk-cpu"), "the trace file is not the second runtime's whole trace");
  free(x), free(y);
  unlink(alias);
  unlink(path);
}
END_TEST

/* MGPU_TRACE's substitutions name the file: %p the process id, %r the rank
 * (0 for a process alone), %h the host name, %% a %. Messages name the
 * pattern and the file. */
START_TEST(test_trace_substitutions) {
  if (system("python3 -c '' 2>/dev/null") != 0) return; /* nothing to parse the trace with */
  char dir[] = "/tmp/mgpu-trace-subst-XXXXXX", pat[128], want[512], host[256] = "";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_int_eq(gethostname(host, sizeof host - 1), 0);
  snprintf(pat, sizeof pat, "%s/t-%%p-%%r-%%h-%%%%.json", dir);
  snprintf(want, sizeof want, "%s/t-%ld-0-%s-%%.json", dir, (long)getpid(), host);
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.trace = pat;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  const size_t n = 1000;
  uint64_t *x = calloc(n, 8), *y = malloc(8 * n);
  axpk_arg_t k = {3, NULL};
  mgpu_batch_t b = axpk_batch(&axpk_cpu_only, n, x, y, &k);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_finalize_checked(rt), MGPU_OK);
  ck_assert_msg(trace_file_of(want, "axpk-cpu"), "no whole trace in %s", want);
  unlink(want);
  /* A file that cannot be opened is named by its pattern and its path. */
  snprintf(pat, sizeof pat, "%s/none/t-%%r.json", dir);
  c.cfg.trace = pat;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_EINVAL);
  snprintf(want, sizeof want, "MGPU_TRACE='%s' ('%s/none/t-0.json'): cannot open the file for writing", pat, dir);
  ck_assert_msg(strstr(mgpu_last_error(), want), "'%s', expected '%s'", mgpu_last_error(), want);
  free(x), free(y);
  rmdir(dir);
}
END_TEST

typedef struct {
  int fd;
  char head[64];
  size_t got;
} fifo_reader_t;

/* Reads the FIFO to its end, keeping the first bytes. */
static void *read_fifo(void *p) {
  fifo_reader_t *r = p;
  char buf[4096];
  ssize_t k;
  while ((k = read(r->fd, buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR))
    for (ssize_t i = 0; i < k && r->got < sizeof r->head - 1; i++) r->head[r->got++] = buf[i];
  return NULL;
}

/* A FIFO that no process reads is refused at once (an open for writing
 * would wait for a reader for good); with a reader it takes the trace. */
START_TEST(test_trace_fifo) {
  char dir[] = "/tmp/mgpu-trace-fifo-XXXXXX", path[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/fifo", dir);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  mgpu_test_config_t c = mgpu_test_config(1, 0);
  c.cfg.trace = path;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "the file is a FIFO that no process has open for reading"));
  fifo_reader_t r = {.fd = open(path, O_RDONLY | O_NONBLOCK)};
  ck_assert_int_ge(r.fd, 0);
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  ck_assert_int_eq(fcntl(r.fd, F_SETFL, fcntl(r.fd, F_GETFL) & ~O_NONBLOCK), 0);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, read_fifo, &r), 0);
  uint64_t x[100] = {0}, y[100];
  axpk_arg_t k = {3, NULL};
  mgpu_batch_t b = axpk_batch(&axpk_cpu_only, 100, x, y, &k);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_finalize_checked(rt), MGPU_OK);
  pthread_join(th, NULL);
  close(r.fd);
  ck_assert_msg(strncmp(r.head, "{\"displayTimeUnit\"", 18) == 0, "the FIFO got '%s'", r.head);
  unlink(path);
  rmdir(dir);
}
END_TEST

/* A child of fork has a copy of the runtime without its workers: its calls
 * are refused at once instead of waiting for good, and the parent's runtime
 * goes on. */
START_TEST(test_forked_child_refused) {
  mgpu_runtime_t *rt = start(2, 1);
  const size_t n = 1000;
  uint64_t *x = calloc(n, 8), *y = malloc(8 * n);
  for (size_t i = 0; i < n; i++) x[i] = i;
  axpk_arg_t k = {3, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &k);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  fflush(NULL);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    alarm(20); /* a child that waits for good is killed, and fails the test */
    int bad = 0;
    mgpu_event_t *ev;
    bad |= mgpu_run(rt, &b, NULL) != MGPU_ESTATE;
    bad |= strstr(mgpu_last_error(), "mgpu_run: the runtime was started by process") == NULL;
    bad |= strstr(mgpu_last_error(), "(a child of fork)") == NULL;
    bad |= mgpu_submit(rt, &b, 0, NULL, &ev) != MGPU_ESTATE;
    bad |= mgpu_finalize_checked(rt) != MGPU_ESTATE;
    if (bad) fprintf(stderr, "child: %s\n", mgpu_last_error());
    char verdict = bad ? 'F' : 'P';
    ssize_t wrote = write(fds[1], &verdict, 1);
    (void)wrote;
    /* Not _exit: the child's copy of the runtime is never freed, and a leak
     * checker (valgrind) would fail the child's exit on it. */
    raise(SIGKILL);
  }
  close(fds[1]);
  char verdict = 0;
  ck_assert_int_eq(read(fds[0], &verdict, 1), 1);
  close(fds[0]);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(verdict == 'P', "the child's calls were not refused (its stderr says which)");
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  axpk_assert_right(x, y, n, 3);
  ck_assert_int_eq(mgpu_finalize_checked(rt), MGPU_OK);
  free(x), free(y);
}
END_TEST

/* CPU workers asked for that outnumber the usable cores over four times are
 * warned about (each batch wakes them all); four times is not. */
START_TEST(test_threads_past_cores_warned) {
  mgpu_runtime_t *rt = start(1, 0);
  int cores = mgpu_usable_cores(rt, NULL);
  mgpu_finalize(rt);
  if (4 * cores + 1 > 4096) return; /* past MGPU_NUM_THREADS's range */
  char text[2048], want[128];
  for (int k = 0; k < 2; k++) {
    mgpu_test_config_t c = mgpu_test_config(4 * cores + (k == 0), 0);
    c.cfg.debug = 2; /* warnings */
    capture_t cap;
    capture_begin(&cap);
    ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
    mgpu_finalize(rt);
    capture_end(&cap, text, sizeof text);
    snprintf(want, sizeof want, "warning: MGPU_NUM_THREADS=%d is ", 4 * cores + 1);
    if (k == 0) ck_assert_msg(strstr(text, want) && strstr(text, "usable cores: each batch wakes every CPU worker"),
                              "no warning: '%s'", text);
    else ck_assert_msg(!strstr(text, "usable cores"), "a warning at four workers a core: '%s'", text);
  }
}
END_TEST

START_TEST(test_finalize_waits) {
  /* Finalize with a batch in flight waits for it; its outputs are complete. */
  mgpu_runtime_t *rt = start(2, 1);
  cost_arg_t ca = {1e-4};
  mgpu_batch_t b = {.kernel = &cpu_sleep, .n = 2000, .arg = &ca, .arg_size = sizeof ca};
  mgpu_event_t *ev;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  mgpu_finalize(rt);
  ck_assert_int_eq(mgpu_event_test(ev), MGPU_OK);
  mgpu_event_release(ev);
}
END_TEST

/* Counts each item's runs, then waits at the gate: a cancel lands while every
 * worker holds a chunk it has started. */
typedef struct {
  _Atomic int *gate;
  _Atomic uint32_t *count;
} counted_gate_t;
static int counted_gate_item(const mgpu_chunk_t *c) {
  const counted_gate_t *a = c->arg;
  for (size_t j = 0; j < c->count; j++) atomic_fetch_add(&a->count[c->first + j], 1);
  while (!atomic_load_explicit(a->gate, memory_order_acquire)) mgpu_test_sleep(1e-4);
  return 0;
}
static const mgpu_kernel_t counted_gate = {.name = "counted-gate", .cpu = counted_gate_item, .gpu = marker_gpu};

static size_t count_sum(const _Atomic uint32_t *count, size_t n, uint32_t *max) {
  size_t sum = 0;
  *max = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = atomic_load(&count[i]);
    sum += v;
    if (v > *max) *max = v;
  }
  return sum;
}

static void run_cancel(int cpus, int emu) {
  mgpu_runtime_t *rt = start(cpus, emu);
  const size_t n = 200000;
  _Atomic int open = 0;
  _Atomic uint32_t *count = calloc(n, sizeof *count);
  counted_gate_t a = {&open, count};
  mgpu_batch_t b = {.kernel = &counted_gate, .n = n, .arg = &a, .arg_size = sizeof a};
  mgpu_event_t *ev, *after;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, &ev, &after), MGPU_OK);
  /* Every worker is inside its first chunk before the cancel. */
  uint32_t max;
  while (count_sum(count, n, &max) == 0) mgpu_test_sleep(1e-3);
  mgpu_test_sleep(0.05);
  ck_assert_int_eq(mgpu_event_cancel(ev), MGPU_OK);
  ck_assert_int_eq(mgpu_event_cancel(ev), MGPU_OK); /* twice is harmless */
  atomic_store_explicit(&open, 1, memory_order_release);
  mgpu_worker_stats_t ws[8];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 8};
  ck_assert_int_eq(mgpu_event_wait(ev, &st), MGPU_ECANCELED);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "canceled"));
  ck_assert_int_eq(st.status, MGPU_ECANCELED);
  /* The started chunks finished; no item ran twice; most never ran; the
   * statistics count exactly the items computed. */
  size_t sum = count_sum(count, n, &max);
  ck_assert_uint_le(max, 1);
  ck_assert_uint_gt(sum, 0);
  ck_assert_uint_lt(sum, n / 2);
  ck_assert_uint_eq(st.items, sum);
  size_t done, total;
  ck_assert_int_eq(mgpu_event_progress(ev, &done, &total), MGPU_OK);
  ck_assert_uint_eq(done, total);
  /* The batch that depends on it fails without running. */
  ck_assert_int_eq(mgpu_event_wait(after, NULL), MGPU_EDEP);
  ck_assert_uint_eq(count_sum(count, n, &max), sum);
  /* A completed batch keeps its status. */
  ck_assert_int_eq(mgpu_event_cancel(after), MGPU_OK);
  ck_assert_int_eq(mgpu_event_test(after), MGPU_EDEP);
  mgpu_event_release(ev);
  mgpu_event_release(after);
  mgpu_status_t st_null = mgpu_event_cancel(NULL);
  ck_assert_int_eq(st_null, MGPU_EINVAL);
  ck_assert_int_eq(mgpu_event_cancel(ev), MGPU_EINVAL); /* released */

  /* A batch canceled while it waits for its dependency never runs. */
  memset(count, 0, n * sizeof *count);
  atomic_store(&open, 0);
  mgpu_event_t *first, *second;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &first), MGPU_OK);
  mgpu_batch_t b2 = b;
  b2.n = 1000;
  ck_assert_int_eq(mgpu_submit(rt, &b2, 1, &first, &second), MGPU_OK);
  ck_assert_int_eq(mgpu_event_cancel(second), MGPU_OK);
  atomic_store_explicit(&open, 1, memory_order_release);
  ck_assert_int_eq(mgpu_event_wait(first, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(second, &st), MGPU_ECANCELED);
  ck_assert_uint_eq(st.items, 0);
  ck_assert_uint_eq(count_sum(count, n, &max), n); /* the first's items, each once */
  ck_assert_uint_eq(max, 1);
  mgpu_event_release(first);
  mgpu_event_release(second);

  /* The runtime runs the next batch in full. */
  memset(count, 0, n * sizeof *count);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  ck_assert_uint_eq(count_sum(count, n, &max), n);
  ck_assert_uint_eq(max, 1);

  /* A collective runs to its end: it cannot be canceled. */
  if (emu > 0) {
    void *buf[MGPU_MAX_DEVICES];
    for (int g = 0; g < emu; g++) ck_assert_int_eq(mgpu_device_alloc(rt, g, 64, &buf[g]), MGPU_OK);
    mgpu_event_t *cev;
    ck_assert_int_eq(mgpu_allreduce_async(rt, (const void *const *)buf, buf, 8, MGPU_FLOAT64, MGPU_OP_SUM, 0, NULL,
                                          &cev),
                     MGPU_OK);
    ck_assert_int_eq(mgpu_event_cancel(cev), MGPU_ENOTSUP);
    ck_assert_int_eq(mgpu_event_wait(cev, NULL), MGPU_OK);
    mgpu_event_release(cev);
    for (int g = 0; g < emu; g++) ck_assert_int_eq(mgpu_device_free(rt, g, buf[g]), MGPU_OK);
  }
  free(count);
  mgpu_finalize(rt);
}

/* A kernel that says it started, waits at the gate, then fails. */
typedef struct {
  _Atomic int *gate, *started;
} gate_fail_t;
static int gate_fail_item(const mgpu_chunk_t *c) {
  const gate_fail_t *a = c->arg;
  atomic_store(a->started, 1);
  while (!atomic_load_explicit(a->gate, memory_order_acquire)) mgpu_test_sleep(1e-4);
  return 1;
}
static const mgpu_kernel_t gate_fail = {.name = "gate-fail", .cpu = gate_fail_item};

/* A canceled batch that dropped no item reads as completed, unless a kernel
 * failed after the cancel or its dependency failed. A one-item batch
 * canceled while its only call runs, which then fails: MGPU_EKERNEL, not
 * MGPU_OK, and its dependent fails with MGPU_EDEP. A batch canceled while
 * it waits on one that fails: MGPU_ECANCELED, not MGPU_OK (none of its
 * items ran), and the batch after it fails with MGPU_EDEP. */
START_TEST(test_cancel_then_failure) {
  mgpu_runtime_t *rt = start(2, 0);
  _Atomic int gate = 0, started = 0;
  gate_fail_t fa = {&gate, &started};
  const size_t n = 1000;
  _Atomic uint32_t *count = calloc(n, sizeof *count);
  counted_gate_t ca = {&gate, count};
  mgpu_batch_t a = {.kernel = &gate_fail, .n = 1, .arg = &fa, .arg_size = sizeof fa};
  mgpu_batch_t b = {.kernel = &counted_gate, .n = n, .arg = &ca, .arg_size = sizeof ca};
  mgpu_event_t *ea, *eb, *ec;
  ck_assert_int_eq(mgpu_submit(rt, &a, 0, NULL, &ea), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, &ea, &eb), MGPU_OK);
  while (!atomic_load(&started)) mgpu_test_sleep(1e-4);
  ck_assert_int_eq(mgpu_event_cancel(ea), MGPU_OK);
  atomic_store_explicit(&gate, 1, memory_order_release);
  mgpu_stats_t st = MGPU_STATS_INIT;
  ck_assert_int_eq(mgpu_event_wait(ea, &st), MGPU_EKERNEL);
  ck_assert_uint_eq(st.failed_first, 0);
  ck_assert_uint_eq(st.failed_count, 1);
  ck_assert_int_eq(mgpu_event_wait(eb, &st), MGPU_EDEP);
  ck_assert_uint_eq(st.items, 0);
  uint32_t max;
  ck_assert_uint_eq(count_sum(count, n, &max), 0);
  mgpu_event_release(ea);
  mgpu_event_release(eb);

  atomic_store(&gate, 0);
  atomic_store(&started, 0);
  ck_assert_int_eq(mgpu_submit(rt, &a, 0, NULL, &ea), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, &ea, &eb), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &b, 1, &eb, &ec), MGPU_OK);
  while (!atomic_load(&started)) mgpu_test_sleep(1e-4);
  ck_assert_int_eq(mgpu_event_cancel(eb), MGPU_OK);
  atomic_store_explicit(&gate, 1, memory_order_release);
  ck_assert_int_eq(mgpu_event_wait(ea, NULL), MGPU_EKERNEL);
  ck_assert_int_eq(mgpu_event_wait(eb, &st), MGPU_ECANCELED);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "0 of 1000 items computed"));
  ck_assert_uint_eq(st.items, 0);
  ck_assert_int_eq(mgpu_event_wait(ec, &st), MGPU_EDEP);
  ck_assert_uint_eq(st.items, 0);
  ck_assert_uint_eq(count_sum(count, n, &max), 0);
  mgpu_event_release(ea);
  mgpu_event_release(eb);
  mgpu_event_release(ec);
  free(count);
  mgpu_finalize(rt);
}
END_TEST

/* A kernel with scratch: each call writes one byte of each item's scratch
 * and counts its items and its calls. */
typedef struct {
  _Atomic uint32_t *count;
  _Atomic int calls;
  size_t per;
} scratch_arg_t;
static int scratch_item(const mgpu_chunk_t *c) {
  scratch_arg_t *a = (scratch_arg_t *)(uintptr_t)c->arg; /* the caller's own, given with arg_size 0 */
  char *s = c->scratch;
  for (size_t j = 0; j < c->count; j++) {
    s[j * a->per] = 1;
    atomic_fetch_add(&a->count[c->first + j], 1);
  }
  atomic_fetch_add(&a->calls, 1);
  return 0;
}

/* Where a chunk's scratch cannot be allocated, a CPU worker runs the kernel
 * on as many items at a time as it can; where not one item's can be, the
 * batch fails with MGPU_ENOMEM, which names the scratch (a kernel error
 * before, on items the kernel never saw). Huge allocations abort under
 * the sanitizers, and a limit on the address space breaks them and
 * valgrind: those runs skip the test. */
START_TEST(test_scratch_out_of_memory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return;
#endif
  const char *preload = getenv("LD_PRELOAD");
  if (preload && strstr(preload, "vgpreload")) return;
  mgpu_runtime_t *rt = start(1, 0);
  const size_t n = 16;
  _Atomic uint32_t *count = calloc(n, sizeof *count);
  scratch_arg_t a = {count, 0, SIZE_MAX / 4};
  mgpu_kernel_t k = {.name = "scratchy", .cpu = scratch_item, .scratch_per_item = a.per};
  /* arg_size 0: the kernel gets &a itself, and counts its calls there. */
  mgpu_batch_t b = {.kernel = &k, .n = 2, .arg = &a, .arg_size = 0}; /* 2 items: their sizes fit a size_t */
  mgpu_stats_t st = MGPU_STATS_INIT;
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_ENOMEM);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "scratch"));
  ck_assert_int_eq(atomic_load(&a.calls), 0);
  ck_assert_uint_eq(st.items, 0);

  /* 1 GiB an item under an address-space limit of 3.5 GiB more than now:
   * a chunk of 16 items cannot have its scratch, 2 or 3 at a time can. */
  struct rlimit old, lim;
  ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
  size_t vm = 0;
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %zu kB", &vm) == 1) break;
  if (f) fclose(f);
  ck_assert_uint_gt(vm, 0);
  lim = old;
  lim.rlim_cur = (rlim_t)(vm * 1024 + (7ull << 29));
  if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur) lim.rlim_cur = old.rlim_cur;
  ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
  a.per = (size_t)1 << 30;
  k.scratch_per_item = a.per;
  b.n = n;
  mgpu_status_t s2 = mgpu_run(rt, &b, &st);
  ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
  ck_assert_msg(s2 == MGPU_OK, "%s", mgpu_last_error());
  for (size_t i = 0; i < n; i++) ck_assert_uint_eq(atomic_load(&count[i]), 1);
  printf("scratch of 1 GiB an item: %d calls for %zu items\n", atomic_load(&a.calls), n);
  ck_assert_int_gt(atomic_load(&a.calls), 1);
  free(count);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_cancel_cpu) { run_cancel(2, 0); }
END_TEST

START_TEST(test_cancel_gpu) { run_cancel(1, 2); }
END_TEST

int main(void) {
  Suite *s = suite_create("runtime");
  TCase *tc = tcase_create("runtime");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_dependency_chain);
  tcase_add_test(tc, test_batch_footprint);
  tcase_add_test(tc, test_kernel_failure);
  tcase_add_test(tc, test_kernel_failure_range);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_dependency_on_other_runtime);
  tcase_add_test(tc, test_no_worker_for_kernel);
  tcase_add_test(tc, test_stale_handles);
  tcase_add_test(tc, test_many_submitters);
  tcase_add_test(tc, test_stress_16_threads);
  tcase_add_test(tc, test_overlap_cpu_and_gpu_batches);
  tcase_add_test(tc, test_parallel_for);
  tcase_add_test(tc, test_batch_beside_busy_worker);
  tcase_add_test(tc, test_finalize_waits);
  tcase_add_test(tc, test_stats_negative_cap);
  tcase_add_test(tc, test_stats_at_finalize);
  tcase_add_test(tc, test_progress_and_trace_events);
  tcase_add_test(tc, test_trace_one_writer);
  tcase_add_test(tc, test_trace_substitutions);
  tcase_add_test(tc, test_trace_fifo);
  tcase_add_test(tc, test_forked_child_refused);
  tcase_add_test(tc, test_threads_past_cores_warned);
  tcase_add_test(tc, test_cancel_cpu);
  tcase_add_test(tc, test_cancel_gpu);
  tcase_add_test(tc, test_cancel_then_failure);
  tcase_add_test(tc, test_scratch_out_of_memory);
  suite_add_tcase(s, tc);
  TCase *inflight = tcase_create("inflight");
  tcase_set_timeout(inflight, 120);
  tcase_add_test(inflight, test_many_batches_in_flight_cpu);
  tcase_add_test(inflight, test_many_batches_in_flight_gpu);
  suite_add_tcase(s, inflight);
  return mgpu_test_main(s);
}
