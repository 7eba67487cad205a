/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pipeline_cuda.cu: the GPU side of the pipeline's last stage, INTT(x (.) K):
 * the pointwise product is folded into the transform's first load (see
 * ntt_cuda.cu), so it costs no pass of its own. The decomposition stage has no
 * GPU version on purpose.
 */
#include <cuda_runtime.h>

#include "builtin.h"

extern "C" int mgpu__pipeline_mul_intt_gpu(const mgpu_chunk_t *c) {
  const mgpu_pipeline_arg_t *arg = (const mgpu_pipeline_arg_t *)c->arg;
  if (!arg || !c->consts || !c->consts[0]) return (int)cudaErrorInvalidValue;
  return mgpu__ntt_gpu_enqueue((const uint64_t *)c->in[0], (uint64_t *)c->out[0], (const uint64_t *)c->consts[0],
                               c->count, arg->log_n, 1, c->stream);
}
