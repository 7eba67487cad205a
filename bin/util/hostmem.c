/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostmem.c: mgpu-run's host arrays against the memory the system can give
 * without swapping (MemAvailable in /proc/meminfo). Under overcommit malloc
 * succeeds for arrays larger than that, and filling them would have the
 * process killed without a word, so arrays that together pass it are refused
 * before they are made, by the batch workloads (run/workload.c) and the
 * multi-GPU ones (multi/multi.c) alike.
 */
#include "util/util.h"

#include <stdint.h>
#include <stdio.h>

size_t hostmem_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

size_t hostmem_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

/* MemAvailable in bytes; 0: not known. */
static size_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (size_t)kb * 1024;
}

bool hostmem_fits(size_t bytes, const char *smaller) {
  static size_t avail;
  static bool looked;
  if (!looked) avail = mem_available(), looked = true;
  if (!avail || bytes <= avail) return true;
  if (bytes == SIZE_MAX)
    fprintf(stderr, "mgpu-run: the arrays need more bytes of host memory than a size_t counts, and %zu are available "
            "(MemAvailable in /proc/meminfo): give a smaller %s\n", avail, smaller);
  else
    fprintf(stderr, "mgpu-run: the arrays need %zu bytes of host memory, and %zu are available (MemAvailable in "
            "/proc/meminfo): give a smaller %s\n", bytes, avail, smaller);
  return false;
}
