/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * workload.c: the batch workloads' instances: the kernel, its argument and
 * the arrays of a run, filled with the seed's random inputs; for
 * verification, the kernel's functions wrapped to record which worker
 * computed each checked item (and, for --overlay, each mandelbrot row).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"

/* --intensity's defaults. mandelbrot's 10000 iterations make the middle rows'
 * cost rule, so that its batch is irregular on fast GPUs too (doc/tuning.md,
 * "mgpu-run's defaults"). */
#define MULMOD_INTENSITY_DEFAULT 1000
/* chain: a mean chain of 20000 steps is a few milliseconds per item on one
 * core, and one launch of thousands of items on a GPU. */
#define CHAIN_LENGTH_DEFAULT 20000
#define MANDEL_ITER_DEFAULT 10000

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static void *alloc_array(mgpu_runtime_t *base, const opts_t *o, size_t bytes) {
  void *p = o->pinned ? mgpu_host_alloc(base, bytes ? bytes : 1) : aligned_alloc(64, ((bytes ? bytes : 1) + 63) & ~(size_t)63);
  if (!p) {
    fprintf(stderr, "%s: cannot allocate %zu bytes of host memory\n", prog, bytes);
    exit(EXIT_FAIL);
  }
  return p;
}
static void free_array(mgpu_runtime_t *base, const opts_t *o, void *p) {
  if (o->pinned) mgpu_host_free(base, p);
  else free(p);
}

/* The kernel's functions wrapped to record which worker computed each checked
 * item, so that a wrong answer names its worker. */
static work_t *sample_target;
static mgpu_kernel_fn sample_cpu_fn, sample_gpu_fn;
static void sample_record(const mgpu_chunk_t *c) {
  size_t step = sample_target->vstep, i = (c->first + step - 1) / step * step;
  for (; i < c->first + c->count; i += step) sample_target->sample_worker[i / step] = c->worker;
}
static int sample_cpu_rec(const mgpu_chunk_t *c) {
  sample_record(c);
  return sample_cpu_fn(c);
}
static int sample_gpu_rec(const mgpu_chunk_t *c) {
  sample_record(c);
  return sample_gpu_fn(c);
}

static work_t *overlay_target;
static int mandel_cpu_rec(const mgpu_chunk_t *c);
static int mandel_gpu_rec(const mgpu_chunk_t *c);
static mgpu_kernel_fn mandel_cpu_fn, mandel_gpu_fn;

static int mandel_cpu_rec(const mgpu_chunk_t *c) {
  for (size_t j = 0; j < c->count; j++) overlay_target->row_worker[c->first + j] = c->worker;
  return mandel_cpu_fn(c);
}
/* The GPU function runs on the GPU's host thread, so it can record rows too. */
static int mandel_gpu_rec(const mgpu_chunk_t *c) {
  for (size_t j = 0; j < c->count; j++) overlay_target->row_worker[c->first + j] = c->worker;
  return mandel_gpu_fn(c);
}

/* A plugin's workload: arrays from its kernel's item sizes. */
static void setup_plugin(work_t *w, const opts_t *o, const mgpu_plugin_workload_t *pw) {
  w->plugin = pw;
  w->k = pw->kernel;
  w->n = o->items >= 0 ? (size_t)o->items : pw->default_items ? pw->default_items : (size_t)1 << 20;
  w->argp = pw->arg;
  w->arg_size = pw->arg_size;
  if (w->k.nin < 0 || w->k.nin > MGPU_MAX_ARGS || w->k.nout < 1 || w->k.nout > MGPU_MAX_ARGS) {
    fprintf(stderr, "%s: plugin workload '%s': nin must be 0..%d and nout 1..%d\n", prog, pw->name, MGPU_MAX_ARGS,
            MGPU_MAX_ARGS);
    exit(EXIT_FAIL);
  }
  for (int i = 0; i < w->k.nin; i++) {
    if (w->k.in_size[i] && w->n > SIZE_MAX / w->k.in_size[i]) usage_error("-n %zu: the arrays would overflow", w->n);
    w->in_bytes[i] = w->k.in_size[i] * w->n;
  }
  for (int i = 0; i < w->k.nout; i++) {
    if (w->k.out_size[i] && w->n > SIZE_MAX / w->k.out_size[i]) usage_error("-n %zu: the arrays would overflow", w->n);
    w->outs_bytes[i] = w->k.out_size[i] * w->n;
  }
  w->out_bytes = w->outs_bytes[0];
  double moved = 0;
  for (int i = 0; i < w->k.nin; i++) moved += (double)w->k.in_size[i];
  for (int i = 0; i < w->k.nout; i++) moved += (double)w->k.out_size[i];
  w->bytes_per_item = moved;
}

