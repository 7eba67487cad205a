/* T threads memcpy 32 MiB buffers for 1 s; prints total GB/s. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double bytes[256];
static void *run(void *a) {
  int id = (int)(long)a;
  size_t n = (size_t)32 << 20;
  char *s = malloc(n), *d = malloc(n);
  memset(s, id, n); memset(d, 0, n);
  double t0 = now(); double b = 0;
  while (now() - t0 < 1.0) { memcpy(d, s, n); __asm__ volatile("" : : "r"(d) : "memory"); b += n; }
  bytes[id] = b / (now() - t0);
  return 0;
}
int main(int c, char **v) {
  int t = atoi(v[1]); pthread_t th[256];
  for (long i = 0; i < t; i++) pthread_create(&th[i], 0, run, (void *)i);
  double tot = 0;
  for (int i = 0; i < t; i++) { pthread_join(th[i], 0); tot += bytes[i]; }
  printf("memcpy %d threads: %.1f GB/s\n", t, tot / 1e9);
  return 0;
}
