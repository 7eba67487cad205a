/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpu-overhead: the runtime's own costs on CPU workers. Prints the round trip
 * of a one-item batch (submit, run, wait) and the scheduling overhead per chunk
 * (claim, completion, statistics, model), measured as wall time not spent in
 * the kernel, divided by the chunks. Usage: bench/mgpu-overhead [workers]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mgpurt.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int nothing(const mgpu_chunk_t *c) {
  (void)c;
  return 0;
}

/* About `ns` nanoseconds of arithmetic per item. */
static int spin(const mgpu_chunk_t *c) {
  const double *ns = c->arg;
  volatile double x = 1;
  for (size_t i = 0; i < c->count; i++) {
    double t0 = now();
    while ((now() - t0) * 1e9 < *ns) x = x * 1.0000001;
  }
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int workers = argc > 1 ? atoi(argv[1]) : 1;
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.num_threads = workers;
  c.num_gpus = 0;
  mgpu_runtime_t *rt;
  if (mgpu_init(&c, &rt) != MGPU_OK) {
    fprintf(stderr, "mgpu-overhead: mgpu_init: %s\n", mgpu_last_error());
    return 1;
  }

  static const mgpu_kernel_t k0 = {.name = "nothing", .cpu = nothing};
  mgpu_batch_t one = {.kernel = &k0, .n = 1};
  enum { N = 20000 };
  static double lat[N];
  for (int i = 0; i < 1000; i++) mgpu_run(rt, &one, NULL);
  for (int i = 0; i < N; i++) {
    double t0 = now();
    mgpu_run(rt, &one, NULL);
    lat[i] = now() - t0;
  }
  qsort(lat, N, sizeof *lat, cmp);
  printf("1-item batch round trip (%d CPU workers): median %.2f us, 90th percentile %.2f us\n", workers,
         1e6 * lat[N / 2], 1e6 * lat[N * 9 / 10]);

  static const mgpu_kernel_t ks = {.name = "spin", .cpu = spin};
  double ns = 2000; /* 2 us per item: chunks of ~250 items at the 0.5 ms target */
  mgpu_batch_t big = {.kernel = &ks, .n = 400000, .arg = &ns, .arg_size = sizeof ns};
  mgpu_run(rt, &big, NULL);
  mgpu_worker_stats_t *ws = calloc((size_t)workers, sizeof *ws);
  mgpu_stats_t st = {.worker = ws, .worker_cap = workers};
  double t0 = now();
  mgpu_run(rt, &big, &st);
  double wall = now() - t0, busy = 0;
  for (int i = 0; i < workers; i++) busy += ws[i].busy_s;
  printf("per-chunk overhead: %.2f us (%llu chunks, %.4f s wall x %d workers, %.4f s in the kernel)\n",
         1e6 * (wall * workers - busy) / (double)st.chunks, (unsigned long long)st.chunks, wall, workers, busy);
  free(ws);
  mgpu_finalize(rt);
  return 0;
}
