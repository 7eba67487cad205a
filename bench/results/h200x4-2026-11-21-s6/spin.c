#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int mem;
static void *run(void *a) {
  if (mem) {
    size_t n = (size_t)64 << 20;
    char *b = malloc(n);
    memset(b, 1, n);
    volatile uint64_t s = 0;
    for (;;)
      for (size_t i = 0; i < n; i += 64) s += (uint64_t)b[i];
  }
  uint64_t x = (uintptr_t)a | 1;
  for (;;) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    x ^= x >> 29;
    __asm__ volatile("" : "+r"(x));
  }
  return 0;
}
int main(int c, char **v) {
  int n = atoi(v[1]);
  mem = c > 2 && !strcmp(v[2], "mem");
  pthread_t t;
  for (int i = 0; i < n; i++) pthread_create(&t, 0, run, (void *)(uintptr_t)(i + 1));
  pause();
}
