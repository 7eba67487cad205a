/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * builtin.h: internal header of the built-in kernels, shared by their C and
 * CUDA files, prototypes grouped by defining file. In the CUDA files it leaves
 * out base/base.h, whose C11 atomics C++17 does not have, and the Goldilocks
 * helpers become __host__ __device__, so both sides run the same arithmetic.
 */
#ifndef MGPU_BUILTIN_H
#define MGPU_BUILTIN_H

#ifndef __cplusplus
#include "base/base.h"
#endif
#include "mgpurt_kernels.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define MGPU_HD __host__ __device__ __forceinline__
#else
#define MGPU_HD inline
#endif

/* ------------------------------------------------------- Goldilocks field */
/*
 * Arithmetic modulo p = 2^64 - 2^32 + 1. Reduction of a 128-bit product uses
 * 2^64 = 2^32 - 1 (EPS) and 2^96 = -1 modulo p, so hi * 2^64 + lo folds into
 * lo - hi[63:32] + hi[31:0] * EPS with two carry corrections. add and sub take
 * canonical operands (< p); mul and reduce take any 64-bit words. Every result
 * is canonical, so CPU and GPU agree bit for bit whatever order they compute in.
 */
#define MGPU_GL_P MGPU_GOLDILOCKS_P
#define MGPU_GL_EPS UINT64_C(0xFFFFFFFF)
/* A generator of the field's multiplicative group, whose powers give the
 * roots of unity. */
#define MGPU_GL_GENERATOR 7

static MGPU_HD uint64_t mgpu__gl_canon(uint64_t a) {
  return a >= MGPU_GL_P ? a - MGPU_GL_P : a;
}

static MGPU_HD uint64_t mgpu__gl_reduce(uint64_t lo, uint64_t hi) {
  const uint64_t hi_hi = hi >> 32, hi_lo = hi & MGPU_GL_EPS;
  uint64_t t0 = lo - hi_hi;
  /* On a borrow t0 holds an extra 2^64, which is EPS modulo p. */
  if (lo < hi_hi) t0 -= MGPU_GL_EPS;
  const uint64_t t1 = (hi_lo << 32) - hi_lo; /* hi_lo * EPS, below 2^64 */
  uint64_t t2 = t0 + t1;
  if (t2 < t1) t2 += MGPU_GL_EPS; /* the lost carry 2^64 is EPS modulo p */
  return mgpu__gl_canon(t2);
}

static MGPU_HD uint64_t mgpu__gl_mul(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return mgpu__gl_reduce(a * b, __umul64hi(a, b));
#else
  const unsigned __int128 prod = (unsigned __int128)a * b;
  return mgpu__gl_reduce((uint64_t)prod, (uint64_t)(prod >> 64));
#endif
}

static MGPU_HD uint64_t mgpu__gl_add(uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  if (s < a) s += MGPU_GL_EPS; /* the sum is below 2p, so this lands below p */
  return mgpu__gl_canon(s);
}

static MGPU_HD uint64_t mgpu__gl_sub(uint64_t a, uint64_t b) {
  uint64_t d = a - b;
  if (a < b) d -= MGPU_GL_EPS; /* d + p modulo 2^64 */
  return d;
}

static MGPU_HD uint64_t mgpu__gl_pow(uint64_t a, uint64_t e) {
  uint64_t r = 1;
  a = mgpu__gl_canon(a);
  while (e) {
    if (e & 1) r = mgpu__gl_mul(r, a);
    a = mgpu__gl_mul(a, a);
    e >>= 1;
  }
  return r;
}

/* n^-1 for n = 2^log_n: n divides p - 1, and n * (p - (p - 1) / n) = -(p - 1) = 1. */
static MGPU_HD uint64_t mgpu__gl_inv_pow2(unsigned log_n) {
  return MGPU_GL_P - ((MGPU_GL_P - 1) >> log_n);
}

/* ------------------------------------------------------------------ ntt.c */
#define MGPU_NTT_MAX_N (1u << MGPU_NTT_LOG_MAX)

/*
 * Twiddle factors by stage: fwd[h + j] = w_2h^j and inv[h + j] = w_2h^-j for
 * h = 1, 2, 4, .., MGPU_NTT_MAX_N / 2 and 0 <= j < h, where w_2h is the primitive
 * 2h-th root of unity. They do not depend on n, so one table serves every
 * length; entry 0 is unused. The GPU side uploads this same table.
 */
typedef struct {
  uint64_t fwd[MGPU_NTT_MAX_N];
  uint64_t inv[MGPU_NTT_MAX_N];
} mgpu__ntt_twiddles_t;

/* Built on first call, thread-safe; never freed. */
const mgpu__ntt_twiddles_t *mgpu__ntt_twiddles(void);
/*
 * Transform one polynomial of 2^log_n coefficients (log_n checked by the caller):
 * out = NTT(in (.) factor) or INTT(in (.) factor), factor NULL meaning all ones.
 * in == out is allowed.
 */
void mgpu__ntt_poly(const uint64_t *in, uint64_t *out, const uint64_t *factor, unsigned log_n,
                    int inverse);
