/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpu-xfer: the machine's own host<->device ceilings, without the runtime.
 * For 1, 2, 4, ... GPUs at once (one thread each, its own pinned buffer first
 * touched by that thread), the aggregate bandwidth of plain cudaMemcpyAsync
 * host-to-device, device-to-host and both at once on two streams; then the
 * rate at which 1, 2, 4, ... threads copy pageable memory into pinned memory,
 * which bounds staging. These are the ceilings that GPU scaling with inputs in
 * host memory is judged against (doc/benchmarks.md).
 * Usage: bench/mgpu-xfer [MiB per GPU, default 512]
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CK(call)                                                                                    \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "mgpu-xfer: %s failed: %s\n", #call, cudaGetErrorString(e_));                 \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

/* Rounds of copies, the first a warm-up: each worker thread meets the timing
 * thread at `bar` before and after its copies of every round. */
#define ROUNDS 4

/* The timing thread's side of the rounds: the shortest timed round, in s. */
static double best_round(pthread_barrier_t *bar) {
  double best = 1e30;
  for (int rep = 0; rep < ROUNDS; rep++) {
    pthread_barrier_wait(bar);
    double t0 = now();
    pthread_barrier_wait(bar);
    double t = now() - t0;
    if (rep > 0 && t < best) best = t;
  }
  return best;
}

enum { H2D, D2H, BOTH, NDIR };
static const char *dir_name[NDIR] = {"h2d", "d2h", "both"};

typedef struct {
  int dev;
  size_t bytes;
  int dir;
  pthread_barrier_t *bar;
  char *host[2];
  void *devbuf[2];
  cudaStream_t s[2];
} gpu_t;

static void *copy_main(void *p) {
  gpu_t *g = p;
  CK(cudaSetDevice(g->dev));
  for (int rep = 0; rep < ROUNDS; rep++) { /* in step with best_round */
    pthread_barrier_wait(g->bar);
    if (g->dir != D2H) CK(cudaMemcpyAsync(g->devbuf[0], g->host[0], g->bytes, cudaMemcpyHostToDevice, g->s[0]));
    if (g->dir != H2D) CK(cudaMemcpyAsync(g->host[1], g->devbuf[1], g->bytes, cudaMemcpyDeviceToHost, g->s[1]));
    CK(cudaStreamSynchronize(g->s[0]));
    CK(cudaStreamSynchronize(g->s[1]));
    pthread_barrier_wait(g->bar);
  }
  return NULL;
}

static void *setup_main(void *p) {
  gpu_t *g = p;
  CK(cudaSetDevice(g->dev));
  for (int i = 0; i < 2; i++) {
    CK(cudaHostAlloc((void **)&g->host[i], g->bytes, cudaHostAllocDefault));
    memset(g->host[i], i + 1, g->bytes); /* first touched here, by this GPU's thread */
    CK(cudaMalloc(&g->devbuf[i], g->bytes));
    CK(cudaStreamCreateWithFlags(&g->s[i], cudaStreamNonBlocking));
  }
  return NULL;
}

/* Aggregate GB/s of k GPUs copying in direction dir, best of 3. */
static double run_copies(gpu_t *gs, int k, int dir) {
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)k + 1);
  pthread_t th[64];
  for (int i = 0; i < k; i++) {
    gs[i].dir = dir;
    gs[i].bar = &bar;
    pthread_create(&th[i], NULL, copy_main, &gs[i]);
  }
  double best = best_round(&bar);
  for (int i = 0; i < k; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
  double bytes = (double)gs[0].bytes * k * (dir == BOTH ? 2 : 1);
  return bytes / best / 1e9;
}

typedef struct {
  char *src, *dst;
  size_t bytes;
  pthread_barrier_t *bar;
} mc_t;

static void *memcpy_main(void *p) {
  mc_t *m = p;
  memset(m->src, 3, m->bytes);
  memset(m->dst, 4, m->bytes);
  for (int rep = 0; rep < ROUNDS; rep++) {
    pthread_barrier_wait(m->bar);
    memcpy(m->dst, m->src, m->bytes);
    pthread_barrier_wait(m->bar);
  }
  return NULL;
}

/* GB/s copied by k threads from pageable into pinned memory, best of 3. */
static double run_memcpy(int k, size_t bytes) {
  mc_t m[64];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)k + 1);
  pthread_t th[64];
  for (int i = 0; i < k; i++) {
    m[i].src = malloc(bytes);
    CK(cudaHostAlloc((void **)&m[i].dst, bytes, cudaHostAllocDefault));
    if (!m[i].src) {
      fprintf(stderr, "mgpu-xfer: out of memory\n");
      exit(1);
    }
    m[i].bytes = bytes;
    m[i].bar = &bar;
    pthread_create(&th[i], NULL, memcpy_main, &m[i]);
  }
  double best = best_round(&bar);
  for (int i = 0; i < k; i++) {
    pthread_join(th[i], NULL);
    free(m[i].src);
    cudaFreeHost(m[i].dst);
  }
  pthread_barrier_destroy(&bar);
  return (double)bytes * k / best / 1e9;
}

int main(int argc, char **argv) {
  long mib = 512;
  if (argc > 1) {
    char *end;
    mib = strtol(argv[1], &end, 10);
    if (*end || mib < 1 || mib > 16384) {
      fprintf(stderr, "mgpu-xfer: MiB per GPU must be an integer in 1..16384, not '%s'\n", argv[1]);
      return 2;
    }
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    fprintf(stderr, "mgpu-xfer: no GPU\n");
    return 77;
  }
  if (ngpu > 64) ngpu = 64;
  size_t bytes = (size_t)mib << 20;
  gpu_t *gs = calloc((size_t)ngpu, sizeof *gs);
  pthread_t th[64];
  for (int i = 0; i < ngpu; i++) {
    gs[i].dev = i;
    gs[i].bytes = bytes;
    pthread_create(&th[i], NULL, setup_main, &gs[i]);
  }
  for (int i = 0; i < ngpu; i++) pthread_join(th[i], NULL);
  printf("plain cudaMemcpyAsync from pinned memory, %ld MiB per GPU and direction, aggregate GB/s (best of 3)\n", mib);
  printf("%-6s %10s %10s %10s %12s\n", "gpus", dir_name[H2D], dir_name[D2H], dir_name[BOTH], "both/gpu");
  for (int k = 1;; k = k * 2 > ngpu ? ngpu : k * 2) { /* 1, 2, 4, ..., then every GPU */
    double r[NDIR];
    for (int d = 0; d < NDIR; d++) r[d] = run_copies(gs, k, d);
    printf("%-6d %10.1f %10.1f %10.1f %12.1f\n", k, r[H2D], r[D2H], r[BOTH], r[BOTH] / k);
    if (k == ngpu) break;
  }
  printf("memcpy from pageable into pinned memory, 256 MiB per thread, aggregate GB/s (best of 3)\n");
  for (int k = 1; k <= 32; k *= 2) printf("threads %-3d %8.1f\n", k, run_memcpy(k, (size_t)256 << 20));
  return 0;
}
