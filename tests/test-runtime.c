/*
 * test-runtime.c: events and dependencies, many submitting threads, errors and
 * bad arguments, constants, the parallel loop, nested OpenMP, idling, and GPU
 * faults on emulated devices (nothing lost).
 */
#include "testutil.h"

#include <omp.h>
#include <stdio.h>
#include <unistd.h>

/* y = x * 3 + k, where k is the batch's argument; runs on CPUs and devices. */
typedef struct {
  uint64_t k;
  _Atomic uint32_t *count; /* optional execution counter */
} axpk_arg_t;

static int axpk_cpu(const mgpu_chunk_t *c) {
  const axpk_arg_t *a = c->arg;
  const uint64_t *x = c->in[0];
  uint64_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) {
    y[j] = x[j] * 3 + a->k;
    if (a->count) atomic_fetch_add(&a->count[c->first + j], 1);
  }
  return 0;
}
static int marker_gpu(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  return 99;
}
static const mgpu_kernel_t axpk = {
    .name = "axpk", .cpu = axpk_cpu, .gpu = marker_gpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};
/* The same computation, declared CPU-only (unoffloadable). */
static const mgpu_kernel_t axpk_cpu_only = {
    .name = "axpk-cpu", .cpu = axpk_cpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};

typedef struct {
  double cost;
} cost_arg_t;
static int sleep_item(const mgpu_chunk_t *c) {
  const cost_arg_t *a = c->arg;
  if (!c->stream) mgpu_test_sleep(a->cost * (double)c->count);
  return 0;
}
static const mgpu_kernel_t cpu_sleep = {.name = "cpu-sleep", .cpu = sleep_item};

/* Waits until the test opens the gate: orders the test's steps with a worker's. */
static int gate_item(const mgpu_chunk_t *c) {
  _Atomic int *const *gate = c->arg;
  while (!atomic_load_explicit(*gate, memory_order_acquire)) mgpu_test_sleep(1e-4);
  return 0;
}
static const mgpu_kernel_t gate_kernel = {.name = "gate", .cpu = gate_item};
static const mgpu_kernel_t gpu_sleep = {.name = "gpu-sleep", .cpu = sleep_item, .gpu = marker_gpu};

static mgpu_runtime_t *start(int cpus, int emu) {
  mgpu_test_config_t c = mgpu_test_config(cpus, emu);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  return rt;
}

static mgpu_batch_t axpk_batch(const mgpu_kernel_t *k, size_t n, const uint64_t *x, uint64_t *y, axpk_arg_t *a) {
  mgpu_batch_t b = {.kernel = k, .n = n, .in = {x}, .out = {y}, .arg = a, .arg_size = sizeof *a};
  return b;
}

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

static int addc_cpu(const mgpu_chunk_t *c) {
  const uint64_t *k = c->consts[0];
  const uint64_t *x = c->in[0];
  uint64_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) y[j] = x[j] + k[(c->first + j) % 16];
  return 0;
}
static const mgpu_kernel_t addc = {
    .name = "addc", .cpu = addc_cpu, .gpu = marker_gpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};

START_TEST(test_constants_uploaded_once) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 2);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  uint64_t table[16];
  for (int i = 0; i < 16; i++) table[i] = 1000u * (unsigned)i;
  mgpu_const_t *c;
  ck_assert_int_eq(mgpu_const_create(rt, table, sizeof table, &c), MGPU_OK);
  table[0] = 777; /* the constant kept its own copy */
  const size_t n = 20000;
  uint64_t *x = malloc(8 * n), *y = malloc(8 * n);
  for (size_t i = 0; i < n; i++) x[i] = i;
  for (int rep = 0; rep < 100; rep++) {
    mgpu_batch_t b = {.kernel = &addc, .n = n, .in = {x}, .out = {y}, .nconsts = 1, .consts = {c}};
    ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
    for (size_t i = 0; i < n; i += 97)
      if (y[i] != i + 1000u * (i % 16)) ck_abort_msg("item %zu wrong", i);
  }
  uint64_t up = atomic_load(&c->uploads);
  printf("constants: %llu uploads for 100 batches on 2 emulated GPUs\n", (unsigned long long)up);
  ck_assert_uint_ge(up, 1);
  ck_assert_uint_le(up, 2);
  mgpu_const_destroy(c);
  free(x), free(y);
  mgpu_finalize(rt);
}
END_TEST

/* ------------------------------------------------------------ parallel for, nesting, idling */

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

