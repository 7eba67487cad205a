/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c: the constructors of the built-in kernels and their list by name.
 */
#include "builtin.h"

#include <math.h>
#include <string.h>

static const struct {
  const char *name;
  const char *doc;
} builtins[] = {
    {"ntt", "forward or inverse NTT over Goldilocks p = 2^64-2^32+1: item = one polynomial of "
            "2^log_n uint64 (log_n 10..16), in = out = 8<<log_n bytes; arg mgpu_ntt_arg_t"},
    {"sha256", "SHA-256 (FIPS 180-4): item = one message of msg_len bytes (0..2^20), out = 32-byte "
               "digest; arg mgpu_sha256_arg_t"},
    {"mandelbrot", "Mandelbrot escape counts: item = one image row, out = width uint32 counts, no "
                   "input; arg mgpu_mandelbrot_arg_t (size, max_iter, window)"},
    {"saxpy", "r = a*x + y in float, product and sum rounded separately: item = one float, in x and "
              "y, out r; arg mgpu_saxpy_arg_t"},
    {"mulmod", "x <- x*x + 1 mod Goldilocks p, K times (intensity 1..1e7): item = one uint64 in, "
               "one out; arg mgpu_mulmod_arg_t"},
    {"chain", "latency-bound: item i is x <- x*x + (i+1) mod Goldilocks p, L/2..3L/2 times by a hash of i "
              "(mean length L 1..1e7): one uint64 in, one out; arg mgpu_chain_arg_t"},
    {"pipeline_decompose", "pipeline stage 2, CPU only: y = key*x mod p per coefficient through its "
                           "base-2^16 digits; item = one polynomial; arg mgpu_pipeline_arg_t"},
    {"pipeline_mul_intt", "pipeline stage 3: INTT(x (.) K) with K the batch's constant 0; item = one "
                          "polynomial of 2^log_n uint64; arg mgpu_pipeline_arg_t"},
    {"matvec", "y = W x in float, summed in double: item = one row of W (cols floats), out = one "
               "float; x (cols floats) is the batch's constant 0; arg mgpu_matvec_arg_t"},
};

enum { NBUILTINS = (int)(sizeof builtins / sizeof builtins[0]) };

int mgpu_builtin_count(void) { return NBUILTINS; }

const char *mgpu_builtin_name(int i) { return i >= 0 && i < NBUILTINS ? builtins[i].name : NULL; }

const char *mgpu_builtin_doc(int i) { return i >= 0 && i < NBUILTINS ? builtins[i].doc : NULL; }

/* A kernel of one input and one output; sizes in bytes per item. The
 * constructors fill the first version's layout, which every caller's struct
 * has (the usual `mgpu_kernel_t k;` has no size set to read), with size 0 to
 * say so; the fields of later versions are left alone. */
static void kernel_fill(mgpu_kernel_t *k, const char *name, mgpu_kernel_fn cpu, mgpu_kernel_fn gpu,
                        size_t in_size, size_t out_size) {
  memset(k, 0, MGPU__KERNEL_SIZE_V1);
  k->size = 0;
  k->name = name;
  k->cpu = cpu;
  k->gpu = gpu;
  k->nin = 1;
  k->nout = 1;
  k->in_size[0] = in_size;
  k->out_size[0] = out_size;
}

