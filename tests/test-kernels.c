/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-kernels.c: the built-in kernels, called through their descriptors on
 * hand-made chunks (no runtime): known answers, slow references, chunk
 * boundaries, constructor errors and, in CUDA builds with a GPU, bit-identical
 * CPU and GPU outputs.
 */
/* The scalar Mandelbrot and saxpy references must round like the kernels. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "builtin.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef MGPU_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define P MGPU_GOLDILOCKS_P

/* ------------------------------------------------------------- helpers */

/* splitmix64: reproducible inputs for every test. */
static uint64_t rnd_next(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  ck_assert_ptr_nonnull(p);
  return p;
}

static void fill_random(void *buf, size_t bytes, uint64_t seed) {
  uint8_t *b = buf;
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t v = rnd_next(&seed);
    const size_t m = bytes - i < 8 ? bytes - i : 8;
    memcpy(b + i, &v, m);
  }
}

/* Slow, independent Goldilocks arithmetic: 128-bit remainders. */
static uint64_t ref_mul(uint64_t a, uint64_t b) { return (uint64_t)((unsigned __int128)a * b % P); }
static uint64_t ref_add(uint64_t a, uint64_t b) { return (uint64_t)(((unsigned __int128)a + b) % P); }
static uint64_t ref_pow(uint64_t a, uint64_t e) {
  uint64_t r = 1;
  a %= P;
  for (; e; e >>= 1, a = ref_mul(a, a))
    if (e & 1) r = ref_mul(r, a);
  return r;
}

/* A kernel with its argument and arrays; in/out name item 0. */
typedef struct {
  const mgpu_kernel_t *k;
  const void *arg;
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  const void *consts[MGPU_MAX_CONSTS];
} job_t;

/* The CPU function on items [first, first + count), as a CPU worker calls it. */
static int job_cpu(const job_t *j, void *const *out, size_t first, size_t count) {
  const void *in[MGPU_MAX_ARGS] = {NULL};
  void *o[MGPU_MAX_ARGS] = {NULL};
  for (int i = 0; i < j->k->nin; i++) in[i] = (const char *)j->in[i] + first * j->k->in_size[i];
  for (int i = 0; i < j->k->nout; i++) o[i] = (char *)out[i] + first * j->k->out_size[i];
  const mgpu_chunk_t c = {.in = in, .out = o, .consts = j->consts, .arg = j->arg, .first = first, .count = count};
  return j->k->cpu(&c);
}

/* All n items in one chunk, then in chunks of 1..7 items: outputs must match. */
static void check_chunking(const job_t *j, size_t n, uint64_t seed) {
  void *whole[MGPU_MAX_ARGS] = {NULL}, *split[MGPU_MAX_ARGS] = {NULL};
  for (int i = 0; i < j->k->nout; i++) {
    whole[i] = xmalloc(n * j->k->out_size[i]);
    split[i] = xmalloc(n * j->k->out_size[i]);
    memset(whole[i], 0xAA, n * j->k->out_size[i]);
    memset(split[i], 0x55, n * j->k->out_size[i]);
  }
  ck_assert_int_eq(job_cpu(j, whole, 0, n), 0);
  size_t chunks = 0;
  for (size_t first = 0; first < n; chunks++) {
    size_t len = 1 + rnd_next(&seed) % 7;
    if (len > n - first) len = n - first;
    ck_assert_int_eq(job_cpu(j, split, first, len), 0);
    first += len;
  }
  ck_assert_uint_gt(chunks, 1);
  for (int i = 0; i < j->k->nout; i++) {
    ck_assert_msg(memcmp(whole[i], split[i], n * j->k->out_size[i]) == 0,
                  "%s: output %d differs between one chunk and %zu chunks", j->k->name, i, chunks);
    free(whole[i]);
    free(split[i]);
  }
}

/* ---------------------------------------------------------- Goldilocks */

START_TEST(test_gl_arith) {
  const uint64_t edge[] = {0, 1, 2, MGPU_GL_EPS, MGPU_GL_EPS + 1, UINT64_C(1) << 32, UINT64_C(1) << 63,
                           P - 2, P - 1, P, P + 1, UINT64_MAX - 1, UINT64_MAX};
  const size_t ne = sizeof edge / sizeof edge[0];
  uint64_t s = 1;
  for (size_t t = 0; t < 200000 + ne * ne; t++) {
    uint64_t a, b;
    if (t < ne * ne) {
      a = edge[t / ne];
      b = edge[t % ne];
    } else {
      a = rnd_next(&s);
      b = rnd_next(&s);
      if (t & 1) a >>= rnd_next(&s) % 64;
    }
    ck_assert_uint_eq(mgpu__gl_mul(a, b), ref_mul(a, b));
    ck_assert_uint_eq(mgpu__gl_reduce(a, b), (uint64_t)((((unsigned __int128)b << 64) | a) % P));
    const uint64_t ca = a % P, cb = b % P;
    ck_assert_uint_eq(mgpu__gl_add(ca, cb), ref_add(ca, cb));
    ck_assert_uint_eq(mgpu__gl_sub(ca, cb), ref_add(ca, P - cb));
  }
  for (unsigned l = 0; l <= 32; l++) ck_assert_uint_eq(mgpu__gl_mul(mgpu__gl_inv_pow2(l), UINT64_C(1) << l), 1);
}
END_TEST

START_TEST(test_ntt_root) {
  const uint64_t g = ref_pow(7, (P - 1) >> 32);
  ck_assert_uint_eq(g, MGPU_GOLDILOCKS_ROOT_2_32);
  ck_assert_uint_eq(ref_pow(g, UINT64_C(1) << 31), P - 1);
  ck_assert_uint_eq(ref_pow(g, UINT64_C(1) << 32), 1);
  const mgpu__ntt_twiddles_t *t = mgpu__ntt_twiddles();
  for (uint32_t h = 1; h < MGPU_NTT_MAX_N; h <<= 1) {
    unsigned log_2h = 0;
    while ((UINT32_C(1) << log_2h) < 2 * h) log_2h++;
    const uint64_t w = ref_pow(g, UINT64_C(1) << (32 - log_2h));
    ck_assert_uint_eq(t->fwd[h], 1);
    ck_assert_uint_eq(t->inv[h], 1);
    for (uint32_t j = 1; j < h; j += 1 + j / 3) {
      ck_assert_uint_eq(t->fwd[h + j], ref_pow(w, j));
      ck_assert_uint_eq(ref_mul(t->fwd[h + j], t->inv[h + j]), 1);
    }
  }
}
END_TEST

/* ----------------------------------------------------------------- ntt */

static void naive_dft(const uint64_t *x, uint64_t *y, unsigned log_n, int inverse) {
  const size_t n = (size_t)1 << log_n;
  uint64_t w = ref_pow(MGPU_GOLDILOCKS_ROOT_2_32, UINT64_C(1) << (32 - log_n));
  if (inverse) w = ref_pow(w, n - 1);
  uint64_t *pw = xmalloc(n * sizeof *pw);
  pw[0] = 1;
  for (size_t i = 1; i < n; i++) pw[i] = ref_mul(pw[i - 1], w);
  const uint64_t n_inv = ref_pow(n, P - 2);
  for (size_t k = 0; k < n; k++) {
    uint64_t acc = 0;
    for (size_t j = 0; j < n; j++) acc = ref_add(acc, ref_mul(x[j], pw[(j * k) & (n - 1)]));
    y[k] = inverse ? ref_mul(acc, n_inv) : acc;
  }
  free(pw);
}

static void ntt_run(unsigned log_n, int inverse, const uint64_t *in, uint64_t *out, size_t count) {
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_ntt(log_n, &k), MGPU_OK);
  const mgpu_ntt_arg_t arg = {log_n, inverse};
  const job_t j = {.k = &k, .arg = &arg, .in = {in}};
  void *o[1] = {out};
  ck_assert_int_eq(job_cpu(&j, o, 0, count), 0);
}

START_TEST(test_ntt_naive) {
  const unsigned log_n = 10;
  const size_t n = (size_t)1 << log_n, count = 3;
  uint64_t *x = xmalloc(count * n * 8), *y = xmalloc(count * n * 8), *ref = xmalloc(n * 8);
  fill_random(x, count * n * 8, 10); /* raw 64-bit words: some are >= p */
  ntt_run(log_n, 0, x, y, count);
  for (size_t i = 0; i < count; i++) {
    naive_dft(x + i * n, ref, log_n, 0);
    ck_assert_msg(memcmp(y + i * n, ref, n * 8) == 0, "forward NTT of polynomial %zu differs from the DFT", i);
  }
  ntt_run(log_n, 1, x, y, 1);
  naive_dft(x, ref, log_n, 1);
  ck_assert_msg(memcmp(y, ref, n * 8) == 0, "inverse NTT differs from the inverse DFT");
  free(x);
  free(y);
  free(ref);
}
END_TEST

