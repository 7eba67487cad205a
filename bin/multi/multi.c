/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi.c: mgpu-run's data-parallel workloads, on arrays split across the GPUs
 * (and the host) and on collectives (allreduce in allreduce.c):
 *   matvec          y = W x, W row-split; memory bandwidth per GPU against
 *                   the GPU's device-to-device copy bandwidth
 *   reduce          sum of a vector split across GPUs and host, combined by an
 *                   all-reduce; reproducibility and error against long double
 *   allreduce       bandwidth sweep of mgpu_allreduce against a raw NCCL loop
 *   saxpy-resident  saxpy on device-resident arrays against the copy bandwidth
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "mgpurt_kernels.h"
#include "multi/multi.h"

static const char *const names[] = {"matvec", "reduce", "allreduce", "saxpy-resident", NULL};

int multi_is_workload(const char *name) {
  for (int i = 0; names[i]; i++)
    if (!strcmp(name, names[i])) return 1;
  return 0;
}

/* Deterministic value of element i, in [-0.5, 0.5). */
static double value(unsigned long long seed, size_t i) {
  unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xD1B54A32D192ED03ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (double)(x >> 11) * 0x1p-53 - 0.5;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Shares: --split, else MGPU_TENSOR_SPLIT (nshares 0 lets the library use it),
 * else the workload's default. */
static int shares_of(const multi_opts_t *o, mgpu_runtime_t *rt, double host_share, double *out) {
  if (o->nshares) {
    memcpy(out, o->shares, sizeof(double) * (size_t)o->nshares);
    return o->nshares;
  }
  if (getenv("MGPU_TENSOR_SPLIT")) return 0;
  int ng = mgpu_num_gpus(rt);
  for (int g = 0; g < ng; g++) out[g] = 1;
  out[ng] = ng == 0 ? 1 : host_share;
  return ng + 1;
}

static void print_parts(const mgpu_array_t *a, const char *what) {
  printf("%s split:", what);
  for (int p = 0; p < mgpu_array_nparts(a); p++) {
    mgpu_array_part_t part = MGPU_ARRAY_PART_INIT;
    mgpu_array_part(a, p, &part);
    if (part.gpu >= 0) printf("%s gpu%d %zu", p ? "," : "", part.gpu, part.count);
    else printf("%s host %zu", p ? "," : "", part.count);
  }
  printf("\n");
}

/* Per-GPU device-to-device copy bandwidth (bytes read + written per second),
 * with `bytes` per GPU; bw[g] set for every GPU. */
static int copy_bandwidth(mgpu_runtime_t *rt, size_t bytes, int repeat, double *bw) {
  int ng = mgpu_num_gpus(rt);
  size_t n = bytes / 4 * (size_t)ng;
  mgpu_array_t *a = NULL, *b = NULL;
  double sh[MGPU_MAX_DEVICES + 1];
  for (int g = 0; g < ng; g++) sh[g] = 1;
  if (mgpu_array_create(rt, n, 4, ng, sh, &a) != MGPU_OK || mgpu_array_create(rt, n, 4, ng, sh, &b) != MGPU_OK) {
    mgpu_array_destroy(a);
    return multi_fail("copy bandwidth arrays");
  }
  mgpu_worker_stats_t ws[MGPU_MAX_DEVICES + 4096];
  int nw = mgpu_num_workers(rt), ncpu = mgpu_num_cpu_workers(rt);
  mgpu_stats_t st = {.worker = ws, .worker_cap = nw};
  double best[MGPU_MAX_DEVICES] = {0};
  for (int r = 0; r <= repeat; r++) {
    if (mgpu_array_copy(b, a, &st) != MGPU_OK) {
      int rc = multi_fail("mgpu_array_copy");
      mgpu_array_destroy(a);
      mgpu_array_destroy(b);
      return rc;
    }
    for (int g = 0; g < ng && r > 0; g++) {
      double t = ws[ncpu + g].busy_s;
      double v = t > 0 ? 2.0 * (double)(n / (size_t)ng) * 4 / t : 0;
      if (v > best[g]) best[g] = v;
    }
  }
  memcpy(bw, best, sizeof(double) * (size_t)ng);
  mgpu_array_destroy(a);
  mgpu_array_destroy(b);
  return 0;
}

/* ------------------------------------------------------------ matvec */

/* Rows of y = W x checked in double against a bound relative to sum |w x|
 * (about 97 of them spread over y); returns the wrong ones. */
static long long matvec_check(const float *w, const float *x, const float *y, size_t rows, size_t cols,
                              size_t *checked_p) {
  long long bad = 0;
  size_t checked = 0, step = rows > 200 ? rows / 97 : 1;
  for (size_t r = 0; r < rows; r += step, checked++) {
    double ref = 0, mag = 0;
    for (size_t j = 0; j < cols; j++) {
      double p = (double)w[r * cols + j] * x[j];
      ref += p;
      mag += fabs(p);
    }
    if (fabs(y[r] - ref) > 1e-5 * mag + 1e-30) bad++;
  }
  *checked_p = checked;
  return bad;
}

/* What the matvec report shows. */
typedef struct {
  size_t rows, cols;
  int ng, ncpu, reps;
  double med, t_scatter; /* s */
  size_t checked;
  long long bad;
  size_t grows[MGPU_MAX_DEVICES];  /* rows of W on each GPU */
  double dev_s[MGPU_MAX_DEVICES];  /* the GPU's best device time */
  double copy_bw[MGPU_MAX_DEVICES]; /* its device-to-device copy bandwidth, bytes/s */
} matvec_report_t;

static void matvec_report(const multi_opts_t *o, const mgpu_array_t *aw, const matvec_report_t *m) {
  size_t rows = m->rows, cols = m->cols, checked = m->checked;
  int ng = m->ng, ncpu = m->ncpu, reps = m->reps;
  double med = m->med, t_scatter = m->t_scatter;
  long long bad = m->bad;
  const size_t *grows = m->grows;
  const double *best_dev = m->dev_s, *cbw = m->copy_bw;
  double bytes = (double)rows * (double)cols * 4;
  double gbw[MGPU_MAX_DEVICES]; /* bytes of W read per second of device time */
  for (int g = 0; g < ng; g++) gbw[g] = best_dev[g] > 0 ? (double)grows[g] * (double)cols * 4 / best_dev[g] : 0;
  if (o->json) {
    printf("{\"workload\": \"matvec\", \"rows\": %zu, \"cols\": %zu, \"wall_s\": %.6f, \"gflops\": %.3f, "
           "\"scatter_gbs\": %.3f, \"gpus\": [",
           rows, cols, med, 2 * (double)rows * (double)cols / med / 1e9, bytes / t_scatter / 1e9);
    for (int g = 0; g < ng; g++)
      printf("%s{\"gpu\": %d, \"rows\": %zu, \"device_s\": %.6f, \"gbs\": %.2f, \"copy_gbs\": %.2f, "
             "\"fraction_of_copy\": %.4f}",
             g ? ", " : "", g, grows[g], best_dev[g], gbw[g] / 1e9, cbw[g] / 1e9, cbw[g] > 0 ? gbw[g] / cbw[g] : 0);
    printf("], \"verification\": {\"enabled\": %s, \"checked\": %zu, \"failed\": %lld}}\n",
           o->verify ? "true" : "false", checked, bad);
  } else {
    printf("matvec: y = W x, W %zu x %zu floats (%.2f GB), %d GPU%s, %d CPU worker%s\n", rows, cols, bytes / 1e9, ng,
           ng == 1 ? "" : "s", ncpu, ncpu == 1 ? "" : "s");
    print_parts(aw, "rows");
    printf("scatter of W: %.3f s (%.2f GB/s)\n", t_scatter, bytes / t_scatter / 1e9);
    printf("matvec: %.6f s (median of %d), %.2f GFLOP/s, %.2f GB/s of W in all\n", med, reps,
           2 * (double)rows * (double)cols / med / 1e9, bytes / med / 1e9);
    for (int g = 0; g < ng; g++)
      printf("  gpu%d: %zu rows in %.6f s of device time: %.1f GB/s; device-to-device copy %.1f GB/s (read + "
             "write): %.1f%%\n",
             g, grows[g], best_dev[g], gbw[g] / 1e9, cbw[g] / 1e9, cbw[g] > 0 ? 100 * gbw[g] / cbw[g] : 0);
    if (o->verify) printf("verification: %s (%zu rows checked)\n", bad ? "FAILED" : "ok", checked);
  }
}

static int run_matvec(mgpu_runtime_t *rt, const multi_opts_t *o) {
  size_t rows = o->items > 0 ? (size_t)o->items : 10000, cols = o->size > 0 ? (size_t)o->size : 100000;
  int ng = mgpu_num_gpus(rt), nw = mgpu_num_workers(rt), ncpu = mgpu_num_cpu_workers(rt);
  mgpu_kernel_t k;
  if (mgpu_kernel_matvec(cols, &k) != MGPU_OK) return multi_fail("matvec kernel");
  double sh[MGPU_MAX_DEVICES + 1];
  int nsh = shares_of(o, rt, 0, sh);
  /* W, x and y. */
  if (!hostmem_fits(hostmem_mul(hostmem_add(hostmem_mul(rows, cols), hostmem_add(rows, cols)), sizeof(float)),
                    "-n or --size"))
    return 1;
  int rc = 1;
  long long bad = 0;
  mgpu_array_t *aw, *ay;
  mgpu_const_t *cx;
  mgpu_worker_stats_t *ws;
  double *times;
  float *w = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * cols), *y = malloc(sizeof(float) * rows);
  if (!w || !x || !y) {
    fprintf(stderr, "mgpu-run: matvec: cannot allocate %zu x %zu floats\n", rows, cols);
    goto free_host;
  }
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < cols; j++) w[r * cols + j] = (float)value(o->seed, r * cols + j);
  for (size_t j = 0; j < cols; j++) x[j] = (float)value(o->seed + 1, j);
  if (mgpu_array_create(rt, rows, sizeof(float) * cols, nsh, nsh ? sh : NULL, &aw) != MGPU_OK) {
    rc = multi_fail("matvec W");
    goto free_host;
  }
  if (mgpu_array_create(rt, rows, sizeof(float), nsh, nsh ? sh : NULL, &ay) != MGPU_OK) {
    rc = multi_fail("matvec y");
    goto destroy_w;
  }
  double t0 = multi_now();
  if (mgpu_array_scatter(aw, w) != MGPU_OK) {
    rc = multi_fail("mgpu_array_scatter");
    goto destroy_y;
  }
  double t_scatter = multi_now() - t0;
  if (mgpu_const_create(rt, x, sizeof(float) * cols, &cx) != MGPU_OK) {
    rc = multi_fail("mgpu_const_create");
    goto destroy_y;
  }
  ws = calloc((size_t)nw, sizeof *ws);
  times = calloc((size_t)o->repeat, sizeof(double));
  if (!ws || !times) {
    fprintf(stderr, "mgpu-run: matvec: out of memory for the figures of %d runs\n", o->repeat);
    goto free_figures;
  }
  mgpu_matvec_arg_t arg = {cols};
  mgpu_array_batch_t b = {.kernel = &k, .in = {aw}, .out = {ay}, .nconsts = 1, .consts = {cx}, .arg = &arg,
                          .arg_size = sizeof arg};
  mgpu_stats_t st = {.worker = ws, .worker_cap = nw};
  double best_dev[MGPU_MAX_DEVICES] = {0};
  int reps = 0; /* timed runs made: fewer than o->repeat after SIGINT */
  for (int r = -1; r < o->repeat && !(r >= 0 && multi_stopped(o)); r++) {
    if (mgpu_array_run(rt, &b, &st) != MGPU_OK) {
      rc = multi_fail("mgpu_array_run");
      goto free_figures;
    }
    if (r < 0) continue;
    times[reps++] = st.wall_s;
    for (int g = 0; g < ng; g++)
      if (best_dev[g] == 0 || (ws[ncpu + g].busy_s > 0 && ws[ncpu + g].busy_s < best_dev[g]))
        best_dev[g] = ws[ncpu + g].busy_s;
  }
  if (reps == 0) {
    multi_none_timed("matvec");
    rc = multi_outcome(o, bad);
    goto free_figures;
  }
  qsort(times, (size_t)reps, sizeof *times, cmp_double);
  double med = times[reps / 2];
  if (mgpu_array_gather(ay, y) != MGPU_OK) {
    rc = multi_fail("mgpu_array_gather");
    goto free_figures;
  }
  size_t checked = 0;
  if (o->verify) bad = matvec_check(w, x, y, rows, cols, &checked);
  /* The copy bandwidth, measured on as many bytes as the largest part of W
   * (at most 1 GiB per GPU, so that it fits beside W). */
  double cbw[MGPU_MAX_DEVICES] = {0};
  size_t cbytes = 0;
  for (int g = 0; g < ng; g++) {
    mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
    mgpu_array_part(aw, g, &p);
    if (p.count * cols * 4 > cbytes) cbytes = p.count * cols * 4;
  }
  cbytes = cbytes > ((size_t)1 << 30) ? (size_t)1 << 30 : cbytes < ((size_t)1 << 22) ? (size_t)1 << 22 : cbytes;
  if (ng > 0 && copy_bandwidth(rt, cbytes, 3, cbw) != 0) goto free_figures;
  matvec_report_t m = {rows, cols, ng, ncpu, reps, med, t_scatter, checked, bad, {0}, {0}, {0}};
  for (int g = 0; g < ng; g++) {
    mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
    mgpu_array_part(aw, g, &p);
    m.grows[g] = p.count;
    m.dev_s[g] = best_dev[g];
    m.copy_bw[g] = cbw[g];
  }
  matvec_report(o, aw, &m);
  rc = multi_outcome(o, bad);
