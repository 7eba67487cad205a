/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mulmod_cuda.cu: the chain x <- x * x + 1 mod the Goldilocks prime, K times per
 * item, on CUDA GPUs, with the arithmetic of builtin.h shared with mulmod.c.
 * One item per thread, grid-stride loop.
 */
#include <cuda_runtime.h>

#include "builtin.h"

#define THREADS 256
#define MAX_BLOCKS 65535u

__global__ void __launch_bounds__(THREADS)
    mulmod_kernel(const uint64_t *in, uint64_t *out, size_t n, uint64_t k) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint64_t x = mgpu__gl_canon(in[i]);
    for (uint64_t s = 0; s < k; s++) x = mgpu__gl_add(mgpu__gl_mul(x, x), 1);
    out[i] = x;
  }
}

extern "C" int mgpu__mulmod_gpu(const mgpu_chunk_t *c) {
  const mgpu_mulmod_arg_t *arg = (const mgpu_mulmod_arg_t *)c->arg;
  if (!arg || arg->intensity < 1 || arg->intensity > MGPU_MULMOD_MAX_INTENSITY) return (int)cudaErrorInvalidValue;
  if (c->count == 0) return (int)cudaSuccess;
  const size_t want = (c->count + THREADS - 1) / THREADS;
  const unsigned blocks = want < MAX_BLOCKS ? (unsigned)want : MAX_BLOCKS;
  (void)cudaGetLastError();
  mulmod_kernel<<<blocks, THREADS, 0, (cudaStream_t)c->stream>>>((const uint64_t *)c->in[0], (uint64_t *)c->out[0],
                                                                 c->count, arg->intensity);
  return (int)cudaGetLastError();
}