START_TEST(test_ntt_roundtrip) {
  for (unsigned log_n = MGPU_NTT_LOG_MIN; log_n <= MGPU_NTT_LOG_MAX; log_n++) {
    const size_t n = (size_t)1 << log_n, count = 2;
    uint64_t *x = xmalloc(count * n * 8), *y = xmalloc(count * n * 8), *z = xmalloc(count * n * 8);
    fill_random(x, count * n * 8, log_n);
    ntt_run(log_n, 0, x, y, count);
    ntt_run(log_n, 1, y, z, count);
    for (size_t i = 0; i < count * n; i++) ck_assert_uint_eq(z[i], x[i] % P);
    /* In place gives the same transform. */
    memcpy(z, x, count * n * 8);
    ntt_run(log_n, 0, z, z, count);
    ck_assert_msg(memcmp(y, z, count * n * 8) == 0, "in-place NTT differs, log_n %u", log_n);
    /* The unit vector e_1 transforms to the powers of w. */
    memset(x, 0, n * 8);
    x[1] = 1;
    ntt_run(log_n, 0, x, y, 1);
    const uint64_t w = ref_pow(MGPU_GOLDILOCKS_ROOT_2_32, UINT64_C(1) << (32 - log_n));
    uint64_t wi = 1;
    for (size_t i = 0; i < n; i++, wi = ref_mul(wi, w)) ck_assert_uint_eq(y[i], wi);
    free(x);
    free(y);
    free(z);
  }
}
END_TEST

START_TEST(test_ntt_bad_arg) {
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_ntt(10, &k), MGPU_OK);
  uint64_t buf[1024] = {0};
  const mgpu_ntt_arg_t bad = {9, 0};
  const job_t j = {.k = &k, .arg = &bad, .in = {buf}};
  void *o[1] = {buf};
  ck_assert_int_ne(job_cpu(&j, o, 0, 1), 0);
  const job_t none = {.k = &k, .arg = NULL, .in = {buf}};
  ck_assert_int_ne(job_cpu(&none, o, 0, 1), 0);
}
END_TEST

/* -------------------------------------------------------------- sha256 */

static void sha256_run(const void *msg, size_t len, size_t count, uint8_t *digests) {
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_sha256(len, &k), MGPU_OK);
  const mgpu_sha256_arg_t arg = {len};
  const job_t j = {.k = &k, .arg = &arg, .in = {msg}};
  void *o[1] = {digests};
  ck_assert_int_eq(job_cpu(&j, o, 0, count), 0);
}

static void hex(const uint8_t *d, char *s) {
  for (int i = 0; i < 32; i++) sprintf(s + 2 * i, "%02x", d[i]);
}

static void check_sha256(const char *msg, size_t len, const char *want) {
  uint8_t d[32];
  char s[65];
  sha256_run(msg, len, 1, d);
  hex(d, s);
  ck_assert_str_eq(s, want);
}

START_TEST(test_sha256_fips) {
  check_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  check_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  check_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  check_sha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
               "mnopqrstnopqrstu",
               112, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  char *million = xmalloc(1000000);
  memset(million, 'a', 1000000);
  check_sha256(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(million);
}
END_TEST

/* Message j of length L: byte i = i*131 + L*7 + j*13 + 1 (mod 256). */
static void sha256_pattern(uint8_t *m, size_t len, size_t j) {
  for (size_t i = 0; i < len; i++) m[i] = (uint8_t)(i * 131 + len * 7 + j * 13 + 1);
}

START_TEST(test_sha256_lengths) {
  /* Every length 0..129 crosses the one- and two-block padding cases; the
   * expected value, the hash of all 3 x 130 digests, comes from Python hashlib. */
  enum { NLEN = 130, PER = 3 };
  uint8_t *all = xmalloc(NLEN * PER * 32), *msgs = xmalloc(NLEN * PER);
  for (size_t len = 0; len < NLEN; len++) {
    for (size_t j = 0; j < PER; j++) sha256_pattern(msgs + j * len, len, j);
    sha256_run(msgs, len, PER, all + len * PER * 32);
  }
  uint8_t d[32];
  char s[65];
  sha256_run(all, NLEN * PER * 32, 1, d);
  hex(d, s);
  ck_assert_str_eq(s, "10d60d35b4b96b966a2fa78c6b098fcc2015beaf749881d4b9bfe26e3145fd59");
  free(all);
  free(msgs);
}
END_TEST

/* ---------------------------------------------------------- mandelbrot */

static uint32_t mandel_ref(double cr, double ci, uint32_t max_iter) {
  double zr = 0, zi = 0;
  uint32_t it = 0;
  while (it < max_iter) {
    const double zr2 = zr * zr, zi2 = zi * zi;
    if (zr2 + zi2 > 4.0) break;
    const double t = zr * zi;
    zi = (t + t) + ci;
    zr = (zr2 - zi2) + cr;
    it++;
  }
  return it;
}

static void mandel_run(const mgpu_mandelbrot_arg_t *a, uint32_t *img) {
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_mandelbrot(a, &k), MGPU_OK);
  ck_assert_int_eq(k.nin, 0);
  ck_assert_uint_eq(k.out_size[0], 4 * (size_t)a->width);
  const job_t j = {.k = &k, .arg = a};
  void *o[1] = {img};
  ck_assert_int_eq(job_cpu(&j, o, 0, a->height), 0);
}

START_TEST(test_mandelbrot_known) {
  /* A 4x4 window on [-2, 2)^2: pixel (x, y) is c = (x - 2) + (y - 2)i exactly. */
  const mgpu_mandelbrot_arg_t a = {.width = 4, .height = 4, .max_iter = 1000, .x0 = -2, .y0 = -2, .x1 = 2, .y1 = 2};
  uint32_t img[16];
  mandel_run(&a, img);
  ck_assert_uint_eq(img[2 * 4 + 2], 1000); /* c = 0: in the set */
  ck_assert_uint_eq(img[2 * 4 + 1], 1000); /* c = -1: the cycle 0, -1 */
  ck_assert_uint_eq(img[2 * 4 + 0], 1000); /* c = -2: z stays at 2, |z|^2 = 4 is not > 4 */
  ck_assert_uint_eq(img[2 * 4 + 3], 3);    /* c = 1: 0, 1, 2, 5 escapes */
  ck_assert_uint_eq(img[0], 1);            /* c = -2-2i: |c|^2 = 8 */
  ck_assert_uint_eq(img[3], 1);            /* c = 1-2i */
  /* A larger window against the scalar reference; width not a multiple of 8. */
  const mgpu_mandelbrot_arg_t b = {
      .width = 203, .height = 61, .max_iter = 300, .x0 = -2.2, .y0 = -1.3, .x1 = 0.8, .y1 = 1.25};
  uint32_t *big = xmalloc((size_t)b.width * b.height * 4);
  mandel_run(&b, big);
  const double dx = (b.x1 - b.x0) / b.width, dy = (b.y1 - b.y0) / b.height;
  for (uint32_t y = 0; y < b.height; y++)
    for (uint32_t x = 0; x < b.width; x++)
      ck_assert_uint_eq(big[(size_t)y * b.width + x], mandel_ref(b.x0 + x * dx, b.y0 + y * dy, b.max_iter));
  free(big);
  /* Rows past the height fail. */
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_mandelbrot(&a, &k), MGPU_OK);
  const job_t j = {.k = &k, .arg = &a};
  void *o[1] = {img};
  ck_assert_int_ne(job_cpu(&j, o, 2, 3), 0);
}
END_TEST

/* --------------------------------------------------------------- saxpy */

