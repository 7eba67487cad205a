/* hostmem.h: whether mgpu-run's host arrays fit in the memory available
 * (hostmem.c), for the batch and the multi-GPU workloads alike. */
#ifndef MGPU_RUN_HOSTMEM_H
#define MGPU_RUN_HOSTMEM_H

#include <stdbool.h>
#include <stddef.h>

/* a * b and a + b in bytes, SIZE_MAX where they overflow: a total that
 * overflows is one that no memory holds. */
size_t hostmem_mul(size_t a, size_t b);
size_t hostmem_add(size_t a, size_t b);

/* Whether arrays of `bytes` in all fit in MemAvailable (read once, at the
 * first call, before any of them is made; a system that does not say counts
 * as fitting). Where they do not, says so on stderr, with the option to give
 * a smaller value of (e.g. "-n"), and returns false. */
bool hostmem_fits(size_t bytes, const char *smaller);

#endif