free_figures:
  free(ws), free(times);
  mgpu_const_destroy(cx);
destroy_y:
  mgpu_array_destroy(ay);
destroy_w:
  mgpu_array_destroy(aw);
free_host:
  free(w), free(x), free(y);
  return rc;
}

/* ------------------------------------------------------------ reduce */

static int run_reduce(mgpu_runtime_t *rt, const multi_opts_t *o) {
  size_t n = o->items > 0 ? (size_t)o->items : 100000000;
  size_t es = o->f64 ? 8 : 4;
  mgpu_dtype_t dt = o->f64 ? MGPU_FLOAT64 : MGPU_FLOAT32;
  int ng = mgpu_num_gpus(rt);
  double sh[MGPU_MAX_DEVICES + 1];
  int nsh = shares_of(o, rt, mgpu_num_cpu_workers(rt) > 0 ? 0.1 : 0, sh);
  if (!hostmem_fits(hostmem_mul(es, n), "-n")) return 1;
  void *x = malloc(es * n);
  if (!x) {
    fprintf(stderr, "mgpu-run: reduce: cannot allocate %zu elements\n", n);
    return 1;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    double v = value(o->seed, i) + 0.25;
    if (o->f64) ((double *)x)[i] = v;
    else ((float *)x)[i] = (float)v;
  }
  int rc = 1, same = 1, reps = 0, bad = 0;
  double first = 0, *times = NULL;
  mgpu_array_t *a;
  if (mgpu_array_create(rt, n, es, nsh, nsh ? sh : NULL, &a) != MGPU_OK) {
    rc = multi_fail("reduce array");
    goto free_x;
  }
  if (mgpu_array_scatter(a, x) != MGPU_OK) {
    rc = multi_fail("mgpu_array_scatter");
    goto destroy;
  }
  if (!(times = calloc((size_t)o->repeat, sizeof(double)))) {
    fprintf(stderr, "mgpu-run: reduce: out of memory for the figures of %d runs\n", o->repeat);
    goto destroy;
  }
  for (int r = -1; r < o->repeat && !(r >= 0 && multi_stopped(o)); r++) {
    double s, t0 = multi_now();
    if (mgpu_array_sum(a, dt, &s) != MGPU_OK) {
      rc = multi_fail("mgpu_array_sum");
      goto destroy;
    }
    if (r < 0) first = s;
    else times[reps++] = multi_now() - t0;
    if (memcmp(&s, &first, sizeof s) != 0) same = 0;
  }
  if (reps == 0) {
    multi_none_timed("reduce");
    rc = multi_outcome(o, bad);
    goto destroy;
  }
  qsort(times, (size_t)reps, sizeof *times, cmp_double);
  double med = times[reps / 2];
  long double ref = 0, mag = 0;
  if (o->verify)
    for (size_t i = 0; i < n; i++) {
      long double v = o->f64 ? ((double *)x)[i] : ((float *)x)[i];
      ref += v;
      mag += fabsl(v);
    }
  double relerr = o->verify && mag > 0 ? (double)(fabsl((long double)first - ref) / mag) : 0;
  /* The documented bound (mgpu_array_sum): well inside n * 2^-53 of sum |x|. */
  bad = o->verify && (relerr > 1e-12 || !same);
  if (o->json) {
    printf("{\"workload\": \"reduce\", \"elements\": %zu, \"dtype\": \"%s\", \"wall_s\": %.6f, \"gbs\": %.3f, "
           "\"sum\": %.17g, \"reproducible\": %s, \"relative_error\": %.3g, \"gpus\": %d, "
           "\"verification\": {\"enabled\": %s, \"failed\": %d}}\n",
           n, mgpu_dtype_name(dt), med, (double)(n * es) / med / 1e9, first, same ? "true" : "false", relerr, ng,
           o->verify ? "true" : "false", bad);
  } else {
    int nc = mgpu_num_cpu_workers(rt);
    printf("reduce: sum of %zu %s elements (%.2f GB), %d GPU%s, %d CPU worker%s, collectives: %s\n", n,
           mgpu_dtype_name(dt), (double)(n * es) / 1e9, ng, ng == 1 ? "" : "s", nc, nc == 1 ? "" : "s",
           mgpu_collectives_backend(rt));
    print_parts(a, "elements");
    printf("sum = %.17g in %.6f s (median of %d): %.2f GB/s\n", first, med, reps, (double)(n * es) / med / 1e9);
    printf("reproducible over %d runs: %s\n", reps + 1, same ? "yes (bit-identical)" : "NO");
    if (o->verify)
      printf("verification: %s (error %.3g of sum |x| against a long double sum; bound 1e-12)\n", bad ? "FAILED" : "ok",
             relerr);
  }
  rc = multi_outcome(o, bad);
destroy:
  mgpu_array_destroy(a);
  free(times);
free_x:
  free(x);
  return rc;
}

