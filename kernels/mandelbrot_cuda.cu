/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mandelbrot_cuda.cu: escape-time counts of the Mandelbrot set on CUDA GPUs,
 * one thread per pixel, with mandelbrot.c's counts: every step is an
 * explicitly rounded intrinsic (__dmul_rn, __dadd_rn, __dsub_rn), never fused
 * whatever --fmad says, and the steps dx and dy are the host's IEEE division.
 */
#include <cuda_runtime.h>

#include <math.h>

#include "builtin.h"

#define THREADS 256
#define MAX_BLOCKS 65535u

__global__ void __launch_bounds__(THREADS)
    mandelbrot_kernel(uint32_t *__restrict__ out, size_t first, size_t pixels, uint32_t width, uint32_t max_iter,
                      double x0, double y0, double dx, double dy) {
  for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += (size_t)gridDim.x * blockDim.x) {
    const size_t row = p / width;
    const uint32_t x = (uint32_t)(p - row * width);
    const double cr = __dadd_rn(x0, __dmul_rn((double)x, dx));
    const double ci = __dadd_rn(y0, __dmul_rn((double)(first + row), dy));
    double zr = 0.0, zi = 0.0;
    uint32_t it = 0;
    while (it < max_iter) {
      const double zr2 = __dmul_rn(zr, zr), zi2 = __dmul_rn(zi, zi);
      if (__dadd_rn(zr2, zi2) > 4.0) break;
      const double t = __dmul_rn(zr, zi);
      zi = __dadd_rn(__dadd_rn(t, t), ci);
      zr = __dadd_rn(__dsub_rn(zr2, zi2), cr);
      it++;
    }
    out[p] = it;
  }
}

extern "C" int mgpu__mandelbrot_gpu(const mgpu_chunk_t *c) {
  const mgpu_mandelbrot_arg_t *a = (const mgpu_mandelbrot_arg_t *)c->arg;
  if (!a || a->width < 1 || a->width > MGPU_MANDELBROT_MAX_DIM || a->height < 1 ||
      a->height > MGPU_MANDELBROT_MAX_DIM || a->max_iter < 1 || !isfinite(a->x0) || !isfinite(a->x1) ||
      !isfinite(a->y0) || !isfinite(a->y1) || a->x0 == a->x1 || a->y0 == a->y1 ||
      c->first + c->count > a->height)
    return (int)cudaErrorInvalidValue;
  if (c->count == 0) return (int)cudaSuccess;
  const double dx = (a->x1 - a->x0) / (double)a->width;
  const double dy = (a->y1 - a->y0) / (double)a->height;
  const size_t pixels = c->count * a->width;
  const size_t want = (pixels + THREADS - 1) / THREADS;
  const unsigned blocks = want < MAX_BLOCKS ? (unsigned)want : MAX_BLOCKS;
  (void)cudaGetLastError();
  mandelbrot_kernel<<<blocks, THREADS, 0, (cudaStream_t)c->stream>>>((uint32_t *)c->out[0], c->first, pixels,
                                                                     a->width, a->max_iter, a->x0, a->y0, dx, dy);
  return (int)cudaGetLastError();
}
