/* registering pageable pieces in place (cudaHostRegister) against staging
 * copies: per thread, each thread on its own GPU. */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
static size_t ARR = (size_t)512 << 20;
static atomic_int stop, go;
typedef struct { int gpu, mode; size_t piece; char *arr, *stage, *dev; cudaStream_t s; double bytes, t; } arg_t;
static void *worker(void *p) {
  arg_t *a = p;
  CK(cudaSetDevice(a->gpu));
  size_t npc = ARR / a->piece, i = 0;
  while (!atomic_load(&go)) ;
  double t0 = now();
  while (!atomic_load(&stop)) {
    char *src = a->arr + (i % npc) * a->piece;
    switch (a->mode) {
    case 0: memcpy(a->stage, src, a->piece); CK(cudaMemcpyAsync(a->dev, a->stage, a->piece, cudaMemcpyHostToDevice, a->s)); CK(cudaStreamSynchronize(a->s)); break;
    case 1: CK(cudaHostRegister(src, a->piece, 0)); CK(cudaMemcpyAsync(a->dev, src, a->piece, cudaMemcpyHostToDevice, a->s)); CK(cudaStreamSynchronize(a->s)); CK(cudaHostUnregister(src)); break;
    case 2: CK(cudaHostRegister(src, a->piece, 0)); CK(cudaHostUnregister(src)); break;
    case 3: CK(cudaMemcpyAsync(a->stage, a->dev, a->piece, cudaMemcpyDeviceToHost, a->s)); CK(cudaStreamSynchronize(a->s)); memcpy(src, a->stage, a->piece); break;
    case 4: CK(cudaHostRegister(src, a->piece, 0)); CK(cudaMemcpyAsync(src, a->dev, a->piece, cudaMemcpyDeviceToHost, a->s)); CK(cudaStreamSynchronize(a->s)); CK(cudaHostUnregister(src)); break;
    case 5: CK(cudaMemcpyAsync(a->dev, a->stage, a->piece, cudaMemcpyHostToDevice, a->s)); CK(cudaStreamSynchronize(a->s)); break;
    case 6: CK(cudaMemcpyAsync(a->dev, src, a->piece, cudaMemcpyHostToDevice, a->s)); CK(cudaStreamSynchronize(a->s)); break;
    }
    a->bytes += a->piece; i++;
  }
  a->t = now() - t0;
  return NULL;
}
static void *computer(void *p) {
  unsigned long long x = 12345, m = 0xffffffff00000001ull;
  while (!atomic_load(&stop))
    for (int k = 0; k < 1000; k++) x = (unsigned long long)(((unsigned __int128)x * 0x9e3779b97f4a7c15ull) % m);
  *(unsigned long long *)p = x;
  return NULL;
}
int main(int argc, char **argv) {
  int nthr = atoi(argv[1]), ncomp = argc > 2 ? atoi(argv[2]) : 0, ngpu;
  CK(cudaGetDeviceCount(&ngpu));
  if (nthr == 1 && ncomp == 0) {
    int v1 = 0, v2 = 0, v3 = 0;
    cudaDeviceGetAttribute(&v1, cudaDevAttrPageableMemoryAccess, 0);
    cudaDeviceGetAttribute(&v2, cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0);
    cudaDeviceGetAttribute(&v3, cudaDevAttrHostRegisterSupported, 0);
    printf("pageableMemoryAccess %d usesHostPageTables %d hostRegisterSupported %d\n", v1, v2, v3);
  }
  arg_t *a = calloc(nthr, sizeof *a);
  for (int i = 0; i < nthr; i++) {
    a[i].gpu = i % ngpu;
    CK(cudaSetDevice(a[i].gpu));
    CK(cudaStreamCreate(&a[i].s));
    CK(cudaMalloc((void **)&a[i].dev, (size_t)64 << 20));
    CK(cudaHostAlloc((void **)&a[i].stage, (size_t)64 << 20, cudaHostAllocPortable));
    if (posix_memalign((void **)&a[i].arr, 4096, ARR)) return 1;
    memset(a[i].arr, 1, ARR);
  }
  const char *names[] = {"h2d staged", "h2d register", "register only", "d2h staged", "d2h register", "h2d pinned", "h2d pageable"};
  size_t pieces[] = {(size_t)1 << 20, (size_t)4 << 20, (size_t)16 << 20, (size_t)64 << 20};
  for (int mode = 0; mode < 7; mode++)
    for (int pi = 0; pi < 4; pi++) {
      atomic_store(&stop, 0); atomic_store(&go, 0);
      pthread_t th[256], tc[256]; unsigned long long sink[256];
      for (int i = 0; i < nthr; i++) { a[i].mode = mode; a[i].piece = pieces[pi]; a[i].bytes = 0; pthread_create(&th[i], NULL, worker, &a[i]); }
      for (int i = 0; i < ncomp; i++) pthread_create(&tc[i], NULL, computer, &sink[i]);
      atomic_store(&go, 1);
      struct timespec sl = {0, 400000000}; nanosleep(&sl, NULL);
      atomic_store(&stop, 1);
      double gb = 0;
      for (int i = 0; i < nthr; i++) { pthread_join(th[i], NULL); gb += a[i].bytes / a[i].t; }
      for (int i = 0; i < ncomp; i++) pthread_join(tc[i], NULL);
      printf("threads %d compute %2d %-14s piece %3zu MiB: %6.1f GB/s (%5.1f each)\n", nthr, ncomp, names[mode], pieces[pi] >> 20, gb / 1e9, gb / 1e9 / nthr);
    }
  return 0;
}
