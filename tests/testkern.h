/* SPDX-License-Identifier: BSD-3-Clause */
/* testkern.h: the kernels and helpers that test-runtime and test-workers
 * share: y = x * 3 + k on CPUs and emulated devices, kernels that sleep their
 * items' cost or wait at a gate the test opens, and a runtime with n CPU
 * workers and e emulated GPUs. */
#ifndef MGPU_TESTKERN_H
#define MGPU_TESTKERN_H

#include "testutil.h"

#include <unistd.h>

/* Each suite uses some of them. */
#define MGPU_MAYBE_UNUSED __attribute__((unused))

/* y = x * 3 + k, where k is the batch's argument; runs on CPUs and devices. */
typedef struct {
  uint64_t k;
  _Atomic uint32_t *count; /* optional execution counter */
} axpk_arg_t;

static MGPU_MAYBE_UNUSED int axpk_cpu(const mgpu_chunk_t *c) {
  const axpk_arg_t *a = c->arg;
  const uint64_t *x = c->in[0];
  uint64_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) {
    y[j] = x[j] * 3 + a->k;
    if (a->count) atomic_fetch_add(&a->count[c->first + j], 1);
  }
  return 0;
}
static MGPU_MAYBE_UNUSED int marker_gpu(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  return 99;
}
static MGPU_MAYBE_UNUSED const mgpu_kernel_t axpk = {
    .name = "axpk", .cpu = axpk_cpu, .gpu = marker_gpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};
/* The same computation, declared CPU-only (unoffloadable). */
static MGPU_MAYBE_UNUSED const mgpu_kernel_t axpk_cpu_only = {
    .name = "axpk-cpu", .cpu = axpk_cpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};

typedef struct {
  double cost;
} cost_arg_t;
static MGPU_MAYBE_UNUSED int sleep_item(const mgpu_chunk_t *c) {
  const cost_arg_t *a = c->arg;
  if (!c->stream) mgpu_test_sleep(a->cost * (double)c->count);
  return 0;
}
static MGPU_MAYBE_UNUSED const mgpu_kernel_t cpu_sleep = {.name = "cpu-sleep", .cpu = sleep_item};

/* Waits until the test opens the gate: orders the test's steps with a worker's. */
static MGPU_MAYBE_UNUSED int gate_item(const mgpu_chunk_t *c) {
  _Atomic int *const *gate = c->arg;
  while (!atomic_load_explicit(*gate, memory_order_acquire)) mgpu_test_sleep(1e-4);
  return 0;
}
static MGPU_MAYBE_UNUSED const mgpu_kernel_t gate_kernel = {.name = "gate", .cpu = gate_item};
static MGPU_MAYBE_UNUSED const mgpu_kernel_t gpu_sleep = {.name = "gpu-sleep", .cpu = sleep_item, .gpu = marker_gpu};

static MGPU_MAYBE_UNUSED mgpu_runtime_t *start(int cpus, int emu) {
  mgpu_test_config_t c = mgpu_test_config(cpus, emu);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  return rt;
}

/* Every item of an axpk batch of n items with argument k is right: one
 * assertion for the batch, as Check records each assertion it passes. */
#define axpk_assert_right(x, y, n, k)                                                                        \
  do {                                                                                                       \
    size_t i_ = 0, n_ = (n);                                                                                 \
    while (i_ < n_ && (y)[i_] == (x)[i_] * 3 + (k)) i_++;                                                    \
    ck_assert_msg(i_ == n_, "item %zu of %zu: %llu, not %llu", i_, n_, (unsigned long long)(y)[i_],          \
                  (unsigned long long)((x)[i_] * 3 + (k)));                                                 \
  } while (0)

static MGPU_MAYBE_UNUSED mgpu_batch_t axpk_batch(const mgpu_kernel_t *k, size_t n, const uint64_t *x, uint64_t *y, axpk_arg_t *a) {
  mgpu_batch_t b = {.kernel = k, .n = n, .in = {x}, .out = {y}, .arg = a, .arg_size = sizeof *a};
  return b;
}

/* What the library writes to stderr between capture_begin and capture_end
 * goes to a temporary file, read back into text (at most len - 1 bytes). */
typedef struct {
  char path[32];
  int fd, saved;
} capture_t;
static MGPU_MAYBE_UNUSED void capture_begin(capture_t *c) {
  strcpy(c->path, "/tmp/mgpu-stderr-XXXXXX");
  c->fd = mkstemp(c->path);
  ck_assert_int_ge(c->fd, 0);
  fflush(stderr);
  c->saved = dup(STDERR_FILENO);
  ck_assert_int_ge(c->saved, 0);
  ck_assert_int_ge(dup2(c->fd, STDERR_FILENO), 0);
}
static MGPU_MAYBE_UNUSED void capture_end(capture_t *c, char *text, size_t len) {
  fflush(stderr);
  ck_assert_int_ge(dup2(c->saved, STDERR_FILENO), 0);
  close(c->saved);
  ssize_t got = pread(c->fd, text, len - 1, 0);
  close(c->fd);
  unlink(c->path);
  text[got > 0 ? got : 0] = 0;
}

/* Create a temporary file from the mkstemp template path (for trace files). */
static MGPU_MAYBE_UNUSED void temp_file(char *path) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

/* One emulated GPU alone with `streams` streams, tracing into a new file at path
 * (a mkstemp template). */
static MGPU_MAYBE_UNUSED mgpu_runtime_t *start_traced_gpu(char *path, int streams) {
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
static MGPU_MAYBE_UNUSED mgpu_trace_event_t *trace_copy(mgpu_runtime_t *rt, size_t *m) {
  *m = mgpu_trace_events(rt, NULL, 0);
  mgpu_trace_event_t *e = calloc(*m, sizeof *e);
  ck_assert_uint_eq(mgpu_trace_events(rt, e, *m), *m);
  return e;
}

/* Each batch in the trace has one "batch" event (worker -1) with its items,
 * which holds every other event of the batch (device times, moved onto the
 * host clock, within 1 ms); returns how many batches. */
static MGPU_MAYBE_UNUSED int check_batch_events(const mgpu_trace_event_t *e, size_t m) {
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

#endif
