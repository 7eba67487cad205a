/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin_cuda.cu: the GPU version of the example plugin's collatz kernel. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "mgpurt.h"

#define COLLATZ_CAP 100000u

__global__ void collatz_kernel(const uint64_t *x, uint32_t *steps, size_t count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
    uint64_t n = x[i];
    uint32_t s = 0;
    while (n > 1 && s < COLLATZ_CAP) {
      n = (n & 1) ? 3 * n + 1 : n >> 1;
      s++;
    }
    steps[i] = s;
  }
}

extern "C" int collatz_gpu(const mgpu_chunk_t *c) {
  size_t blocks = (c->count + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  collatz_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)c->stream>>>(
      (const uint64_t *)c->in[0], (uint32_t *)c->out[0], c->count);
  return (int)cudaGetLastError();
}
