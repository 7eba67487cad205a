/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-workers.c: the workers on emulated devices: a GPU's staging copies
 * (shared with CPU workers, pinned once, cut at the edges), its buffers, the
 * faults it survives (failed launches, allocations, constants, out of
 * memory) and the ones that retire it, hangs and their deadlines, constants
 * uploaded once, and idle workers that use no CPU. Nothing is lost.
 */
#include "testkern.h"

#include <stdio.h>
#include <unistd.h>

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
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  double t = 0;
  uint64_t retries = 0;
  /* A device that keeps failing is retired after MGPU_FAILURES_TO_RETIRE
   * chunks in a row: a batch whose other device took the rest before that
   * leaves it for the next batch. */
  for (int run = 0; run < (expect_retired ? 5 : 1); run++) {
    memset(y, 0, 8 * n);
    for (size_t i = 0; i < n; i++) atomic_store(&cnt[i], 0);
    mgpu_stats_t st = MGPU_STATS_INIT;
    double t0 = mgpu__now();
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    t += mgpu__now() - t0;
    /* Chunks that failed on a device ran again elsewhere; the emulated device
     * ran the kernel on staging copies, so its failed runs count too, but every
     * output is right and the stats show the retries. */
    for (size_t i = 0; i < n; i++)
      if (y[i] != i * 3 + 9) ck_abort_msg("run %d: item %zu wrong", run, i);
    ck_assert_uint_eq(st.items, n);
    retries += st.retries;
    ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
    if (info.retired) break;
  }
  ck_assert_uint_ge(retries, 1);
  if (mgpu_test_timing()) ck_assert_msg(t < 10, "the faulty runs took %.1f s", t);
  ck_assert_int_eq(info.retired, expect_retired);
  printf("faults '%s': %llu retries, %.3f s, GPU 0 %s\n", plan, (unsigned long long)retries, t,
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
  /* The caller's message says why, not only the code's meaning. */
  ck_assert_msg(strstr(mgpu_last_error(), "no worker is left that can run it"), "%s", mgpu_last_error());
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

/* Runs k (axpk's computation) over n items on rt; checks every result where it succeeds. */
static mgpu_status_t run_axpk(mgpu_runtime_t *rt, const mgpu_kernel_t *k, size_t n, mgpu_stats_t *st) {
  uint64_t *x = malloc(8 * n), *y = calloc(n, 8);
  for (size_t i = 0; i < n; i++) x[i] = i;
  axpk_arg_t a = {5, NULL};
  mgpu_batch_t b = axpk_batch(k, n, x, y, &a);
  mgpu_status_t s = mgpu_run(rt, &b, st);
  for (size_t i = 0; i < n && s == MGPU_OK; i++)
    if (y[i] != i * 3 + 5) ck_abort_msg("kernel '%s': item %zu wrong", k->name, i);
  free(x), free(y);
  return s;
}

START_TEST(test_item_too_big_for_gpu) {
  /* One item of 'big' needs 32 MiB of device memory (scratch), more than the
   * 16 MiB emulated GPU has: a limit of that kernel, not a fault of the GPU.
   * Its batches run on the CPU workers, in steal, static and gpu mode (as
   * when every GPU is retired), and fail with MGPU_ENOMEM, naming the bytes,
   * where there is no CPU worker; more batches of it than the failures that
   * retire a GPU leave the GPU in use, with its cap, for other kernels. */
  mgpu_kernel_t big = axpk;
  big.name = "big";
  big.scratch_per_item = 32 << 20;
  const mgpu_sched_t modes[4] = {MGPU_SCHED_STEAL, MGPU_SCHED_GPU, MGPU_SCHED_STATIC, MGPU_SCHED_STEAL};
  for (int run = 0; run < 4; run++) {
    int cpus = run < 3 ? 1 : 0;
    mgpu_test_config_t cfg = mgpu_test_config(cpus, 1);
    cfg.test.emulate_mem = 16LL << 20;
    cfg.cfg.sched = modes[run];
    cfg.cfg.debug = 0; /* the warnings are expected */
    mgpu_runtime_t *rt;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    mgpu_worker_stats_t ws[2];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
    ck_assert_int_eq(run_axpk(rt, &axpk, 5000, &st), MGPU_OK);
    mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
    /* axpk's cap on the GPU, from the device memory a slot may use (the
     * statistics' batch_cap is that of whichever kernel the GPU ran last). */
    size_t cap = mgpu__room_cap(&rt->gpus[0]->room, &axpk);
    for (int rep = 0; rep < MGPU_FAILURES_TO_RETIRE + 2; rep++) {
      mgpu_status_t s = run_axpk(rt, &big, 6, &st);
      if (cpus) {
        ck_assert_msg(s == MGPU_OK, "run %d, batch %d: %s", run, rep, mgpu_last_error());
        ck_assert_uint_eq(ws[0].items, 6);
        ck_assert_uint_eq(ws[cpus].items, 0);
      } else {
        ck_assert_int_eq(s, MGPU_ENOMEM);
        ck_assert_msg(strstr(mgpu_last_error(), "bytes of device memory"), "%s", mgpu_last_error());
      }
    }
    if (!cpus) {
      /* Beside a batch in flight on the GPU, whose buffers hold memory. */
      uint64_t *x = calloc(200000, 8), *y = calloc(200000, 8), bx[6] = {0}, by[6];
      axpk_arg_t a = {1, NULL};
      mgpu_batch_t b1 = axpk_batch(&axpk, 200000, x, y, &a), b2 = axpk_batch(&big, 6, bx, by, &a);
      mgpu_event_t *e1, *e2;
      ck_assert_int_eq(mgpu_submit(rt, &b1, 0, NULL, &e1), MGPU_OK);
      ck_assert_int_eq(mgpu_submit(rt, &b2, 0, NULL, &e2), MGPU_OK);
      ck_assert_int_eq(mgpu_event_wait(e2, NULL), MGPU_ENOMEM);
      ck_assert_int_eq(mgpu_event_wait(e1, NULL), MGPU_OK);
      for (size_t i = 0; i < 200000; i++)
        if (y[i] != 1) ck_abort_msg("item %zu wrong", i);
      mgpu_event_release(e1), mgpu_event_release(e2);
      free(x), free(y);
    }
    ck_assert_int_eq(run_axpk(rt, &axpk, 5000, &st), MGPU_OK);
    ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
    ck_assert_int_eq(info.retired, 0);
    ck_assert_uint_eq(mgpu__room_cap(&rt->gpus[0]->room, &axpk), cap);
    if (modes[run] == MGPU_SCHED_GPU || !cpus) ck_assert_uint_eq(ws[cpus].items, 5000);
    mgpu_finalize(rt);
  }
}
END_TEST

/* Calls that would wait for the calling worker itself, made from inside a
 * kernel: a device call from a GPU's host thread (here the emulated stream
 * that stands for it) on that GPU, and mgpu_finalize from any worker; and
 * calls that wait for batches of the runtime (mgpu_run, mgpu_parallel_for,
 * mgpu_event_wait), which hung for good: the inner batch gave the calling
 * worker a range, and thieves leave a range's last item to its owner. */
static mgpu_runtime_t *self_rt;
static _Atomic int self_alloc = -100, self_fin_gpu = -100, self_fin_cpu = -100, self_run_gpu = -100;
static _Atomic int self_run = -100, self_loop = -100, self_wait = -100;
static char self_msg[256];
static int self_nop(const mgpu_chunk_t *c) { return 0; }
static int self_body(void *arg, size_t first, size_t count) { return 0; }
static int self_calls(const mgpu_chunk_t *c) {
  static const mgpu_kernel_t inner = {.name = "self-inner", .cpu = self_nop};
  mgpu_batch_t ib = {.kernel = &inner, .n = 100};
  if (c->stream && atomic_load(&self_alloc) == -100) {
    void *p = NULL;
    atomic_store(&self_alloc, mgpu_device_alloc(self_rt, 0, 64, &p));
    atomic_store(&self_fin_gpu, mgpu_finalize_checked(self_rt));
    atomic_store(&self_run_gpu, mgpu_run(self_rt, &ib, NULL));
  }
  if (!c->stream && atomic_load(&self_fin_cpu) == -100) {
    atomic_store(&self_fin_cpu, mgpu_finalize_checked(self_rt));
    atomic_store(&self_run, mgpu_run(self_rt, &ib, NULL));
    snprintf(self_msg, sizeof self_msg, "%s", mgpu_last_error());
    atomic_store(&self_loop, mgpu_parallel_for(self_rt, 100, self_body, NULL));
    /* Submitting is not waiting: the inner batch runs once this kernel returns. */
    mgpu_event_t *ev;
    if (mgpu_submit(self_rt, &ib, 0, NULL, &ev) == MGPU_OK) {
      atomic_store(&self_wait, mgpu_event_wait(ev, NULL));
      mgpu_event_release(ev);
    }
  }
  return 0;
}

START_TEST(test_calls_that_wait_for_the_caller) {
  /* GPU-only: the call comes from the GPU's side. */
  mgpu_test_config_t cfg = mgpu_test_config(1, 1);
  cfg.cfg.debug = 0;
  cfg.cfg.sched = MGPU_SCHED_GPU;
  ck_assert_int_eq(mgpu_test_init(&cfg, &self_rt), MGPU_OK);
  mgpu_kernel_t gk = {.name = "self-gpu", .cpu = self_calls, .gpu = self_calls};
  mgpu_batch_t gb = {.kernel = &gk, .n = 1};
  ck_assert_int_eq(mgpu_run(self_rt, &gb, NULL), MGPU_OK);
  ck_assert_int_eq(atomic_load(&self_alloc), MGPU_ESTATE);
  ck_assert_int_eq(atomic_load(&self_fin_gpu), MGPU_ESTATE);
  ck_assert_int_eq(atomic_load(&self_run_gpu), MGPU_ESTATE);
  mgpu_finalize(self_rt);
  /* A kernel without GPU function: from a CPU worker. */
  cfg.cfg.sched = MGPU_SCHED_STEAL;
  ck_assert_int_eq(mgpu_test_init(&cfg, &self_rt), MGPU_OK);
  mgpu_kernel_t ck = {.name = "self-cpu", .cpu = self_calls};
  mgpu_batch_t cb = {.kernel = &ck, .n = 1};
  ck_assert_int_eq(mgpu_run(self_rt, &cb, NULL), MGPU_OK);
  ck_assert_int_eq(atomic_load(&self_fin_cpu), MGPU_ESTATE);
  ck_assert_int_eq(atomic_load(&self_run), MGPU_ESTATE);
  ck_assert_msg(strstr(self_msg, "mgpu_run: called from a worker of the runtime"), "%s", self_msg);
  ck_assert_int_eq(atomic_load(&self_loop), MGPU_ESTATE);
  ck_assert_int_eq(atomic_load(&self_wait), MGPU_ESTATE);
  mgpu_finalize(self_rt);
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

/* Six GPU-only batches of 16 chunks of 4096 items on pageable arrays, every
 * launch 35 ms (MGPU_EMULATE_LATENCY), three slots; the GPU's host thread
 * pauses 50 ms (MGPU_FAULT_INJECT stall) after every sixth chunk from the
 * 18th where `stalls` (the first batch's chunks grow from a probe). Every
 * item is checked; returns how often a retirement found its chunk ended and
 * shared the next chunks' copies. */
static long long paced_signs(bool stalls) {
  const size_t chunk = 4096, n = 16 * chunk;
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.cfg.sched = MGPU_SCHED_GPU;
  cfg.cfg.max_batch_size = (long long)chunk;
  cfg.cfg.streams_per_gpu = 3;
  cfg.test.emulate_latency = 0.035;
  cfg.test.emulate_speed = 1e7;
  char plan[512] = "";
  for (int k = 18; stalls && k < 18 + 6 * 20; k += 6)
    snprintf(plan + strlen(plan), sizeof plan - strlen(plan), "%sstall:0:%d", *plan ? "," : "", k);
  if (stalls) cfg.test.fault_inject = plan;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  uint64_t *x = malloc(8 * n), *y = malloc(8 * n);
  for (size_t i = 0; i < n; i++) x[i] = i * 0x9e3779b97f4a7c15u;
  axpk_arg_t a = {.k = 5};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, y, &a);
  uint64_t chunks = 0;
  for (int r = 0; r < 6; r++) {
    mgpu_worker_stats_t ws[3];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 3};
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    for (size_t i = 0; i < n; i++)
      if (y[i] != x[i] * 3 + 5) ck_abort_msg("item %zu wrong after run %d", i, r);
    chunks += ws[2].chunks;
  }
  long long paced = rt->gpus[0]->host_paced;
  printf("paced by its host, %s: %lld signs in %llu chunks\n", stalls ? "stalls" : "no stall", paced,
         (unsigned long long)chunks);
  ck_assert_msg(chunks > 18 + 6 * 3, "only %llu chunks", (unsigned long long)chunks);
  free(x);
  free(y);
  mgpu_finalize(rt);
  return paced;
}

