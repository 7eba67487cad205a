/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * saxpy.c: r = a * x + y on floats, on CPUs. The GPU version rounds the
 * product and the sum separately, so contraction into a fused multiply-add is
 * off here too (GCC ignores the standard pragma, hence its own): a build for
 * a CPU with FMA would otherwise differ in the last bit.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "builtin.h"

int mgpu__saxpy_cpu(const mgpu_chunk_t *c) {
  const mgpu_saxpy_arg_t *arg = c->arg;
  if (!arg) return mgpu__fail(MGPU_EINVAL, "saxpy: no argument");
  const float a = arg->a;
  const float *x = c->in[0];
  const float *y = c->in[1];
  float *r = c->out[0];
  /* No restrict: r == y, the in-place y = a * x + y, is a fair use. */
  for (size_t i = 0; i < c->count; i++) r[i] = a * x[i] + y[i];
  return 0;
}
