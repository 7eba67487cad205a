/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpu-footprint: batches of one kernel whose cost depends on its argument,
 * run in turn, with one model for both (footprint 0) and with a footprint
 * each (mgpu_batch_t.footprint), against each cost run alone. The kernel is
 * the built-in mulmod, whose kernel struct is the same for every intensity
 * K (K chained multiplications an item), on pinned arrays; the runtime takes
 * its settings from the environment (every CPU core and GPU by default).
 * Usage: bench/mgpu-footprint [-n ITEMS] [--cheap K] [--dear K] [--rounds R]
 * Prints, for each way, the median seconds of a cheap and of a dear batch
 * over R rounds, after as many rounds of warm-up; every batch's outputs are
 * checked on sampled items against the CPU function.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgpurt.h"
#include "mgpurt_kernels.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A whole number in [lo, hi] from text s for option opt, or exit 2. */
static unsigned long long number(const char *opt, const char *s, unsigned long long lo, unsigned long long hi) {
  char *end;
  errno = 0;
  unsigned long long v = s && *s != '-' ? strtoull(s, &end, 10) : 0;
  if (!s || *s == '-' || errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "mgpu-footprint: %s '%s' is invalid: expected an integer in %llu..%llu\n", opt, s ? s : "", lo,
            hi);
    exit(2);
  }
  return v;
}

typedef struct {
  mgpu_runtime_t *rt;
  mgpu_kernel_t k;
  size_t n;
  uint64_t *x, *y;
} bench_t;

/* One batch of intensity K and this footprint; its seconds, or -1 where it
 * failed or an output is wrong. */
static double batch(bench_t *b, uint64_t K, uint64_t footprint) {
  mgpu_mulmod_arg_t arg = {.intensity = K};
  mgpu_batch_t d = MGPU_BATCH_INIT;
  d.kernel = &b->k, d.n = b->n, d.in[0] = b->x, d.out[0] = b->y;
  d.arg = &arg, d.arg_size = sizeof arg, d.footprint = footprint;
  memset(b->y, 0, b->n * sizeof *b->y);
  double t0 = now();
  if (mgpu_run(b->rt, &d, NULL) != MGPU_OK) {
    fprintf(stderr, "mgpu-footprint: mgpu_run: %s\n", mgpu_last_error());
    return -1;
  }
  double t = now() - t0;
  for (size_t s = 0; s < 64; s++) {
    size_t i = s * (b->n / 64) + s % (b->n / 64 ? b->n / 64 : 1);
    if (i >= b->n) i = b->n - 1;
    uint64_t want;
    const void *in[1] = {&b->x[i]};
    void *out[1] = {&want};
    mgpu_chunk_t c = {.in = in, .out = out, .arg = &arg, .first = i, .count = 1, .worker = -1};
    if (b->k.cpu(&c) != 0 || want != b->y[i]) {
      fprintf(stderr, "mgpu-footprint: item %zu of a batch of intensity %llu is wrong\n", i, (unsigned long long)K);
      return -1;
    }
  }
  return t;
}

/* Medians of `rounds` timed rounds of the costs in turn (alternate) or each
 * alone, after as many rounds of warm-up, on a runtime of its own. */
static int way(const char *name, size_t n, const uint64_t K[2], int rounds, int alternate, int footprints) {
  bench_t b = {.n = n};
  if (mgpu_init(NULL, &b.rt) != MGPU_OK) {
    fprintf(stderr, "mgpu-footprint: mgpu_init: %s\n", mgpu_last_error());
    return 1;
  }
  mgpu_kernel_mulmod(1, &b.k);
  b.x = mgpu_host_alloc(b.rt, n * sizeof *b.x);
  b.y = mgpu_host_alloc(b.rt, n * sizeof *b.y);
  double *t = malloc(2 * (size_t)rounds * sizeof *t);
  int rc = 0;
  if (!b.x || !b.y || !t) {
    fprintf(stderr, "mgpu-footprint: out of memory for %zu items\n", n);
    rc = 1;
    goto out;
  }
  for (size_t i = 0; i < n; i++) b.x[i] = i * 0x9E3779B97F4A7C15ull;
  for (int order = 0; order < (alternate ? 1 : 2); order++)
    for (int r = 0; r < 2 * rounds; r++)
      for (int c = 0; c < 2; c++) {
        if (!alternate && c != order) continue;
        double s = batch(&b, K[c], footprints ? K[c] : 0);
        if (s < 0) {
          rc = 1;
          goto out;
        }
        if (r >= rounds) t[c * rounds + r - rounds] = s;
      }
  qsort(t, (size_t)rounds, sizeof *t, cmp);
  qsort(t + rounds, (size_t)rounds, sizeof *t, cmp);
  printf("%-22s cheap (K=%llu) %.4g s  dear (K=%llu) %.4g s\n", name, (unsigned long long)K[0], t[rounds / 2],
         (unsigned long long)K[1], t[rounds + rounds / 2]);
out:
  free(t);
  mgpu_host_free(b.rt, b.x);
  mgpu_host_free(b.rt, b.y);
  mgpu_finalize(b.rt);
  return rc;
}

int main(int argc, char **argv) {
  size_t n = 1 << 20;
  uint64_t K[2] = {10, 10000};
  int rounds = 8;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "-n")) n = (size_t)number("-n", v, 64, 1ull << 30), i++;
    else if (!strcmp(argv[i], "--cheap")) K[0] = number("--cheap", v, 1, MGPU_MULMOD_MAX_INTENSITY), i++;
    else if (!strcmp(argv[i], "--dear")) K[1] = number("--dear", v, 1, MGPU_MULMOD_MAX_INTENSITY), i++;
    else if (!strcmp(argv[i], "--rounds")) rounds = (int)number("--rounds", v, 1, 1000), i++;
    else {
      fprintf(stderr, "usage: mgpu-footprint [-n ITEMS] [--cheap K] [--dear K] [--rounds R]\n");
      return 2;
    }
  }
  printf("mgpu-footprint: %zu items of mulmod, median of %d rounds each\n", n, rounds);
  int rc = way("each cost alone:", n, K, rounds, 0, 0);
  if (!rc) rc = way("in turn, one model:", n, K, rounds, 1, 0);
  if (!rc) rc = way("in turn, footprints:", n, K, rounds, 1, 1);
  return rc;
}