MGPU_TIMED_TEST(test_staging_paced_by_host) {
  /* A GPU whose host thread pauses, as when the OS takes its core, for
   * longer than one chunk's device time but less than two: when it issues
   * its next chunk the device still computes, so it has not run dry, but
   * the oldest chunk has ended by the time the host thread comes to retire
   * it. Its host side, not the device, sets the pace, and the next chunks'
   * copies are shared from their start. Without the pauses the host waits at
   * every retirement. A host late by a few milliseconds at one pause misses
   * one sign, not all of them. */
  if (!mgpu_test_timing()) return;
  long long with = paced_signs(true), without = paced_signs(false);
  mgpu_timing_check(with >= without + 2, "the host paced its device %lld times with pauses, %lld without", with,
                    without);
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
  cfg.cfg.debug = 1;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 100000;
  capture_t cap;
  capture_begin(&cap);
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
  char log[4096];
  capture_end(&cap, log, sizeof log);
  /* The user is told which device was given up, and why. */
  ck_assert_msg(strstr(log, "GPU 0 (device 0) is hung") != NULL, "no message naming the hung GPU: '%s'", log);
  /* And which setting made the deadline, where one set by hand could be
   * under the device's launch time. */
  ck_assert_msg(strstr(log, "(MGPU_TIMEOUT=0.5 s, every chunk's deadline") != NULL, "no MGPU_TIMEOUT named: '%s'", log);
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

/* A GPU that hangs on its third chunk, four chunks in flight: the chunks on
 * its other streams go on and end while its host thread waits for the hung
 * one, their results written into the caller's pinned array. Handed back
 * with the hung one, they were computed again, and a batch whose input is
 * its output (in place) got f(f(x)) there. They count as done; only the
 * chunks the device did not end go to the other workers. */
START_TEST(test_hang_ended_chunks) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 2);
  cfg.cfg.sched = MGPU_SCHED_GPU;
  cfg.test.fault_inject = "hang:0:2";
  cfg.cfg.timeout = 0.3;
  cfg.cfg.streams_per_gpu = 4;
  cfg.cfg.max_batch_size = 4096; /* many chunks, so that some run beside the hung one */
  cfg.cfg.debug = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 100000;
  uint64_t *x = mgpu_host_alloc(rt, 8 * n);
  ck_assert_ptr_nonnull(x);
  static _Atomic uint32_t cnt[100000];
  for (size_t i = 0; i < n; i++) x[i] = i, atomic_store(&cnt[i], 0);
  axpk_arg_t a = {5, cnt};
  mgpu_batch_t b = axpk_batch(&axpk, n, x, x, &a);
  mgpu_stats_t st = {0};
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  size_t twice = 0, wrong = 0;
  for (size_t i = 0; i < n; i++) twice += atomic_load(&cnt[i]) != 1, wrong += x[i] != i * 3 + 5;
  printf("a GPU hung beside chunks that ended: %zu items computed other than once, %zu wrong, %llu retries\n", twice,
         wrong, (unsigned long long)st.retries);
  ck_assert_uint_eq(twice, 0);
  ck_assert_uint_eq(wrong, 0);
  ck_assert_uint_eq(st.items, n);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  ck_assert_int_eq(info.retired, 1);
  mgpu_host_free(rt, x);
  mgpu_finalize(rt);
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