START_TEST(test_idle_uses_no_cpu) {
  mgpu_runtime_t *rt = start(2, 1);
  uint64_t x[8] = {0}, y[8];
  axpk_arg_t a = {1, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, 8, x, y, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  mgpu_test_sleep(0.05);
  struct timespec c0, c1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  mgpu_test_sleep(0.3);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
  printf("idle: %.4f s of CPU time in 0.3 s with 3 workers\n", cpu);
  if (mgpu_test_timing()) ck_assert_msg(cpu < 0.03, "an idle runtime used %.3f s of CPU in 0.3 s", cpu);
  mgpu_finalize(rt);
}
END_TEST

/* ------------------------------------------------------------ faults (emulated) */

static void run_with_faults(const char *plan, int cpus, int emu, int expect_retired, mgpu_sched_t mode) {
  mgpu_test_config_t cfg = mgpu_test_config(cpus, emu);
  cfg.cfg.sched = mode;
  cfg.test.fault_inject = plan;
  cfg.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 200000;
  uint64_t *x = malloc(8 * n), *y = malloc(8 * n);
  _Atomic uint32_t *cnt = calloc(n, sizeof *cnt);
  for (size_t i = 0; i < n; i++) x[i] = i, y[i] = 0;
  uint64_t table[16] = {0};
  mgpu_const_t *c;
  ck_assert_int_eq(mgpu_const_create(rt, table, sizeof table, &c), MGPU_OK);
  axpk_arg_t a = {9, cnt};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
  b.nconsts = 1;
  b.consts[0] = c;
  mgpu_stats_t st = {0};
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  double t = mgpu__now() - t0;
  /* Chunks that failed on a device ran again elsewhere; the emulated device
   * ran the kernel on staging copies, so its failed runs count too, but every
   * output is right and the stats show the retries. */
  for (size_t i = 0; i < n; i++)
    if (y[i] != i * 3 + 9) ck_abort_msg("item %zu wrong", i);
  ck_assert_uint_ge(st.retries, 1);
  ck_assert_uint_eq(st.items, n);
  if (mgpu_test_timing()) ck_assert_msg(t < 10, "the faulty run took %.1f s", t);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  ck_assert_int_eq(info.retired, expect_retired);
  printf("faults '%s': %llu retries, %.3f s, GPU 0 %s\n", plan, (unsigned long long)st.retries, t,
         info.retired ? "retired" : "in service");
  mgpu_const_destroy(c);
  free(x), free(y), free(cnt);
  mgpu_finalize(rt);
}

/* GPU mode, so the devices take every chunk and the chosen ones do fail. */
START_TEST(test_fault_launch) { run_with_faults("launch:0:1,launch:0:3", 1, 2, 0, MGPU_SCHED_GPU); }
END_TEST
START_TEST(test_fault_retire) { run_with_faults("launch:0:all", 2, 2, 1, MGPU_SCHED_GPU); }
END_TEST
START_TEST(test_fault_alloc) { run_with_faults("alloc:0:0", 1, 1, 0, MGPU_SCHED_GPU); }
END_TEST
START_TEST(test_fault_const) { run_with_faults("const:0:0", 1, 1, 0, MGPU_SCHED_GPU); }
END_TEST

START_TEST(test_init_props_failure) {
  /* A device whose properties cannot be read fails mgpu_init cleanly (this
   * once crashed while freeing the half-made runtime). */
  mgpu_test_config_t c = mgpu_test_config(2, 2);
  c.test.fault_inject = "props:1:0";
  c.cfg.debug = 0;
  mgpu_runtime_t *rt = NULL;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_EDEVICE);
  ck_assert_ptr_null(rt);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "cannot read the properties of device 1"));
}
END_TEST

START_TEST(test_gpu_only_all_retired) {
  /* Every GPU fails and no CPU worker exists: the batch fails, nothing hangs. */
  mgpu_test_config_t cfg = mgpu_test_config(0, 1);
  cfg.test.fault_inject = "launch:0:all";
  cfg.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  uint64_t x[1000] = {0}, y[1000];
  axpk_arg_t a = {1, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, 1000, x, y, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_EDEVICE);
  mgpu_finalize(rt);
}
END_TEST

static int fail_always(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  return 1;
}