static mgpu_status_t check_log_n(const char *who, unsigned log_n, const mgpu_kernel_t *k_p) {
  if (!k_p) return mgpu__fail(MGPU_EINVAL, "%s: k_p is NULL", who);
  if (log_n < MGPU_NTT_LOG_MIN || log_n > MGPU_NTT_LOG_MAX)
    return mgpu__fail(MGPU_EINVAL, "%s: log_n %u is outside %d..%d", who, log_n, MGPU_NTT_LOG_MIN,
                      MGPU_NTT_LOG_MAX);
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_ntt(unsigned log_n, mgpu_kernel_t *k_p) {
  const mgpu_status_t st = check_log_n("mgpu_kernel_ntt", log_n, k_p);
  if (st != MGPU_OK) return st;
  kernel_fill(k_p, "ntt", mgpu__ntt_cpu, mgpu__builtin_gpu.ntt, (size_t)8 << log_n, (size_t)8 << log_n);
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_sha256(size_t msg_len, mgpu_kernel_t *k_p) {
  if (!k_p) return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_sha256: k_p is NULL");
  if (msg_len > MGPU_SHA256_MAX_LEN)
    return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_sha256: msg_len %zu is above %llu bytes", msg_len,
                      (unsigned long long)MGPU_SHA256_MAX_LEN);
  kernel_fill(k_p, "sha256", mgpu__sha256_cpu, mgpu__builtin_gpu.sha256, msg_len, 32);
  /* An empty message needs no input array at all. */
  if (msg_len == 0) k_p->nin = 0;
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_mandelbrot(const mgpu_mandelbrot_arg_t *arg, mgpu_kernel_t *k_p) {
  if (!k_p || !arg) return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_mandelbrot: %s is NULL", k_p ? "arg" : "k_p");
  if (arg->width < 1 || arg->width > MGPU_MANDELBROT_MAX_DIM)
    return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_mandelbrot: width %u is outside 1..%u", arg->width,
                      MGPU_MANDELBROT_MAX_DIM);
  if (arg->height < 1 || arg->height > MGPU_MANDELBROT_MAX_DIM)
    return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_mandelbrot: height %u is outside 1..%u", arg->height,
                      MGPU_MANDELBROT_MAX_DIM);
  if (arg->max_iter < 1) return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_mandelbrot: max_iter must be >= 1");
  if (!isfinite(arg->x0) || !isfinite(arg->x1) || !isfinite(arg->y0) || !isfinite(arg->y1) ||
      arg->x0 == arg->x1 || arg->y0 == arg->y1)
    return mgpu__fail(MGPU_EINVAL,
                      "mgpu_kernel_mandelbrot: window (%g,%g)-(%g,%g) must be finite with x0 != x1 "
                      "and y0 != y1",
                      arg->x0, arg->y0, arg->x1, arg->y1);
  kernel_fill(k_p, "mandelbrot", mgpu__mandelbrot_cpu, mgpu__builtin_gpu.mandelbrot, 0,
              (size_t)4 * arg->width);
  k_p->nin = 0;
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_saxpy(mgpu_kernel_t *k_p) {
  if (!k_p) return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_saxpy: k_p is NULL");
  kernel_fill(k_p, "saxpy", mgpu__saxpy_cpu, mgpu__builtin_gpu.saxpy, sizeof(float), sizeof(float));
  k_p->nin = 2;
  k_p->in_size[1] = sizeof(float);
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_mulmod(uint64_t intensity, mgpu_kernel_t *k_p) {
  if (!k_p) return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_mulmod: k_p is NULL");
  if (intensity < 1 || intensity > MGPU_MULMOD_MAX_INTENSITY)
    return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_mulmod: intensity %llu is outside 1..%llu",
                      (unsigned long long)intensity, (unsigned long long)MGPU_MULMOD_MAX_INTENSITY);
  kernel_fill(k_p, "mulmod", mgpu__mulmod_cpu, mgpu__builtin_gpu.mulmod, 8, 8);
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_chain(uint64_t length, mgpu_kernel_t *k_p) {
  if (!k_p) return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_chain: k_p is NULL");
  if (length < 1 || length > MGPU_CHAIN_MAX_LENGTH)
    return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_chain: length %llu is outside 1..%llu", (unsigned long long)length,
                      (unsigned long long)MGPU_CHAIN_MAX_LENGTH);
  kernel_fill(k_p, "chain", mgpu__chain_cpu, mgpu__builtin_gpu.chain, 8, 8);
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_pipeline_decompose(unsigned log_n, mgpu_kernel_t *k_p) {
  const mgpu_status_t st = check_log_n("mgpu_kernel_pipeline_decompose", log_n, k_p);
  if (st != MGPU_OK) return st;
  /* No GPU function on purpose: this is the pipeline's unoffloadable stage. */
  kernel_fill(k_p, "pipeline_decompose", mgpu__pipeline_decompose_cpu, NULL, (size_t)8 << log_n,
              (size_t)8 << log_n);
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_pipeline_mul_intt(unsigned log_n, mgpu_kernel_t *k_p) {
  const mgpu_status_t st = check_log_n("mgpu_kernel_pipeline_mul_intt", log_n, k_p);
  if (st != MGPU_OK) return st;
  kernel_fill(k_p, "pipeline_mul_intt", mgpu__pipeline_mul_intt_cpu, mgpu__builtin_gpu.pipeline_mul_intt,
              (size_t)8 << log_n, (size_t)8 << log_n);
  return MGPU_OK;
}

mgpu_status_t mgpu_kernel_matvec(size_t cols, mgpu_kernel_t *k_p) {
  if (!k_p) return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_matvec: k_p is NULL");
  if (cols < 1 || cols > SIZE_MAX / sizeof(float))
    return mgpu__fail(MGPU_EINVAL, "mgpu_kernel_matvec: cols %zu is outside 1..%zu (a row of cols floats must fit "
                      "in size_t)", cols, SIZE_MAX / sizeof(float));
  kernel_fill(k_p, "matvec", mgpu__matvec_cpu, mgpu__builtin_gpu.matvec, cols * sizeof(float), sizeof(float));
  return MGPU_OK;
}
