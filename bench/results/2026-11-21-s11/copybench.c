/* copy rates of staging copies: memcpy vs streamed stores, alone and with
 * compute threads busy. */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <emmintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void nt_copy(void *dst, const void *src, size_t bytes) {
  char *d = dst; const char *s = src;
  size_t head = (size_t)(-(uintptr_t)d & 63);
  memcpy(d, s, head); d += head; s += head; bytes -= head;
  for (; bytes >= 64; d += 64, s += 64, bytes -= 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16)),
            c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a); _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c); _mm_stream_si128((__m128i *)(d + 48), e);
  }
  _mm_sfence();
  memcpy(d, s, bytes);
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static atomic_int stop;
static size_t CH = 8u << 20;
typedef struct { char *pinned, *pageable; int dir, nt; double bytes; unsigned long long ops; } arg_t;
static void *copier(void *p) {
  arg_t *a = p; size_t nch = 8, i = 0;
  while (!atomic_load(&stop)) {
    char *pg = a->pageable + (i % nch) * CH;
    void *d = a->dir ? pg : a->pinned, *s = a->dir ? a->pinned : pg;
    if (a->nt) nt_copy(d, s, CH); else memcpy(d, s, CH);
    a->bytes += CH; i++;
  }
  return NULL;
}
static void *computer(void *p) {
  arg_t *a = p; unsigned long long x = 12345, m = 0xffffffff00000001ull, n = 0;
  while (!atomic_load(&stop)) {
    for (int k = 0; k < 1000; k++) x = (unsigned long long)(((unsigned __int128)x * 0x9e3779b97f4a7c15ull) % m);
    n += 1000;
  }
  a->ops = n + (x == 7);
  return NULL;
}
int main(int argc, char **argv) {
  int ncopy = atoi(argv[1]), ncomp = atoi(argv[2]);
  arg_t *cp = calloc(ncopy, sizeof *cp), *cm = calloc(ncomp > 0 ? ncomp : 1, sizeof *cm);
  for (int i = 0; i < ncopy; i++) {
    cudaHostAlloc((void **)&cp[i].pinned, CH, cudaHostAllocPortable);
    cp[i].pageable = malloc(8 * CH); memset(cp[i].pageable, 1, 8 * CH); memset(cp[i].pinned, 2, CH);
  }
  const char *names[] = {"in memcpy", "in stream", "out memcpy", "out stream"};
  for (int cfg = -1; cfg < 4; cfg++) {
    int docopy = cfg >= 0;
    atomic_store(&stop, 0);
    pthread_t th[256];
    int nth = 0;
    for (int i = 0; docopy && i < ncopy; i++) {
      cp[i].dir = cfg >= 2; cp[i].nt = cfg & 1; cp[i].bytes = 0;
      pthread_create(&th[nth++], NULL, copier, &cp[i]);
    }
    for (int i = 0; i < ncomp; i++) { cm[i].ops = 0; pthread_create(&th[nth++], NULL, computer, &cm[i]); }
    double t0 = now();
    struct timespec sl = {1, 0}; nanosleep(&sl, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
    double t = now() - t0, gb = 0, ops = 0;
    for (int i = 0; docopy && i < ncopy; i++) gb += cp[i].bytes;
    for (int i = 0; i < ncomp; i++) ops += cm[i].ops;
    printf("copiers %d compute %2d %-11s copy %6.1f GB/s (%5.1f each)  compute %.3g modmul/s\n", docopy ? ncopy : 0,
           ncomp, docopy ? names[cfg] : "-", gb / t / 1e9, docopy ? gb / t / 1e9 / ncopy : 0, ops / t);
  }
  return 0;
}