START_TEST(test_all_retired_two_batches) {
  /* Two batches in flight when the only GPU retires after its kernels
   * failed, with no CPU worker: both fail, the second (whose items are not
   * all claimed yet) as well as the first. */
  mgpu_test_config_t cfg = mgpu_test_config(0, 1);
  cfg.test.emulate_speed = 1e6;
  cfg.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  static uint64_t x[3000], y[3000];
  mgpu_kernel_t k = axpk;
  k.cpu = k.gpu = fail_always;
  axpk_arg_t a = {1, NULL};
  mgpu_batch_t b = axpk_batch(&k, 3000, x, y, &a);
  mgpu_event_t *e1, *e2;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &e1), MGPU_OK);
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &e2), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(e1, NULL), MGPU_EDEVICE);
  ck_assert_int_eq(mgpu_event_wait(e2, NULL), MGPU_EDEVICE);
  mgpu_event_release(e1);
  mgpu_event_release(e2);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_oom_cap) {
  /* A kernel with 1 MiB of scratch per item on a 16 MiB emulated device: the
   * cap comes from memory, and an injected OOM halves it; results correct. */
  mgpu_test_config_t cfg = mgpu_test_config(1, 1);
  cfg.test.emulate_mem = 16LL << 20;
  cfg.test.fault_inject = "alloc:0:1";
  cfg.cfg.sched = MGPU_SCHED_GPU;
  cfg.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_kernel_t k = axpk;
  k.scratch_per_item = 1 << 20;
  const size_t n = 300;
  uint64_t x[300], y[300];
  for (size_t i = 0; i < n; i++) x[i] = i;
  axpk_arg_t a = {2, NULL};
  mgpu_batch_t b = axpk_batch(&k, n, x, y, &a);
  mgpu_worker_stats_t ws[2];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    if (y[i] != i * 3 + 2) ck_abort_msg("item %zu wrong", i);
  ck_assert_uint_eq(ws[1].items, n);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  mgpu_device_info(rt, 0, &info);
  printf("oom: cap %zu items after the injected failure\n", info.batch_cap);
  ck_assert_uint_ge(info.batch_cap, 1);
  ck_assert_uint_le(info.batch_cap, 3);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_pinned_host_memory) {
  /* Arrays from mgpu_host_alloc take the direct path; results are the same. */
  mgpu_runtime_t *rt = start(1, 1);
  const size_t n = 100000;
  uint64_t *x = mgpu_host_alloc(rt, 8 * n), *y = mgpu_host_alloc(rt, 8 * n);
  ck_assert_ptr_nonnull(x);
  ck_assert_ptr_nonnull(y);
  ck_assert_int_eq((uintptr_t)x % 64, 0);
  for (size_t i = 0; i < n; i++) x[i] = i;
  axpk_arg_t a = {4, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    if (y[i] != i * 3 + 4) ck_abort_msg("item %zu wrong", i);
  mgpu_host_free(rt, x);
  mgpu_host_free(rt, y);
  mgpu_host_free(rt, y); /* reported, ignored */
  mgpu_host_alloc(rt, 64); /* left for finalize to free */
  mgpu_finalize(rt);
}
END_TEST

/* A wide item: 64 KiB in and out, so a chunk's staging copies are large
 * enough to be cut into pieces that the CPU workers help copy. */
enum { WIDE = 1 << 16 };
static int wide_cpu(const mgpu_chunk_t *c) {
  const uint8_t *in = c->in[0];
  uint8_t *out = c->out[0];
  for (size_t i = 0; i < c->count * WIDE; i++) out[i] = (uint8_t)(in[i] * 3 + 1);
  return 0;
}
static const mgpu_kernel_t wide = {
    .name = "wide", .cpu = wide_cpu, .gpu = marker_gpu, .nin = 1, .nout = 1, .in_size = {WIDE}, .out_size = {WIDE}};

/* MGPU_STATS (mgpu_config_t.stats): mgpu_finalize prints the runtime's
 * numbers, read before its handle goes: two batches of 1000 items on two CPU
 * workers and one emulated GPU. */
START_TEST(test_stats_at_finalize) {
  char path[] = "/tmp/mgpu-stats-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  ck_assert_int_ge(saved, 0);
  ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
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
  fflush(stderr);
  ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
  close(saved);
  char text[4096];
  ssize_t got = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  unlink(path);
  ck_assert_int_gt(got, 0);
  text[got] = 0;
  printf("%s", text);
  ck_assert_ptr_null(strstr(text, "not a live runtime"));
  ck_assert_ptr_nonnull(strstr(text, "libmgpurt statistics: 2 batches, 2 CPU workers, 1 GPU"));
  ck_assert_ptr_nonnull(strstr(text, "total: 2000 items"));
}
END_TEST

START_TEST(test_staging_shared) {
  /* GPU mode on pageable arrays with idle CPU workers, which may copy pieces
   * of the GPU's staging copies (whether they do in a given run is up to the
   * OS; test_staging_helpers below shows that they can). Every byte is staged
   * exactly once in and once out, and every result is right. */
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.cfg.sched = MGPU_SCHED_GPU;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 256;
  uint8_t *x = malloc(n * WIDE), *y = malloc(n * WIDE);
  for (size_t i = 0; i < n * WIDE; i++) x[i] = (uint8_t)(i * 7 + i / 4093);
  mgpu_batch_t b = {.kernel = &wide, .n = n, .in = {x}, .out = {y}};
  uint64_t helped = 0;
  const int runs = 20;
  for (int r = 0; r < runs; r++) {
    memset(y, 0, n * WIDE);
    mgpu_worker_stats_t ws[3];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 3};
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    for (size_t i = 0; i < n * WIDE; i++)
      if (y[i] != (uint8_t)(x[i] * 3 + 1)) ck_abort_msg("byte %zu wrong after run %d", i, r);
    ck_assert_uint_eq(ws[2].items, n);
    ck_assert_uint_eq(ws[0].staged_bytes + ws[1].staged_bytes + ws[2].staged_bytes, 2 * n * WIDE);
    helped += ws[0].staged_bytes + ws[1].staged_bytes;
  }
  printf("staging: CPU workers copied %llu of %zu bytes in %d runs\n", (unsigned long long)helped,
         2 * n * WIDE * runs, runs);
  mgpu_stats_t total = {0};
  mgpu_worker_stats_t tw[3];
  total.worker = tw;
  total.worker_cap = 3;
  ck_assert_int_eq(mgpu_runtime_stats(rt, &total), MGPU_OK);
  ck_assert_uint_eq(tw[0].staged_bytes + tw[1].staged_bytes + tw[2].staged_bytes, 2 * n * WIDE * (uint64_t)runs);
  free(x);
  free(y);
  mgpu_finalize(rt);
}
END_TEST

static bool always_starved(void *arg) {
  MGPU_UNUSED(arg);
  return true;
}

START_TEST(test_staging_helpers) {
  /* A staging copy made while the device waits, as the GPU thread makes it:
   * posted as pieces, with the sleeping CPU workers woken to take some. The
   * copy is long (tens of milliseconds), so a woken worker gets a piece
   * unless the OS keeps it off the cores all that time; a few tries make the
   * test certain on a loaded machine. Every byte is copied once, and the
   * copiers' counts add up. Under valgrind, which runs one thread at a time,
   * the GPU thread may copy them all: there (MGPURT_NO_TIMING) only the bytes
   * and counts are checked. */
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t bytes = (size_t)64 << 20;
  char *src = malloc(bytes), *dst = malloc(bytes);
  ck_assert_ptr_nonnull(src);
  ck_assert_ptr_nonnull(dst);
  memset(src, 0x5a, bytes);
  for (size_t i = 0; i < bytes; i += 4096) src[i] = (char)(i >> 12);
  mgpu__worker_t *gw = &rt->workers[rt->ncpu];
  ck_assert_int_eq(gw->gpu, 0);
  mgpu_worker_stats_t ws[3];
  mgpu__batch_t b = {.wstats = ws};
  uint64_t helped = 0;
  int tries = 0;
  const int max_tries = mgpu_test_timing() ? 50 : 2;
  for (; tries < max_tries && helped == 0; tries++) {
    memset(ws, 0, sizeof ws);
    memset(dst, 0, bytes);
    mgpu__copy(rt, gw, &b, dst, src, bytes, tries % 2 == 1, always_starved, NULL);
    ck_assert_int_eq(memcmp(dst, src, bytes), 0);
    ck_assert_uint_eq(ws[0].staged_bytes + ws[1].staged_bytes + ws[2].staged_bytes, bytes);
    ck_assert_int_eq(atomic_load(&rt->copy_open), 0);
    helped = ws[0].staged_bytes + ws[1].staged_bytes;
  }
  printf("staging: CPU workers copied %llu of %zu bytes at try %d\n", (unsigned long long)helped, bytes, tries);
  if (mgpu_test_timing()) ck_assert_msg(helped > 0, "no CPU worker helped with a staging copy in %d tries", tries);
  free(src);
  free(dst);
  mgpu_finalize(rt);
}
END_TEST

/* Devices for the test below: one that runs dry at the third time it is
 * asked, and one that never does. */
