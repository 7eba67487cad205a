/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * matvec.c: y = W x on floats, on CPUs; one item is one row of W. Each row is a
 * dot product in double: MATVEC_LANES accumulators (so that the loop
 * vectorises) added in a fixed tree, the leftover elements, one rounding to
 * float. Products of floats are exact in double, so fusing cannot change them;
 * the GPU version sums in another order, equal within a relative tolerance.
 */
#include "builtin.h"

#define MATVEC_LANES 8

static double dot_row(const float *restrict w, const float *restrict x, size_t cols) {
  double acc[MATVEC_LANES] = {0};
  size_t i = 0;
  for (; i + MATVEC_LANES <= cols; i += MATVEC_LANES)
    for (size_t l = 0; l < MATVEC_LANES; l++) acc[l] += (double)w[i + l] * (double)x[i + l];
  double tail = 0;
  for (; i < cols; i++) tail += (double)w[i] * (double)x[i];
  return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) + tail;
}

int mgpu__matvec_cpu(const mgpu_chunk_t *c) {
  const mgpu_matvec_arg_t *arg = c->arg;
  if (!arg || arg->cols < 1 || arg->cols > SIZE_MAX / sizeof(float))
    return mgpu__fail(MGPU_EINVAL, "matvec: argument cols %llu is outside 1..%zu (or no argument)",
                      arg ? (unsigned long long)arg->cols : 0ULL, SIZE_MAX / sizeof(float));
  if (!c->consts || !c->consts[0]) return mgpu__fail(MGPU_EINVAL, "matvec: no constant 0 (the vector x)");
  const size_t cols = (size_t)arg->cols;
  const float *w = c->in[0];
  const float *x = c->consts[0];
  float *y = c->out[0];
  for (size_t r = 0; r < c->count; r++) y[r] = (float)dot_row(w + r * cols, x, cols);
  return 0;
}
