/* Emulated 2-GPU run of a kernel whose item cost peaks in the middle (like
 * mandelbrot rows): per batch, each GPU's items and the batch span. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mgpurt.h"
static double cost(size_t i, size_t n) {
  if (getenv("FLAT")) return 4e-6 * 3.3929;
  double x = ((double)i / (double)n - 0.5) / 0.15;
  return 4e-6 * (1 + 9 * exp(-x * x));
}
static int cpu(const mgpu_chunk_t *c) {
  const size_t *n = c->arg;
  double t = 0;
  for (size_t j = 0; j < c->count; j++) t += cost(c->first + j, *n);
  if (!c->stream) t *= 50; /* a CPU core is 50x slower than a GPU */
  struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {}
  return 0;
}
static int gpu(const mgpu_chunk_t *c) { (void)c; return 99; }
int main(int argc, char **argv) {
  int ngpu = argc > 1 ? atoi(argv[1]) : 2, mode = argc > 2 ? atoi(argv[2]) : 0;
  mgpu_config_t cfg;
  mgpu_config_init(&cfg);
  cfg.emulate_gpus = ngpu;
  cfg.num_gpus = ngpu;
  cfg.num_threads = 1;
  cfg.sched = mode ? MGPU_SCHED_STATIC : MGPU_SCHED_GPU;
  mgpu_runtime_t *rt;
  if (mgpu_init(&cfg, &rt) != MGPU_OK) return 1;
  mgpu_kernel_t k = {.name = "peak", .cpu = cpu, .gpu = gpu};
  size_t n = 4096;
  double sum = 0; int cnt = 0;
  for (int b = 0; b < 24; b++) {
    mgpu_batch_t bt = {.kernel = &k, .n = n, .arg = &n, .arg_size = sizeof n};
    mgpu_worker_stats_t ws[16];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 16};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mgpu_run(rt, &bt, &st) != MGPU_OK) { fprintf(stderr, "%s\n", mgpu_last_error()); return 1; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double t = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (b >= 4) sum += t, cnt++;
    if (b >= 18) { printf("batch %d %.1f ms:", b, t * 1e3); for (int i = 1; i <= ngpu; i++) printf(" %llu/%llu", (unsigned long long)ws[i].items, (unsigned long long)ws[i].chunks); printf("\n"); }
  }
  double ideal = 0; for (size_t i = 0; i < n; i++) ideal += cost(i, n);
  printf("mean %.1f ms (batches 4-23), ideal %.1f ms\n", 1e3 * sum / cnt, 1e3 * ideal / ngpu);
  mgpu_finalize(rt);
  return 0;
}