static int starved_asked;
static bool starved_third(void *arg) {
  MGPU_UNUSED(arg);
  return ++starved_asked >= 3;
}
static bool starved_never(void *arg) {
  MGPU_UNUSED(arg);
  starved_asked++;
  return false;
}

/* Copy src to dst as worker w with a device that answers as `starved` does;
 * check the copy and return how often the device was asked. */
static int copy_asking(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__batch_t *b, uint8_t *dst, const uint8_t *src,
                       size_t bytes, mgpu__starved_fn starved) {
  starved_asked = 0;
  memset(dst, 0, bytes);
  mgpu__copy(rt, w, b, dst, src, bytes, true, starved, NULL);
  ck_assert_msg(memcmp(dst, src, bytes) == 0, "the copy is wrong");
  return starved_asked;
}

START_TEST(test_staging_starved_midway) {
  /* A GPU thread's large copy asks after every piece whether its device
   * waits; from then on, the pieces left are posted for the CPU workers. A
   * device that keeps computing gets the whole copy from its own thread. The
   * test thread copies as GPU 0's worker, whose own thread is idle. */
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t bytes = (size_t)8 << 20; /* 8 pieces of 1 MiB */
  uint8_t *src = malloc(bytes), *dst = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) src[i] = (uint8_t)(i * 13 + i / 4091);
  mgpu__worker_t *w = &rt->workers[rt->ncpu];
  mgpu_worker_stats_t ws[3];
  memset(ws, 0, sizeof ws);
  mgpu__batch_t fake;
  memset(&fake, 0, sizeof fake);
  fake.wstats = ws;

  ck_assert_int_eq(copy_asking(rt, w, &fake, dst, src, bytes, starved_third), 3);
  /* Two pieces copied alone, the six left posted as a job. */
  ck_assert_uint_eq(rt->copyjobs[0].npieces, 6);
  ck_assert_uint_eq(rt->copyjobs[0].bytes, bytes - ((size_t)2 << 20));
  ck_assert_uint_eq(ws[0].staged_bytes + ws[1].staged_bytes + ws[2].staged_bytes, bytes);
  ck_assert_uint_ge(ws[2].staged_bytes, (size_t)2 << 20);

  memset(ws, 0, sizeof ws);
  ck_assert_int_eq(copy_asking(rt, w, &fake, dst, src, bytes, starved_never), 8);
  ck_assert_uint_eq(ws[2].staged_bytes, bytes);
  ck_assert_uint_eq(rt->copyjobs[0].npieces, 6); /* no job posted */

  /* Once its device has run dry, a GPU shares its copies from their start
   * for a number of chunks, counted down by every chunk issued while the
   * device still computes, and set again whenever it runs dry. */
  int full = mgpu__share_ahead(rt, 0, true);
  ck_assert_int_gt(full, 1);
  ck_assert_int_eq(mgpu__share_ahead(rt, 1, true), full);
  int left = full, chunks = 0;
  while (left > 0) left = mgpu__share_ahead(rt, left, false), chunks++;
  ck_assert_int_eq(chunks, full);
  ck_assert_int_eq(mgpu__share_ahead(rt, 0, false), 0);
  /* With one GPU, CPU workers join an open copy while fewer than four
   * threads copy. */
  atomic_store(&rt->copy_open, 1);
  atomic_store(&rt->copiers, 3);
  ck_assert(mgpu__copy_wanted(rt));
  atomic_store(&rt->copiers, 4);
  ck_assert(!mgpu__copy_wanted(rt));
  atomic_store(&rt->copy_open, 0);
  atomic_store(&rt->copiers, 0);
  mgpu_finalize(rt);

  /* With four GPUs, whose host threads are already the copying threads, a
   * copy is shared only when its device waits as it starts. */
  cfg = mgpu_test_config(1, 4);
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  w = &rt->workers[rt->ncpu];
  mgpu_worker_stats_t ws4[5];
  memset(ws4, 0, sizeof ws4);
  fake.wstats = ws4;
  ck_assert_int_eq(copy_asking(rt, w, &fake, dst, src, bytes, starved_third), 1);
  ck_assert_uint_eq(ws4[w->id].staged_bytes, bytes);
  ck_assert_int_eq(mgpu__share_ahead(rt, 0, true), 0);
  /* Four GPU threads may copy with up to four CPU workers beside them: two
   * copying threads per GPU. */
  atomic_store(&rt->copy_open, 1);
  atomic_store(&rt->copiers, 7);
  ck_assert(mgpu__copy_wanted(rt));
  atomic_store(&rt->copiers, 8);
  ck_assert(!mgpu__copy_wanted(rt));
  atomic_store(&rt->copy_open, 0);
  atomic_store(&rt->copiers, 0);
  free(src);
  free(dst);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_staging_out_edges) {
  /* Copies out of staging into user arrays use streamed stores from a
   * 64-byte boundary of the destination on: every alignment of source and
   * destination, lengths around MGPU_STREAM_MIN and lengths that are not
   * whole lines copy exactly their bytes, alone and in pieces shared with a
   * CPU worker, and nothing beside the destination changes. */
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu__worker_t *w = &rt->workers[rt->ncpu];
  mgpu_worker_stats_t ws[3];
  mgpu__batch_t fake;
  memset(&fake, 0, sizeof fake);
  fake.wstats = ws;
  const size_t max = ((size_t)3 << 20) + 4096, guard = 128;
  const size_t all = max + 64 + 2 * guard;
  uint8_t *src = malloc(max + 64), *dst = malloc(all), *pat = malloc(all);
  memset(pat, 0xA5, all);
  for (size_t i = 0; i < max + 64; i++) src[i] = (uint8_t)(i * 7 + i / 251 + 1);
  const size_t lens[] = {MGPU_STREAM_MIN - 1, MGPU_STREAM_MIN, MGPU_STREAM_MIN + 1, MGPU_STREAM_MIN + 63,
                         ((size_t)3 << 20) + 37};
  const size_t offs[] = {0, 1, 17, 63};
  for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
    for (size_t so = 0; so < sizeof offs / sizeof *offs; so++)
      for (size_t dof = 0; dof < sizeof offs / sizeof *offs; dof++)
        for (int shared = 0; shared < 2; shared++) {
          size_t n = lens[l];
          uint8_t *d = dst + guard + offs[dof];
          const uint8_t *s = src + offs[so];
          memcpy(dst, pat, all);
          memset(ws, 0, sizeof ws);
          starved_asked = 0;
          mgpu__copy(rt, w, &fake, d, s, n, true, shared ? starved_third : NULL, NULL);
          ck_assert_msg(memcmp(d, s, n) == 0, "length %zu, source +%zu, destination +%zu, shared %d: copy wrong", n,
                        offs[so], offs[dof], shared);
          ck_assert_msg(memcmp(dst, pat, (size_t)(d - dst)) == 0, "a byte before the destination changed");
          ck_assert_msg(memcmp(d + n, pat, all - (size_t)(d + n - dst)) == 0, "a byte after the destination changed");
          ck_assert_uint_eq(ws[0].staged_bytes + ws[1].staged_bytes + ws[2].staged_bytes, n);
        }
  free(src);
  free(dst);
  free(pat);
  mgpu_finalize(rt);
}
END_TEST