START_TEST(test_saxpy_exact) {
  enum { N = 1000 };
  float *x = xmalloc(N * 4), *y = xmalloc(N * 4), *r = xmalloc(N * 4);
  uint64_t s = 5;
  for (int i = 0; i < N; i++) {
    x[i] = (float)((double)(int64_t)rnd_next(&s) / 9.2e18 * 1000.0);
    y[i] = (float)((double)(int64_t)rnd_next(&s) / 9.2e18 * 1000.0);
  }
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_saxpy(&k), MGPU_OK);
  ck_assert_int_eq(k.nin, 2);
  const mgpu_saxpy_arg_t arg = {1.7f};
  const job_t j = {.k = &k, .arg = &arg, .in = {x, y}};
  void *o[1] = {r};
  ck_assert_int_eq(job_cpu(&j, o, 0, N), 0);
  for (int i = 0; i < N; i++) {
    volatile float prod = arg.a * x[i]; /* rounded on its own, as the kernel does */
    const float want = prod + y[i];
    ck_assert_msg(memcmp(&r[i], &want, 4) == 0, "saxpy item %d: %a, want %a", i, r[i], want);
  }
  /* Small integers: every step is exact. */
  const mgpu_saxpy_arg_t three = {3.0f};
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i - 500);
    y[i] = (float)(2 * i);
  }
  const job_t j3 = {.k = &k, .arg = &three, .in = {x, y}};
  void *o3[1] = {y}; /* in place: y = 3x + y */
  ck_assert_int_eq(job_cpu(&j3, o3, 0, N), 0);
  for (int i = 0; i < N; i++) ck_assert_float_eq(y[i], (float)(3 * (i - 500) + 2 * i));
  free(x);
  free(y);
  free(r);
}
END_TEST

/* -------------------------------------------------------------- mulmod */

START_TEST(test_mulmod_ref) {
  enum { N = 64 };
  const uint64_t intensity = 1000;
  uint64_t in[N], out[N];
  fill_random(in, sizeof in, 77);
  in[0] = 0;
  in[1] = P;
  in[2] = UINT64_MAX;
  in[3] = P - 1;
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_mulmod(intensity, &k), MGPU_OK);
  const mgpu_mulmod_arg_t arg = {intensity};
  const job_t j = {.k = &k, .arg = &arg, .in = {in}};
  void *o[1] = {out};
  ck_assert_int_eq(job_cpu(&j, o, 0, N), 0);
  for (int i = 0; i < N; i++) {
    uint64_t x = in[i] % P;
    for (uint64_t s = 0; s < intensity; s++) x = ref_add(ref_mul(x, x), 1);
    ck_assert_uint_eq(out[i], x);
  }
  const mgpu_mulmod_arg_t zero = {0};
  const job_t jz = {.k = &k, .arg = &zero, .in = {in}};
  ck_assert_int_ne(job_cpu(&jz, o, 0, N), 0);
}
END_TEST

/* --------------------------------------------------------------- chain */

/* The documented length of item i's chain (mgpurt_kernels.h). */
static uint64_t ref_chain_steps(uint64_t len, uint64_t i) {
  uint64_t h = i * UINT64_C(0x9E3779B97F4A7C15);
  h ^= h >> 29;
  h *= UINT64_C(0xBF58476D1CE4E5B9);
  h ^= h >> 32;
  uint64_t s = len / 2 + h % (len + 1);
  return s ? s : 1;
}

START_TEST(test_chain_ref) {
  enum { N = 64 };
  const uint64_t len = 300;
  uint64_t in[N], out[N];
  fill_random(in, sizeof in, 78);
  in[0] = 0;
  in[1] = P;
  in[2] = UINT64_MAX;
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_chain(len, &k), MGPU_OK);
  ck_assert_ptr_nonnull(k.gpu);
  const mgpu_chain_arg_t arg = {len};
  const job_t j = {.k = &k, .arg = &arg, .in = {in}};
  void *o[1] = {out};
  ck_assert_int_eq(job_cpu(&j, o, 0, N), 0);
  uint64_t shortest = UINT64_MAX, longest = 0;
  for (int i = 0; i < N; i++) {
    uint64_t steps = ref_chain_steps(len, (uint64_t)i), x = in[i] % P;
    shortest = steps < shortest ? steps : shortest;
    longest = steps > longest ? steps : longest;
    for (uint64_t s = 0; s < steps; s++) x = ref_add(ref_mul(x, x), (uint64_t)i + 1);
    ck_assert_uint_eq(out[i], x);
  }
  /* Lengths vary over most of L/2 .. 3L/2. */
  ck_assert_uint_ge(shortest, len / 2);
  ck_assert_uint_le(longest, len / 2 + len);
  ck_assert_uint_gt(longest - shortest, len / 2);
  ck_assert_uint_eq(ref_chain_steps(1, 5) >= 1, 1);
  const mgpu_chain_arg_t zero = {0};
  const job_t jz = {.k = &k, .arg = &zero, .in = {in}};
  ck_assert_int_ne(job_cpu(&jz, o, 0, N), 0);
}
END_TEST

/* ------------------------------------------------------------ pipeline */

/* Stages 2 and 3 on the forward transform of x, with constant K. */
static void pipeline_run(unsigned log_n, uint64_t key, const uint64_t *x, const uint64_t *kc, uint64_t *z,
                         size_t count) {
  const size_t n = (size_t)1 << log_n;
  uint64_t *X = xmalloc(count * n * 8), *Y = xmalloc(count * n * 8);
  ntt_run(log_n, 0, x, X, count);
  mgpu_kernel_t kd, km;
  ck_assert_int_eq(mgpu_kernel_pipeline_decompose(log_n, &kd), MGPU_OK);
  ck_assert_ptr_null(kd.gpu);
  ck_assert_int_eq(mgpu_kernel_pipeline_mul_intt(log_n, &km), MGPU_OK);
  const mgpu_pipeline_arg_t arg = {.log_n = log_n, .key = key};
  const job_t jd = {.k = &kd, .arg = &arg, .in = {X}};
  void *od[1] = {Y};
  ck_assert_int_eq(job_cpu(&jd, od, 0, count), 0);
  const job_t jm = {.k = &km, .arg = &arg, .in = {Y}, .consts = {kc}};
  void *om[1] = {z};
  ck_assert_int_eq(job_cpu(&jm, om, 0, count), 0);
  free(X);
  free(Y);
}

START_TEST(test_pipeline_decompose) {
  const unsigned log_n = 10;
  const size_t n = (size_t)1 << log_n, count = 3;
  uint64_t *x = xmalloc(count * n * 8), *y = xmalloc(count * n * 8);
  fill_random(x, count * n * 8, 3);
  const uint64_t key = UINT64_C(0x123456789abcdef1);
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_pipeline_decompose(log_n, &k), MGPU_OK);
  const mgpu_pipeline_arg_t arg = {.log_n = log_n, .key = key};
  const job_t j = {.k = &k, .arg = &arg, .in = {x}};
  void *o[1] = {y};
  ck_assert_int_eq(job_cpu(&j, o, 0, count), 0);
  for (size_t i = 0; i < count * n; i++) ck_assert_uint_eq(y[i], ref_mul(key, x[i]));
  free(x);
  free(y);
}
END_TEST

START_TEST(test_pipeline_shift) {
  /* K = NTT(X^s): the pipeline rotates x by s and scales it by key. */
  for (unsigned log_n = MGPU_NTT_LOG_MIN; log_n <= MGPU_NTT_LOG_MAX; log_n += 3) {
    const size_t n = (size_t)1 << log_n, count = 2, shift = 3 * n / 7;
    const uint64_t key = 12345;
    uint64_t *x = xmalloc(count * n * 8), *z = xmalloc(count * n * 8), *e = xmalloc(n * 8), *kc = xmalloc(n * 8);
    fill_random(x, count * n * 8, 100 + log_n);
    memset(e, 0, n * 8);
    e[shift] = 1;
    ntt_run(log_n, 0, e, kc, 1);
    pipeline_run(log_n, key, x, kc, z, count);
    for (size_t p = 0; p < count; p++)
      for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(z[p * n + i], ref_mul(key, x[p * n + ((i - shift) & (n - 1))]));
    free(x);
    free(z);
    free(e);
    free(kc);
  }
}
END_TEST

START_TEST(test_pipeline_convolution) {
  /* A general k against the schoolbook cyclic convolution. */
  const unsigned log_n = 10;
  const size_t n = (size_t)1 << log_n;
  const uint64_t key = P - 5;
  uint64_t *x = xmalloc(n * 8), *k = xmalloc(n * 8), *kc = xmalloc(n * 8), *z = xmalloc(n * 8);
  fill_random(x, n * 8, 1);
  fill_random(k, n * 8, 2);
  ntt_run(log_n, 0, k, kc, 1);
  pipeline_run(log_n, key, x, kc, z, 1);
  for (size_t i = 0; i < n; i++) {
    uint64_t acc = 0;
    for (size_t j = 0; j < n; j++) acc = ref_add(acc, ref_mul(x[j], k[(i - j) & (n - 1)]));
    ck_assert_uint_eq(z[i], ref_mul(key, acc));
  }
  free(x);
  free(k);
  free(kc);
  free(z);
}
END_TEST

