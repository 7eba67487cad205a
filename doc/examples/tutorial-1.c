/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tutorial-1.c: step 1 of the tutorial (doc/getting-started.md): a first
 * kernel, run on every CPU core. y[i] = tutorial_mix(x[i], rounds) for a
 * million items, every result checked.
 *
 *   cc tutorial-1.c $(pkg-config --cflags --libs mgpurt) -o tutorial-1
 */
#include <mgpurt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tutorial.h"

#define N (1u << 20)

/* The CPU function: items [chunk->first, chunk->first + chunk->count). The
 * runtime calls it on many CPU workers at once, each with its own chunk;
 * in[0] and out[0] already point at the chunk's first item. */
static int mix_cpu(const mgpu_chunk_t *chunk) {
  const uint32_t rounds = *(const uint32_t *)chunk->arg;
  const uint64_t *x = chunk->in[0];
  uint64_t *y = chunk->out[0];
  for (size_t i = 0; i < chunk->count; i++) y[i] = tutorial_mix(x[i], rounds);
  return 0; /* non-zero would fail the batch */
}

/* The kernel: its functions, and one input and one output of 8 bytes an item. */
static const mgpu_kernel_t mix_kernel = {
    .name = "mix",
    .cpu = mix_cpu,
    .nin = 1,
    .nout = 1,
    .in_size = {sizeof(uint64_t)},
    .out_size = {sizeof(uint64_t)},
};

int main(void) {
  mgpu_runtime_t *rt;
  if (mgpu_init(NULL, &rt) != MGPU_OK) { /* settings from the MGPU_* variables */
    fprintf(stderr, "tutorial-1: %s\n", mgpu_last_error());
    return 1;
  }

  uint64_t *x = malloc(N * sizeof *x);
  uint64_t *y = malloc(N * sizeof *y);
  if (!x || !y) {
    fprintf(stderr, "tutorial-1: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < N; i++) x[i] = i;

  /* The batch: N items of the kernel, its arrays, and an argument that every
   * chunk sees (copied when the batch is submitted). */
  uint32_t rounds = 20;
  mgpu_batch_t batch = {.kernel = &mix_kernel, .n = N, .in = {x}, .out = {y},
                        .arg = &rounds, .arg_size = sizeof rounds};
  mgpu_status_t st = mgpu_run(rt, &batch, NULL); /* returns when every item is done */
  if (st != MGPU_OK) {
    fprintf(stderr, "tutorial-1: the batch failed: %s\n", mgpu_last_error());
    return 1;
  }

  size_t bad = 0;
  for (size_t i = 0; i < N; i++) bad += y[i] != tutorial_mix(x[i], rounds);
  printf("tutorial-1: %u items on %d CPU workers, %zu wrong\n", N, mgpu_num_cpu_workers(rt), bad);

  free(x);
  free(y);
  mgpu_finalize(rt);
  return bad == 0 ? 0 : 1;
}