/* Create a temporary file from the mkstemp template path (for trace files). */
static void temp_file(char *path) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

/* One emulated GPU alone with `streams` streams, tracing into a new file at path
 * (a mkstemp template). */
static mgpu_runtime_t *start_traced_gpu(char *path, int streams) {
  temp_file(path);
  mgpu_test_config_t c = mgpu_test_config(1, 1);
  c.cfg.sched = MGPU_SCHED_GPU;
  c.cfg.streams_per_gpu = streams;
  c.cfg.trace = path;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  return rt;
}

/* The events recorded so far, in a new array (free it); *m: how many. */
static mgpu_trace_event_t *trace_copy(mgpu_runtime_t *rt, size_t *m) {
  *m = mgpu_trace_events(rt, NULL, 0);
  mgpu_trace_event_t *e = calloc(*m, sizeof *e);
  ck_assert_uint_eq(mgpu_trace_events(rt, e, *m), *m);
  return e;
}

/* Each batch in the trace has one "batch" event (worker -1) with its items,
 * which holds every other event of the batch (device times, moved onto the
 * host clock, within 1 ms); returns how many batches. */
static int check_batch_events(const mgpu_trace_event_t *e, size_t m) {
  int batches = 0;
  for (size_t i = 0; i < m; i++) {
    if (strcmp(e[i].kind, "batch")) {
      ck_assert_int_ge(e[i].worker, 0);
      continue;
    }
    batches++;
    ck_assert_int_eq(e[i].worker, -1);
    ck_assert_uint_eq(e[i].first, 0);
    ck_assert(e[i].t1 >= e[i].t0);
    size_t items = 0;
    for (size_t j = 0; j < m; j++) {
      if (j == i || e[j].batch != e[i].batch) continue;
      ck_assert_msg(strcmp(e[j].kind, "batch"), "batch %llu has two batch events", (unsigned long long)e[i].batch);
      if (!strcmp(e[j].kind, "chunk") || !strcmp(e[j].kind, "kernel")) items += e[j].count;
      ck_assert_msg(e[j].t0 > e[i].t0 - 1e-3 && e[j].t1 < e[i].t1 + 1e-3,
                    "a %s event of batch %llu, %.6f..%.6f s, outside the batch, %.6f..%.6f s", e[j].kind,
                    (unsigned long long)e[i].batch, e[j].t0, e[j].t1, e[i].t0, e[i].t1);
    }
    ck_assert_uint_eq(items, e[i].count);
  }
  return batches;
}

/* Pageable arrays stage through one pinned buffer per slot, allocated once at
 * the staging limit however the chunks grow over batches (pinning is slow: on
 * 4 x H200 buffers sized to each new need were pinned again batch after
 * batch, at 10-40 ms each); the GPU's items-per-launch cap keeps a chunk's
 * staging within that buffer, and does not apply to pinned arrays. */