/* An emulated device's kernels start in the order they were launched, across
 * its streams, as a device's launch queue gives them out: stream threads
 * woken in another order would run a later launch first, and the runtime
 * would time its chunks out of order (on a 16-core host, 1 to 2 in 30 runs of
 * test-sched's latency-bound cases ended their chunks' growth early). A
 * stream stopped at an injected hang keeps no place in that order: the other
 * streams' kernels launched after the one behind it still run. */
static _Atomic int order_next;
static int order_seen[80];
static int order_item(const mgpu_chunk_t *c) {
  order_seen[atomic_fetch_add(&order_next, 1)] = (int)c->first;
  return 0;
}

START_TEST(test_emulated_launch_order) {
  mgpu__config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.test.emulate_latency = 1e-3;
  const mgpu_dev_ops_t *ops = &mgpu__dev_emul;
  void *ctx, *s[8];
  ck_assert_int_eq(ops->open(0, &cfg, &ctx), 0);
  for (int i = 0; i < 8; i++) ck_assert_int_eq(ops->stream_create(ctx, &s[i]), 0);
  const mgpu_kernel_t k = {.name = "order", .cpu = order_item};
  atomic_store(&order_next, 0);
  for (int i = 0; i < 64; i++) {
    mgpu_chunk_t c = {.first = (size_t)i, .count = 1};
    ck_assert_int_eq(ops->launch(ctx, &k, &c, s[i % 8]), 0);
  }
  for (int i = 0; i < 8; i++) ck_assert_int_eq(ops->stream_sync(ctx, s[i]), 0);
  for (int i = 0; i < 64; i++) ck_assert_msg(order_seen[i] == i, "launch %d started in place %d", order_seen[i], i);

  ck_assert_int_eq(ops->hang(ctx, s[0]), 0);
  for (int i = 64; i < 72; i++) {
    mgpu_chunk_t c = {.first = (size_t)i, .count = 1};
    ck_assert_int_eq(ops->launch(ctx, &k, &c, s[i - 64]), 0);
  }
  for (int i = 1; i < 8; i++) ck_assert_int_eq(ops->stream_sync(ctx, s[i]), 0);
  for (int i = 64; i < 71; i++) ck_assert_int_eq(order_seen[i], i + 1);
  mgpu__emul_release_hangs();
  ck_assert_int_eq(ops->stream_sync(ctx, s[0]), 0);
  ck_assert_int_eq(order_seen[71], 64);
  for (int i = 0; i < 8; i++) ops->stream_destroy(ctx, s[i]);
  ops->close(ctx);
}
END_TEST

