/*
 * ceiling.c: the ceiling of a batch workload on one GPU: the whole batch as
 * one launch on GPU 0 from device memory, its inputs copied in and its outputs
 * copied out in one piece each from pinned host memory, one after the other.
 * Its copies and its launch do not overlap: on compute-bound work it is what
 * the GPU can reach, and the share of it a GPU-only run reaches says how much
 * the runtime's chunking costs; a run that overlaps copies with kernels can
 * pass it on transfer-bound work. It uses the library's split arrays, whose
 * mgpu_array_run launches once per GPU part.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgpu-run.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Why the ceiling cannot be measured for w here, or NULL. */
static const char *ceiling_skip(const work_t *w, int ngpu) {
  if (ngpu == 0) return "no GPU is in use";
  if (!w->k_real.gpu) return "the kernel has no GPU function";
  if (!strcmp(w->name, "pipeline")) return "the pipeline is three dependent batches, not one launch";
  if (w->b.nconsts) return "the batch has constants";
  return NULL;
}

/* One timed pass: copies in, the launch, copies out. */
static double ceiling_pass(mgpu_runtime_t *rt, const work_t *w, mgpu_array_t **ain, mgpu_array_t **aout,
                           void **hin, void **hout, const mgpu_array_batch_t *ab) {
  double t0 = now_s();
  for (int i = 0; i < w->k_real.nin; i++) check_status(mgpu_array_scatter(ain[i], hin[i]), "ceiling: copying in");
  check_status(mgpu_array_run(rt, ab, NULL), "ceiling: the launch");
  for (int i = 0; i < w->k_real.nout; i++)
    check_status(mgpu_array_gather(aout[i], hout[i]), "ceiling: copying out");
  return now_s() - t0;
}

void ceiling_run(const opts_t *o, work_t *w, int ngpu, ceiling_t *c) {
  memset(c, 0, sizeof *c);
  c->asked = true;
  if ((c->skipped = ceiling_skip(w, ngpu)) != NULL) return;
  opts_t one = *o;
  one.cfg.num_gpus = 1;
  one.cfg.ndevices = -1;
  if (o->cfg.ndevices > 0) one.cfg.ndevices = 1, one.cfg.devices[0] = o->cfg.devices[0];
  mgpu_runtime_t *rt = start_runtime(&one, MGPU_SCHED_GPU, 0, false);
  const mgpu_kernel_t *k = &w->k_real;
  double share[1] = {1};
  mgpu_array_t *ain[MGPU_MAX_ARGS] = {NULL}, *aout[MGPU_MAX_ARGS] = {NULL};
  void *hin[MGPU_MAX_ARGS] = {NULL}, *hout[MGPU_MAX_ARGS] = {NULL};
  mgpu_array_batch_t ab = {.kernel = k, .arg = w->argp, .arg_size = w->arg_size};
  for (int i = 0; i < k->nin; i++) {
    check_status(mgpu_array_create(rt, w->n, k->in_size[i], 1, share, &ain[i]), "ceiling: the input arrays");
    hin[i] = mgpu_host_alloc(rt, k->in_size[i] * w->n);
    if (!hin[i]) check_status(MGPU_ENOMEM, "ceiling: pinned input memory");
    memcpy(hin[i], w->in[i], k->in_size[i] * w->n);
    ab.in[i] = ain[i];
  }
  for (int i = 0; i < k->nout; i++) {
    check_status(mgpu_array_create(rt, w->n, k->out_size[i], 1, share, &aout[i]), "ceiling: the output arrays");
    hout[i] = mgpu_host_alloc(rt, k->out_size[i] * w->n);
    if (!hout[i]) check_status(MGPU_ENOMEM, "ceiling: pinned output memory");
    ab.out[i] = aout[i];
  }
  ceiling_pass(rt, w, ain, aout, hin, hout, &ab); /* warm-up: the device's first use */
  c->wall_s = 0;
  for (int r = 0; r < o->repeat && !interrupted; r++) {
    double t = ceiling_pass(rt, w, ain, aout, hin, hout, &ab);
    if (c->wall_s == 0 || t < c->wall_s) c->wall_s = t;
  }
  c->throughput = c->wall_s > 0 ? (double)w->n / c->wall_s : 0;
  /* Its results are the batch's: the last run's outputs, where one completed;
   * alone, they become the outputs that verification checks. */
  for (int i = 0; i < k->nout; i++) {
    if (w->complete) c->differs |= memcmp(hout[i], w->outs[i], k->out_size[i] * w->n) != 0;
    else memcpy(w->outs[i], hout[i], k->out_size[i] * w->n);
  }
  if (!interrupted) w->complete = true;
  for (int i = 0; i < k->nin; i++) mgpu_array_destroy(ain[i]), mgpu_host_free(rt, hin[i]);
  for (int i = 0; i < k->nout; i++) mgpu_array_destroy(aout[i]), mgpu_host_free(rt, hout[i]);
  mgpu_finalize(rt);
}

void ceiling_report(const ceiling_t *c, const result_t *gpu) {
  if (c->skipped) {
    printf("ceiling: not measured (%s)\n", c->skipped);
    return;
  }
  printf("ceiling  %.4f s, %.4g items/s: the batch as one launch on GPU 0, copied in and out in one piece from "
         "pinned memory (best of the timed runs)",
         c->wall_s, c->throughput);
  if (gpu && gpu->ran && c->throughput > 0) printf("; gpu mode reaches %.0f%% of it", 100 * gpu->throughput / c->throughput);
  printf("\n");
  if (c->differs) printf("ceiling: its results differ from the batch's\n");
}
