/* per-vCPU rates: compute (64-bit mulmod) and memcpy, alone and with the
 * other vCPUs busy; steal time from /proc/stat. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static atomic_int stop, go;
typedef struct { int cpu, copy; double rate; char *a, *b; } arg_t;
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *work(void *p) {
  arg_t *a = p; pin(a->cpu);
  while (!atomic_load(&go)) ;
  double t0 = now(), n = 0;
  unsigned long long x = 12345 + a->cpu, m = 0xffffffff00000001ull;
  while (!atomic_load(&stop)) {
    if (a->copy) { memcpy(a->b, a->a, 8 << 20); n += 8 << 20; }
    else { for (int k = 0; k < 1000; k++) x = (unsigned long long)(((unsigned __int128)x * 0x9e3779b97f4a7c15ull) % m); n += 1000; }
  }
  a->rate = n / (now() - t0) + (x == 3);
  return NULL;
}
static void steal_read(unsigned long long *st, unsigned long long *tot) {
  FILE *f = fopen("/proc/stat", "r"); char line[512]; *st = *tot = 0;
  if (f && fgets(line, sizeof line, f)) {
    unsigned long long v[10] = {0};
    sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    *st = v[7]; for (int i = 0; i < 8; i++) *tot += v[i];
  }
  if (f) fclose(f);
}
/* run threads on cpus[0..n) (copy on those with copyflag), dur s; rates out */
static void run(int n, const int *cpus, const int *copy, double dur, double *rate) {
  arg_t a[256]; pthread_t th[256];
  atomic_store(&stop, 0); atomic_store(&go, 0);
  for (int i = 0; i < n; i++) {
    a[i].cpu = cpus[i]; a[i].copy = copy[i];
    if (copy[i]) { a[i].a = malloc(8 << 20); a[i].b = malloc(8 << 20); memset(a[i].a, 1, 8 << 20); memset(a[i].b, 2, 8 << 20); }
    pthread_create(&th[i], NULL, work, &a[i]);
  }
  atomic_store(&go, 1);
  struct timespec sl = {(time_t)dur, (long)((dur - (time_t)dur) * 1e9)}; nanosleep(&sl, NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < n; i++) { pthread_join(th[i], NULL); rate[i] = a[i].rate; if (copy[i]) { free(a[i].a); free(a[i].b); } }
}
int main(void) {
  int nc = (int)sysconf(_SC_NPROCESSORS_ONLN), cpus[256], copy[256] = {0};
  double rate[256], alone[256];
  for (int i = 0; i < nc; i++) cpus[i] = i;
  for (int i = 0; i < nc; i++) run(1, &cpus[i], copy, 0.05, &alone[i]);
  printf("compute alone (Mop/s) by vCPU:"); for (int i = 0; i < nc; i++) printf(" %.0f", alone[i] / 1e6); printf("\n");
  for (int rep = 0; rep < 3; rep++) {
    unsigned long long s0, t0, s1, t1; steal_read(&s0, &t0);
    run(nc, cpus, copy, 1.0, rate);
    steal_read(&s1, &t1);
    double mn = 1e30, mx = 0, sum = 0;
    for (int i = 0; i < nc; i++) { mn = rate[i] < mn ? rate[i] : mn; mx = rate[i] > mx ? rate[i] : mx; sum += rate[i]; }
    printf("all %d busy, rep %d: steal %.1f%% of time; Mop/s min %.0f max %.0f mean %.0f; by vCPU:", nc, rep,
           100.0 * (s1 - s0) / (double)(t1 - t0 ? t1 - t0 : 1), mn / 1e6, mx / 1e6, sum / nc / 1e6);
    for (int i = 0; i < nc; i++) printf(" %.0f", rate[i] / 1e6); printf("\n");
  }
  {
    run(nc - 4, cpus, copy, 1.0, rate);
    double mn = 1e30, mx = 0, sum = 0;
    for (int i = 0; i < nc - 4; i++) { mn = rate[i] < mn ? rate[i] : mn; mx = rate[i] > mx ? rate[i] : mx; sum += rate[i]; }
    printf("%d busy (0..%d): Mop/s min %.0f max %.0f mean %.0f\n", nc - 4, nc - 5, mn / 1e6, mx / 1e6, sum / (nc - 4) / 1e6);
  }
  /* memcpy rate on each vCPU with all the others computing */
  printf("memcpy GB/s on vCPU i, the others computing:");
  for (int i = 0; i < nc; i++) {
    for (int j = 0; j < nc; j++) copy[j] = j == i;
    run(nc, cpus, copy, 0.1, rate);
    printf(" %.1f", rate[i] / 1e9);
  }
  printf("\n");
  for (int j = 0; j < nc; j++) copy[j] = 0;
  /* unpinned: 64 threads left to the scheduler */
  return 0;
}