/* -------------------------------------------------------------- matvec */

/* A float in [-1, 1) from the generator. */
static float rnd_float(uint64_t *s) { return (float)((double)(int64_t)rnd_next(s) / 9.223372036854775808e18); }

/* |got - want| within 1e-5 of sum |w_i x_i|: CPU and GPU add in different orders. */
static void matvec_check_row(const char *who, size_t row, float got, const float *w, const float *x, size_t cols) {
  long double want = 0, mag = 0;
  for (size_t i = 0; i < cols; i++) {
    want += (long double)w[i] * x[i];
    mag += fabsl((long double)w[i] * x[i]);
  }
  const double err = fabs((double)got - (double)want), tol = 1e-5 * (double)mag + 1e-30;
  ck_assert_msg(err <= tol, "%s: row %zu of %zu columns: %.9g, want %.9Lg (error %g > %g)", who, row, cols, got, want,
                err, tol);
}

static void matvec_cpu_run(size_t rows, size_t cols, const float *w, const float *x, float *y) {
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_matvec(cols, &k), MGPU_OK);
  const mgpu_matvec_arg_t arg = {cols};
  const job_t j = {.k = &k, .arg = &arg, .in = {w}, .consts = {x}};
  void *o[1] = {y};
  ck_assert_int_eq(job_cpu(&j, o, 0, rows), 0);
}

START_TEST(test_matvec_ref) {
  const size_t cols_list[] = {1, 3, 4, 5, 8, 9, 1000, 4097};
  const size_t rows_list[] = {1, 2, 37, 100};
  uint64_t s = 21;
  for (size_t ci = 0; ci < sizeof cols_list / sizeof cols_list[0]; ci++)
    for (size_t ri = 0; ri < sizeof rows_list / sizeof rows_list[0]; ri++) {
      const size_t cols = cols_list[ci], rows = rows_list[ri];
      float *w = xmalloc(rows * cols * 4), *x = xmalloc(cols * 4), *y = xmalloc(rows * 4);
      for (size_t i = 0; i < rows * cols; i++) w[i] = rnd_float(&s) * 100.0f;
      for (size_t i = 0; i < cols; i++) x[i] = rnd_float(&s);
      matvec_cpu_run(rows, cols, w, x, y);
      for (size_t r = 0; r < rows; r++) matvec_check_row("matvec", r, y[r], w + r * cols, x, cols);
      free(w);
      free(x);
      free(y);
    }
  /* Small integers: every product and sum is exact, so y is too. */
  enum { R = 13, C = 4097 };
  float *w = xmalloc(R * C * 4), *x = xmalloc(C * 4), *y = xmalloc(R * 4);
  for (int i = 0; i < C; i++) x[i] = (float)(i % 7 - 3);
  for (int r = 0; r < R; r++)
    for (int i = 0; i < C; i++) w[r * C + i] = (float)((r + i) % 11 - 5);
  matvec_cpu_run(R, C, w, x, y);
  for (int r = 0; r < R; r++) {
    long long want = 0;
    for (int i = 0; i < C; i++) want += (long long)((r + i) % 11 - 5) * (i % 7 - 3);
    ck_assert_float_eq(y[r], (float)want);
  }
  free(w);
  free(x);
  free(y);
}
END_TEST

START_TEST(test_matvec_bad_arg) {
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_matvec(4, &k), MGPU_OK);
  ck_assert_str_eq(k.name, "matvec");
  ck_assert_int_eq(k.nin, 1);
  ck_assert_int_eq(k.nout, 1);
  ck_assert_uint_eq(k.in_size[0], 16);
  ck_assert_uint_eq(k.out_size[0], 4);
  ck_assert_ptr_eq(k.cpu, mgpu__matvec_cpu);
  ck_assert_ptr_nonnull(k.gpu); /* without CUDA: a marker for emulated devices */
  float w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, x[4] = {1, 1, 1, 1}, y[2] = {0, 0};
  void *o[1] = {y};
  const mgpu_matvec_arg_t good = {4}, zero = {0};
  const job_t ok = {.k = &k, .arg = &good, .in = {w}, .consts = {x}};
  ck_assert_int_eq(job_cpu(&ok, o, 0, 2), 0);
  ck_assert_float_eq(y[0], 10.0f);
  ck_assert_float_eq(y[1], 26.0f);
  const job_t none = {.k = &k, .arg = NULL, .in = {w}, .consts = {x}};
  ck_assert_int_ne(job_cpu(&none, o, 0, 2), 0);
  const job_t jz = {.k = &k, .arg = &zero, .in = {w}, .consts = {x}};
  ck_assert_int_ne(job_cpu(&jz, o, 0, 2), 0);
  const job_t noconst = {.k = &k, .arg = &good, .in = {w}};
  ck_assert_int_ne(job_cpu(&noconst, o, 0, 2), 0);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "constant"));
}
END_TEST

/* ----------------------------------------------------------------- sum */

/* The CPU sum of n elements (float, or double when is_double). */
static double sum_cpu(const void *a, size_t n, int is_double) {
  const mgpu__sum_arg_t arg = {is_double};
  const void *in[1] = {a};
  double out = NAN;
  void *o[1] = {&out};
  const mgpu_chunk_t c = {.in = in, .out = o, .arg = &arg, .count = n};
  ck_assert_int_eq(mgpu__sum_kernel.cpu(&c), 0);
  return out;
}

START_TEST(test_sum_cpu) {
  ck_assert_str_eq(mgpu__sum_kernel.name, "sum");
  ck_assert_ptr_eq(mgpu__sum_kernel.cpu, mgpu__sum_cpu);
  ck_assert_int_eq(mgpu__sum_kernel.nin, 1);
  ck_assert_int_eq(mgpu__sum_kernel.nout, 1);
#ifdef MGPU_HAVE_CUDA
  ck_assert_ptr_nonnull(mgpu__sum_kernel.gpu);
#else
  ck_assert_ptr_null(mgpu__sum_kernel.gpu);
#endif
  enum { NMAX = 10000000 };
  float *f = xmalloc(NMAX * sizeof *f);
  double *d = xmalloc(NMAX * sizeof *d);
  /* 1..n: integers below 2^24 (exact in float), partial sums below 2^53, so
   * every order gives n(n+1)/2 exactly. */
  for (size_t i = 0; i < NMAX; i++) {
    f[i] = (float)(i + 1);
    d[i] = (double)(i + 1);
  }
  const size_t ns[] = {0, 1, 2, 3, 7, 8, 9, 127, 128, 129, 255, 256, 257, 1000, 1000003, NMAX};
  for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
    const size_t n = ns[t];
    const double want = (double)n * (double)(n + 1) / 2;
    ck_assert_msg(sum_cpu(f, n, 0) == want, "float 1..%zu: %.17g, want %.17g", n, sum_cpu(f, n, 0), want);
    ck_assert_msg(sum_cpu(d, n, 1) == want, "double 1..%zu: %.17g, want %.17g", n, sum_cpu(d, n, 1), want);
  }
  /* Alternating 1, -2, 3, -4, ...: -n/2 for even n, (n+1)/2 for odd n. */
  for (size_t i = 0; i < NMAX; i++) {
    f[i] = (float)(i % 2 ? -(double)(i + 1) : (double)(i + 1));
    d[i] = f[i];
  }
  for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
    const size_t n = ns[t];
    const double want = n % 2 ? (double)(n + 1) / 2 : -(double)n / 2;
    ck_assert_msg(sum_cpu(f, n, 0) == want, "alternating float, n %zu: %.17g, want %.17g", n, sum_cpu(f, n, 0), want);
    ck_assert_msg(sum_cpu(d, n, 1) == want, "alternating double, n %zu: %.17g", n, sum_cpu(d, n, 1));
  }
  /* 1 then a million 1e-16: a plain loop in double loses every 1e-16 (below half
   * an ulp of 1); the pairwise sum keeps them. */
  const size_t m = 1000001;
  d[0] = 1.0;
  for (size_t i = 1; i < m; i++) d[i] = 1e-16;
  const double got = sum_cpu(d, m, 1), want = 1.0 + 1e-16 * (double)(m - 1);
  ck_assert_msg(fabs(got - want) <= 1e-14, "1 + 1e6 * 1e-16: %.17g, want %.17g", got, want);
  /* Random data: the same bits again, and close to a long double sum. */
  uint64_t s = 33;
  for (size_t i = 0; i < 1000003; i++) {
    d[i] = (double)rnd_float(&s) * 1e3;
    f[i] = rnd_float(&s);
  }
  long double ld = 0, lf = 0, md = 0, mf = 0;
  for (size_t i = 0; i < 1000003; i++) {
    ld += d[i];
    md += fabsl((long double)d[i]);
    lf += f[i];
    mf += fabsl((long double)f[i]);
  }
  const double sd = sum_cpu(d, 1000003, 1), sf = sum_cpu(f, 1000003, 0);
  ck_assert(sd == sum_cpu(d, 1000003, 1));
  ck_assert(sf == sum_cpu(f, 1000003, 0));
  ck_assert_msg(fabs(sd - (double)ld) <= 1e-14 * (double)md, "random doubles: %.17g, want %.17Lg", sd, ld);
  ck_assert_msg(fabs(sf - (double)lf) <= 1e-14 * (double)mf, "random floats: %.17g, want %.17Lg", sf, lf);
  /* No argument fails. */
  const void *in[1] = {f};
  double out = 0;
  void *o[1] = {&out};
  const mgpu_chunk_t bad = {.in = in, .out = o, .arg = NULL, .count = 3};
  ck_assert_int_ne(mgpu__sum_kernel.cpu(&bad), 0);
  free(f);
  free(d);
}
END_TEST

