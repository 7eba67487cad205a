/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ntt.c: the number-theoretic transform over the Goldilocks field on CPUs, and
 * the twiddle table that the GPU side uploads: an iterative radix-2
 * Cooley-Tukey (decimation in time) whose input is read in bit-reversed order,
 * so that after log_n in-place stages the output is in natural order.
 */
#include "builtin.h"

static mgpu__ntt_twiddles_t twiddles;
static pthread_once_t twiddles_once = PTHREAD_ONCE_INIT;

/* One table serves every length (builtin.h), so it is built whole, once. */
static void twiddles_build(void) {
  const uint64_t root = mgpu__gl_pow(MGPU_GL_GENERATOR, (MGPU_GL_P - 1) >> 32); /* order 2^32 */
  twiddles.fwd[0] = twiddles.inv[0] = 1;
  unsigned log_2h = 1;
  for (uint32_t h = 1; h < MGPU_NTT_MAX_N; h <<= 1, log_2h++) {
    const uint64_t w = mgpu__gl_pow(root, UINT64_C(1) << (32 - log_2h));
    const uint64_t w_inv = mgpu__gl_pow(w, 2 * (uint64_t)h - 1);
    uint64_t f = 1, g = 1;
    for (uint32_t j = 0; j < h; j++) {
      twiddles.fwd[h + j] = f;
      twiddles.inv[h + j] = g;
      f = mgpu__gl_mul(f, w);
      g = mgpu__gl_mul(g, w_inv);
    }
  }
}

const mgpu__ntt_twiddles_t *mgpu__ntt_twiddles(void) {
  MGPU_PTHREAD_CHECK(pthread_once(&twiddles_once, twiddles_build));
  return &twiddles;
}

/* Next index in bit-reversed counting over `half` * 2 values. */
static inline size_t rev_next(size_t r, size_t half) {
  size_t bit = half;
  while (r & bit) {
    r ^= bit;
    bit >>= 1;
  }
  return r | bit;
}

/* Load in (.) factor, canonical, into a in bit-reversed order. */
static void load_reversed(const uint64_t *in, uint64_t *restrict a, const uint64_t *factor, size_t n) {
  size_t r = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t v = mgpu__gl_canon(in[r]);
    if (factor) v = mgpu__gl_mul(v, factor[r]);
    a[i] = v;
    r = rev_next(r, n >> 1);
  }
}

/* The same in place: values first, then swaps of the pairs i < rev(i). */
static void permute_in_place(uint64_t *a, const uint64_t *factor, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t v = mgpu__gl_canon(a[i]);
    if (factor) v = mgpu__gl_mul(v, factor[i]);
    a[i] = v;
  }
  size_t r = 0;
  for (size_t i = 0; i < n; i++) {
    if (i < r) {
      const uint64_t t = a[i];
      a[i] = a[r];
      a[r] = t;
    }
    r = rev_next(r, n >> 1);
  }
}

void mgpu__ntt_poly(const uint64_t *in, uint64_t *out, const uint64_t *factor, unsigned log_n,
                    int inverse) {
  const size_t n = (size_t)1 << log_n;
  const mgpu__ntt_twiddles_t *t = mgpu__ntt_twiddles();
  const uint64_t *tw = inverse ? t->inv : t->fwd;

  if (in == out)
    permute_in_place(out, factor, n);
  else
    load_reversed(in, out, factor, n);

  uint64_t *restrict a = out;

  /* The first stage has only the twiddle 1. */
  for (size_t s = 0; s < n; s += 2) {
    const uint64_t u = a[s], v = a[s + 1];
    a[s] = mgpu__gl_add(u, v);
    a[s + 1] = mgpu__gl_sub(u, v);
  }
  for (size_t h = 2; h < n; h <<= 1) {
    const uint64_t *restrict w = tw + h;
    for (size_t s = 0; s < n; s += 2 * h) {
      uint64_t *restrict lo = a + s, *restrict hi = a + s + h;
      for (size_t j = 0; j < h; j++) {
        const uint64_t u = lo[j], v = mgpu__gl_mul(hi[j], w[j]);
        lo[j] = mgpu__gl_add(u, v);
        hi[j] = mgpu__gl_sub(u, v);
      }
    }
  }
  if (inverse) {
    const uint64_t n_inv = mgpu__gl_inv_pow2(log_n);
    for (size_t i = 0; i < n; i++) a[i] = mgpu__gl_mul(a[i], n_inv);
  }
}

int mgpu__ntt_cpu(const mgpu_chunk_t *c) {
  const mgpu_ntt_arg_t *arg = c->arg;
  if (!arg || arg->log_n < MGPU_NTT_LOG_MIN || arg->log_n > MGPU_NTT_LOG_MAX)
    return mgpu__fail(MGPU_EINVAL, "ntt: argument log_n %d is outside %d..%d (or no argument)",
                      arg ? (int)arg->log_n : -1, MGPU_NTT_LOG_MIN, MGPU_NTT_LOG_MAX);
  const size_t n = (size_t)1 << arg->log_n;
  const uint64_t *in = c->in[0];
  uint64_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++)
    mgpu__ntt_poly(in + j * n, out + j * n, NULL, arg->log_n, arg->inverse != 0);
  return 0;
}
