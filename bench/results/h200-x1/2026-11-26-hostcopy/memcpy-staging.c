/* memcpy from a pageable source into pinned slots: cudaHostAlloc against
 * huge-page memory registered with cudaHostRegister; one process per run. */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <stdint.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
  const char *mode = argv[1];
  int T = atoi(argv[2]), reps = atoi(argv[3]);
  size_t slot = 32u << 20, nslot = 4, src_b = 256u << 20;
  char *src = aligned_alloc(64, src_b);
  memset(src, 1, src_b);
  char *dst;
  size_t db = slot * nslot;
  if (!strcmp(mode, "alloc")) {
    if (cudaHostAlloc((void **)&dst, db, cudaHostAllocPortable) != cudaSuccess) return 1;
  } else {
    size_t al = 2u << 20;
    char *m = mmap(NULL, db + al, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    dst = (char *)(((uintptr_t)m + al - 1) & ~(uintptr_t)(al - 1));
    if (!strcmp(mode, "huge")) madvise(dst, db, MADV_HUGEPAGE);
    memset(dst, 0, db);
    if (cudaHostRegister(dst, db, cudaHostRegisterPortable) != cudaSuccess) return 2;
  }
  memset(dst, 0, db);
  double *in = malloc(sizeof(double) * reps), *out = malloc(sizeof(double) * reps);
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (size_t off = 0; off < src_b; off += slot) {
      char *d = dst + (off / slot % nslot) * slot;
#pragma omp parallel for num_threads(T) schedule(static)
      for (size_t p = 0; p < slot; p += 256u << 10) memcpy(d + p, src + off + p, 256u << 10);
    }
    double t1 = now();
    for (size_t off = 0; off < src_b; off += slot) {
      char *d = dst + (off / slot % nslot) * slot;
#pragma omp parallel for num_threads(T) schedule(static)
      for (size_t p = 0; p < slot; p += 256u << 10) memcpy(src + off + p, d + p, 256u << 10);
    }
    double t2 = now();
    in[r] = src_b / (t1 - t0) / 1e9, out[r] = src_b / (t2 - t1) / 1e9;
  }
  qsort(in, reps, sizeof *in, cmp), qsort(out, reps, sizeof *out, cmp);
  FILE *f = fopen("/proc/self/smaps_rollup", "r"); char line[256]; long anonhuge = 0;
  while (f && fgets(line, sizeof line, f)) if (!strncmp(line, "AnonHugePages:", 14)) anonhuge = atol(line + 14);
  printf("%-6s T=%d in GB/s median %.1f max %.1f; out median %.1f max %.1f; AnonHuge %ld kB\n", mode, T, in[reps / 2], in[reps - 1], out[reps / 2], out[reps - 1], anonhuge);
  return 0;
}