/* A device given up keeps its hung streams stopped though hangs are
 * released later (a test's mgpu__emul_release_hangs is for every device):
 * what they hold, such as a copy into a buffer its caller has since freed,
 * must never run. */
START_TEST(test_emulated_abandoned_stays_hung) {
  mgpu__config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.test.emulate_mem = 1 << 20;
  const mgpu_dev_ops_t *ops = &mgpu__dev_emul;
  void *ctx, *s, *dev;
  ck_assert_int_eq(ops->open(0, &cfg, &ctx), 0);
  ck_assert_int_eq(ops->stream_create(ctx, &s), 0);
  ck_assert_int_eq(ops->mem_alloc(ctx, 64, &dev), 0);
  static char src[64] = "written", dst[64];
  ck_assert_int_eq(ops->hang(ctx, s), 0);
  ck_assert_int_eq(ops->copy_d2h(ctx, dst, dev, 8, s), 0);
  ck_assert_int_eq(ops->copy_h2d(ctx, dev, src, 8, s), 0);
  mgpu_test_sleep(0.05); /* the stream reaches its hang */
  ops->abandon(ctx);
  mgpu__emul_release_hangs();
  mgpu_test_sleep(0.05);
  ck_assert_int_eq(ops->stream_query(ctx, s), 1); /* still stopped */
}
END_TEST