START_TEST(test_staging_pinned_once) {
  char path[] = "/tmp/mgpu-trace-test-XXXXXX";
  mgpu_runtime_t *rt = start_traced_gpu(path, 2);
  const size_t nmax = 1 << 22; /* 32 MiB in and 32 MiB out */
  uint64_t *x = malloc(8 * nmax), *y = malloc(8 * nmax);
  for (size_t i = 0; i < nmax; i++) x[i] = i;
  axpk_arg_t a = {5, NULL};
  mgpu_worker_stats_t ws[2];
  for (size_t n = 1000; n <= nmax; n *= 4) {
    mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
    mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    for (size_t i = 0; i < n; i++)
      if (y[i] != x[i] * 3 + 5) ck_abort_msg("item %zu of %zu wrong", i, n);
    ck_assert_uint_eq(ws[1].items, n);
  }
  /* 16 bytes staged per item: the cap is what 32 MiB holds, less alignment. */
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  size_t stage_cap = info.batch_cap;
  ck_assert_uint_gt(stage_cap, (32u << 20) / 16 - 1024);
  ck_assert_uint_le(stage_cap, (32u << 20) / 16);
  size_t m;
  mgpu_trace_event_t *e = trace_copy(rt, &m);
  int pins = 0;
  for (size_t i = 0; i < m; i++) {
    if (!strcmp(e[i].kind, "pin")) {
      pins++;
      ck_assert_uint_ge(e[i].bytes, 32u << 20);
    }
    if (!strcmp(e[i].kind, "issue")) ck_assert_uint_le(e[i].count, stage_cap);
  }
  ck_assert_int_ge(pins, 1);
  ck_assert_int_le(pins, 2);
  /* Results copied out of staging: one unstage event per kernel, with its
   * items and their 8 bytes each, after the copy from the device ended. */
  int kernels = 0;
  for (size_t i = 0; i < m; i++) {
    if (strcmp(e[i].kind, "kernel")) continue;
    kernels++;
    int found = 0;
    for (size_t j = 0; j < m; j++) {
      if (strcmp(e[j].kind, "unstage") || e[j].batch != e[i].batch || e[j].first != e[i].first) continue;
      found++;
      ck_assert_uint_eq(e[j].count, e[i].count);
      ck_assert_uint_eq(e[j].bytes, 8 * e[i].count);
      ck_assert(e[j].t1 >= e[j].t0);
    }
    ck_assert_int_eq(found, 1);
  }
  ck_assert_int_gt(kernels, 0);
  ck_assert_int_eq(check_batch_events(e, m), 7); /* n = 1000, 4000, ..., 4096000 */
  free(e);
  /* Pinned arrays: no staging, and a cap set by device memory alone. */
  uint64_t *px = mgpu_host_alloc(rt, 8 * nmax), *py = mgpu_host_alloc(rt, 8 * nmax);
  ck_assert_ptr_nonnull(px);
  ck_assert_ptr_nonnull(py);
  memcpy(px, x, 8 * nmax);
  mgpu_batch_t b = axpk_batch(&axpk, nmax, px, py, &a);
  mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  for (size_t i = 0; i < nmax; i++)
    if (py[i] != x[i] * 3 + 5) ck_abort_msg("pinned item %zu wrong", i);
  ck_assert_uint_eq(ws[1].staged_bytes, 0);
  e = trace_copy(rt, &m);
  for (size_t i = 0; i < m; i++) /* nothing staged, nothing to copy out */
    if (!strcmp(e[i].kind, "unstage")) ck_assert_uint_ne(e[i].batch, 7);
  ck_assert_int_eq(check_batch_events(e, m), 8);
  free(e);
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  ck_assert_uint_gt(info.batch_cap, stage_cap);
  mgpu_host_free(rt, px);
  mgpu_host_free(rt, py);
  free(x), free(y);
  mgpu_finalize(rt);
  unlink(path);
}
END_TEST

/* Rows of 1 KiB; on a device, the chunk that holds item 1 but not item 0 (the
 * second of a GPU's first batch: chunks of 1, 4, 16... items) lasts 0.4 s. */
#define ROW_BYTES 1024
static int rows_item(const mgpu_chunk_t *c) {
  uint8_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) memset(y + j * ROW_BYTES, (int)((c->first + j) % 251), ROW_BYTES);
  if (c->stream && c->first == 1) mgpu_test_sleep(0.4);
  return 0;
}
static const mgpu_kernel_t rows = {
    .name = "rows", .cpu = rows_item, .gpu = marker_gpu, .nout = 1, .out_size = {ROW_BYTES}};

/* A slot that grows its device buffer waits for nothing that the other slots
 * run: as cudaMalloc and cudaFree, an emulated device's plain allocation waits
 * for all its queued work, and growing through it kept a slot idle until the
 * long kernels of the others ended (7-9 ms of a 10 ms mandelbrot batch on two
 * H200s). */
START_TEST(test_buffer_growth_waits_for_no_other_stream) {
  char path[] = "/tmp/mgpu-trace-test-XXXXXX";
  mgpu_runtime_t *rt = start_traced_gpu(path, 3);
  const size_t n = 2000;
  uint8_t *y = malloc(n * ROW_BYTES);
  mgpu_batch_t b = {.kernel = &rows, .n = n, .out = {y}};
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < ROW_BYTES; j++)
      if (y[i * ROW_BYTES + j] != i % 251) ck_abort_msg("row %zu wrong", i);
  size_t m;
  mgpu_trace_event_t *e = trace_copy(rt, &m);
  double slow_end = -1;
  for (size_t i = 0; i < m; i++)
    if (!strcmp(e[i].kind, "kernel") && e[i].first == 1) slow_end = e[i].t1;
  ck_assert_msg(slow_end > 0.35, "the slow chunk [1, 5) ran on the device, ending at %g s", slow_end);
  /* Buffers grown while the slow chunk was queued or running did not wait for
   * it (not asserted under valgrind and sanitizers, which slow the host). */
  int during = 0;
  for (size_t i = 0; i < m && mgpu_test_timing(); i++) {
    if (strcmp(e[i].kind, "alloc") || e[i].t0 > slow_end - 0.2) continue;
    during++;
    ck_assert_msg(e[i].t1 < slow_end - 0.1, "a buffer of items %zu..%zu grew from %.3f s to %.3f s; the other slot's "
                  "kernel ended at %.3f s", e[i].first, e[i].first + e[i].count - 1, e[i].t0, e[i].t1, slow_end);
  }
  if (mgpu_test_timing()) ck_assert_int_ge(during, 2);
  free(e), free(y);
  mgpu_finalize(rt);
  unlink(path);
}
END_TEST

/* Items of 1.5 MiB of output, in chunks of 1, 4 and 1 items on one emulated
 * GPU (n = 6); on the device, the first two chunks last 0.05 s each and the
 * last 0.1 s, so that each chunk is issued while the one before computes.
 * The device's kernels record the order they ran in (mib_seq, by chunk). */
#define MIB_ITEM ((size_t)3 << 19)
static _Atomic int mib_next, mib_seq[3];
static int mib_item(const mgpu_chunk_t *c) {
  uint8_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) memset(y + j * MIB_ITEM, (int)((c->first + j) * 37 % 251 + 1), MIB_ITEM);
  if (!c->stream) return 0;
  int k = c->first == 0 ? 0 : c->first == 1 ? 1 : c->first + c->count == 6 ? 2 : -1;
  if (k >= 0) {
    atomic_store(&mib_seq[k], atomic_fetch_add(&mib_next, 1));
    mgpu_test_sleep(k == 2 ? 0.1 : 0.05);
  }
  return 0;
}
static const mgpu_kernel_t mib = {.name = "mib", .cpu = mib_item, .gpu = marker_gpu, .nout = 1, .out_size = {MIB_ITEM}};

