/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * saxpy_cuda.cu: r = a * x + y on floats on CUDA GPUs, with the same results as
 * saxpy.c: the product and the sum are rounded separately (__fmul_rn, __fadd_rn
 * are never fused into a multiply-add). Grid-stride loop, one float per thread.
 */
#include <cuda_runtime.h>

#include "builtin.h"

#define THREADS 256
#define MAX_BLOCKS 65535u

/* No __restrict__: r == y (in place) is allowed, as on the CPU. */
__global__ void __launch_bounds__(THREADS) saxpy_kernel(float a, const float *x, const float *y, float *r, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    r[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
}

extern "C" int mgpu__saxpy_gpu(const mgpu_chunk_t *c) {
  const mgpu_saxpy_arg_t *arg = (const mgpu_saxpy_arg_t *)c->arg;
  if (!arg) return (int)cudaErrorInvalidValue;
  if (c->count == 0) return (int)cudaSuccess;
  const size_t want = (c->count + THREADS - 1) / THREADS;
  const unsigned blocks = want < MAX_BLOCKS ? (unsigned)want : MAX_BLOCKS;
  (void)cudaGetLastError();
  saxpy_kernel<<<blocks, THREADS, 0, (cudaStream_t)c->stream>>>(arg->a, (const float *)c->in[0],
                                                                (const float *)c->in[1], (float *)c->out[0], c->count);
  return (int)cudaGetLastError();
}
