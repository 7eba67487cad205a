/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tutorial_cuda.cu: the GPU function of the tutorial's kernel
 * (doc/getting-started.md, step 2): y[i] = tutorial_mix(x[i], rounds), the
 * same function as the CPU's, from tutorial.h.
 *
 *   nvcc -c tutorial_cuda.cu $(pkg-config --cflags mgpurt) -o tutorial_cuda.o
 */
#include <cuda_runtime.h>

#include <mgpurt.h>

#include "tutorial.h"

/* A grid-stride loop: any grid covers any number of items. */
__global__ void mix_kernel(const uint64_t *x, uint64_t *y, size_t n, uint32_t rounds) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = tutorial_mix(x[i], rounds);
}

/* Runs on the GPU's host thread, with the GPU current: in[0] and out[0] are
 * device pointers to the chunk's first item, arg is in host memory. It only
 * enqueues work on the chunk's stream and returns; the runtime waits. */
extern "C" int mix_gpu(const mgpu_chunk_t *chunk) {
  const uint32_t rounds = *(const uint32_t *)chunk->arg;
  const size_t want = (chunk->count + 255) / 256;
  const unsigned blocks = want < 65535 ? (unsigned)want : 65535;
  mix_kernel<<<blocks, 256, 0, (cudaStream_t)chunk->stream>>>(
      (const uint64_t *)chunk->in[0], (uint64_t *)chunk->out[0], chunk->count, rounds);
  return (int)cudaGetLastError();
}
