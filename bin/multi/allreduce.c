/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allreduce.c: mgpu-run's allreduce workload: the bus bandwidth of
 * mgpu_allreduce on sizes doubling from --min-bytes to --max-bytes, checked
 * once for correctness, against the raw NCCL loop of rawnccl.c in the same
 * run.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multi/multi.h"

/* Correctness first: GPU g sends g + 1 everywhere; the sum is n(n+1)/2.
 * Returns the wrong elements, or -1 when a call failed (reported). */
static int check(mgpu_runtime_t *rt, const multi_opts_t *o, void **send, void **recv, size_t hi) {
  int ng = mgpu_num_gpus(rt);
  size_t vcount = hi / 4 < ((size_t)1 << 20) ? hi / 4 : (size_t)1 << 20;
  float *h = malloc(4 * vcount);
  int bad = 0;
  for (int g = 0; g < ng; g++) {
    for (size_t i = 0; i < vcount; i++) h[i] = (float)(g + 1);
    if (mgpu_memcpy_to_device(rt, g, send[g], h, 4 * vcount) != MGPU_OK) return multi_fail("allreduce fill"), -1;
  }
  if (mgpu_allreduce(rt, (const void *const *)send, recv, vcount, MGPU_FLOAT32, MGPU_OP_SUM) != MGPU_OK)
    return multi_fail("mgpu_allreduce"), -1;
  for (int g = 0; g < ng && o->verify; g++) {
    if (mgpu_memcpy_from_device(rt, g, h, recv[g], 4 * vcount) != MGPU_OK) return multi_fail("allreduce check"), -1;
    for (size_t i = 0; i < vcount; i++) bad += h[i] != (float)(ng * (ng + 1) / 2);
  }
  free(h);
  return bad;
}

/* Time iters all-reduces of each size after warmup ones: seconds per
 * operation into rt_s. Returns the sizes measured (fewer after SIGINT), or -1
 * when a call failed (reported). */
static int sweep(mgpu_runtime_t *rt, const multi_opts_t *o, void **send, void **recv, const size_t *sizes, int ns,
                 int warmup, int iters, double *rt_s) {
  mgpu_event_t **ev = calloc((size_t)(warmup + iters), sizeof *ev);
  for (int s = 0; s < ns; s++) {
    if (multi_stopped(o)) {
      ns = s; /* the report covers the sizes measured */
      break;
    }
    size_t count = sizes[s] / 4;
    double t0 = 0;
    for (int it = -warmup; it < iters; it++) {
      if (it == 0) {
        mgpu_event_wait(ev[warmup - 1], NULL);
        t0 = multi_now();
      }
      if (mgpu_allreduce_async(rt, (const void *const *)send, recv, count, MGPU_FLOAT32, MGPU_OP_SUM, 0, NULL,
                               &ev[it + warmup]) != MGPU_OK)
        return multi_fail("mgpu_allreduce_async"), -1;
    }
    /* One stream per GPU runs them in order: the last done means all done. */
    if (mgpu_event_wait(ev[warmup + iters - 1], NULL) != MGPU_OK) return multi_fail("mgpu_allreduce_async"), -1;
    rt_s[s] = (multi_now() - t0) / iters;
    for (int i = 0; i < warmup + iters; i++) mgpu_event_release(ev[i]);
  }
  free(ev);
  return ns;
}

/* The sweep's table (or JSON): the runtime's times and bandwidths, beside
 * the raw NCCL loop's (raw_s; NULL: not run, why says why). */
