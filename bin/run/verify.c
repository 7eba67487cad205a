/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verify.c: the check of the last run's results (the items it computed: the
 * whole batch, or a prefix) against the kernel's CPU function run here
 * (every item of a small run, else about 2000 spread over it, on
 * as many threads as the runtime has CPU workers), plus ntt's inverse round
 * trip and the pipeline's direct computation. Under an MPI launcher the
 * results are on every rank (batch.c gathers them), and each rank checks
 * its part of the sample: the verdict is the ranks' together.
 */
#include "config.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"

/* The verdicts of all ranks as one: checks and failures summed, the first
 * wrong item the least; its description only where this rank found it. */
static void join_ranks(verdict_t *v, long long *bad) {
  if (ranks_size() < 2) return;
  long long first = ranks_min(v->first >= 0 ? v->first : LLONG_MAX);
  if (first != v->first) snprintf(v->what, sizeof v->what, "(checked by another rank)");
  v->first = first == LLONG_MAX ? -1 : first;
  v->checked = (size_t)ranks_sum((long long)v->checked);
  *bad = ranks_sum(*bad);
  v->roundtrip_bad = ranks_sum(v->roundtrip_bad) > 0;
  v->worker = -1; /* a rank knows only the workers of its own items */
}

/* "expected .., got .." of up to 8 bytes in hex from the first that differs. */
static void describe_diff(char *buf, size_t len, int k, const unsigned char *want, const unsigned char *got,
                          size_t size) {
  size_t at = 0;
  while (at < size && want[at] == got[at]) at++;
  if (at == size) at = 0;
  size_t end = at + 8 < size ? at + 8 : size;
  int pos = snprintf(buf, len, "output %d bytes %zu..%zu: expected ", k, at, end - 1);
  for (size_t j = at; j < end && pos < (int)len; j++) pos += snprintf(buf + pos, len - (size_t)pos, "%02x", want[j]);
  if (pos < (int)len) pos += snprintf(buf + pos, len - (size_t)pos, ", got ");
  for (size_t j = at; j < end && pos < (int)len; j++) pos += snprintf(buf + pos, len - (size_t)pos, "%02x", got[j]);
}

/* The pipeline's result is the input rotated by shift and times key, which
 * the host computes directly. */
static void verify_pipeline(const work_t *w, verdict_t *v) {
  size_t nn = (size_t)1 << w->log_n;
  const uint64_t *x = w->in[0], *z = w->out;
  for (size_t i = 0; i < w->ndone; i += w->vstep, v->checked++)
    for (size_t c = 0; c < nn; c++) {
      uint64_t xv = x[i * nn + ((c + nn - w->shift) % nn)];
      uint64_t want = (uint64_t)(((unsigned __int128)xv * w->key) % MGPU_GOLDILOCKS_P);
      if (z[i * nn + c] != want) {
        if (v->bad++ == 0) {
          v->first = (long long)i;
          snprintf(v->what, sizeof v->what, "coefficient %zu: expected %llu, got %llu", c, (unsigned long long)want,
                   (unsigned long long)z[i * nn + c]);
        }
        break;
      }
    }
}

/* Check the last run's results: every item for small runs, a sample of about
 * 2000 spread over the run otherwise, against the kernel's CPU function run
 * here; ntt also round-trips them. */
