/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin.c: an example mgpu-run plugin. It adds the workload "collatz": for each
 * 64-bit input, the number of Collatz steps (n -> n/2 or 3n+1) until it reaches
 * 1, capped at 100000. Item costs vary a lot, which is what stealing is for.
 *
 *   cc -shared -fPIC -o plugin.so plugin.c $(pkg-config --cflags mgpurt)
 *   mgpu-run --plugin ./plugin.so collatz --compare
 *
 * Built with -DPLUGIN_WITH_CUDA and plugin_cuda.cu, the workload also runs on GPUs.
 */
#include <stdint.h>
#include <string.h>

#include "mgpurt_plugin.h"

#define COLLATZ_CAP 100000u

static int collatz_cpu(const mgpu_chunk_t *c) {
  const uint64_t *x = c->in[0];
  uint32_t *steps = c->out[0];
  for (size_t i = 0; i < c->count; i++) {
    uint64_t n = x[i];
    uint32_t s = 0;
    while (n > 1 && s < COLLATZ_CAP) {
      n = (n & 1) ? 3 * n + 1 : n >> 1;
      s++;
    }
    steps[i] = s;
  }
  return 0;
}

#ifdef PLUGIN_WITH_CUDA
int collatz_gpu(const mgpu_chunk_t *c); /* plugin_cuda.cu */
#endif

/* Inputs in [1, 2^40): a deterministic generator, so runs can be repeated. */
static int init_input(int k, void *data, size_t n, uint64_t seed) {
  uint64_t *x = data, s = seed * 0x9E3779B97F4A7C15ull + (uint64_t)k + 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i] = (s & ((1ull << 40) - 1)) | 1;
  }
  return 0;
}

int mgpu_plugin_init(mgpu_plugin_registry_t *reg);

int mgpu_plugin_init(mgpu_plugin_registry_t *reg) {
  if (reg->abi != MGPU_PLUGIN_ABI) return 1;
  static mgpu_plugin_workload_t w;
  memset(&w, 0, sizeof w);
  w.name = "collatz";
  w.doc = "Collatz steps of one 64-bit number per item (irregular cost); example plugin";
  w.kernel.name = "collatz";
  w.kernel.cpu = collatz_cpu;
#ifdef PLUGIN_WITH_CUDA
  w.kernel.gpu = collatz_gpu;
#endif
  w.kernel.nin = 1;
  w.kernel.nout = 1;
  w.kernel.in_size[0] = sizeof(uint64_t);
  w.kernel.out_size[0] = sizeof(uint32_t);
  w.default_items = 1u << 22;
  w.init_input = init_input;
  return reg->add(reg, &w);
}
