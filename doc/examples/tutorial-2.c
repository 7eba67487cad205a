/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tutorial-2.c: steps 2 and 3 of the tutorial (doc/getting-started.md): the
 * kernel of step 1 with a CUDA function as well, so that its batches run on
 * every GPU and every CPU core at once, and the statistics of each batch:
 * how many items each kind of worker computed, and the per-worker table of
 * the last batch.
 *
 * Built with -DTUTORIAL_WITH_CUDA and linked with tutorial_cuda.cu, the
 * kernel has its GPU function; built without, the same program runs on the
 * CPU workers alone.
 *
 *   nvcc -c tutorial_cuda.cu $(pkg-config --cflags mgpurt) -o tutorial_cuda.o
 *   cc -DTUTORIAL_WITH_CUDA tutorial-2.c tutorial_cuda.o $(pkg-config --cflags --libs mgpurt) \
 *      -L/usr/local/cuda/lib64 -lcudart -lstdc++ -o tutorial-2
 *   ./tutorial-2 [ROUNDS]
 */
#include <mgpurt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tutorial.h"

#define N (1u << 20)
#define BATCHES 5

static int mix_cpu(const mgpu_chunk_t *chunk) {
  const uint32_t rounds = *(const uint32_t *)chunk->arg;
  const uint64_t *x = chunk->in[0];
  uint64_t *y = chunk->out[0];
  for (size_t i = 0; i < chunk->count; i++) y[i] = tutorial_mix(x[i], rounds);
  return 0;
}

#ifdef TUTORIAL_WITH_CUDA
int mix_gpu(const mgpu_chunk_t *chunk); /* tutorial_cuda.cu */
#else
#define mix_gpu NULL /* no GPU function: the CPU workers run every item */
#endif

static const mgpu_kernel_t mix_kernel = {
    .name = "mix",
    .cpu = mix_cpu,
    .gpu = mix_gpu,
    .nin = 1,
    .nout = 1,
    .in_size = {sizeof(uint64_t)},
    .out_size = {sizeof(uint64_t)},
};

int main(int argc, char **argv) {
  /* The rounds of every item (default 20): the dearer the items, the more a
   * GPU gains over a CPU core. */
  uint32_t rounds = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 20;
  mgpu_runtime_t *rt;
  if (mgpu_init(NULL, &rt) != MGPU_OK) {
    fprintf(stderr, "tutorial-2: %s\n", mgpu_last_error());
    return 1;
  }
  printf("tutorial-2: %d CPU workers, %d GPUs\n", mgpu_num_cpu_workers(rt), mgpu_num_gpus(rt));

  /* Pinned memory where the runtime has GPUs: they copy straight from and to
   * these arrays, without staging buffers. The runtime frees it at the latest
   * in mgpu_finalize. */
  uint64_t *x = mgpu_host_alloc(rt, N * sizeof *x);
  uint64_t *y = mgpu_host_alloc(rt, N * sizeof *y);
  /* Room for the figures of every worker: CPU workers first, then the GPUs. */
  const int nworkers = mgpu_num_workers(rt);
  mgpu_worker_stats_t *workers = calloc((size_t)nworkers, sizeof *workers);
  if (!x || !y || !workers) {
    fprintf(stderr, "tutorial-2: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < N; i++) x[i] = i;

  mgpu_batch_t batch = {.kernel = &mix_kernel, .n = N, .in = {x}, .out = {y},
                        .arg = &rounds, .arg_size = sizeof rounds};
  mgpu_stats_t stats = MGPU_STATS_INIT;
  stats.worker = workers;
  stats.worker_cap = nworkers;

  /* The same batch several times: the runtime learns from each how fast
   * every worker runs this kernel, and splits the next one by it. */
  for (int b = 1; b <= BATCHES; b++) {
    if (mgpu_run(rt, &batch, &stats) != MGPU_OK) {
      fprintf(stderr, "tutorial-2: batch %d failed: %s\n", b, mgpu_last_error());
      return 1;
    }
    uint64_t on_gpus = 0;
    for (int w = 0; w < stats.nworkers && w < stats.worker_cap; w++)
      if (workers[w].kind == MGPU_WORKER_GPU) on_gpus += workers[w].items;
    printf("batch %d: %.3f s, %llu items on CPU workers, %llu on GPUs, %llu steals\n", b, stats.wall_s,
           (unsigned long long)(stats.items - on_gpus), (unsigned long long)on_gpus,
           (unsigned long long)stats.steals);
  }
  mgpu_stats_print(rt, &stats, stdout); /* the last batch, worker by worker */

  size_t bad = 0;
  for (size_t i = 0; i < N; i++) bad += y[i] != tutorial_mix(x[i], rounds);
  printf("tutorial-2: %zu wrong\n", bad);

  free(workers);
  mgpu_host_free(rt, x);
  mgpu_host_free(rt, y);
  mgpu_finalize(rt);
  return bad == 0 ? 0 : 1;
}
