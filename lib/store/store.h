/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.h: the on-disk store of kernel models, which lets a fresh process
 * start from what earlier ones learnt. One small text file per kernel (its
 * name, item sizes and footprint), one line per worker class in it. Nothing
 * here logs or touches the runtime: callers decide what a bad file means, and
 * mgpu-run compiles this file in to list and clear the store. It stands on
 * nothing else of lib/, so that settings (base/) can name its directory.
 */
#ifndef MGPU_STORE_H
#define MGPU_STORE_H

#ifndef MGPU_BUILDING_LIBRARY
#define MGPU_BUILDING_LIBRARY 1
#endif
#include "config.h"
#include "mgpurt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first line of every file; another version is ignored, never parsed. */
#define MGPU_STORE_MAGIC "mgpurt-model"
#define MGPU_STORE_VERSION 1
/* Worker classes kept in one kernel's file. */
#define MGPU_STORE_MAX_ENTRIES 32
#define MGPU_STORE_CLASS_LEN 192

/* What one worker class learnt about one kernel. */
typedef struct {
  char cls[MGPU_STORE_CLASS_LEN]; /* the worker class (mgpu__store_class_gpu, _cpu) */
  double latency, cost;           /* the chunk-time line: t(n) = latency + cost n seconds */
  double knee;                    /* the saturating size in items (0: not measured) */
  double samples;                 /* chunks the line learnt from */
  int reserve;                    /* the reserve's way under MGPU_RESERVE_THREADS=auto (-1: none) */
  double saved;                   /* seconds since the epoch when it was written */
} mgpu__store_entry_t;

/* One kernel's file as read. */
typedef struct {
  char kernel[128];               /* the kernel's name */
  char shape[160];                /* its item sizes and footprint (mgpu__store_shape) */
  int n;
  mgpu__store_entry_t e[MGPU_STORE_MAX_ENTRIES];
} mgpu__store_file_t;

/* The store's directory when MGPU_MODEL_DIR is unset: $XDG_CACHE_HOME/mgpurt,
 * else $HOME/.cache/mgpurt; -1 where neither variable is set. */
int mgpu__store_default_dir(char *out, size_t len);
/* A kernel's identity beyond its name: its arguments' item sizes and the
 * batches' footprint, as one line. */
void mgpu__store_shape(const mgpu_kernel_t *k, uint64_t footprint, char *out, size_t len);
/* The file of kernel k with this footprint in dir; -1 where the path is too long. */
int mgpu__store_path(const char *dir, const mgpu_kernel_t *k, uint64_t footprint, char *out, size_t len);
/* Worker classes: a GPU by its model, compute capability, multiprocessors and
 * memory (an emulated one by what it emulates); the CPU team by the CPU's
 * model and its worker count. */
void mgpu__store_class_gpu(const mgpu_device_info_t *d, const char *emulated, char *out, size_t len);
void mgpu__store_class_cpu(int workers, char *out, size_t len);

/* Read and check one file: 0 with *f filled, 1 where it does not exist, -1
 * where it cannot be read or is not a whole file of this version (why says
 * which line and what). Entries whose values are out of range are dropped,
 * and why names the first; *dropped_p counts them (may be NULL). */
int mgpu__store_parse(const char *path, mgpu__store_file_t *f, int *dropped_p, char *why, size_t whylen);
/* The entry of class cls for kernel k in dir: 0 found (*e), 1 no file, 2
 * the file has entries of other classes only (why names cls), -1 the file is
 * bad, is another kernel's, or its entry for cls is unusable: written in the
 * future, or more than max_age seconds ago (why says which). */
int mgpu__store_lookup(const char *dir, const mgpu_kernel_t *k, uint64_t footprint, const char *cls, double now,
                       double max_age, mgpu__store_entry_t *e, char *why, size_t whylen);
/* Write entries e[0..n) for kernel k into dir (made where missing), keeping
 * the file's entries of other classes: under a lock on the file, through a
 * temporary file renamed over it, so a reader never sees part of a file and
 * concurrent writers lose nothing of each other's classes. A file whose
 * entries of these classes agree with e (the latency, the cost and the
 * knee each within 1.5 times or a floor, the reserve's way the same, written
 * less than a day before, no entry dropped as out of range) is left as it is.
 * 0 or -1 (why). */
int mgpu__store_write(const char *dir, const mgpu_kernel_t *k, uint64_t footprint, const mgpu__store_entry_t *e,
                      int n, char *why, size_t whylen);
/* One kernel's entries, for mgpu__store_write_many. */
typedef struct {
  const mgpu_kernel_t *k;
  uint64_t footprint;
  const mgpu__store_entry_t *e;
  int n;
  int rc;                         /* set by mgpu__store_write_many: 0 written or kept, -1 failed */
} mgpu__store_put_t;
/* mgpu__store_write for puts[0..n) under one lock: a process's models at
 * finalize cost one lock, not one per kernel. Every put is tried and its rc
 * set; the count that failed (why names the first), or -1 where the
 * directory or its lock failed and nothing was written. */
int mgpu__store_write_many(const char *dir, mgpu__store_put_t *puts, int n, char *why, size_t whylen);
/* Remove the files of kernel `name` (NULL: every kernel) from dir; the
 * count removed, or -1 (why). A file that cannot be parsed is removed only
 * where name is NULL. */
int mgpu__store_clear(const char *dir, const char *name, char *why, size_t whylen);

#endif /* MGPU_STORE_H */
