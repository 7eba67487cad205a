/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sum.c: the deterministic sum of a float or double array into one double, on
 * CPUs (the runtime's reduction of each device's part of a split array). The
 * result depends only on the data and n, never on threads or the compiler (no
 * products to fuse), and its error is O(log n) roundings of the sum of
 * magnitudes, against O(n) for a plain loop.
 */
#include "builtin.h"

#define SUM_BLOCK 128
#define SUM_LANES 8

/* SUM_DEFINE(float) and SUM_DEFINE(double): block_T and sum_T, pairwise in
 * double. A block of SUM_BLOCK elements (the last may be shorter) is summed
 * over SUM_LANES accumulators added in a fixed tree, then its leftovers; the
 * block sums in a fixed binary tree whose left subtree takes the first
 * floor(nblocks / 2). */
#define SUM_DEFINE(T)                                                                                    \
  static double block_##T(const T *a, size_t n) {                                                      \
    double acc[SUM_LANES] = {0};                                                                         \
    size_t i = 0;                                                                                        \
    for (; i + SUM_LANES <= n; i += SUM_LANES)                                                           \
      for (size_t l = 0; l < SUM_LANES; l++) acc[l] += (double)a[i + l];                                    \
    double tail = 0;                                                                                     \
    for (; i < n; i++) tail += (double)a[i];                                                             \
    return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) + tail; \
  }                                                                                                      \
  static double sum_##T(const T *a, size_t n) {                                                        \
    if (n <= SUM_BLOCK) return block_##T(a, n);                                                          \
    const size_t nblocks = n / SUM_BLOCK + (n % SUM_BLOCK != 0); /* >= 2 */                            \
    const size_t left = nblocks / 2 * SUM_BLOCK;                 /* whole blocks, >= 1 */              \
    return sum_##T(a, left) + sum_##T(a + left, n - left);                                               \
  }

SUM_DEFINE(float)
SUM_DEFINE(double)

int mgpu__sum_cpu(const mgpu_chunk_t *c) {
  const mgpu__sum_arg_t *arg = c->arg;
  if (!arg) return mgpu__fail(MGPU_EINVAL, "sum: no argument");
  if (!c->out || !c->out[0]) return mgpu__fail(MGPU_EINVAL, "sum: no output");
  if (c->count > 0 && (!c->in || !c->in[0])) return mgpu__fail(MGPU_EINVAL, "sum: no input");
  double s = 0.0;
  if (c->count > 0) s = arg->is_double ? sum_double(c->in[0], c->count) : sum_float(c->in[0], c->count);
  *(double *)c->out[0] = s;
  return 0;
}
