/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * example_cuda.cu: the GPU function of the user guide's kernel square_plus_c
 * (doc/guide.md, doc/examples/example.c): y = x * x + c, with the same results
 * as the CPU function.
 *
 * The convention of a GPU function: it runs on the GPU's host thread with the
 * device already current; chunk->in[k] and chunk->out[k] are device pointers to
 * the chunk's first item; chunk->arg is the batch's argument blob in host
 * memory (read it here and pass values to the kernel); it only enqueues work on
 * chunk->stream, never synchronises, and returns a cudaError_t cast to int.
 *
 *   nvcc -c example_cuda.cu -o example_cuda.o $(pkg-config --cflags mgpurt)
 */
#include <cuda_runtime.h>

#include <mgpurt.h>

#define THREADS 256
#define MAX_BLOCKS 65535u

/* Grid-stride loop: any grid covers any chunk length. */
__global__ void square_plus_c_kernel(const double *x, double *y, size_t n, double c) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = x[i] * x[i] + c;
}

extern "C" int example_square_plus_c_gpu(const mgpu_chunk_t *chunk) {
  const double c = *(const double *)chunk->arg;
  const size_t want = (chunk->count + THREADS - 1) / THREADS;
  const unsigned blocks = want < MAX_BLOCKS ? (unsigned)want : MAX_BLOCKS;
  square_plus_c_kernel<<<blocks, THREADS, 0, (cudaStream_t)chunk->stream>>>(
      (const double *)chunk->in[0], (double *)chunk->out[0], chunk->count, c);
  return (int)cudaGetLastError();
}