/* ------------------------------------------------------------ saxpy-resident */

static int run_saxpy_resident(mgpu_runtime_t *rt, const multi_opts_t *o) {
  int ng = mgpu_num_gpus(rt), nw = mgpu_num_workers(rt), ncpu = mgpu_num_cpu_workers(rt);
  if (ng == 0) {
    fprintf(stderr, "mgpu-run: nothing ran: workload 'saxpy-resident' needs a GPU and the runtime sees none\n");
    return 2;
  }
  size_t n = o->items > 0 ? (size_t)o->items : (size_t)ng << 28;
  double sh[MGPU_MAX_DEVICES + 1];
  for (int g = 0; g < ng; g++) sh[g] = 1;
  mgpu_kernel_t k;
  if (mgpu_kernel_saxpy(&k) != MGPU_OK) return multi_fail("saxpy kernel");
  mgpu_saxpy_arg_t arg = {1.5f};
  /* x, y and the result, of a float an element each. */
  if (!hostmem_fits(hostmem_mul(3 * sizeof(float), n), "-n")) return 1;
  float *hx = malloc(4 * n), *hy = malloc(4 * n), *hr = malloc(4 * n);
  if (!hx || !hy || !hr) {
    fprintf(stderr, "mgpu-run: saxpy-resident: cannot allocate 3 x %zu floats\n", n);
    free(hx), free(hy), free(hr);
    return 1;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) hx[i] = (float)value(o->seed, i), hy[i] = (float)value(o->seed + 1, i);
  mgpu_array_t *x, *y, *r;
  if (mgpu_array_create(rt, n, 4, ng, sh, &x) || mgpu_array_create(rt, n, 4, ng, sh, &y) ||
      mgpu_array_create(rt, n, 4, ng, sh, &r))
    return multi_fail("saxpy arrays");
  if (mgpu_array_scatter(x, hx) || mgpu_array_scatter(y, hy)) return multi_fail("mgpu_array_scatter");
  mgpu_array_batch_t b = {.kernel = &k, .in = {x, y}, .out = {r}, .arg = &arg, .arg_size = sizeof arg};
  mgpu_worker_stats_t *ws = calloc((size_t)nw, sizeof *ws);
  mgpu_stats_t st = {.worker = ws, .worker_cap = nw};
  double best[MGPU_MAX_DEVICES] = {0}, cbest[MGPU_MAX_DEVICES] = {0};
  int reps = 0;
  for (int rep = -1; rep < o->repeat && !(rep >= 0 && multi_stopped(o)); rep++) {
    reps += rep >= 0;
    if (mgpu_array_run(rt, &b, &st) != MGPU_OK) return multi_fail("mgpu_array_run");
    for (int g = 0; g < ng && rep >= 0; g++)
      if (ws[ncpu + g].busy_s > 0 && (best[g] == 0 || ws[ncpu + g].busy_s < best[g])) best[g] = ws[ncpu + g].busy_s;
    /* The copy of the same array, in the same run. */
    if (mgpu_array_copy(r, y, &st) != MGPU_OK) return multi_fail("mgpu_array_copy");
    for (int g = 0; g < ng && rep >= 0; g++)
      if (ws[ncpu + g].busy_s > 0 && (cbest[g] == 0 || ws[ncpu + g].busy_s < cbest[g])) cbest[g] = ws[ncpu + g].busy_s;
  }
  long long bad = 0;
  if (reps == 0) {
    multi_none_timed("saxpy-resident");
    goto out;
  }
  if (mgpu_array_run(rt, &b, NULL) != MGPU_OK) return multi_fail("mgpu_array_run");
  if (o->verify) {
    if (mgpu_array_gather(r, hr) != MGPU_OK) return multi_fail("mgpu_array_gather");
    mgpu_chunk_t c = {.in = (const void *const[]){hx, hy}, .out = (void *const[]){hy}, .arg = &arg, .count = n};
    k.cpu(&c); /* hy = a x + y, the reference */
    bad = memcmp(hr, hy, 4 * n) != 0;
  }
  if (o->json) printf("{\"workload\": \"saxpy-resident\", \"elements\": %zu, \"gpus\": [", n);
  else printf("saxpy-resident: r = a x + y on %zu floats resident on %d GPU%s (12 bytes moved per element)\n", n, ng,
                   ng == 1 ? "" : "s");
  for (int g = 0; g < ng; g++) {
    mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
    mgpu_array_part(x, g, &p);
    double sbw = best[g] > 0 ? 12.0 * (double)p.count / best[g] : 0, cbw = cbest[g] > 0 ? 8.0 * (double)p.count / cbest[g] : 0;
    double frac = cbw > 0 ? sbw / cbw : 0;
    if (o->json)
      printf("%s{\"gpu\": %d, \"elements\": %zu, \"saxpy_gbs\": %.2f, \"copy_gbs\": %.2f, \"fraction\": %.4f}",
             g ? ", " : "", g, p.count, sbw / 1e9, cbw / 1e9, frac);
    else
      printf("  gpu%d: saxpy %.1f GB/s, device-to-device copy %.1f GB/s (read + write): %.1f%% (target 85%%)\n", g,
             sbw / 1e9, cbw / 1e9, 100 * frac);
  }
  if (o->json)
    printf("], \"verification\": {\"enabled\": %s, \"failed\": %lld}}\n", o->verify ? "true" : "false", bad);
  else if (o->verify)
    printf("verification: %s (every element against the CPU kernel)\n", bad ? "FAILED" : "ok");
out:
  mgpu_array_destroy(x), mgpu_array_destroy(y), mgpu_array_destroy(r);
  free(hx), free(hy), free(hr), free(ws);
  return multi_outcome(o, bad);
}

int multi_run(mgpu_runtime_t *rt, const multi_opts_t *o) {
  if (!strcmp(o->workload, "matvec")) return run_matvec(rt, o);
  if (!strcmp(o->workload, "reduce")) return run_reduce(rt, o);
  if (!strcmp(o->workload, "allreduce")) return multi_allreduce(rt, o);
  return run_saxpy_resident(rt, o);
}