static void setup_ntt(work_t *w, const opts_t *o) {
  int lg = o->size < 0 ? 12 : o->size;
  if (lg < MGPU_NTT_LOG_MIN || lg > MGPU_NTT_LOG_MAX)
    usage_error("--size %d is invalid for %s: expected 10..16", lg, o->workload);
  w->n = o->items < 0 ? ((size_t)1 << 26 >> lg) : (size_t)o->items; /* 512 MiB of input */
  w->log_n = (unsigned)lg;
  check_status(mgpu_kernel_ntt((unsigned)lg, &w->k), "mgpu_kernel_ntt");
  w->arg.ntt = (mgpu_ntt_arg_t){(uint32_t)lg, 0};
  size_t per = (size_t)8 << lg;
  w->in_bytes[0] = w->out_bytes = per * w->n;
  w->bytes_per_item = 2.0 * per;
}

static void setup_sha256(work_t *w, const opts_t *o) {
  int len = o->size < 0 ? 64 : o->size;
  w->n = o->items < 0 ? (size_t)8 << 20 : (size_t)o->items;
  check_status(mgpu_kernel_sha256((size_t)len, &w->k), "mgpu_kernel_sha256");
  w->arg.sha.msg_len = (uint64_t)len;
  w->in_bytes[0] = (size_t)len * w->n;
  w->out_bytes = 32 * w->n;
  w->bytes_per_item = len + 32.0;
}

static void setup_mandelbrot(work_t *w, const opts_t *o) {
  int width = o->size < 0 ? 4096 : o->size;
  w->n = o->items < 0 ? 4096 : (size_t)o->items;
  if (width < 1 || (unsigned)width > MGPU_MANDELBROT_MAX_DIM)
    usage_error("--size %d is no width for mandelbrot: expected 1..%u pixels", width, MGPU_MANDELBROT_MAX_DIM);
  if (w->n > MGPU_MANDELBROT_MAX_DIM)
    usage_error("--items %zu is too many rows for mandelbrot: at most %u", w->n, MGPU_MANDELBROT_MAX_DIM);
  w->arg.mandel = (mgpu_mandelbrot_arg_t){(uint32_t)width, (uint32_t)(w->n ? w->n : 1),
                                          o->intensity ? (uint32_t)o->intensity : MANDEL_ITER_DEFAULT, 0, -2.2, -1.5,
                                          1.0, 1.5};
  check_status(mgpu_kernel_mandelbrot(&w->arg.mandel, &w->k), "mgpu_kernel_mandelbrot");
  w->out_bytes = (size_t)width * 4 * w->n;
  w->bytes_per_item = width * 4.0;
  if (o->overlay) {
    w->row_worker = calloc(w->n ? w->n : 1, sizeof(int));
    overlay_target = w;
    mandel_cpu_fn = w->k.cpu;
    mandel_gpu_fn = w->k.gpu;
    w->k.cpu = mandel_cpu_rec;
    if (w->k.gpu) w->k.gpu = mandel_gpu_rec;
  }
}

static void setup_saxpy(work_t *w, const opts_t *o) {
  w->n = o->items < 0 ? (size_t)1 << 27 : (size_t)o->items;
  check_status(mgpu_kernel_saxpy(&w->k), "mgpu_kernel_saxpy");
  w->arg.saxpy.a = 1.5f;
  w->in_bytes[0] = w->in_bytes[1] = w->out_bytes = 4 * w->n;
  w->bytes_per_item = 12;
}

/* A kernel of one uint64 in and one out whose cost per item is --intensity
 * (mulmod, chain): made by `make`; returns the intensity used. */
static uint64_t setup_u64(work_t *w, const opts_t *o, size_t n_default, uint64_t k_default,
                          mgpu_status_t (*make)(uint64_t, mgpu_kernel_t *), const char *what) {
  w->n = o->items < 0 ? n_default : (size_t)o->items;
  uint64_t k = o->intensity ? (uint64_t)o->intensity : k_default;
  check_status(make(k, &w->k), what);
  w->in_bytes[0] = w->out_bytes = 8 * w->n;
  w->bytes_per_item = 16;
  return k;
}

