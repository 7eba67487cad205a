/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpurt_kernels.h: the built-in kernels of libmgpurt, ready to put in a batch.
 *
 * Each constructor fills an mgpu_kernel_t (name, CPU function, GPU function,
 * input and output item sizes) after checking its parameters. The batch that
 * uses the kernel passes the matching argument struct below as its `arg` blob
 * (batch.arg = &arg, batch.arg_size = sizeof arg), with the same parameters the
 * kernel was constructed with: the kernel functions see only the argument, so a
 * mismatch between the two is not detected and computes garbage. The kernel
 * functions still check the argument's ranges and fail the chunk (non-zero
 * return, MGPU_EKERNEL for the batch) when they are violated.
 *
 * The CPU and GPU functions of every kernel but matvec give bit-identical
 * outputs, so a batch's result does not depend on how the runtime split it
 * (matvec's agree to a relative tolerance, see there). In a build without
 * CUDA every `gpu` pointer is NULL and the kernels run on CPU workers only.
 *
 * Finite field: several kernels compute modulo the Goldilocks prime
 * p = 2^64 - 2^32 + 1 (MGPU_GOLDILOCKS_P). Inputs are any 64-bit words and are
 * taken modulo p; outputs are always canonical, in [0, p).
 *
 * Constructor errors: MGPU_EINVAL when k_p is NULL or a parameter is out of range
 * (mgpu_last_error() names it and the accepted range); *k_p is then unchanged.
 */
#ifndef MGPURT_KERNELS_H
#define MGPURT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "mgpurt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The Goldilocks prime 2^64 - 2^32 + 1. */
#define MGPU_GOLDILOCKS_P UINT64_C(0xFFFFFFFF00000001)
/** Primitive 2^32-th root of unity modulo p: 7^((p - 1) / 2^32), 7 generating the group. */
#define MGPU_GOLDILOCKS_ROOT_2_32 UINT64_C(1753635133440165772)

/** Smallest and largest log2 of the transform length accepted by the NTT kernels. */
#define MGPU_NTT_LOG_MIN 10
#define MGPU_NTT_LOG_MAX 16

/* ------------------------------------------------------------------------- */
/* ntt: number-theoretic transform over the Goldilocks field                   */
/* ------------------------------------------------------------------------- */

/**
 * Argument of the ntt kernel.
 * log_n:   log2 of the length n, MGPU_NTT_LOG_MIN..MGPU_NTT_LOG_MAX (10..16); must
 *          equal the kernel's.
 * inverse: 0 forward, 1 inverse.
 *
 * With w the primitive n-th root of unity MGPU_GOLDILOCKS_ROOT_2_32^(2^32 / n):
 *   forward  X[k] = sum_j x[j] * w^(j*k)           mod p
 *   inverse  x[j] = n^-1 * sum_k X[k] * w^(-j*k)   mod p
 * both in natural order, so inverse(forward(x)) == x mod p.
 */
typedef struct {
  uint32_t log_n;
  int32_t inverse;
} mgpu_ntt_arg_t;

/**
 * The ntt kernel: item = one polynomial of n = 2^log_n coefficients (uint64_t),
 * nin = 1, nout = 1, in_size = out_size = 8 << log_n. Input and output must not
 * overlap on a GPU (on a CPU, in == out is allowed).
 * Errors: MGPU_EINVAL for log_n outside 10..16 or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_ntt(unsigned log_n, mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* sha256: FIPS 180-4 SHA-256 of one fixed-length message per item             */
/* ------------------------------------------------------------------------- */

/** Largest message length of the sha256 kernel, in bytes (1 MiB). */
#define MGPU_SHA256_MAX_LEN (UINT64_C(1) << 20)

/**
 * Argument of the sha256 kernel.
 * msg_len: bytes per message, 0..MGPU_SHA256_MAX_LEN; must equal the kernel's.
 */
typedef struct {
  uint64_t msg_len;
} mgpu_sha256_arg_t;

/**
 * The sha256 kernel: item = one message of msg_len bytes, digest = 32 bytes (the
 * standard big-endian byte string). nin = 1 with in_size = msg_len, except that
 * msg_len 0 gives nin = 0 (no input array); nout = 1, out_size = 32. The GPU
 * version hashes one message per thread, so it suits many short messages.
 * Errors: MGPU_EINVAL for msg_len above MGPU_SHA256_MAX_LEN or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_sha256(size_t msg_len, mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* mandelbrot: escape-time iteration counts, one image row per item            */
/* ------------------------------------------------------------------------- */

/** Largest width and height of the mandelbrot kernel. */
#define MGPU_MANDELBROT_MAX_DIM (UINT32_C(1) << 20)

/**
 * Argument of the mandelbrot kernel. The image has `height` rows (the batch has
 * n = height items) of `width` pixels. Pixel (x, y) stands for
 *   c = (x0 + x * dx) + i (y0 + y * dy),   dx = (x1 - x0) / width, dy = (y1 - y0) / height,
 * every operation in IEEE double with round-to-nearest and no fused multiply-add.
 * Its value is the number of iterations z <- z^2 + c, from z = 0, made before
 * |z|^2 > 4, capped at max_iter: points of the set give max_iter, a point with
 * |c|^2 > 4 gives 1. The iteration is, exactly:
 *   zr2 = zr*zr; zi2 = zi*zi; if (zr2 + zi2 > 4) stop;
 *   t = zr*zi; zi = (t + t) + ci; zr = (zr2 - zi2) + cr; count++.
 * width, height: 1..MGPU_MANDELBROT_MAX_DIM; max_iter: >= 1; reserved: 0;
 * x0, y0, x1, y1: finite, x0 != x1, y0 != y1 (the window may be flipped).
 */
typedef struct {
  uint32_t width;
  uint32_t height;
  uint32_t max_iter;
  uint32_t reserved;
  double x0, y0, x1, y1;
} mgpu_mandelbrot_arg_t;

/**
 * The mandelbrot kernel for *arg: item y = row y of the image, nin = 0, nout = 1,
 * out_size = 4 * width (one uint32_t count per pixel). Item indices at or past
 * arg->height fail the chunk.
 * Errors: MGPU_EINVAL for any field of *arg out of range, arg NULL or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_mandelbrot(const mgpu_mandelbrot_arg_t *arg, mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* saxpy: r = a * x + y on floats                                              */
/* ------------------------------------------------------------------------- */

/** Argument of the saxpy kernel: the scale a (any float). */
typedef struct {
  float a;
} mgpu_saxpy_arg_t;

/**
 * The saxpy kernel: item = one float; in[0] = x, in[1] = y, out[0] = r with
 * r = fl(fl(a * x) + y): a rounded product then a rounded sum, never fused, so
 * CPU and GPU agree bit for bit. nin = 2, nout = 1, all sizes 4. out[0] may be
 * the array y itself (y = a * x + y in place).
 * Errors: MGPU_EINVAL for k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_saxpy(mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* mulmod: a chain of modular multiplications (compute-bound)                  */
/* ------------------------------------------------------------------------- */

/** Largest intensity of the mulmod kernel. */
#define MGPU_MULMOD_MAX_INTENSITY UINT64_C(10000000)

/**
 * Argument of the mulmod kernel.
 * intensity: K, 1..MGPU_MULMOD_MAX_INTENSITY; must equal the kernel's.
 * Each item computes x <- x * x + 1 mod p, K times, from x = input mod p: every
 * step depends on the previous one, so the work cannot be skipped or reordered.
 */
typedef struct {
  uint64_t intensity;
} mgpu_mulmod_arg_t;

/**
 * The mulmod kernel: item = one uint64_t in, one uint64_t out (canonical, < p),
 * nin = 1, nout = 1, in_size = out_size = 8 (out may be in). Cost per item grows
 * linearly in K.
 * Errors: MGPU_EINVAL for intensity 0 or above MGPU_MULMOD_MAX_INTENSITY, or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_mulmod(uint64_t intensity, mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* chain: one long dependent chain per item, of varying length (latency-bound) */
/* ------------------------------------------------------------------------- */

/** Largest mean length of the chain kernel. */
#define MGPU_CHAIN_MAX_LENGTH UINT64_C(10000000)

/**
 * Argument of the chain kernel. length: the mean chain length L,
 * 1..MGPU_CHAIN_MAX_LENGTH. Item i computes x <- x * x + (i + 1) mod p from
 * x = input mod p, L/2 + (h(i) mod (L + 1)) times (at least once), h a fixed
 * hash of the item's index in the batch: every item is a serial chain, and
 * chains differ, as bootstrappings or proof steps do.
 */
typedef struct {
  uint64_t length;
} mgpu_chain_arg_t;

/**
 * The chain kernel: item = one uint64_t in, one uint64_t out, nin = nout = 1,
 * in_size = out_size = 8 (out may be in). An item's time is its chain's length
 * whatever the device, so a GPU reaches its throughput only with many items in
 * one launch: the shape of latency-bound work.
 * Errors: MGPU_EINVAL for length 0 or above MGPU_CHAIN_MAX_LENGTH, or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_chain(uint64_t length, mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* pipeline: three dependent batches, the middle one CPU-only                  */
/* ------------------------------------------------------------------------- */

/*
 * The pipeline runs three batches of N polynomials of n = 2^log_n coefficients,
 * each depending on the previous one:
 *   1. mgpu_kernel_ntt(log_n), arg {log_n, inverse = 0}:  X = NTT(x)
 *   2. mgpu_kernel_pipeline_decompose(log_n) (CPU only):  Y[i] = key * X[i] mod p
 *      computed as a gadget decomposition: the four base-2^16 digits d_0..d_3 of
 *      X[i] (X[i] = sum_t d_t 2^(16 t)) recomposed with the weights key * 2^(16 t),
 *      Y[i] = sum_t d_t * (key * 2^(16 t) mod p) mod p.
 *   3. mgpu_kernel_pipeline_mul_intt(log_n), one constant K of n uint64_t:
 *      Z = INTT(Y (.) K), the pointwise product then the inverse NTT.
 * With k = INTT(K), the end result is
 *   Z = key * (x (*) k) mod p,   (x (*) k)[i] = sum_j x[j] * k[(i - j) mod n],
 * the cyclic convolution (product modulo X^n - 1). For a plain check choose
 * k = X^s, i.e. K[m] = w^(s*m) (the forward NTT of the unit vector e_s, which the
 * ntt kernel's CPU function computes): then Z[i] = key * x[(i - s) mod n] mod p.
 */

/**
 * Argument of both pipeline kernels.
 * log_n: 10..16, equal to the kernel's. reserved: 0.
 * key:   the decomposition's multiplier, any value (taken mod p); unused by
 *        mul_intt.
 */
typedef struct {
  uint32_t log_n;
  uint32_t reserved;
  uint64_t key;
} mgpu_pipeline_arg_t;

/**
 * Stage 2, the gadget decomposition: item = one polynomial, nin = 1, nout = 1,
 * in_size = out_size = 8 << log_n. CPU only: gpu is always NULL.
 * Errors: MGPU_EINVAL for log_n outside 10..16 or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_pipeline_decompose(unsigned log_n, mgpu_kernel_t *k_p);

/**
 * Stage 3, pointwise product with the batch's constant 0 (n uint64_t, 8 << log_n
 * bytes) then inverse NTT: item = one polynomial, nin = 1, nout = 1,
 * in_size = out_size = 8 << log_n. The batch must have nconsts >= 1.
 * Errors: MGPU_EINVAL for log_n outside 10..16 or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_pipeline_mul_intt(unsigned log_n, mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* matvec: y = W x on floats, one row of W per item                           */
/* ------------------------------------------------------------------------- */

/**
 * Argument of the matvec kernel.
 * cols: the length of a row of W and of x, >= 1; must equal the kernel's.
 */
typedef struct {
  uint64_t cols;
} mgpu_matvec_arg_t;

/**
 * The matvec kernel y = W x for a row-major float matrix W of n rows (the
 * batch's n items) and cols columns: item r = row r of W (cols floats,
 * in_size[0] = cols * 4), output y[r] (one float, out_size[0] = 4); nin = 1,
 * nout = 1. x, cols floats, is the batch's constant 0 (nconsts >= 1).
 * y[r] = sum_i W[r][i] * x[i]: the products (exact) are summed in double and
 * the sum is rounded once to float.
 * This is the one built-in kernel whose CPU and GPU functions do NOT agree bit
 * for bit: they add in different orders, so y[r] may differ between them by a
 * unit in the last place of the float, and by more relative to |y[r]| under
 * cancellation. Compare with a tolerance relative to sum_i |W[r][i] * x[i]|
 * (1e-5 of it is ample). The GPU function is memory-bound; it reads rows with
 * 16-byte loads when cols is a multiple of 4 and W and x are 16-byte aligned.
 * Errors: MGPU_EINVAL for cols 0, cols * 4 above SIZE_MAX, or k_p NULL.
 */
MGPU_API mgpu_status_t mgpu_kernel_matvec(size_t cols, mgpu_kernel_t *k_p);

/* ------------------------------------------------------------------------- */
/* Registry                                                                   */
/* ------------------------------------------------------------------------- */

/** Number of built-in kernels (the constructors above, in order). */
MGPU_API int mgpu_builtin_count(void);
/**
 * Name of built-in kernel i, 0 <= i < mgpu_builtin_count(): "ntt", "sha256",
 * "mandelbrot", "saxpy", "mulmod", "pipeline_decompose", "pipeline_mul_intt",
 * "matvec";
 * the same string as the `name` its constructor sets. NULL when i is out of range.
 */
MGPU_API const char *mgpu_builtin_name(int i);
/** One line on kernel i: what an item is, its parameters and argument; NULL out of range. */
MGPU_API const char *mgpu_builtin_doc(int i);

#ifdef __cplusplus
}
#endif
#endif /* MGPURT_KERNELS_H */
