/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pipeline.c: the CPU side of the two pipeline kernels (see mgpurt_kernels.h):
 * the gadget decomposition, which has no GPU version on purpose, and the
 * pointwise product followed by the inverse NTT.
 */
#include "builtin.h"

/* Coefficients decomposed per pass, so the digits stay in L1. */
#define BLOCK 256
/* A coefficient's gadget digits: DIGITS of DIGIT_BITS bits make its 64. */
#define DIGIT_BITS 16
#define DIGITS 4

static int check_arg(const mgpu_pipeline_arg_t *arg, const char *who) {
  if (!arg || arg->log_n < MGPU_NTT_LOG_MIN || arg->log_n > MGPU_NTT_LOG_MAX)
    return mgpu__fail(MGPU_EINVAL, "%s: argument log_n %d is outside %d..%d (or no argument)", who,
                      arg ? (int)arg->log_n : -1, MGPU_NTT_LOG_MIN, MGPU_NTT_LOG_MAX);
  return 0;
}

int mgpu__pipeline_decompose_cpu(const mgpu_chunk_t *c) {
  const mgpu_pipeline_arg_t *arg = c->arg;
  const int rc = check_arg(arg, "pipeline_decompose");
  if (rc) return rc;
  /* Recomposing with key * 2^(16 t) turns sum_t d_t 2^(16 t) = x into key * x. */
  uint64_t weight[DIGITS];
  for (int t = 0; t < DIGITS; t++) weight[t] = mgpu__gl_mul(arg->key, UINT64_C(1) << (DIGIT_BITS * t));

  const size_t total = c->count << arg->log_n;
  const uint64_t *in = c->in[0];
  uint64_t *out = c->out[0];
  uint16_t digit[BLOCK][DIGITS];
  for (size_t base = 0; base < total; base += BLOCK) {
    const size_t m = total - base < BLOCK ? total - base : BLOCK;
    for (size_t i = 0; i < m; i++)
      for (int t = 0; t < DIGITS; t++) digit[i][t] = (uint16_t)(in[base + i] >> (DIGIT_BITS * t));
    for (size_t i = 0; i < m; i++) {
      uint64_t y = 0;
      for (int t = 0; t < DIGITS; t++) y = mgpu__gl_add(y, mgpu__gl_mul(digit[i][t], weight[t]));
      out[base + i] = y;
    }
  }
  return 0;
}

int mgpu__pipeline_mul_intt_cpu(const mgpu_chunk_t *c) {
  const mgpu_pipeline_arg_t *arg = c->arg;
  const int rc = check_arg(arg, "pipeline_mul_intt");
  if (rc) return rc;
  if (!c->consts || !c->consts[0])
    return mgpu__fail(MGPU_EINVAL, "pipeline_mul_intt: the batch has no constant (nconsts must be 1)");
  const size_t n = (size_t)1 << arg->log_n;
  const uint64_t *in = c->in[0];
  uint64_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++)
    mgpu__ntt_poly(in + j * n, out + j * n, c->consts[0], arg->log_n, 1);
  return 0;
}