/* ------------------------------------------------------ chunk boundaries */

START_TEST(test_chunking) {
  mgpu_kernel_t k;
  {
    const size_t n = 9;
    uint64_t *x = xmalloc(n * 8 << 10);
    fill_random(x, n * 8 << 10, 4);
    ck_assert_int_eq(mgpu_kernel_ntt(10, &k), MGPU_OK);
    for (int inv = 0; inv < 2; inv++) {
      const mgpu_ntt_arg_t arg = {10, inv};
      const job_t j = {.k = &k, .arg = &arg, .in = {x}};
      check_chunking(&j, n, 1);
    }
    ck_assert_int_eq(mgpu_kernel_pipeline_decompose(10, &k), MGPU_OK);
    const mgpu_pipeline_arg_t parg = {.log_n = 10, .key = 99};
    const job_t jd = {.k = &k, .arg = &parg, .in = {x}};
    check_chunking(&jd, n, 2);
    uint64_t kc[1024];
    fill_random(kc, sizeof kc, 5);
    ck_assert_int_eq(mgpu_kernel_pipeline_mul_intt(10, &k), MGPU_OK);
    const job_t jm = {.k = &k, .arg = &parg, .in = {x}, .consts = {kc}};
    check_chunking(&jm, n, 3);
    free(x);
  }
  {
    const size_t n = 37, len = 101;
    uint8_t *m = xmalloc(n * len);
    fill_random(m, n * len, 6);
    ck_assert_int_eq(mgpu_kernel_sha256(len, &k), MGPU_OK);
    const mgpu_sha256_arg_t arg = {len};
    const job_t j = {.k = &k, .arg = &arg, .in = {m}};
    check_chunking(&j, n, 4);
    ck_assert_int_eq(mgpu_kernel_sha256(0, &k), MGPU_OK);
    ck_assert_int_eq(k.nin, 0);
    const mgpu_sha256_arg_t empty = {0};
    const job_t je = {.k = &k, .arg = &empty};
    check_chunking(&je, n, 5);
    free(m);
  }
  {
    const mgpu_mandelbrot_arg_t a = {
        .width = 37, .height = 23, .max_iter = 200, .x0 = -2, .y0 = -1.2, .x1 = 0.6, .y1 = 1.2};
    ck_assert_int_eq(mgpu_kernel_mandelbrot(&a, &k), MGPU_OK);
    const job_t j = {.k = &k, .arg = &a};
    check_chunking(&j, a.height, 6);
  }
  {
    const size_t n = 1000;
    float *x = xmalloc(n * 4), *y = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++) {
      x[i] = (float)i * 0.37f - 100.0f;
      y[i] = 1.0f / (float)(i + 1);
    }
    ck_assert_int_eq(mgpu_kernel_saxpy(&k), MGPU_OK);
    const mgpu_saxpy_arg_t arg = {-2.5f};
    const job_t j = {.k = &k, .arg = &arg, .in = {x, y}};
    check_chunking(&j, n, 7);
    free(x);
    free(y);
  }
  {
    const size_t n = 100;
    uint64_t *x = xmalloc(n * 8);
    fill_random(x, n * 8, 8);
    ck_assert_int_eq(mgpu_kernel_mulmod(50, &k), MGPU_OK);
    const mgpu_mulmod_arg_t arg = {50};
    const job_t j = {.k = &k, .arg = &arg, .in = {x}};
    check_chunking(&j, n, 8);
    ck_assert_int_eq(mgpu_kernel_chain(40, &k), MGPU_OK);
    const mgpu_chain_arg_t carg = {40};
    const job_t jc = {.k = &k, .arg = &carg, .in = {x}};
    check_chunking(&jc, n, 9);
    free(x);
  }
  {
    const size_t n = 50, cols = 77;
    float *w = xmalloc(n * cols * 4), *x = xmalloc(cols * 4);
    uint64_t s = 9;
    for (size_t i = 0; i < n * cols; i++) w[i] = rnd_float(&s);
    for (size_t i = 0; i < cols; i++) x[i] = rnd_float(&s);
    ck_assert_int_eq(mgpu_kernel_matvec(cols, &k), MGPU_OK);
    const mgpu_matvec_arg_t arg = {cols};
    const job_t j = {.k = &k, .arg = &arg, .in = {w}, .consts = {x}};
    check_chunking(&j, n, 9);
    free(w);
    free(x);
  }
}
END_TEST

/* -------------------------------------------------- constructors, registry */

