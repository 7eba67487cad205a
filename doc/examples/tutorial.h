/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tutorial.h: the computation of one item in the tutorial (doc/getting-started.md),
 * shared by the C compiler (tutorial-1.c, tutorial-2.c) and nvcc (tutorial_cuda.cu),
 * so that a CPU core and a GPU compute every item the same way.
 */
#ifndef TUTORIAL_H
#define TUTORIAL_H

#include <stdint.h>

/* nvcc compiles the function for the GPU as well as for the host. */
#ifdef __CUDACC__
#define TUTORIAL_HOST_DEVICE __host__ __device__
#else
#define TUTORIAL_HOST_DEVICE
#endif

/* `rounds` rounds of a 64-bit mixing function (SplitMix64's) on x. Integer
 * arithmetic only, so every machine gives the same bits; the cost grows with
 * `rounds`. */
static inline TUTORIAL_HOST_DEVICE uint64_t tutorial_mix(uint64_t x, uint32_t rounds) {
  for (uint32_t r = 0; r < rounds; r++) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
  }
  return x;
}

#endif /* TUTORIAL_H */