/* Once every item of a batch is claimed, the batch ends when its chunks'
 * results are copied out of staging, so CPU workers help with those copies
 * even while the device still computes a newer chunk: here the 6 MiB of
 * chunk [1, 5) while chunk [5, 6) runs for 0.1 s. (The GPU thread alone
 * copied the last 23 MB of a mandelbrot batch on 4 x H200 after the
 * device's last kernel, a fifth of the batch.) */
START_TEST(test_tail_copy_out_shared) {
  const size_t n = 6;
  uint8_t *y = malloc(n * MIB_ITEM);
  mgpu_batch_t b = {.kernel = &mib, .n = n, .out = {y}};
  uint64_t helped = 0;
  /* Whether the woken CPU worker takes a piece before the GPU thread has
   * copied them all is up to the OS; under valgrind it never does. Which of
   * the kernels queued on the emulated device's streams runs first is up to
   * the OS too: only runs where they ran in order count (otherwise the device
   * may have nothing left to run as chunk [1, 5) is copied out, and the copy
   * is shared anyway). An idle machine needs a few runs; a loaded one may
   * need hundreds, so the runs are bounded by time as well. */
  const int max_runs = mgpu_test_timing() ? 2000 : 2;
  const double until = mgpu__now() + 40;
  int runs = 0, ordered = 0;
  for (; runs < max_runs && helped == 0 && (runs < 2 || mgpu__now() < until); runs++) {
    atomic_store(&mib_next, 0);
    mgpu_test_config_t cfg = mgpu_test_config(1, 1);
    cfg.cfg.sched = MGPU_SCHED_GPU;
    cfg.cfg.streams_per_gpu = 3;
    mgpu_runtime_t *rt; /* a fresh runtime: the same first chunks each time */
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    memset(y, 0, n * MIB_ITEM);
    mgpu_worker_stats_t ws[2];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    for (size_t i = 0; i < n * MIB_ITEM; i++)
      if (y[i] != (uint8_t)((i / MIB_ITEM) * 37 % 251 + 1)) ck_abort_msg("byte %zu wrong in run %d", i, runs);
    ck_assert_uint_eq(ws[1].items, n);
    ck_assert_uint_eq(ws[0].staged_bytes + ws[1].staged_bytes, n * MIB_ITEM);
    if (atomic_load(&mib_next) == 3 && atomic_load(&mib_seq[0]) == 0 && atomic_load(&mib_seq[1]) == 1) {
      ordered++;
      helped = ws[0].staged_bytes;
    }
    mgpu_finalize(rt);
  }
  printf("tail copy-out: the CPU worker copied %llu bytes in run %d (%d runs in order)\n", (unsigned long long)helped,
         runs, ordered);
  if (mgpu_test_timing())
    ck_assert_msg(helped > 0, "the CPU worker never helped copy a batch's tail out in %d runs (%d in order)", runs,
                  ordered);
  free(y);
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

START_TEST(test_cancel_cpu) { run_cancel(2, 0); }
END_TEST

START_TEST(test_cancel_gpu) { run_cancel(1, 2); }
END_TEST

/* A GPU whose chunk never ends (hang:G:K) is given up at its deadline: the
 * batch completes with every item computed once and right, the device is
 * retired, the time is bounded, and when the hung chunk ends late its results
 * never reach the caller's arrays. */
/* Holds its chunk until the test opens the gate, after saying it started. */
typedef struct {
  _Atomic int *entered, *gate;
} hold_arg_t;
static int hold_item(const mgpu_chunk_t *c) {
  const hold_arg_t *a = c->arg;
  atomic_store(a->entered, 1);
  while (!atomic_load_explicit(a->gate, memory_order_acquire)) mgpu_test_sleep(1e-4);
  return 0;
}
static const mgpu_kernel_t hold_gpu = {.name = "hold", .cpu = hold_item, .gpu = marker_gpu};

START_TEST(test_cancel_then_retire) {
  /* A batch canceled while its only worker, a GPU, holds a chunk, and that
   * GPU then retired, which leaves the batch to no worker: it stays
   * canceled (the first failure wins) rather than becoming MGPU_EDEVICE, and
   * the items the retirement dropped count as not computed. */
  mgpu_test_config_t cfg = mgpu_test_config(0, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  _Atomic int entered = 0, gate = 0;
  hold_arg_t a = {&entered, &gate};
  mgpu_batch_t b = {.kernel = &hold_gpu, .n = 1000, .arg = &a, .arg_size = sizeof a};
  mgpu_event_t *ev;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  while (!atomic_load(&entered)) mgpu_test_sleep(1e-4);
  ck_assert_int_eq(mgpu_event_cancel(ev), MGPU_OK);
  mgpu__retire(rt, &rt->workers[rt->ncpu], "retired by the test");
  atomic_store(&gate, 1);
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_ECANCELED);
  mgpu_event_release(ev);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_hang_chunk) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 2);
  cfg.cfg.sched = MGPU_SCHED_GPU;
  cfg.test.fault_inject = "hang:0:0";
  cfg.cfg.timeout = 0.5;
  cfg.cfg.streams_per_gpu = 1; /* one chunk in flight: the hung one is all GPU 0 holds */
  cfg.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 100000;
  /* Pinned arrays: results go straight from the device to them, behind the gate. */
  uint64_t *x = mgpu_host_alloc(rt, 8 * n), *y = mgpu_host_alloc(rt, 8 * n);
  ck_assert_ptr_nonnull(x);
  ck_assert_ptr_nonnull(y);
  /* Static: the hung chunk's late run counts into it after the test is done. */
  static _Atomic uint32_t cnt[100000];
  for (size_t i = 0; i < n; i++) x[i] = i, y[i] = 0, atomic_store(&cnt[i], 0);
  axpk_arg_t a = {5, cnt};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
  mgpu_stats_t st = {0};
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  double t = mgpu__now() - t0;
  for (size_t i = 0; i < n; i++) {
    if (y[i] != i * 3 + 5) ck_abort_msg("item %zu wrong", i);
    if (atomic_load(&cnt[i]) != 1) ck_abort_msg("item %zu ran %u times", i, atomic_load(&cnt[i]));
  }
  ck_assert_uint_eq(st.items, n);
  ck_assert_uint_ge(st.retries, 1);
  ck_assert_msg(t < 30, "the run with a hung GPU took %.1f s", t);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  ck_assert_int_eq(info.retired, 1);
  ck_assert_int_eq(mgpu_device_info(rt, 1, &info), MGPU_OK);
  ck_assert_int_eq(info.retired, 0);
  /* The runtime goes on: another batch, on what is left. */
  a.k = 6;
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    if (y[i] != i * 3 + 6) ck_abort_msg("second batch: item %zu wrong", i);
  /* The hung chunk ends late: its kernel runs, its results stay on the device. */
  for (size_t i = 0; i < n; i++) y[i] = 7;
  mgpu__emul_release_hangs();
  mgpu_test_sleep(0.3);
  for (size_t i = 0; i < n; i++)
    if (y[i] != 7) ck_abort_msg("item %zu overwritten by the hung device after it was given up", i);
  t0 = mgpu__now();
  mgpu_host_free(rt, x);
  mgpu_host_free(rt, y);
  mgpu_finalize(rt);
  ck_assert_msg(mgpu__now() - t0 < 10, "finalize took %.1f s", mgpu__now() - t0);
}
END_TEST

