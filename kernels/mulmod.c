/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mulmod.c: a chain of dependent multiplications modulo the Goldilocks prime per
 * item, on CPUs: a compute-bound kernel whose cost is set by its intensity.
 */
#include "builtin.h"

int mgpu__mulmod_cpu(const mgpu_chunk_t *c) {
  const mgpu_mulmod_arg_t *arg = c->arg;
  if (!arg || arg->intensity < 1 || arg->intensity > MGPU_MULMOD_MAX_INTENSITY)
    return mgpu__fail(MGPU_EINVAL, "mulmod: argument intensity %llu is outside 1..%llu (or no argument)",
                      arg ? (unsigned long long)arg->intensity : 0ULL,
                      (unsigned long long)MGPU_MULMOD_MAX_INTENSITY);
  const uint64_t k = arg->intensity;
  const uint64_t *in = c->in[0];
  uint64_t *out = c->out[0];
  for (size_t i = 0; i < c->count; i++) {
    uint64_t x = mgpu__gl_canon(in[i]);
    for (uint64_t s = 0; s < k; s++) x = mgpu__gl_add(mgpu__gl_mul(x, x), 1);
    out[i] = x;
  }
  return 0;
}
