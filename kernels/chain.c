/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chain.c: a latency-bound kernel on CPUs. Each item is one long dependent
 * chain x <- x * x + (i + 1) mod the Goldilocks prime, of a length that varies
 * from item to item (between half and one and a half times the mean), as a
 * bootstrapping or a proof step is: one item cannot go faster than its chain,
 * and a GPU pays off only with many items in one launch.
 */
#include "builtin.h"

int mgpu__chain_cpu(const mgpu_chunk_t *c) {
  const mgpu_chain_arg_t *arg = c->arg;
  if (!arg || arg->length < 1 || arg->length > MGPU_CHAIN_MAX_LENGTH)
    return mgpu__fail(MGPU_EINVAL, "chain: argument length %llu is outside 1..%llu (or no argument)",
                      arg ? (unsigned long long)arg->length : 0ULL, (unsigned long long)MGPU_CHAIN_MAX_LENGTH);
  const uint64_t *in = c->in[0];
  uint64_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) {
    uint64_t i = (uint64_t)(c->first + j);
    out[j] = mgpu__chain_item(in[j], i, mgpu__chain_steps(arg->length, i));
  }
  return 0;
}