/* A collective part that never ends (hangcoll:G:K) fails its collective with
 * an error naming the GPU; the device is given up; batches go on; finalize
 * returns. Finalizing with the hang still in place is bounded too. */
START_TEST(test_hang_collective) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 2);
  cfg.test.fault_inject = "hangcoll:1:1"; /* part 0 is the buffer's allocation */
  cfg.cfg.timeout = 0.3;
  cfg.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  void *buf[2];
  for (int g = 0; g < 2; g++) ck_assert_int_eq(mgpu_device_alloc(rt, g, 64, &buf[g]), MGPU_OK);
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_allreduce(rt, (const void *const *)buf, buf, 8, MGPU_FLOAT64, MGPU_OP_SUM), MGPU_EDEVICE);
  double t = mgpu__now() - t0;
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "GPU 1"));
  ck_assert_msg(t < 30, "the hung collective took %.1f s to fail", t);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 1, &info), MGPU_OK);
  ck_assert_int_eq(info.retired, 1);
  /* Work posted to the device given up fails at once. */
  ck_assert_int_eq(mgpu_allreduce(rt, (const void *const *)buf, buf, 8, MGPU_FLOAT64, MGPU_OP_SUM), MGPU_EDEVICE);
  /* Batches run on the workers left. */
  const size_t n = 50000;
  uint64_t *x = malloc(8 * n), *y = malloc(8 * n);
  for (size_t i = 0; i < n; i++) x[i] = i;
  axpk_arg_t a = {1, NULL};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    if (y[i] != i * 3 + 1) ck_abort_msg("item %zu wrong", i);
  ck_assert_int_eq(mgpu_device_free(rt, 0, buf[0]), MGPU_OK);
  t0 = mgpu__now();
  mgpu_finalize(rt); /* GPU 1's stream is still stopped, and its buffer is left */
  ck_assert_msg(mgpu__now() - t0 < 10, "finalize took %.1f s", mgpu__now() - t0);
  free(x), free(y);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime");
  TCase *tc = tcase_create("runtime");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_dependency_chain);
  tcase_add_test(tc, test_kernel_failure);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_dependency_on_other_runtime);
  tcase_add_test(tc, test_no_worker_for_kernel);
  tcase_add_test(tc, test_stale_handles);
  tcase_add_test(tc, test_many_submitters);
  tcase_add_test(tc, test_stress_16_threads);
  tcase_add_test(tc, test_overlap_cpu_and_gpu_batches);
  tcase_add_test(tc, test_constants_uploaded_once);
  tcase_add_test(tc, test_parallel_for);
  tcase_add_test(tc, test_idle_uses_no_cpu);
  tcase_add_test(tc, test_fault_launch);
  tcase_add_test(tc, test_fault_retire);
  tcase_add_test(tc, test_fault_alloc);
  tcase_add_test(tc, test_fault_const);
  tcase_add_test(tc, test_init_props_failure);
  tcase_add_test(tc, test_gpu_only_all_retired);
  tcase_add_test(tc, test_all_retired_two_batches);
  tcase_add_test(tc, test_oom_cap);
  tcase_add_test(tc, test_pinned_host_memory);
  tcase_add_test(tc, test_staging_shared);
  tcase_add_test(tc, test_staging_helpers);
  tcase_add_test(tc, test_staging_starved_midway);
  tcase_add_test(tc, test_staging_out_edges);
  tcase_add_test(tc, test_finalize_waits);
  tcase_add_test(tc, test_stats_at_finalize);
  tcase_add_test(tc, test_staging_pinned_once);
  tcase_add_test(tc, test_progress_and_trace_events);
  tcase_add_test(tc, test_buffer_growth_waits_for_no_other_stream);
  tcase_add_test(tc, test_tail_copy_out_shared);
  tcase_add_test(tc, test_cancel_cpu);
  tcase_add_test(tc, test_cancel_gpu);
  tcase_add_test(tc, test_hang_chunk);
  tcase_add_test(tc, test_cancel_then_retire);
  tcase_add_test(tc, test_hang_collective);
  suite_add_tcase(s, tc);
  TCase *inflight = tcase_create("inflight");
  tcase_set_timeout(inflight, 120);
  tcase_add_test(inflight, test_many_batches_in_flight_cpu);
  tcase_add_test(inflight, test_many_batches_in_flight_gpu);
  suite_add_tcase(s, inflight);
  return mgpu_test_main(s);
}