int main(void) {
  Suite *s = suite_create("workers");
  TCase *tc = tcase_create("workers");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_constants_uploaded_once);
  tcase_add_test(tc, test_idle_uses_no_cpu);
  tcase_add_test(tc, test_fault_launch);
  tcase_add_test(tc, test_fault_retire);
  tcase_add_test(tc, test_fault_alloc);
  tcase_add_test(tc, test_fault_const);
  tcase_add_test(tc, test_init_props_failure);
  tcase_add_test(tc, test_gpu_only_all_retired);
  tcase_add_test(tc, test_all_retired_two_batches);
  tcase_add_test(tc, test_oom_cap);
  tcase_add_test(tc, test_item_too_big_for_gpu);
  tcase_add_test(tc, test_calls_that_wait_for_the_caller);
  tcase_add_test(tc, test_pinned_host_memory);
  tcase_add_test(tc, test_staging_shared);
  tcase_add_test(tc, test_staging_helpers);
  tcase_add_test(tc, test_staging_starved_midway);
  tcase_add_test(tc, test_staging_paced_by_host);
  tcase_add_test(tc, test_staging_out_edges);
  tcase_add_test(tc, test_staging_pinned_once);
  tcase_add_test(tc, test_buffer_growth_waits_for_no_other_stream);
  tcase_add_test(tc, test_tail_copy_out_shared);
  tcase_add_test(tc, test_cancel_then_retire);
  tcase_add_test(tc, test_hang_chunk);
  tcase_add_test(tc, test_hang_ended_chunks);
  tcase_add_test(tc, test_hang_collective);
  tcase_add_test(tc, test_emulated_launch_order);
  tcase_add_test(tc, test_emulated_abandoned_stays_hung);
  suite_add_tcase(s, tc);
  return mgpu_test_main(s);
}
