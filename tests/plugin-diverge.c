/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin-diverge.c: a test plugin whose workload "diverge" models a divergent,
 * latency-bound kernel. Its items cost by position: item i is dear (DEAR_S,
 * or --intensity microseconds) where a hash of i falls in 1/16 of its range,
 * else cheap (CHEAP_S). On a CPU worker a chunk spends the sum of its items'
 * costs; on an emulated device (chunk->stream != NULL) it spends the cost of
 * its dearest item once, as a GPU launch whose threads run side by side lasts
 * as long as its slowest one (MGPU_EMULATE_LATENCY adds to each launch). The
 * costs are sleeps; y[i] = mix(x[i]), which verification checks. Its GPU
 * function is a stub: the workload runs on emulated devices only. With
 * DIVERGE_GPU_SLOW_AFTER=S in the environment, launches that start S seconds
 * after the plugin loads cost SLOW_FACTOR times as much: a device that slows
 * down once runs have been sized, so that a run lasts far longer than the
 * runs that sized it.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgpurt_plugin.h"

#define DEAR_S 1e-3
#define CHEAP_S 1e-6
#define SLOW_FACTOR 50

static double dear_s = DEAR_S;
static double slow_at; /* clock_s() from which launches are slow; 0: never */

static uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double cost(size_t i) { return (mix(i) >> 60) == 0 ? dear_s : CHEAP_S; }

static double clock_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Sleep s seconds, less what this thread overslept before (a wake-up comes
 * late, and cheap chunks are many), so that chunks cost their sum. */
static void spend(double s) {
  static _Thread_local double owed;
  double use = owed < s ? owed : s;
  s -= use, owed -= use;
  if (s <= 0) return;
  double t0 = clock_s();
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
  double late = clock_s() - t0 - s;
  if (late > 0) owed = late < 1e-3 ? late : 1e-3;
}

static int diverge_cpu(const mgpu_chunk_t *c) {
  const uint64_t *x = c->in[0];
  uint64_t *y = c->out[0];
  double sum = 0, most = 0;
  for (size_t j = 0; j < c->count; j++) {
    double k = cost(c->first + j);
    sum += k;
    if (k > most) most = k;
    y[j] = mix(x[j]);
  }
  if (c->stream && slow_at > 0 && clock_s() >= slow_at) most *= SLOW_FACTOR;
  spend(c->stream ? most : sum);
  return 0;
}

static int diverge_gpu(const mgpu_chunk_t *c) {
  (void)c;
  return 1; /* no real GPU code: emulated devices run diverge_cpu */
}

int mgpu_plugin_init(mgpu_plugin_registry_t *reg);

int mgpu_plugin_init(mgpu_plugin_registry_t *reg) {
  if (reg->abi != MGPU_PLUGIN_ABI) return 1;
  mgpu_plugin_params_t pp = {-1, -1, -1};
  mgpu_plugin_params_fn get;
  *(void **)&get = dlsym(RTLD_DEFAULT, MGPU_PLUGIN_PARAMS);
  if (get) get(&pp);
  if (pp.intensity > 0) dear_s = (double)pp.intensity * 1e-6;
  const char *slow = getenv("DIVERGE_GPU_SLOW_AFTER");
  if (slow && *slow) slow_at = clock_s() + strtod(slow, NULL);
  static mgpu_plugin_workload_t w;
  memset(&w, 0, sizeof w);
  w.name = "diverge";
  w.doc = "y = mix(x); 1 in 16 items dear (--intensity us, default 1000), a GPU launch as its dearest (tests only)";
  w.kernel.name = "diverge";
  w.kernel.cpu = diverge_cpu;
  w.kernel.gpu = diverge_gpu;
  w.kernel.nin = 1;
  w.kernel.nout = 1;
  w.kernel.in_size[0] = sizeof(uint64_t);
  w.kernel.out_size[0] = sizeof(uint64_t);
  w.default_items = 1u << 18;
  return reg->add(reg, &w);
}