static void setup_mulmod(work_t *w, const opts_t *o) {
  w->arg.mulmod.intensity =
      setup_u64(w, o, (size_t)1 << 24, MULMOD_INTENSITY_DEFAULT, mgpu_kernel_mulmod, "mgpu_kernel_mulmod");
}

static void setup_chain(work_t *w, const opts_t *o) {
  w->arg.chain.length = setup_u64(w, o, (size_t)1 << 16, CHAIN_LENGTH_DEFAULT, mgpu_kernel_chain, "mgpu_kernel_chain");
}

/* The bytes of every array work_setup makes (an array of zero-byte items
 * takes one), checked against the memory available before any is made and
 * filled (base/hostmem.c); pipeline: with its two middle arrays. */
static size_t arrays_bytes(const work_t *w, bool pipeline) {
  size_t total = pipeline ? hostmem_mul(2, w->out_bytes) : 0;
  for (int i = 0; i < MGPU_MAX_ARGS; i++) {
    if (w->in_bytes[i] || i < w->k.nin) total = hostmem_add(total, w->in_bytes[i] ? w->in_bytes[i] : 1);
    if (w->outs_bytes[i] || i < w->k.nout) total = hostmem_add(total, w->outs_bytes[i] ? w->outs_bytes[i] : 1);
  }
  return total;
}

/* Whether to fill item j: SIGINT is looked at every 2^20 items, a few
 * milliseconds' work, so that inputs of gigabytes, seconds to fill, stop at
 * once. */
static bool fill_on(size_t j) { return (j & (((size_t)1 << 20) - 1)) || !atomic_load(&interrupted); }

/* The input arrays, filled by the plugin or from the seed; SIGINT stops the
 * filling (a plugin's init_input is one call, and runs to its end), and the
 * caller then runs nothing. */
static void fill_inputs(work_t *w, const opts_t *o, mgpu_runtime_t *base, const mgpu_plugin_workload_t *pw,
                        uint64_t *rng) {
  for (int i = 0; i < MGPU_MAX_ARGS && !atomic_load(&interrupted); i++) {
    /* An input of zero-byte items still needs an array (the library refuses
     * NULL with n > 0): one byte, nothing to fill. */
    if (!w->in_bytes[i] && i < w->k.nin) w->in[i] = alloc_array(base, o, 1);
    if (!w->in_bytes[i]) continue;
    w->in[i] = alloc_array(base, o, w->in_bytes[i]);
    if (pw && pw->init_input) {
      if (pw->init_input(i, w->in[i], w->n, o->seed) != 0) {
        fprintf(stderr, "%s: plugin workload '%s' could not fill input %d\n", prog, pw->name, i);
        exit(EXIT_FAIL);
      }
    } else if (!strcmp(w->name, "saxpy")) {
      float *f = w->in[i];
      for (size_t j = 0; j < w->n && fill_on(j); j++)
        f[j] = (float)(rng_next(rng) >> 40) / (float)(1 << 24) - 0.5f;
    } else {
      uint64_t *u = w->in[i];
      for (size_t j = 0; j < w->in_bytes[i] / 8 && fill_on(j); j++)
        u[j] = rng_next(rng) % MGPU_GOLDILOCKS_P;
      unsigned char *bytes = w->in[i];
      for (size_t j = w->in_bytes[i] / 8 * 8; j < w->in_bytes[i]; j++) bytes[j] = (unsigned char)rng_next(rng);
    }
  }
}

/* Record the worker of each checked item, so that a wrong one names it. A
 * run of up to 4096 items has each checked, a longer one fewer than 3000
 * (batch.c), whatever its length. */
static void setup_sampling(work_t *w) {
  w->sample_cap = w->n < 4096 ? w->n : 4096;
  w->sample_worker = malloc((w->sample_cap ? w->sample_cap : 1) * sizeof(int));
  for (size_t i = 0; i < w->sample_cap; i++) w->sample_worker[i] = -1;
  sample_target = w;
  sample_cpu_fn = w->k.cpu;
  sample_gpu_fn = w->k.gpu;
  w->k.cpu = sample_cpu_rec;
  if (w->k.gpu) w->k.gpu = sample_gpu_rec;
}

/* The pipeline's middle arrays, key and shift, and its constant
 * K = NTT(e_shift), computed with the ntt kernel's CPU function. */
