/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpurt_plugin.h: the interface between mgpu-run and the shared libraries
 * that add workloads to it (`mgpu-run --plugin FILE.so`). A plugin defines
 * the entry point MGPU_PLUGIN_ENTRY, which receives a registry and adds its
 * workloads; the whole interface is versioned by MGPU_PLUGIN_ABI. Programs
 * that only use the runtime need mgpurt.h alone.
 */
#ifndef MGPURT_PLUGIN_H
#define MGPURT_PLUGIN_H

#include "mgpurt.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A workload that a plugin adds to mgpu-run (`mgpu-run --plugin FILE.so NAME`).
 * mgpu-run makes the arrays from the kernel's item sizes (n items, -n), fills
 * the inputs (with init_input, or with random bytes when it is NULL), runs the
 * batch with `arg` as its argument, and checks the outputs against the
 * kernel's CPU function run on sampled items. The struct and everything it
 * points to must stay valid until the process exits.
 */
typedef struct mgpu_plugin_workload {
  /** The name on mgpu-run's command line: 1 to 64 letters, digits, '-',
   *  '_' and '.', starting with a letter or digit, not a built-in
   *  workload's nor one already added. */
  const char *name;
  const char *doc;           /**< one line for --list */
  mgpu_kernel_t kernel;
  const void *arg;           /**< the batch's argument (may be NULL with arg_size 0) */
  size_t arg_size;
  size_t default_items;      /**< items when -n is not given (0: 1048576) */
  /** Fill input k for items [0, n); return 0, or non-zero to fail the run. */
  int (*init_input)(int k, void *data, size_t n, uint64_t seed);
} mgpu_plugin_workload_t;

/** Version of this interface; a plugin compiled for another is refused. The
 * workload holds an mgpu_kernel_t by value, so a change of the kernel's
 * layout changes this number too. */
#define MGPU_PLUGIN_ABI 2

/** What a plugin's entry point receives. */
typedef struct mgpu_plugin_registry {
  int abi;                   /**< MGPU_PLUGIN_ABI of the loading program */
  /** Add one workload; returns 0, or non-zero where its name breaks the
   *  rule on `name` or it has no CPU function (mgpu-run then ends the run
   *  with exit status 1). */
  int (*add)(struct mgpu_plugin_registry *reg, const mgpu_plugin_workload_t *w);
  void *loader;              /**< the loader's own state */
} mgpu_plugin_registry_t;

/**
 * The entry point a plugin defines: check reg->abi == MGPU_PLUGIN_ABI, add its
 * workloads with reg->add, return 0 (non-zero makes mgpu-run stop with an
 * error). Build the plugin as a shared library: cc -shared -fPIC plugin.c.
 */
typedef int (*mgpu_plugin_init_fn)(mgpu_plugin_registry_t *reg);
#define MGPU_PLUGIN_ENTRY "mgpu_plugin_init"

/**
 * The command line's sizes for a plugin's workloads, -1 where not given:
 * items (-n), size (--size) and intensity (--intensity). mgpu-run exports
 * the function named MGPU_PLUGIN_PARAMS from its executable; a plugin finds
 * it in mgpu_plugin_init with dlsym(RTLD_DEFAULT, MGPU_PLUGIN_PARAMS) and
 * keeps its own defaults where it is NULL (a loader without it) or a value is
 * -1. A function looked up, not a registry field, so that a plugin that
 * reads it also loads in an mgpu-run without it.
 */
typedef struct mgpu_plugin_params {
  long long items;
  long long size;
  long long intensity;
} mgpu_plugin_params_t;
typedef void (*mgpu_plugin_params_fn)(mgpu_plugin_params_t *p);
#define MGPU_PLUGIN_PARAMS "mgpu_plugin_params"

#ifdef __cplusplus
}
#endif
#endif /* MGPURT_PLUGIN_H */
