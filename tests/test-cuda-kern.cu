/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-cuda-kern.cu: the GPU functions that test-cuda.c launches through the
 * CUDA back end. Each follows the GPU-function convention: enqueue on
 * chunk->stream, do not synchronise, return a cudaError_t cast to int.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "mgpurt.h"

/* out[i] = (first + i) * 3 + 1, modulo 2^32: test-cuda.c checks the same. */
__global__ void fill_kernel(uint32_t *out, size_t first, size_t count)
{
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = (uint32_t)(first + i) * 3u + 1u;
}

static unsigned blocks_for(size_t count)
{
  size_t b = (count + 255) / 256;
  return (unsigned)(b < 4096 ? b : 4096);
}

extern "C" int mgpu_test_gpu_fill(const mgpu_chunk_t *c)
{
  fill_kernel<<<blocks_for(c->count), 256, 0, (cudaStream_t)c->stream>>>((uint32_t *)c->out[0], c->first,
                                                                         c->count);
  return (int)cudaGetLastError();
}

/* Spins until *flag (mapped pinned host memory) is not 0, then writes a value
 * the CPU function never writes: a device that never ends its chunk, whose
 * results, should they ever arrive, are told apart. */
__global__ void spin_kernel(const volatile uint32_t *flag, uint32_t *out, size_t count)
{
  while (*flag == 0) {
  }
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) out[i] = 0xDEADBEEFu;
}

extern "C" int mgpu_test_gpu_spin(const mgpu_chunk_t *c)
{
  const volatile uint32_t *flag = *(const volatile uint32_t *const *)c->arg;
  spin_kernel<<<1, 32, 0, (cudaStream_t)c->stream>>>(flag, (uint32_t *)c->out[0], c->count);
  return (int)cudaGetLastError();
}

/* The flag for mgpu_test_gpu_spin: mapped pinned memory, 0 until released. */
extern "C" volatile uint32_t *mgpu_test_spin_flag(void)
{
  void *p = NULL;
  if (cudaHostAlloc(&p, 64, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) return NULL;
  *(volatile uint32_t *)p = 0;
  return (volatile uint32_t *)p;
}

/* A GPU function that reports a failure of its own without launching. */
extern "C" int mgpu_test_gpu_einval(const mgpu_chunk_t *c)
{
  (void)c;
  return (int)cudaErrorInvalidValue;
}

/* A GPU function that reports device memory exhaustion. */
extern "C" int mgpu_test_gpu_oom(const mgpu_chunk_t *c)
{
  (void)c;
  return (int)cudaErrorMemoryAllocation;
}

/* A launch that cannot start (2048 threads per block is over every GPU's
 * limit of 1024) by a function that does not look at the error and returns 0:
 * the back end must find the error itself. */
extern "C" int mgpu_test_gpu_badconfig(const mgpu_chunk_t *c)
{
  fill_kernel<<<1, 2048, 0, (cudaStream_t)c->stream>>>((uint32_t *)c->out[0], c->first, c->count);
  return 0;
}