static void setup_pipeline(work_t *w, const opts_t *o, mgpu_runtime_t *base, uint64_t *rng) {
  w->mid1 = alloc_array(base, o, w->out_bytes);
  w->mid2 = alloc_array(base, o, w->out_bytes);
  w->key = rng_next(rng) % MGPU_GOLDILOCKS_P;
  w->shift = (unsigned)(rng_next(rng) % (1u << w->log_n));
  size_t nn = (size_t)1 << w->log_n;
  uint64_t *e = calloc(nn, 8), *K = calloc(nn, 8);
  e[w->shift] = 1;
  const void *ins[1] = {e};
  void *outs[1] = {K};
  mgpu_ntt_arg_t a = {w->log_n, 0};
  mgpu_chunk_t ch = {.in = ins, .out = outs, .arg = &a, .first = 0, .count = 1};
  if (w->k.cpu(&ch) != 0) {
    fprintf(stderr, "%s: computing the pipeline constant failed\n", prog);
    exit(EXIT_FAIL);
  }
  w->K = K;
  free(e);
  w->bytes_per_item = 6.0 * (double)nn * 8;
}

void work_setup(work_t *w, const opts_t *o, mgpu_runtime_t *base, const mgpu_plugin_workload_t *pw) {
  memset(w, 0, sizeof *w);
  w->name = o->workload;
  w->argp = &w->arg;
  w->arg_size = sizeof w->arg;
  uint64_t rng = o->seed * 0x2545F4914F6CDD1Dull + 1;
  const char *wl = o->workload;
  if (pw) setup_plugin(w, o, pw);
  else if (!strcmp(wl, "ntt") || !strcmp(wl, "pipeline")) setup_ntt(w, o);
  else if (!strcmp(wl, "sha256")) setup_sha256(w, o);
  else if (!strcmp(wl, "mandelbrot")) setup_mandelbrot(w, o);
  else if (!strcmp(wl, "saxpy")) setup_saxpy(w, o);
  else if (!strcmp(wl, "chain")) setup_chain(w, o);
  else setup_mulmod(w, o);
  if (!pw) w->outs_bytes[0] = w->out_bytes;
  if (!hostmem_fits(arrays_bytes(w, !strcmp(wl, "pipeline")), "-n")) exit(EXIT_FAIL);
  fill_inputs(w, o, base, pw, &rng);
  for (int i = 0; i < MGPU_MAX_ARGS; i++)
    if (w->outs_bytes[i] || i < w->k.nout) w->outs[i] = alloc_array(base, o, w->outs_bytes[i] ? w->outs_bytes[i] : 1);
  w->out = w->outs[0];
  w->b = (mgpu_batch_t){.size = sizeof w->b, .kernel = &w->k, .n = w->n, .arg = w->argp, .arg_size = w->arg_size};
  for (int i = 0; i < MGPU_MAX_ARGS; i++) w->b.in[i] = w->in[i], w->b.out[i] = w->outs[i];
  /* An item's cost follows the intensity: each its own model, in the
   * runtime and in the model store (mgpu_batch_t.footprint, of version 2:
   * hence .size). */
  w->b.footprint = work_intensity(w);
  w->ref_cpu = mandel_cpu_fn && w->row_worker ? mandel_cpu_fn : w->k.cpu;
  w->nrun = w->ndone = w->n;
  w->vstep = verify_step(w->n); /* set again by each run */
  w->k_real = w->k;
  if (o->verify && strcmp(wl, "pipeline") != 0) setup_sampling(w);
  if (!strcmp(wl, "pipeline")) setup_pipeline(w, o, base, &rng);
}

/* The workload's --intensity as run, or 0 where it has none. */
unsigned long long work_intensity(const work_t *w) {
  if (!strcmp(w->name, "mulmod")) return w->arg.mulmod.intensity;
  if (!strcmp(w->name, "chain")) return w->arg.chain.length;
  if (!strcmp(w->name, "mandelbrot")) return w->arg.mandel.max_iter;
  return 0;
}

/* Release what work_setup() made. */
void work_free(work_t *w, mgpu_runtime_t *base, const opts_t *o) {
  if (w->kconst) mgpu_const_destroy(w->kconst);
  for (int i = 0; i < MGPU_MAX_ARGS; i++) {
    if (w->in[i]) free_array(base, o, w->in[i]);
    if (w->outs[i]) free_array(base, o, w->outs[i]);
  }
  if (w->mid1) free_array(base, o, w->mid1), free_array(base, o, w->mid2);
  free(w->row_worker);
  free(w->sample_worker);
  free(w->K);
}