void verify(work_t *w, mgpu_runtime_t *rt, verdict_t *v) {
  size_t n = w->ndone, step = w->vstep;
  memset(v, 0, sizeof *v);
  v->first = -1;
  v->worker = -1;
  long long bad = 0, first = -1;
  if (!strcmp(w->name, "pipeline")) {
    verify_pipeline(w, v);
    return;
  }
  size_t refbytes = 0;
  for (int k = 0; k < w->k.nout; k++) refbytes += w->k.out_size[k];
  mgpu_kernel_fn cpu = w->ref_cpu;
  /* On as many threads as the runtime has CPU workers, each passing its own
   * worker index as a run would (a kernel may keep scratch per worker): a
   * full mandelbrot image at a high iteration limit is minutes on one core. */
  const long long nchecks = (long long)((n + step - 1) / step);
  const int nthreads = rt && mgpu_num_cpu_workers(rt) > 0 ? mgpu_num_cpu_workers(rt) : 1;
#pragma omp parallel num_threads(nthreads) reduction(+ : bad)
  {
    int me = 0;
#ifdef _OPENMP
    me = omp_get_thread_num();
#endif
    unsigned char *ref = malloc(refbytes ? refbytes : 1);
    if (!ref) {
      fprintf(stderr, "%s: out of memory verifying the results\n", prog);
      exit(EXIT_FAIL);
    }
    const int nr = ranks_size(), me_rank = ranks_rank();
#pragma omp for schedule(dynamic, 1)
    for (long long j = 0; j < nchecks; j++) {
      if (j % nr != me_rank) continue;
      size_t i = (size_t)j * step;
      const void *ins[MGPU_MAX_ARGS];
      void *outs[MGPU_MAX_ARGS];
      for (int k = 0; k < w->k.nin; k++) ins[k] = (const char *)w->in[k] + i * w->k.in_size[k];
      size_t at = 0;
      for (int k = 0; k < w->k.nout; k++) outs[k] = ref + at, at += w->k.out_size[k];
      mgpu_chunk_t ch = {.in = ins, .out = outs, .arg = w->argp, .first = i, .count = 1, .worker = me};
      int rc = cpu(&ch);
      int wrong = rc != 0 ? -2 : -1; /* the output that differs; -2: the CPU function failed */
      for (int k = 0; k < w->k.nout && wrong == -1; k++)
        if (memcmp(outs[k], (char *)w->outs[k] + i * w->k.out_size[k], w->k.out_size[k]) != 0) wrong = k;
      if (wrong != -1) {
        bad++;
#pragma omp critical(mgpu_verify_first)
        if (first < 0 || (long long)i < first) {
          first = (long long)i;
          if (wrong == -2) snprintf(v->what, sizeof v->what, "the CPU function returned %d on it", rc);
          else describe_diff(v->what, sizeof v->what, wrong, outs[wrong],
                             (unsigned char *)w->outs[wrong] + i * w->k.out_size[wrong], w->k.out_size[wrong]);
        }
      }
    }
    free(ref);
  }
  v->checked = (size_t)(nchecks / ranks_size() + (nchecks % ranks_size() > ranks_rank()));
  v->first = first;
  if (first >= 0 && w->sample_worker) v->worker = w->sample_worker[(size_t)first / step];
  if (!strcmp(w->name, "ntt") && n > 0) {
    /* Round trip on the runtime: inverse(forward(x)) == x; across ranks,
     * each rank's share of the inverse batch. */
    mgpu_ntt_arg_t inv = {w->log_n, 1};
    size_t per = w->out_bytes / w->n, bytes = per * n;
    void *back = malloc(bytes);
    mgpu_batch_t b = {.kernel = &w->k, .n = n, .in = {w->out}, .out = {back}, .arg = &inv, .arg_size = sizeof inv};
    int nr = mgpu_num_ranks(rt);
    mgpu_rank_stats_t *rs = calloc((size_t)nr, sizeof *rs);
    mgpu_stats_t s = {.size = sizeof s, .rank = rs, .rank_cap = nr > 1 ? nr : 0};
    check_status(mgpu_run(rt, &b, &s), "the inverse ntt");
    size_t lo = 0, cnt = n;
    if (s.nranks > 1) lo = rs[ranks_rank()].share_first, cnt = rs[ranks_rank()].share_count;
    if (memcmp((char *)back + lo * per, (const char *)w->in[0] + lo * per, cnt * per) != 0)
      bad++, v->roundtrip_bad = true;
    free(rs);
    free(back);
  }
  join_ranks(v, &bad);
  v->bad = bad;
}
