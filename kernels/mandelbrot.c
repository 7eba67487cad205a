/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mandelbrot.c: escape-time counts of the Mandelbrot set, one image row per
 * item, on CPUs. The GPU version gives the same counts bit for bit, so every
 * operation here is a separately rounded double operation: contraction into
 * fused multiply-adds is off for this file (GCC ignores the standard pragma).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "builtin.h"

#include <math.h>

/* Pixels iterated in lockstep: independent lanes the compiler can vectorise. */
#define LANES 8

/*
 * Counts of pixels x .. x + nlanes - 1 of one row. A lane that escapes keeps its
 * z and stops counting, which gives exactly the scalar loop's count; the block
 * stops when every lane has.
 */
static void row_block(uint32_t *restrict dst, uint32_t x, unsigned nlanes, double ci, double x0,
                      double dx, uint32_t max_iter) {
  double cr[LANES], zr[LANES], zi[LANES];
  uint32_t count[LANES];
  int64_t live[LANES];
  for (unsigned l = 0; l < LANES; l++) {
    cr[l] = x0 + (double)(x + l) * dx;
    zr[l] = zi[l] = 0.0;
    count[l] = 0;
    live[l] = l < nlanes;
  }
  for (uint32_t it = 0; it < max_iter; it++) {
    int64_t any = 0;
    for (unsigned l = 0; l < LANES; l++) {
      const double zr2 = zr[l] * zr[l], zi2 = zi[l] * zi[l], t = zr[l] * zi[l];
      const int64_t go = live[l] & !(zr2 + zi2 > 4.0);
      const double nzi = (t + t) + ci, nzr = (zr2 - zi2) + cr[l];
      zr[l] = go ? nzr : zr[l];
      zi[l] = go ? nzi : zi[l];
      count[l] += (uint32_t)go;
      live[l] = go;
      any |= go;
    }
    if (!any) break;
  }
  for (unsigned l = 0; l < nlanes; l++) dst[l] = count[l];
}

int mgpu__mandelbrot_cpu(const mgpu_chunk_t *c) {
  const mgpu_mandelbrot_arg_t *a = c->arg;
  if (!a || a->width < 1 || a->width > MGPU_MANDELBROT_MAX_DIM || a->height < 1 ||
      a->height > MGPU_MANDELBROT_MAX_DIM || a->max_iter < 1 || !isfinite(a->x0) ||
      !isfinite(a->x1) || !isfinite(a->y0) || !isfinite(a->y1) || a->x0 == a->x1 || a->y0 == a->y1)
    return mgpu__fail(MGPU_EINVAL, "mandelbrot: argument out of range (or no argument)");
  if (c->first + c->count > a->height)
    return mgpu__fail(MGPU_EINVAL, "mandelbrot: rows %zu..%zu are past the image height %u", c->first,
                      c->first + c->count - 1, a->height);
  const double dx = (a->x1 - a->x0) / (double)a->width;
  const double dy = (a->y1 - a->y0) / (double)a->height;
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) {
    const double ci = a->y0 + (double)(c->first + j) * dy;
    uint32_t *row = out + j * a->width;
    for (uint32_t x = 0; x < a->width; x += LANES) {
      const unsigned nlanes = a->width - x < LANES ? a->width - x : LANES;
      row_block(row + x, x, nlanes, ci, a->x0, dx, a->max_iter);
    }
  }
  return 0;
}
