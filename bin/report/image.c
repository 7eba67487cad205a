/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * image.c: the mandelbrot workload's picture (--output), PNG when built with
 * libpng, else PPM; with --overlay each row tinted by the worker that
 * computed it.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MGPU_HAVE_PNG
#include <png.h>
#endif

#include "report/report.h"

/* Write w's image to o->output; ncpu: the CPU workers, whose colours differ
 * from the GPUs'. Rows past the last run's (a prefix of the batch) are black. */
void write_image(const work_t *w, const opts_t *o, int ncpu) {
  if (ranks_rank() > 0) return; /* one image, rank 0's: the results are gathered on every rank */
  uint32_t wd = w->arg.mandel.width, ht = (uint32_t)w->n, maxit = w->arg.mandel.max_iter;
  unsigned char *rgb = malloc((size_t)wd * ht * 3);
  const uint32_t *it = w->out;
  static const unsigned char palette[][3] = {{230, 80, 60},  {60, 160, 230}, {90, 200, 90}, {230, 190, 60},
                                             {180, 90, 220}, {60, 210, 200}, {240, 130, 40}, {150, 150, 150}};
  for (uint32_t y = 0; y < ht; y++)
    for (uint32_t x = 0; x < wd; x++) {
      uint32_t v = y < w->ndone ? it[(size_t)y * wd + x] : maxit;
      double t = v >= maxit ? 0 : sqrt((double)v / maxit);
      unsigned char g = (unsigned char)(255 * t);
      unsigned char *p = rgb + ((size_t)y * wd + x) * 3;
      if (o->overlay) {
        int wk = w->row_worker[y];
        const unsigned char *c = wk >= ncpu ? palette[(wk - ncpu) % 4 + 4] : palette[wk % 4];
        for (int k = 0; k < 3; k++) p[k] = (unsigned char)(0.55 * g + 0.45 * c[k] * (0.35 + 0.65 * t));
      } else {
        p[0] = g, p[1] = (unsigned char)(g * 0.8), p[2] = (unsigned char)(80 + 175 * t);
      }
    }
  FILE *f = fopen(o->output, "wb");
  if (!f) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->output, strerror(errno));
    exit(EXIT_FAIL);
  }
#ifdef MGPU_HAVE_PNG
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    fprintf(stderr, "%s: libpng failed writing %s\n", prog, o->output);
    exit(EXIT_FAIL);
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, wd, ht, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (uint32_t y = 0; y < ht; y++) png_write_row(png, rgb + (size_t)y * wd * 3);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
#else
  fprintf(f, "P6\n%u %u\n255\n", wd, ht);
  fwrite(rgb, 3, (size_t)wd * ht, f);
#endif
  /* A full disk shows at the last flush or only as the stream's error flag. */
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->output, strerror(errno ? errno : EIO));
    exit(EXIT_FAIL);
  }
  free(rgb);
}
