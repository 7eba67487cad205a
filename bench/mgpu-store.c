/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpu-store: what the model store costs a process. Each pass runs three
 * fresh runtimes of CPU workers, each through mgpu_init, one batch of every
 * one of K named kernels, and mgpu_finalize: with the store off, with an
 * empty store (finalize writes K new files) and with the store the last run
 * wrote (each first batch reads a file, finalize rewrites it). Prints the
 * median of each phase over the passes, and the store's part: the difference
 * to the run with the store off, and how many files the stored run rewrote
 * (a model that agrees with its file is not). The limit beside it: K files of a model's
 * size written and renamed into place, new and over old ones, by plain stdio
 * in the same directory.
 * Usage: bench/mgpu-store [kernels [passes [workers [parent directory]]]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "mgpurt.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int square(const mgpu_chunk_t *c) {
  const double *x = c->in[0];
  double *y = c->out[0];
  for (size_t i = 0; i < c->count; i++) y[i] = x[i] * x[i];
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

enum { OFF, EMPTY, STORED, RUNS };
enum { ITEMS = 65536 };

/* One process's life: the seconds of mgpu_init, of the K first batches and
 * of mgpu_finalize into t[0..2]. */
static int one_run(const char *dir, int kernels, int workers, const mgpu_kernel_t *ks, double *x, double *y,
                   double t[3]) {
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.num_threads = workers;
  c.num_gpus = 0;
  c.model_dir = dir;
  mgpu_runtime_t *rt;
  double t0 = now();
  if (mgpu_init(&c, &rt) != MGPU_OK) {
    fprintf(stderr, "mgpu-store: mgpu_init: %s\n", mgpu_last_error());
    return -1;
  }
  double t1 = now();
  for (int k = 0; k < kernels; k++) {
    mgpu_batch_t b = MGPU_BATCH_INIT;
    b.kernel = &ks[k];
    b.n = ITEMS;
    b.in[0] = x;
    b.out[0] = y;
    if (mgpu_run(rt, &b, NULL) != MGPU_OK) {
      fprintf(stderr, "mgpu-store: kernel %s: %s\n", ks[k].name, mgpu_last_error());
      mgpu_finalize(rt);
      return -1;
    }
  }
  double t2 = now();
  mgpu_finalize(rt);
  double t3 = now();
  t[0] = t1 - t0, t[1] = t2 - t1, t[2] = t3 - t2;
  return 0;
}

/* The modification times of dir's model files, to count those a run
 * rewrote (a rewrite renames a newer file over one). */
typedef struct {
  char name[64];
  struct timespec t;
} mtime_t;

static int snap_times(const char *dir, mtime_t *m, int cap) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && n < cap && (de = readdir(d))) {
    size_t l = strlen(de->d_name);
    char path[1300];
    struct stat st;
    if (l < 7 || l >= sizeof m->name || strcmp(de->d_name + l - 6, ".model") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (stat(path, &st) != 0) continue;
    snprintf(m[n].name, sizeof m[n].name, "%s", de->d_name);
    m[n++].t = st.st_mtim;
  }
  if (d) closedir(d);
  return n;
}

static int changed(const char *dir, const mtime_t *m, int n) {
  int c = 0;
  for (int i = 0; i < n; i++) {
    char path[1300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, m[i].name);
    c += stat(path, &st) != 0 || st.st_mtim.tv_sec != m[i].t.tv_sec || st.st_mtim.tv_nsec != m[i].t.tv_nsec;
  }
  return c;
}

/* The raw limit: seconds to write k files of a model file's size into dir,
 * each through a temporary file renamed into place. */
static double raw_files(const char *dir, int k) {
  double t0 = now();
  for (int i = 0; i < k; i++) {
    char path[1200], tmp[1300];
    snprintf(path, sizeof path, "%s/raw-%04d", dir, i);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *fp = fopen(tmp, "w");
    if (!fp) return -1;
    fprintf(fp, "mgpurt-model 1\nkernel store-bench-%04d\nshape in 8 out 8 scratch 0 footprint 0\nentry "
                "cpu:model:x2 latency=3.5e-08 cost=7.2e-10 knee=16 samples=12 reserve=-1 saved=1.8e+09\nend\n", i);
    if (fclose(fp) != 0 || rename(tmp, path) != 0) return -1;
  }
  return now() - t0;
}