START_TEST(test_constructor_errors) {
  mgpu_kernel_t k;
  memset(&k, 0x5A, sizeof k);
  const mgpu_kernel_t before = k;
  ck_assert_int_eq(mgpu_kernel_ntt(9, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_ntt(17, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_ntt(10, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_pipeline_decompose(9, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_pipeline_decompose(17, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_pipeline_mul_intt(9, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_pipeline_mul_intt(17, &k), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "log_n"));
  ck_assert_int_eq(mgpu_kernel_sha256((size_t)MGPU_SHA256_MAX_LEN + 1, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_mulmod(0, &k), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "intensity"));
  ck_assert_int_eq(mgpu_kernel_mulmod(MGPU_MULMOD_MAX_INTENSITY + 1, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_chain(0, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_chain(MGPU_CHAIN_MAX_LENGTH + 1, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_chain(MGPU_CHAIN_MAX_LENGTH, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_saxpy(NULL), MGPU_EINVAL);
  const mgpu_mandelbrot_arg_t good = {.width = 8, .height = 8, .max_iter = 10, .x0 = -2, .y0 = -1, .x1 = 1, .y1 = 1};
  mgpu_mandelbrot_arg_t bad = good;
  bad.width = 0;
  ck_assert_int_eq(mgpu_kernel_mandelbrot(&bad, &k), MGPU_EINVAL);
  bad = good;
  bad.height = MGPU_MANDELBROT_MAX_DIM + 1;
  ck_assert_int_eq(mgpu_kernel_mandelbrot(&bad, &k), MGPU_EINVAL);
  bad = good;
  bad.max_iter = 0;
  ck_assert_int_eq(mgpu_kernel_mandelbrot(&bad, &k), MGPU_EINVAL);
  bad = good;
  bad.x1 = bad.x0;
  ck_assert_int_eq(mgpu_kernel_mandelbrot(&bad, &k), MGPU_EINVAL);
  bad = good;
  bad.y0 = NAN;
  ck_assert_int_eq(mgpu_kernel_mandelbrot(&bad, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_mandelbrot(NULL, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_matvec(0, &k), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "cols"));
  ck_assert_int_eq(mgpu_kernel_matvec(SIZE_MAX / sizeof(float) + 1, &k), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "cols"));
  ck_assert_int_eq(mgpu_kernel_matvec(SIZE_MAX, &k), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_kernel_matvec(5, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "k_p"));
  ck_assert_msg(memcmp(&k, &before, sizeof k) == 0, "a failed constructor changed *k_p");

  /* The accepted ends of the ranges. */
  ck_assert_int_eq(mgpu_kernel_ntt(10, &k), MGPU_OK);
  ck_assert_uint_eq(k.in_size[0], 8192);
  ck_assert_int_eq(mgpu_kernel_ntt(16, &k), MGPU_OK);
  ck_assert_uint_eq(k.out_size[0], 8 << 16);
  ck_assert_int_eq(k.nin, 1);
  ck_assert_int_eq(k.nout, 1);
  ck_assert_ptr_eq(k.cpu, mgpu__ntt_cpu);
  ck_assert_ptr_nonnull(k.gpu); /* without CUDA: a marker for emulated devices */
  ck_assert_int_eq(mgpu_kernel_sha256((size_t)MGPU_SHA256_MAX_LEN, &k), MGPU_OK);
  ck_assert_int_eq(mgpu_kernel_mulmod(1, &k), MGPU_OK);
  ck_assert_int_eq(mgpu_kernel_mulmod(MGPU_MULMOD_MAX_INTENSITY, &k), MGPU_OK);
  ck_assert_int_eq(mgpu_kernel_matvec(1, &k), MGPU_OK);
  ck_assert_uint_eq(k.in_size[0], 4);
  ck_assert_uint_eq(k.out_size[0], 4);
  ck_assert_int_eq(mgpu_kernel_matvec(SIZE_MAX / sizeof(float), &k), MGPU_OK);
  ck_assert_uint_eq(k.in_size[0], SIZE_MAX / sizeof(float) * sizeof(float));
}
END_TEST

START_TEST(test_registry) {
  ck_assert_int_eq(mgpu_builtin_count(), 9);
  const char *want[] = {"ntt",    "sha256", "mandelbrot",        "saxpy", "mulmod", "chain", "pipeline_decompose",
                        "pipeline_mul_intt", "matvec"};
  for (int i = 0; i < mgpu_builtin_count(); i++) {
    ck_assert_str_eq(mgpu_builtin_name(i), want[i]);
    ck_assert_ptr_nonnull(mgpu_builtin_doc(i));
  }
  ck_assert_ptr_null(mgpu_builtin_name(-1));
  ck_assert_ptr_null(mgpu_builtin_name(9));
  ck_assert_ptr_null(mgpu_builtin_doc(9));
  /* The names the constructors set are the registry's. */
  mgpu_kernel_t k;
  const mgpu_mandelbrot_arg_t m = {.width = 8, .height = 8, .max_iter = 10, .x0 = -2, .y0 = -1, .x1 = 1, .y1 = 1};
  ck_assert_int_eq(mgpu_kernel_ntt(12, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[0]);
  ck_assert_int_eq(mgpu_kernel_sha256(3, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[1]);
  ck_assert_int_eq(mgpu_kernel_mandelbrot(&m, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[2]);
  ck_assert_int_eq(mgpu_kernel_saxpy(&k), MGPU_OK);
  ck_assert_str_eq(k.name, want[3]);
  ck_assert_int_eq(mgpu_kernel_mulmod(5, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[4]);
  ck_assert_int_eq(mgpu_kernel_chain(5, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[5]);
  ck_assert_int_eq(mgpu_kernel_pipeline_decompose(12, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[6]);
  ck_assert_int_eq(mgpu_kernel_pipeline_mul_intt(12, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[7]);
  ck_assert_int_eq(mgpu_kernel_matvec(100, &k), MGPU_OK);
  ck_assert_str_eq(k.name, want[8]);
}
END_TEST

/* ---------------------------------------------------------------- CUDA */
#ifdef MGPU_HAVE_CUDA

/*
 * CUDA must not be initialised in the process that Check forks the tests from,
 * so the presence of a GPU is asked in each test (in its own child) and, for the
 * summary line, in a child of main.
 */
static int gpu_present(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    (void)cudaGetLastError();
    printf("no GPU: CUDA kernel comparison skipped\n");
    return 0;
  }
  return 1;
}

#define CUDA_OK(call) ck_assert_msg((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

/*
 * Items [first, first + count) on the CPU (into the host arrays) and on the GPU
 * (device copies of the same items and constants, a stream of its own); the
 * outputs must be identical bit for bit. const_bytes[i] sizes j->consts[i].
 */
static void gpu_compare(const job_t *j, const size_t *const_bytes, size_t first, size_t count) {
  const mgpu_kernel_t *k = j->k;
  ck_assert_ptr_nonnull(k->gpu);
  void *cpu_out[MGPU_MAX_ARGS] = {NULL}, *gpu_out[MGPU_MAX_ARGS] = {NULL};
  const void *din[MGPU_MAX_ARGS] = {NULL};
  void *dout[MGPU_MAX_ARGS] = {NULL};
  const void *dconst[MGPU_MAX_CONSTS] = {NULL};
  for (int i = 0; i < k->nout; i++) cpu_out[i] = xmalloc((first + count) * k->out_size[i]);
  ck_assert_int_eq(job_cpu(j, cpu_out, first, count), 0);
  /* Everything goes through one non-blocking stream, as in the runtime: a plain
   * cudaMemcpy from pageable memory may return before its data has landed, and
   * the legacy stream does not order it with a non-blocking one. */
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int i = 0; i < k->nout; i++) {
    gpu_out[i] = xmalloc(count * k->out_size[i]);
    void *d;
    CUDA_OK(cudaMalloc(&d, count * k->out_size[i] + 1));
    CUDA_OK(cudaMemsetAsync(d, 0xAB, count * k->out_size[i], stream));
    dout[i] = d;
  }
  for (int i = 0; i < k->nin; i++) {
    void *d;
    const size_t bytes = count * k->in_size[i];
    CUDA_OK(cudaMalloc(&d, bytes + 1));
    CUDA_OK(cudaMemcpyAsync(d, (const char *)j->in[i] + first * k->in_size[i], bytes, cudaMemcpyHostToDevice,
                            stream));
    din[i] = d;
  }
  for (int i = 0; i < MGPU_MAX_CONSTS && j->consts[i]; i++) {
    void *d;
    CUDA_OK(cudaMalloc(&d, const_bytes[i]));
    CUDA_OK(cudaMemcpyAsync(d, j->consts[i], const_bytes[i], cudaMemcpyHostToDevice, stream));
    dconst[i] = d;
  }
  const mgpu_chunk_t c = {
      .in = din, .out = dout, .consts = dconst, .arg = j->arg, .first = first, .count = count, .stream = stream};
  const int rc = k->gpu(&c);
  ck_assert_msg(rc == 0, "%s: GPU function returned %d (%s)", k->name, rc, cudaGetErrorString((cudaError_t)rc));
  CUDA_OK(cudaStreamSynchronize(stream));
  for (int i = 0; i < k->nout; i++) {
    const size_t bytes = count * k->out_size[i];
    CUDA_OK(cudaMemcpy(gpu_out[i], dout[i], bytes, cudaMemcpyDeviceToHost));
    const uint8_t *a = (const uint8_t *)cpu_out[i] + first * k->out_size[i], *b = gpu_out[i];
    size_t at = 0;
    while (at < bytes && a[at] == b[at]) at++;
    ck_assert_msg(at == bytes, "%s: CPU and GPU outputs differ at byte %zu of output %d (item %zu of %zu..%zu)",
                  k->name, at, i, first + at / k->out_size[i], first, first + count - 1);
  }
  CUDA_OK(cudaStreamDestroy(stream));
  for (int i = 0; i < MGPU_MAX_CONSTS; i++) cudaFree((void *)dconst[i]);
  for (int i = 0; i < MGPU_MAX_ARGS; i++) {
    cudaFree((void *)din[i]);
    cudaFree(dout[i]);
    free(cpu_out[i]);
    free(gpu_out[i]);
  }
}

START_TEST(test_gpu_ntt) {
  if (!gpu_present()) return;
  for (unsigned log_n = MGPU_NTT_LOG_MIN; log_n <= MGPU_NTT_LOG_MAX; log_n++) {
    const size_t n = (size_t)1 << log_n, count = log_n <= 12 ? 40 : 5;
    uint64_t *x = xmalloc(count * n * 8);
    fill_random(x, count * n * 8, 200 + log_n);
    mgpu_kernel_t k;
    ck_assert_int_eq(mgpu_kernel_ntt(log_n, &k), MGPU_OK);
    for (int inv = 0; inv < 2; inv++) {
      const mgpu_ntt_arg_t arg = {log_n, inv};
      const job_t j = {.k = &k, .arg = &arg, .in = {x}};
      gpu_compare(&j, NULL, 0, count);
      gpu_compare(&j, NULL, 1, count - 1);
    }
    free(x);
  }
}
END_TEST

START_TEST(test_gpu_pipeline) {
  if (!gpu_present()) return;
  for (unsigned log_n = MGPU_NTT_LOG_MIN; log_n <= MGPU_NTT_LOG_MAX; log_n++) {
    const size_t n = (size_t)1 << log_n, count = 3;
    uint64_t *x = xmalloc(count * n * 8), *kc = xmalloc(n * 8);
    fill_random(x, count * n * 8, 300 + log_n);
    fill_random(kc, n * 8, 400 + log_n);
    mgpu_kernel_t k;
    ck_assert_int_eq(mgpu_kernel_pipeline_mul_intt(log_n, &k), MGPU_OK);
    const mgpu_pipeline_arg_t arg = {.log_n = log_n, .key = 1};
    const job_t j = {.k = &k, .arg = &arg, .in = {x}, .consts = {kc}};
    const size_t bytes[1] = {n * 8};
    gpu_compare(&j, bytes, 0, count);
    free(x);
    free(kc);
  }
}
END_TEST

START_TEST(test_gpu_sha256) {
  if (!gpu_present()) return;
  const size_t lens[] = {0, 1, 3, 4, 55, 56, 63, 64, 65, 100, 119, 120, 128, 1000, 4099};
  for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
    const size_t len = lens[l], count = 300;
    uint8_t *m = xmalloc(count * len);
    fill_random(m, count * len, 500 + len);
    mgpu_kernel_t k;
    ck_assert_int_eq(mgpu_kernel_sha256(len, &k), MGPU_OK);
    const mgpu_sha256_arg_t arg = {len};
    const job_t j = {.k = &k, .arg = &arg, .in = {m}};
    gpu_compare(&j, NULL, 0, count);
    gpu_compare(&j, NULL, 7, count - 7); /* messages no longer 4-byte aligned for odd len */
    free(m);
  }
}
END_TEST

START_TEST(test_gpu_mandelbrot) {
  if (!gpu_present()) return;
  const mgpu_mandelbrot_arg_t a[] = {
      {.width = 333, .height = 97, .max_iter = 500, .x0 = -2.2, .y0 = -1.3, .x1 = 0.8, .y1 = 1.3},
      {.width = 64, .height = 64, .max_iter = 5000, .x0 = -0.7454, .y0 = 0.1130, .x1 = -0.7452, .y1 = 0.1132},
      {.width = 4, .height = 4, .max_iter = 1000, .x0 = -2, .y0 = -2, .x1 = 2, .y1 = 2},
  };
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
    mgpu_kernel_t k;
    ck_assert_int_eq(mgpu_kernel_mandelbrot(&a[i], &k), MGPU_OK);
    const job_t j = {.k = &k, .arg = &a[i]};
    gpu_compare(&j, NULL, 0, a[i].height);
    gpu_compare(&j, NULL, a[i].height / 3, a[i].height - a[i].height / 3);
  }
}
END_TEST

START_TEST(test_gpu_saxpy) {
  if (!gpu_present()) return;
  const size_t n = 100003;
  float *x = xmalloc(n * 4), *y = xmalloc(n * 4);
  uint64_t s = 9;
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)((double)(int64_t)rnd_next(&s) / 9.2e18 * 1e6);
    y[i] = (float)((double)(int64_t)rnd_next(&s) / 9.2e18);
  }
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_saxpy(&k), MGPU_OK);
  const mgpu_saxpy_arg_t arg = {0.1f};
  const job_t j = {.k = &k, .arg = &arg, .in = {x, y}};
  gpu_compare(&j, NULL, 0, n);
  gpu_compare(&j, NULL, 17, n - 17);
  free(x);
  free(y);
}
END_TEST

START_TEST(test_gpu_mulmod) {
  if (!gpu_present()) return;
  const size_t n = 5000;
  uint64_t *x = xmalloc(n * 8);
  fill_random(x, n * 8, 11);
  x[0] = P;
  x[1] = UINT64_MAX;
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_mulmod(300, &k), MGPU_OK);
  const mgpu_mulmod_arg_t arg = {300};
  const job_t j = {.k = &k, .arg = &arg, .in = {x}};
  gpu_compare(&j, NULL, 0, n);
  free(x);
}
END_TEST

/* chain on the GPU: the same results, items numbered from the chunk's first. */
START_TEST(test_gpu_chain) {
  if (!gpu_present()) return;
  const size_t n = 3000;
  uint64_t *x = xmalloc(n * 8);
  fill_random(x, n * 8, 12);
  x[0] = P;
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_chain(200, &k), MGPU_OK);
  const mgpu_chain_arg_t arg = {200};
  const job_t j = {.k = &k, .arg = &arg, .in = {x}};
  gpu_compare(&j, NULL, 0, n);
  gpu_compare(&j, NULL, 17, n - 17);
  free(x);
}
END_TEST

/*
 * matvec on the GPU against the CPU, within matvec_check_row's tolerance. shift
 * floats in front of W and of x on the device move them off 16-byte alignment
 * (shift 1), which must send even cols % 4 == 0 down the scalar path.
 */
static void gpu_matvec_compare(size_t rows, size_t cols, size_t shift, uint64_t seed) {
  float *w = xmalloc(rows * cols * 4), *x = xmalloc(cols * 4), *yc = xmalloc(rows * 4), *yg = xmalloc(rows * 4);
  for (size_t i = 0; i < rows * cols; i++) w[i] = rnd_float(&seed) * 10.0f;
  for (size_t i = 0; i < cols; i++) x[i] = rnd_float(&seed);
  matvec_cpu_run(rows, cols, w, x, yc);
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_matvec(cols, &k), MGPU_OK);
  ck_assert_ptr_nonnull(k.gpu);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *dw, *dx, *dy;
  CUDA_OK(cudaMalloc((void **)&dw, (rows * cols + shift) * 4));
  CUDA_OK(cudaMalloc((void **)&dx, (cols + shift) * 4));
  CUDA_OK(cudaMalloc((void **)&dy, rows * 4));
  CUDA_OK(cudaMemcpyAsync(dw + shift, w, rows * cols * 4, cudaMemcpyHostToDevice, stream));
  CUDA_OK(cudaMemcpyAsync(dx + shift, x, cols * 4, cudaMemcpyHostToDevice, stream));
  CUDA_OK(cudaMemsetAsync(dy, 0xAB, rows * 4, stream));
  const mgpu_matvec_arg_t arg = {cols};
  const void *in[1] = {dw + shift}, *consts[1] = {dx + shift};
  void *out[1] = {dy};
  const mgpu_chunk_t c = {.in = in, .out = out, .consts = consts, .arg = &arg, .count = rows, .stream = stream};
  const int rc = k.gpu(&c);
  ck_assert_msg(rc == 0, "matvec: GPU function returned %d (%s)", rc, cudaGetErrorString((cudaError_t)rc));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(yg, dy, rows * 4, cudaMemcpyDeviceToHost));
  char who[64];
  snprintf(who, sizeof who, "matvec GPU (shift %zu)", shift);
  for (size_t r = 0; r < rows; r++) {
    double mag = 0;
    for (size_t i = 0; i < cols; i++) mag += fabs((double)w[r * cols + i] * x[i]);
    ck_assert_msg(fabs((double)yg[r] - (double)yc[r]) <= 1e-5 * mag + 1e-30,
                  "%s: row %zu of %zu columns: GPU %.9g, CPU %.9g", who, r, cols, yg[r], yc[r]);
    matvec_check_row(who, r, yg[r], w + r * cols, x, cols);
  }
  CUDA_OK(cudaStreamDestroy(stream));
  cudaFree(dw);
  cudaFree(dx);
  cudaFree(dy);
  free(w);
  free(x);
  free(yc);
  free(yg);
}

START_TEST(test_gpu_matvec) {
  if (!gpu_present()) return;
  /* Both sides of the warp-per-row / block-per-row switch, odd and even cols. */
  const size_t cols_list[] = {1, 3, 4, 5, 7, 8, 100, 1000, 1023, 2047, 2048, 2049, 4096, 4097, 30000, 70001};
  const size_t rows_list[] = {1, 9, 100};
  uint64_t seed = 1;
  for (size_t ci = 0; ci < sizeof cols_list / sizeof cols_list[0]; ci++)
    for (size_t ri = 0; ri < sizeof rows_list / sizeof rows_list[0]; ri++)
      for (size_t shift = 0; shift < 2; shift++)
        gpu_matvec_compare(rows_list[ri], cols_list[ci], shift, seed++);
  /* More rows than one launch has groups for: the grid-stride loops. */
  gpu_matvec_compare(600000, 4, 0, 77);
  gpu_matvec_compare(70000, 2048, 0, 78);
  /* Bad arguments fail without launching. */
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_matvec(4, &k), MGPU_OK);
  const mgpu_matvec_arg_t zero = {0};
  const void *in[1] = {NULL}, *consts[1] = {NULL};
  void *out[1] = {NULL};
  const mgpu_chunk_t c0 = {.in = in, .out = out, .consts = consts, .arg = &zero, .count = 1};
  ck_assert_int_ne(k.gpu(&c0), 0);
  const mgpu_matvec_arg_t four = {4};
  const mgpu_chunk_t c1 = {.in = in, .out = out, .consts = consts, .arg = &four, .count = 1};
  ck_assert_int_ne(k.gpu(&c1), 0); /* no constant */
}
END_TEST

/* The GPU sum of n elements at `shift` elements past a device allocation. */
static double gpu_sum(const void *host, size_t n, int is_double, size_t shift, cudaStream_t stream) {
  const size_t es = is_double ? 8 : 4;
  char *d;
  double *dout, *dscratch, out;
  CUDA_OK(cudaMalloc((void **)&d, (n + shift) * es + 1));
  CUDA_OK(cudaMalloc((void **)&dout, sizeof(double)));
  CUDA_OK(cudaMalloc((void **)&dscratch, MGPU__SUM_SCRATCH_BYTES));
  CUDA_OK(cudaMemcpyAsync(d + shift * es, host, n * es, cudaMemcpyHostToDevice, stream));
  CUDA_OK(cudaMemsetAsync(dout, 0xFF, sizeof(double), stream)); /* a NaN */
  CUDA_OK(cudaMemsetAsync(dscratch, 0xFF, MGPU__SUM_SCRATCH_BYTES, stream));
  const mgpu__sum_arg_t arg = {is_double};
  const void *in[1] = {d + shift * es};
  void *o[1] = {dout};
  const mgpu_chunk_t c = {.in = in, .out = o, .arg = &arg, .scratch = dscratch, .count = n, .stream = stream};
  const int rc = mgpu__sum_kernel.gpu(&c);
  ck_assert_msg(rc == 0, "sum: GPU function returned %d (%s)", rc, cudaGetErrorString((cudaError_t)rc));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(&out, dout, sizeof out, cudaMemcpyDeviceToHost));
  cudaFree(d);
  cudaFree(dout);
  cudaFree(dscratch);
  return out;
}

START_TEST(test_gpu_sum) {
  if (!gpu_present()) return;
  ck_assert_ptr_nonnull(mgpu__sum_kernel.gpu);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t nmax = ((size_t)1 << 24) + 3;
  float *f = xmalloc(nmax * 4);
  double *d = xmalloc(nmax * 8);
  /* 1..n exactly, as on the CPU (10^7 < 2^24: exact in float). */
  for (size_t i = 0; i < 10000000; i++) {
    f[i] = (float)(i + 1);
    d[i] = (double)(i + 1);
  }
  const size_t exact[] = {0, 1, 2, 127, 128, 129, 262143, 262144, 262145, 1048577, 10000000};
  for (size_t t = 0; t < sizeof exact / sizeof exact[0]; t++) {
    const size_t n = exact[t];
    const double want = (double)n * (double)(n + 1) / 2;
    const double gf = gpu_sum(f, n, 0, 0, stream), gd = gpu_sum(d, n, 1, 0, stream);
    ck_assert_msg(gf == want, "GPU float 1..%zu: %.17g, want %.17g", n, gf, want);
    ck_assert_msg(gd == want, "GPU double 1..%zu: %.17g, want %.17g", n, gd, want);
  }
  /* Random data of both signs: within 1e-12 of the sum of magnitudes of the
   * CPU's sum, the same bits on a second run, at any alignment. */
  uint64_t s = 44;
  for (size_t i = 0; i < nmax; i++) {
    f[i] = rnd_float(&s) * 1000.0f;
    d[i] = (double)rnd_float(&s) * 1e6 + (double)rnd_float(&s);
  }
  const size_t ns[] = {0, 1, 2, 127, 128, 129, 1000, 262143, 262144, 262145, 1000003, nmax};
  for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
    const size_t n = ns[t];
    for (int isd = 0; isd < 2; isd++) {
      const void *a = isd ? (const void *)d : (const void *)f;
      double mag = 0;
      for (size_t i = 0; i < n; i++) mag += isd ? fabs(d[i]) : fabs((double)f[i]);
      const double c = sum_cpu(a, n, isd), g1 = gpu_sum(a, n, isd, 0, stream), g2 = gpu_sum(a, n, isd, 1, stream);
      ck_assert_msg(fabs(g1 - c) <= 1e-12 * mag, "%s n %zu: GPU %.17g, CPU %.17g", isd ? "double" : "float", n, g1, c);
      ck_assert_msg(memcmp(&g1, &g2, sizeof g1) == 0, "%s n %zu: two GPU runs gave %.17g and %.17g",
                    isd ? "double" : "float", n, g1, g2);
    }
  }
  /* Positive data: relative to the sum itself. */
  for (size_t i = 0; i < nmax; i++) f[i] = fabsf(f[i]) + 1.0f;
  const double c = sum_cpu(f, nmax, 0), g = gpu_sum(f, nmax, 0, 0, stream);
  ck_assert_msg(fabs(g - c) <= 1e-12 * c, "positive floats: GPU %.17g, CPU %.17g", g, c);
  /* No argument or no scratch fails without launching. */
  const void *in[1] = {f};
  double out;
  void *o[1] = {&out};
  const mgpu_chunk_t noarg = {.in = in, .out = o, .count = 1, .stream = stream};
  ck_assert_int_ne(mgpu__sum_kernel.gpu(&noarg), 0);
  const mgpu__sum_arg_t arg = {0};
  const mgpu_chunk_t noscratch = {.in = in, .out = o, .arg = &arg, .count = 1, .stream = stream};
  ck_assert_int_ne(mgpu__sum_kernel.gpu(&noscratch), 0);
  CUDA_OK(cudaStreamDestroy(stream));
  free(f);
  free(d);
}
END_TEST

/* Asks in a child, so that this process never initialises CUDA. */
static int gpu_probe(void) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid < 0) return 1; /* cannot tell: let each test ask */
  if (pid == 0) {
    int n = 0;
    _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#endif /* MGPU_HAVE_CUDA */

/* ---------------------------------------------------------------- main */

int main(void) {
  Suite *s = suite_create("kernels");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_gl_arith);
  tcase_add_test(tc, test_ntt_root);
  tcase_add_test(tc, test_ntt_naive);
  tcase_add_test(tc, test_ntt_roundtrip);
  tcase_add_test(tc, test_ntt_bad_arg);
  tcase_add_test(tc, test_sha256_fips);
  tcase_add_test(tc, test_sha256_lengths);
  tcase_add_test(tc, test_mandelbrot_known);
  tcase_add_test(tc, test_saxpy_exact);
  tcase_add_test(tc, test_mulmod_ref);
  tcase_add_test(tc, test_chain_ref);
  tcase_add_test(tc, test_pipeline_decompose);
  tcase_add_test(tc, test_pipeline_shift);
  tcase_add_test(tc, test_pipeline_convolution);
  tcase_add_test(tc, test_matvec_ref);
  tcase_add_test(tc, test_matvec_bad_arg);
  tcase_add_test(tc, test_sum_cpu);
  tcase_add_test(tc, test_chunking);
  tcase_add_test(tc, test_constructor_errors);
  tcase_add_test(tc, test_registry);
  suite_add_tcase(s, tc);

#ifdef MGPU_HAVE_CUDA
  if (gpu_probe()) {
    TCase *tg = tcase_create("gpu");
    tcase_set_timeout(tg, 300);
    tcase_add_test(tg, test_gpu_ntt);
    tcase_add_test(tg, test_gpu_pipeline);
    tcase_add_test(tg, test_gpu_sha256);
    tcase_add_test(tg, test_gpu_mandelbrot);
    tcase_add_test(tg, test_gpu_saxpy);
    tcase_add_test(tg, test_gpu_mulmod);
    tcase_add_test(tg, test_gpu_chain);
    tcase_add_test(tg, test_gpu_matvec);
    tcase_add_test(tg, test_gpu_sum);
    suite_add_tcase(s, tg);
  } else {
    printf("no GPU: CUDA kernel comparisons skipped\n");
  }
#else
  printf("built without CUDA: CUDA kernel comparisons skipped\n");
#endif

  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
