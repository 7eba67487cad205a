/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chain_cuda.cu: the chain kernel (chain.c) on CUDA GPUs, one item per thread.
 * The chains of one warp differ in length, so a warp runs as long as its
 * longest: the kernel is bound by latency, not by throughput.
 */
#include <cuda_runtime.h>

#include "builtin.h"

#define THREADS 128
#define MAX_BLOCKS 65535u

__global__ void __launch_bounds__(THREADS)
    chain_kernel(const uint64_t *in, uint64_t *out, size_t first, size_t n, uint64_t length) {
  for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x) {
    uint64_t i = (uint64_t)(first + j);
    out[j] = mgpu__chain_item(in[j], i, mgpu__chain_steps(length, i));
  }
}

extern "C" int mgpu__chain_gpu(const mgpu_chunk_t *c) {
  const mgpu_chain_arg_t *arg = (const mgpu_chain_arg_t *)c->arg;
  if (!arg || arg->length < 1 || arg->length > MGPU_CHAIN_MAX_LENGTH) return (int)cudaErrorInvalidValue;
  if (c->count == 0) return (int)cudaSuccess;
  const size_t want = (c->count + THREADS - 1) / THREADS;
  const unsigned blocks = want < MAX_BLOCKS ? (unsigned)want : MAX_BLOCKS;
  (void)cudaGetLastError();
  chain_kernel<<<blocks, THREADS, 0, (cudaStream_t)c->stream>>>((const uint64_t *)c->in[0], (uint64_t *)c->out[0],
                                                                c->first, c->count, arg->length);
  return (int)cudaGetLastError();
}