int mgpu__ntt_cpu(const mgpu_chunk_t *c);

/* --------------------------------------------------------------- sha256.c */
int mgpu__sha256_cpu(const mgpu_chunk_t *c);

/* ----------------------------------------------------------- mandelbrot.c */
int mgpu__mandelbrot_cpu(const mgpu_chunk_t *c);

/* ---------------------------------------------------------------- saxpy.c */
int mgpu__saxpy_cpu(const mgpu_chunk_t *c);

/* --------------------------------------------------------------- mulmod.c */
int mgpu__mulmod_cpu(const mgpu_chunk_t *c);

/* ---------------------------------------------------------------- chain.c */
/* Item i's chain length: from length/2 to length/2 + length, by a hash of i
 * (at least 1), the same on every worker whatever the chunks. */
static MGPU_HD uint64_t mgpu__chain_steps(uint64_t length, uint64_t i) {
  uint64_t h = i * UINT64_C(0x9E3779B97F4A7C15);
  h ^= h >> 29;
  h *= UINT64_C(0xBF58476D1CE4E5B9);
  h ^= h >> 32;
  uint64_t s = length / 2 + h % (length + 1);
  return s ? s : 1;
}
/* Item i's chain: x <- x * x + (i + 1) mod p, steps times, from x = in mod p. */
static MGPU_HD uint64_t mgpu__chain_item(uint64_t in, uint64_t i, uint64_t steps) {
  uint64_t x = mgpu__gl_canon(in), add = mgpu__gl_canon(i + 1);
  for (uint64_t s = 0; s < steps; s++) x = mgpu__gl_add(mgpu__gl_mul(x, x), add);
  return x;
}
int mgpu__chain_cpu(const mgpu_chunk_t *c);

/* ------------------------------------------------------------- pipeline.c */
int mgpu__pipeline_decompose_cpu(const mgpu_chunk_t *c);
int mgpu__pipeline_mul_intt_cpu(const mgpu_chunk_t *c);

/* --------------------------------------------------------------- matvec.c */
int mgpu__matvec_cpu(const mgpu_chunk_t *c);

/* ------------------------------------------------------------------ sum.c */
/* sum (not public, not per item): in[0] holds count floats (doubles where
 * arg->is_double), out[0] gets ONE double, their sum; scratch holds
 * MGPU__SUM_SCRATCH_BYTES in the data's memory for the GPU function, which
 * only enqueues. Each side gives the same bits every run; the two agree to a
 * few units in the last place of the sum of magnitudes. */
#define MGPU__SUM_GPU_BLOCKS 1024
#define MGPU__SUM_SCRATCH_BYTES (MGPU__SUM_GPU_BLOCKS * sizeof(double))
typedef struct {
  int is_double; /**< 0: the data are floats, 1: doubles */
} mgpu__sum_arg_t;
int mgpu__sum_cpu(const mgpu_chunk_t *c);

/* ------------------------------------- gpu_table.cu (or gpu_none.c) */
/* The GPU functions of the kernels; all NULL in a build without CUDA. */
typedef struct {
  mgpu_kernel_fn ntt, sha256, mandelbrot, saxpy, mulmod, pipeline_mul_intt, matvec, chain;
} mgpu__builtin_gpu_t;
extern const mgpu__builtin_gpu_t mgpu__builtin_gpu;
/*
 * The sum kernel: name "sum", cpu mgpu__sum_cpu, gpu mgpu__sum_gpu (NULL in a
 * build without CUDA), nin = nout = 1; in_size[0] = sizeof(float) and
 * out_size[0] = sizeof(double) are nominal (see the calling convention above).
 * Defined next to the GPU table, which knows whether there is a GPU function.
 */
extern const mgpu_kernel_t mgpu__sum_kernel;

/* ----------------------------------------------------------- *_cuda.cu */
/*
 * Enqueue on `stream` (a cudaStream_t) the transform of `count` polynomials of
 * 2^log_n coefficients, device pointers in and out (not overlapping), factor a
 * device array of 2^log_n words or NULL; same result as mgpu__ntt_poly. Returns
 * a cudaError_t.
 */
int mgpu__ntt_gpu_enqueue(const uint64_t *in, uint64_t *out, const uint64_t *factor, size_t count,
                          unsigned log_n, int inverse, void *stream);
int mgpu__ntt_gpu(const mgpu_chunk_t *c);
int mgpu__sha256_gpu(const mgpu_chunk_t *c);
int mgpu__mandelbrot_gpu(const mgpu_chunk_t *c);
int mgpu__saxpy_gpu(const mgpu_chunk_t *c);
int mgpu__mulmod_gpu(const mgpu_chunk_t *c);
int mgpu__chain_gpu(const mgpu_chunk_t *c);
int mgpu__pipeline_mul_intt_gpu(const mgpu_chunk_t *c);
int mgpu__matvec_gpu(const mgpu_chunk_t *c);
int mgpu__sum_gpu(const mgpu_chunk_t *c);

#ifdef __cplusplus
}
#endif
#endif /* MGPU_BUILTIN_H */
