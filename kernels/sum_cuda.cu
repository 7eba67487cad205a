/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sum_cuda.cu: the deterministic sum of a float or double array into one double
 * on CUDA GPUs (sum.c is the CPU side). Two launches, no atomics: a fixed grid
 * of MGPU__SUM_GPU_BLOCKS blocks sums strided elements into scratch, then one
 * block adds those in a fixed tree into out[0]. The grid does not depend on
 * the device, so every run on any GPU adds the same numbers in the same order.
 */
#include <cuda_runtime.h>

#include "builtin.h"

#define THREADS 256
#define UNROLL 4
#define FINAL_THREADS 1024

static_assert(MGPU__SUM_GPU_BLOCKS == FINAL_THREADS, "the final launch takes one block sum per thread");

static __device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

/* The sum of v over the block, in thread 0; every thread must call it. */
template <int NT>
static __device__ __forceinline__ double block_sum(double v) {
  __shared__ double part[NT / 32];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = warp_sum(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = 0.0;
  if (warp == 0) {
    v = lane < NT / 32 ? part[lane] : 0.0;
    v = warp_sum(v);
  }
  return v;
}

/* Thread g of the G in the grid adds, in double and in this order, elements
 * g, g + G, g + 2G, ...; each block adds its threads' sums in a fixed tree
 * (warp shuffles, then shared memory) into partial[blockIdx.x]. */
template <typename T>
__global__ void __launch_bounds__(THREADS)
    sum_blocks(const T *__restrict__ a, size_t n, double *__restrict__ partial) {
  const size_t G = (size_t)MGPU__SUM_GPU_BLOCKS * THREADS;
  size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x;
  /* UNROLL loads in flight, added one after the other in index order: the same
   * sum as a plain loop over i, i + G, i + 2G, ... (why 4: doc/tuning.md,
   * "Kernels") */
  double acc = 0.0;
  for (; n > (UNROLL - 1) * G && i < n - (UNROLL - 1) * G; i += UNROLL * G) {
    T v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) v[u] = __ldcs(a + i + u * G);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) acc += (double)v[u];
  }
  for (; i < n; i += G) acc += (double)__ldcs(a + i);
  acc = block_sum<THREADS>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(FINAL_THREADS) sum_final(const double *__restrict__ partial, double *__restrict__ out) {
  const double s = block_sum<FINAL_THREADS>(partial[threadIdx.x]);
  if (threadIdx.x == 0) *out = s;
}

extern "C" int mgpu__sum_gpu(const mgpu_chunk_t *c) {
  const mgpu__sum_arg_t *arg = (const mgpu__sum_arg_t *)c->arg;
  if (!arg || !c->out || !c->out[0] || !c->scratch || (c->count > 0 && (!c->in || !c->in[0])))
    return (int)cudaErrorInvalidValue;
  cudaStream_t stream = (cudaStream_t)c->stream;
  double *partial = (double *)c->scratch;
  (void)cudaGetLastError();
  /* count 0 runs too: every block sum is 0.0, and so is the total. */
  if (arg->is_double)
    sum_blocks<double><<<MGPU__SUM_GPU_BLOCKS, THREADS, 0, stream>>>(c->count ? (const double *)c->in[0] : NULL,
                                                                      c->count, partial);
  else
    sum_blocks<float><<<MGPU__SUM_GPU_BLOCKS, THREADS, 0, stream>>>(c->count ? (const float *)c->in[0] : NULL,
                                                                     c->count, partial);
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess) return (int)rc;
  sum_final<<<1, FINAL_THREADS, 0, stream>>>(partial, (double *)c->out[0]);
  return (int)cudaGetLastError();
}
