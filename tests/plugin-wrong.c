/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin-wrong.c: a test plugin whose workload "wrong" gives wrong answers for
 * items 17 and 1500 when they run in a chunk of more than one item, so that a
 * batch fails verification while the one-item reference calls do not;
 * "params", whose --list line shows the command line's sizes it received; and
 * "stall", x + 1 at two seconds a chunk, so that a signal finds a chunk running;
 * "zero", an input of zero-byte items beside an output of each item's index;
 * "badsize", whose kernel's size field the library refuses at submit. With
 * PLUGIN_WRONG_INIT=einval in the environment, the entry point returns
 * MGPU_EINVAL instead; with PLUGIN_WRONG_NAME=NAME, it adds "wrong" under
 * that name too and returns 0 whatever reg->add answers.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgpurt_plugin.h"

static int wrong_cpu(const mgpu_chunk_t *c) {
  const uint64_t *x = c->in[0];
  uint64_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) {
    size_t i = c->first + j;
    y[j] = x[j] + 1;
    if (c->count > 1 && (i == 17 || i == 1500)) y[j] ^= 0xff00;
  }
  return 0;
}

static int stall_cpu(const mgpu_chunk_t *c) {
  const uint64_t *x = c->in[0];
  uint64_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) y[j] = x[j] + 1;
  struct timespec ts = {2, 0};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return 0;
}

static int zero_cpu(const mgpu_chunk_t *c) {
  uint32_t *y = c->out[0];
  for (size_t j = 0; j < c->count; j++) y[j] = (uint32_t)(c->first + j);
  return 0;
}

/* out: workload w under another name, its kernel's too. */
static mgpu_plugin_workload_t *like(const mgpu_plugin_workload_t *w, mgpu_plugin_workload_t *out, const char *name,
                                    const char *doc) {
  *out = *w;
  out->name = name;
  out->doc = doc;
  out->kernel.name = name;
  return out;
}

int mgpu_plugin_init(mgpu_plugin_registry_t *reg);

int mgpu_plugin_init(mgpu_plugin_registry_t *reg) {
  if (reg->abi != MGPU_PLUGIN_ABI) return 1;
  const char *init = getenv("PLUGIN_WRONG_INIT");
  if (init && !strcmp(init, "einval")) return MGPU_EINVAL;
  static mgpu_plugin_workload_t w;
  memset(&w, 0, sizeof w);
  w.name = "wrong";
  w.doc = "x + 1, wrong on items 17 and 1500 within a chunk (tests only)";
  w.kernel.name = "wrong";
  w.kernel.cpu = wrong_cpu;
  w.kernel.nin = 1;
  w.kernel.nout = 1;
  w.kernel.in_size[0] = sizeof(uint64_t);
  w.kernel.out_size[0] = sizeof(uint64_t);
  w.default_items = 2000;
  if (reg->add(reg, &w) != 0) return 1;
  /* "params": its --list line shows the command line's sizes as received. */
  static mgpu_plugin_workload_t p;
  static char doc[128];
  mgpu_plugin_params_t pp = {-1, -1, -1};
  mgpu_plugin_params_fn get;
  *(void **)&get = dlsym(RTLD_DEFAULT, MGPU_PLUGIN_PARAMS);
  if (get) get(&pp);
  snprintf(doc, sizeof doc, "params: items %lld, size %lld, intensity %lld%s", pp.items, pp.size, pp.intensity,
           get ? "" : " (no " MGPU_PLUGIN_PARAMS ")");
  p = w;
  p.name = "params";
  p.doc = doc;
  p.kernel.cpu = wrong_cpu;
  if (reg->add(reg, &p) != 0) return 1;
  static mgpu_plugin_workload_t st;
  like(&w, &st, "stall", "x + 1, two seconds a chunk (tests only)")->kernel.cpu = stall_cpu;
  st.default_items = 100;
  if (reg->add(reg, &st) != 0) return 1;
  static mgpu_plugin_workload_t z;
  memset(&z, 0, sizeof z);
  z.name = "zero";
  z.doc = "each item's index, beside an input of zero-byte items (tests only)";
  z.kernel.name = "zero";
  z.kernel.cpu = zero_cpu;
  z.kernel.nin = 1;
  z.kernel.nout = 1;
  z.kernel.out_size[0] = sizeof(uint32_t);
  z.default_items = 1000;
  if (reg->add(reg, &z) != 0) return 1;
  /* "badsize": a kernel size smaller than its own size field. */
  static mgpu_plugin_workload_t bs;
  like(&w, &bs, "badsize", "a kernel the library refuses (tests only)")->kernel.size = 3;
  if (reg->add(reg, &bs) != 0) return 1;
  static mgpu_plugin_workload_t named;
  const char *name = getenv("PLUGIN_WRONG_NAME");
  if (name) reg->add(reg, like(&w, &named, name, "x + 1 under another name (tests only)"));
  return 0;
}
