/*
 * verify.c: the check of the last run's results (the items it computed: the
 * whole batch, or a prefix) against the kernel's CPU function run here
 * (every item of a small run, else about 2000 spread over it, on
 * as many threads as the runtime has CPU workers), plus ntt's inverse round
 * trip and the pipeline's direct computation.
 */
#include "config.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgpu-run.h"

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
#pragma omp for schedule(dynamic, 1)
    for (long long j = 0; j < nchecks; j++) {
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
  v->checked = (size_t)nchecks;
  v->first = first;
  if (first >= 0 && w->sample_worker) v->worker = w->sample_worker[(size_t)first / step];
  if (!strcmp(w->name, "ntt") && n > 0) {
    /* Round trip on the runtime: inverse(forward(x)) == x. */
    mgpu_ntt_arg_t inv = {w->log_n, 1};
    size_t bytes = w->out_bytes / w->n * n;
    void *back = malloc(bytes);
    mgpu_batch_t b = {.kernel = &w->k, .n = n, .in = {w->out}, .out = {back}, .arg = &inv, .arg_size = sizeof inv};
    check_status(mgpu_run(rt, &b, NULL), "the inverse ntt");
    if (memcmp(back, w->in[0], bytes) != 0) bad++, v->roundtrip_bad = true;
    free(back);
  }
  v->bad = bad;
}