static void report(mgpu_runtime_t *rt, const multi_opts_t *o, const size_t *sizes, int ns, int iters, int warmup,
                   const double *rt_s, const double *raw_s, const char *why, int bad) {
  int ng = mgpu_num_gpus(rt), have_raw = raw_s != NULL;
  double factor = ng > 1 ? 2.0 * (ng - 1) / ng : 0; /* bus bandwidth factor, as nccl-tests */
  if (o->json) {
    printf("{\"workload\": \"allreduce\", \"gpus\": %d, \"backend\": \"%s\", \"raw_nccl\": %s, \"iters\": %d, "
           "\"verified\": %s, \"sizes\": [",
           ng, mgpu_collectives_backend(rt), have_raw ? "true" : "false", iters, o->verify && !bad ? "true" : "false");
    for (int s = 0; s < ns; s++) {
      double alg = sizes[s] / rt_s[s] / 1e9;
      printf("%s{\"bytes\": %zu, \"time_us\": %.2f, \"algbw\": %.3f, \"busbw\": %.3f", s ? ", " : "", sizes[s],
             rt_s[s] * 1e6, alg, alg * factor);
      if (have_raw)
        printf(", \"raw_time_us\": %.2f, \"raw_busbw\": %.3f, \"ratio\": %.4f", raw_s[s] * 1e6,
               sizes[s] / raw_s[s] / 1e9 * factor, raw_s[s] / rt_s[s]);
      printf("}");
    }
    printf("]}\n");
  } else {
    printf("allreduce: float sum, out of place, %d GPU%s, %d iterations after %d warm-up; runtime collectives: %s\n",
           ng, ng == 1 ? "" : "s", iters, warmup, mgpu_collectives_backend(rt));
    if (!have_raw) printf("raw NCCL loop not run: %s\n", why);
    printf("%12s %12s | %10s %9s %9s | %10s %9s %9s | %7s\n", "bytes", "count", "rt us", "algbw", "busbw", "raw us",
           "algbw", "busbw", "rt/raw");
    for (int s = 0; s < ns; s++) {
      double alg = sizes[s] / rt_s[s] / 1e9;
      printf("%12zu %12zu | %10.2f %9.3f %9.3f |", sizes[s], sizes[s] / 4, rt_s[s] * 1e6, alg, alg * factor);
      if (have_raw) {
        double ralg = sizes[s] / raw_s[s] / 1e9;
        printf(" %10.2f %9.3f %9.3f | %6.1f%%\n", raw_s[s] * 1e6, ralg, ralg * factor, 100 * raw_s[s] / rt_s[s]);
      } else {
        printf(" %10s %9s %9s | %7s\n", "-", "-", "-", "-");
      }
    }
    printf("(GB/s; busbw = algbw * 2(n-1)/n as in nccl-tests; rt/raw = raw time / runtime time)\n");
    if (o->verify) printf("verification: %s\n", bad ? "FAILED" : "ok");
  }
}

/* The allreduce workload on rt; returns the exit status. */
int multi_allreduce(mgpu_runtime_t *rt, const multi_opts_t *o) {
  int ng = mgpu_num_gpus(rt);
  if (ng == 0) {
    fprintf(stderr, "mgpu-run: nothing ran: workload 'allreduce' needs a GPU and the runtime sees none\n");
    return 2;
  }
  size_t lo = o->min_bytes ? o->min_bytes : 8, hi = o->max_bytes ? o->max_bytes : (size_t)1 << 30;
  size_t sizes[64];
  int ns = 0;
  for (size_t b = lo; b <= hi && ns < 64; b *= 2) sizes[ns++] = b;
  int warmup = 5, iters = o->repeat > 3 ? o->repeat : 20;
  void *send[MGPU_MAX_DEVICES], *recv[MGPU_MAX_DEVICES];
  int devs[MGPU_MAX_DEVICES];
  for (int g = 0; g < ng; g++) {
    mgpu_device_info_t d = MGPU_DEVICE_INFO_INIT;
    mgpu_device_info(rt, g, &d);
    devs[g] = d.index;
    if (mgpu_device_alloc(rt, g, hi, &send[g]) != MGPU_OK || mgpu_device_alloc(rt, g, hi, &recv[g]) != MGPU_OK)
      return multi_fail("allreduce buffers");
  }
  int bad = check(rt, o, send, recv, hi);
  if (bad < 0) return 1;
  double rt_s[64], raw_s[64];
  ns = sweep(rt, o, send, recv, sizes, ns, warmup, iters, rt_s);
  if (ns < 0) return 1;
  for (int g = 0; g < ng; g++) mgpu_device_free(rt, g, send[g]), mgpu_device_free(rt, g, recv[g]);
  char why[256] = "";
  mgpu_device_info_t d0 = MGPU_DEVICE_INFO_INIT;
  mgpu_device_info(rt, 0, &d0);
  int have_raw = 0;
  if (ns == 0) {
    multi_none_timed("allreduce");
    return multi_outcome(o, bad);
  }
  if (d0.emulated) snprintf(why, sizeof why, "the devices are emulated");
  else if (multi_stopped(o)) snprintf(why, sizeof why, "interrupted (SIGINT)");
  else have_raw = raw_nccl_allreduce(ng, devs, sizes, ns, warmup, iters, raw_s, why, sizeof why) == 0;
  report(rt, o, sizes, ns, iters, warmup, rt_s, have_raw ? raw_s : NULL, why, bad);
  return multi_outcome(o, bad);
}