int main(int argc, char **argv) {
  int kernels = argc > 1 ? atoi(argv[1]) : 100, passes = argc > 2 ? atoi(argv[2]) : 11;
  int workers = argc > 3 ? atoi(argv[3]) : 2;
  const char *parent = argc > 4 ? argv[4] : "/tmp";
  if (kernels < 1 || kernels > 10000 || passes < 1 || passes > 1000 || workers < 1 || strlen(parent) > 900) {
    fprintf(stderr, "usage: mgpu-store [kernels (1..10000) [passes (1..1000) [workers (1..) [parent directory "
                    "(a path of at most 900 characters)]]]]\n");
    return 2;
  }
  char dir[1000];
  snprintf(dir, sizeof dir, "%s/mgpu-store-XXXXXX", parent);
  if (!mkdtemp(dir)) {
    perror("mgpu-store: mkdtemp");
    return 1;
  }
  mgpu_kernel_t *ks = calloc((size_t)kernels, sizeof *ks);
  char (*names)[32] = calloc((size_t)kernels, sizeof *names);
  double *x = malloc(ITEMS * sizeof *x), *y = malloc(ITEMS * sizeof *y);
  double *t[RUNS][3], *raw[2] = {calloc((size_t)passes, sizeof(double)), calloc((size_t)passes, sizeof(double))};
  double *rewritten = calloc((size_t)passes, sizeof(double));
  mtime_t *mt = calloc((size_t)kernels, sizeof *mt);
  for (int r = 0; r < RUNS; r++)
    for (int p = 0; p < 3; p++) t[r][p] = calloc((size_t)passes, sizeof(double));
  if (!ks || !names || !x || !y || !t[STORED][2] || !raw[1] || !rewritten || !mt) {
    fprintf(stderr, "mgpu-store: out of memory\n");
    return 1;
  }
  for (int i = 0; i < ITEMS; i++) x[i] = i;
  for (int k = 0; k < kernels; k++) {
    snprintf(names[k], sizeof names[k], "store-bench-%04d", k);
    mgpu_kernel_t kk = MGPU_KERNEL_INIT;
    kk.name = names[k];
    kk.nin = 1;
    kk.nout = 1;
    kk.in_size[0] = sizeof(double);
    kk.out_size[0] = sizeof(double);
    kk.cpu = square;
    ks[k] = kk;
  }
  char clear[1100], clear_raw[1100];
  snprintf(clear, sizeof clear, "rm -f %s/*.model", dir);
  snprintf(clear_raw, sizeof clear_raw, "rm -f %s/raw-*", dir);
  int rc = 0;
  for (int p = 0; p < passes && rc == 0; p++) {
    for (int r = 0; r < RUNS && rc == 0; r++) {
      if (r == EMPTY && system(clear) != 0) rc = -1;
      double ph[3];
      int nt = r == STORED ? snap_times(dir, mt, kernels) : 0;
      if (rc == 0) rc = one_run(r == OFF ? "off" : dir, kernels, workers, ks, x, y, ph);
      if (r == STORED) rewritten[p] = changed(dir, mt, nt);
      for (int i = 0; i < 3 && rc == 0; i++) t[r][i][p] = ph[i];
    }
    if (rc == 0 && system(clear_raw) != 0) rc = -1;
    for (int over = 0; over < 2 && rc == 0; over++)
      if ((raw[over][p] = raw_files(dir, kernels)) < 0) {
        perror("mgpu-store: writing a file");
        rc = -1;
      }
  }
  if (rc == 0) {
    static const char *phase[3] = {"mgpu_init", "the first batches", "mgpu_finalize"};
    printf("model store of %d kernels, %d CPU workers, medians of %d passes (ms): off, empty store, stored; the "
           "store's part\n", kernels, workers, passes);
    for (int i = 0; i < 3; i++) {
      double off = median(t[OFF][i], passes), e = median(t[EMPTY][i], passes), s = median(t[STORED][i], passes);
      printf("%s: %.3f, %.3f, %.3f; %+.3f (empty), %+.3f (stored)\n", phase[i], 1e3 * off, 1e3 * e, 1e3 * s,
             1e3 * (e - off), 1e3 * (s - off));
    }
    printf("files rewritten by the run with the store: %.0f of %d (median)\n", median(rewritten, passes), kernels);
    printf("the limit, %d files of a model's size renamed into place: %.3f new, %.3f over old ones\n", kernels,
           1e3 * median(raw[0], passes), 1e3 * median(raw[1], passes));
  }
  snprintf(clear, sizeof clear, "rm -rf %s", dir);
  if (system(clear) != 0) rc = -1;
  return rc == 0 ? 0 : 1;
}
