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

/* Why the ceiling cannot be measured for w here, or NULL. */
static const char *ceiling_skip(const work_t *w, int ngpu) {
  if (ranks_size() > 1) return "it is of one process, and this run spans MPI ranks";
  if (ngpu == 0) return "no GPU is in use";
  if (!w->k_real.gpu) return "the kernel has no GPU function";
  if (!strcmp(w->name, "pipeline")) return "the pipeline is three dependent batches, not one launch";
  if (w->b.nconsts) return "the batch has constants";
  return NULL;
}

/* The arrays of a ceiling of n items: on GPU 0 and in pinned host memory. */
typedef struct {
  size_t n;
  mgpu_array_t *ain[MGPU_MAX_ARGS], *aout[MGPU_MAX_ARGS];
  void *hin[MGPU_MAX_ARGS], *hout[MGPU_MAX_ARGS];
  mgpu_array_batch_t ab;
} cbufs_t;

/* The arrays of the first n items of w, its inputs copied to the pinned ones. */
static void bufs_make(mgpu_runtime_t *rt, const work_t *w, size_t n, cbufs_t *b) {
  const mgpu_kernel_t *k = &w->k_real;
  double share[1] = {1};
  memset(b, 0, sizeof *b);
  b->n = n;
  b->ab = (mgpu_array_batch_t){.kernel = k, .arg = w->argp, .arg_size = w->arg_size};
  for (int i = 0; i < k->nin; i++) {
    check_status(mgpu_array_create(rt, n, k->in_size[i], 1, share, &b->ain[i]), "ceiling: the input arrays");
    b->hin[i] = mgpu_host_alloc(rt, k->in_size[i] * n);
    if (!b->hin[i]) check_status(MGPU_ENOMEM, "ceiling: pinned input memory");
    memcpy(b->hin[i], w->in[i], k->in_size[i] * n);
    b->ab.in[i] = b->ain[i];
  }
  for (int i = 0; i < k->nout; i++) {
    check_status(mgpu_array_create(rt, n, k->out_size[i], 1, share, &b->aout[i]), "ceiling: the output arrays");
    b->hout[i] = mgpu_host_alloc(rt, k->out_size[i] * n);
    if (!b->hout[i]) check_status(MGPU_ENOMEM, "ceiling: pinned output memory");
    b->ab.out[i] = b->aout[i];
  }
}

static void bufs_free(mgpu_runtime_t *rt, const work_t *w, cbufs_t *b) {
  for (int i = 0; i < w->k_real.nin; i++) mgpu_array_destroy(b->ain[i]), mgpu_host_free(rt, b->hin[i]);
  for (int i = 0; i < w->k_real.nout; i++) mgpu_array_destroy(b->aout[i]), mgpu_host_free(rt, b->hout[i]);
}

/* One timed pass: copies in, the launch, copies out. */
static double ceiling_pass(mgpu_runtime_t *rt, const work_t *w, const cbufs_t *b) {
  double t0 = now_s();
  for (int i = 0; i < w->k_real.nin; i++) check_status(mgpu_array_scatter(b->ain[i], b->hin[i]), "ceiling: copying in");
  check_status(mgpu_array_run(rt, &b->ab, NULL), "ceiling: the launch");
  for (int i = 0; i < w->k_real.nout; i++)
    check_status(mgpu_array_gather(b->aout[i], b->hout[i]), "ceiling: copying out");
  return now_s() - t0;
}

/* Its results are the batch's: those of the last run, where one completed
 * (on as many items as both computed); alone, they become the outputs that
 * verification checks. */
static void ceiling_results(work_t *w, const cbufs_t *b, ceiling_t *c) {
  const mgpu_kernel_t *k = &w->k_real;
  size_t n = w->complete && w->ndone < b->n ? w->ndone : b->n;
  for (int i = 0; i < k->nout; i++) {
    if (w->complete) c->differs |= memcmp(b->hout[i], w->outs[i], k->out_size[i] * n) != 0;
    else memcpy(w->outs[i], b->hout[i], k->out_size[i] * n);
  }
  if (!w->complete && !interrupted) w->complete = true, w->ndone = n, w->vstep = verify_step(n);
}

/* The ceiling, after a warm-up pass. Where a pass of the whole batch would
 * take over --max-run-time, it is measured on a prefix: of the items that
 * the gpu mode's rate expect_tp (0: not known) computes in that time, and
 * made shorter where the warm-up pass still took over it. */
void ceiling_run(const opts_t *o, work_t *w, int ngpu, double expect_tp, ceiling_t *c) {
  memset(c, 0, sizeof *c);
  c->asked = true;
  if ((c->skipped = ceiling_skip(w, ngpu)) != NULL) return;
  opts_t one = *o;
  one.cfg.num_gpus = 1;
  one.cfg.ndevices = -1;
  if (o->cfg.ndevices > 0) one.cfg.ndevices = 1, one.cfg.devices[0] = o->cfg.devices[0];
  mgpu_runtime_t *rt = start_runtime(&one, MGPU_SCHED_GPU, 0, false);
  double bound = o->max_run_s;
  size_t n = w->n;
  if (bound > 0 && expect_tp > 0 && (double)n / expect_tp > bound)
    n = expect_tp * bound >= 1 ? (size_t)(expect_tp * bound) : 1;
  cbufs_t b;
  bufs_make(rt, w, n, &b);
  double t = ceiling_pass(rt, w, &b); /* warm-up: the device's first use */
  if (bound > 0 && t > bound && n > 1) {
    n = (size_t)((double)n * bound / t);
    bufs_free(rt, w, &b);
    bufs_make(rt, w, n ? n : 1, &b);
  }
  c->prefix = b.n < w->n ? b.n : 0;
  c->wall_s = 0;
  for (int r = 0; r < o->repeat && !interrupted; r++) {
    t = ceiling_pass(rt, w, &b);
    if (c->wall_s == 0 || t < c->wall_s) c->wall_s = t;
  }
  c->throughput = c->wall_s > 0 ? (double)b.n / c->wall_s : 0;
  ceiling_results(w, &b, c);
  bufs_free(rt, w, &b);
  mgpu_finalize(rt);
}

void ceiling_report(const ceiling_t *c, const result_t *gpu) {
  if (c->skipped) {
    printf("ceiling: not measured (%s)\n", c->skipped);
    return;
  }
  char what[64] = "the batch";
  if (c->prefix) snprintf(what, sizeof what, "its first %zu items", c->prefix);
  printf("ceiling  %.4f s, %.4g items/s: %s as one launch on GPU 0, copied in and out in one piece from "
         "pinned memory (best of the timed runs)",
         c->wall_s, c->throughput, what);
  if (gpu && gpu->ran && c->throughput > 0) printf("; gpu mode reaches %.0f%% of it", 100 * gpu->throughput / c->throughput);
  printf("\n");
  if (c->differs) printf("ceiling: its results differ from the batch's\n");
}
