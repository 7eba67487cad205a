/*
 * plugin.c: an example mgpu-run plugin. It adds the workload "collatz": for each
 * 64-bit input, the number of Collatz steps (n -> n/2 or 3n+1) until it reaches
 * 1, capped at 100000 steps. Item costs vary a lot, which is what stealing is
 * for. mgpu-run's --intensity sets the cap (1..1000000) and --size the inputs'
 * bits (2..63, default 40), so the cost can be swept like a built-in's.
 *
 *   cc -shared -fPIC -o plugin.so plugin.c $(pkg-config --cflags mgpurt)
 *   mgpu-run --plugin ./plugin.so collatz --compare
 *   mgpu-run --plugin ./plugin.so collatz --intensity 1000 --size 20
 *
 * Built with -DPLUGIN_WITH_CUDA and plugin_cuda.cu, the workload also runs on GPUs.
 */
#include <stdint.h>
#include <string.h>

#include "mgpurt.h"

/* The batch's argument: the step cap (the GPU function reads it too). */
static uint32_t cap = 100000u;
static int bits = 40;

static int collatz_cpu(const mgpu_chunk_t *c) {
  const uint64_t *x = c->in[0];
  uint32_t *steps = c->out[0], max = *(const uint32_t *)c->arg;
  for (size_t i = 0; i < c->count; i++) {
    uint64_t n = x[i];
    uint32_t s = 0;
    while (n > 1 && s < max) {
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

/* Inputs in [1, 2^bits): a deterministic generator, so runs can be repeated. */
static int init_input(int k, void *data, size_t n, uint64_t seed) {
  uint64_t *x = data, s = seed * 0x9E3779B97F4A7C15ull + (uint64_t)k + 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i] = (s & ((1ull << bits) - 1)) | 1;
  }
  return 0;
}

int mgpu_plugin_init(mgpu_plugin_registry_t *reg);

int mgpu_plugin_init(mgpu_plugin_registry_t *reg) {
  if (reg->abi != MGPU_PLUGIN_ABI) return 1;
  if (reg->intensity < 0 || reg->intensity > 1000000) return 2; /* 0: not given */
  if (reg->size != -1 && (reg->size < 2 || reg->size > 63)) return 3;
  if (reg->intensity > 0) cap = (uint32_t)reg->intensity;
  if (reg->size != -1) bits = (int)reg->size;
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
  w.arg = &cap;
  w.arg_size = sizeof cap;
  w.default_items = 1u << 22;
  w.init_input = init_input;
  return reg->add(reg, &w);
}
