/* SPDX-License-Identifier: BSD-3-Clause */
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

#include "compare/compare.h"

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
    check_work_status(w, mgpu_array_create(rt, n, k->in_size[i], 1, share, &b->ain[i]), "ceiling: the input arrays");
    b->hin[i] = mgpu_host_alloc(rt, k->in_size[i] * n);
    if (!b->hin[i]) check_status(MGPU_ENOMEM, "ceiling: pinned input memory");
    memcpy(b->hin[i], w->in[i], k->in_size[i] * n);
    b->ab.in[i] = b->ain[i];
  }
  for (int i = 0; i < k->nout; i++) {
    check_work_status(w, mgpu_array_create(rt, n, k->out_size[i], 1, share, &b->aout[i]),
                      "ceiling: the output arrays");
    b->hout[i] = mgpu_host_alloc(rt, k->out_size[i] * n);
    if (!b->hout[i]) check_status(MGPU_ENOMEM, "ceiling: pinned output memory");
    b->ab.out[i] = b->aout[i];
  }
}

static void bufs_free(mgpu_runtime_t *rt, const work_t *w, cbufs_t *b) {
  for (int i = 0; i < w->k_real.nin; i++) mgpu_array_destroy(b->ain[i]), mgpu_host_free(rt, b->hin[i]);
  for (int i = 0; i < w->k_real.nout; i++) mgpu_array_destroy(b->aout[i]), mgpu_host_free(rt, b->hout[i]);
}

/* One timed pass: copies in, the launch, copies out; *copy_s gets the time
 * of the copies. */
static double ceiling_pass(mgpu_runtime_t *rt, const work_t *w, const cbufs_t *b, double *copy_s) {
  double t0 = now_s();
  for (int i = 0; i < w->k_real.nin; i++) check_status(mgpu_array_scatter(b->ain[i], b->hin[i]), "ceiling: copying in");
  double t1 = now_s();
  check_work_status(w, mgpu_array_run(rt, &b->ab, NULL), "ceiling: the launch");
  double t2 = now_s();
  for (int i = 0; i < w->k_real.nout; i++)
    check_status(mgpu_array_gather(b->aout[i], b->hout[i]), "ceiling: copying out");
  double t3 = now_s();
  *copy_s = (t1 - t0) + (t3 - t2);
  return t3 - t0;
}

/* The host copy: every byte of the launch's inputs from the batch's pageable
 * arrays into pinned memory and of its outputs back, in pieces of HOST_PIECE
 * bytes shared by the CPU workers (mgpu_parallel_for). A GPU fed from
 * pageable arrays has each of these bytes copied by the host (the runtime's
 * staging, or the driver's), so the items of the launch over this time bound
 * its rate, however its copies overlap. */
#define HOST_PIECE ((size_t)256 << 10)
typedef struct {
  const char *src;
  char *dst;
  size_t len;
} piece_t;

static int copy_pieces(void *arg, size_t first, size_t count) {
  const piece_t *p = arg;
  for (size_t i = first; i < first + count; i++) memcpy(p[i].dst, p[i].src, p[i].len);
  return 0;
}

/* Appends the pieces of one array of len bytes to p (NULL: only counts). */
static size_t add_pieces(piece_t *p, size_t at, const void *src, void *dst, size_t len) {
  for (size_t off = 0; off < len; off += HOST_PIECE, at++)
    if (p) p[at] = (piece_t){(const char *)src + off, (char *)dst + off, len - off < HOST_PIECE ? len - off : HOST_PIECE};
  return at;
}

/* The pieces of the launch of b: the inputs first. Before the outputs are
 * copied out, their pinned copies take the batch's outputs, so that the
 * copies write back what the arrays already hold. */
static size_t host_pieces(const work_t *w, const cbufs_t *b, piece_t *p) {
  const mgpu_kernel_t *k = &w->k_real;
  size_t n = 0;
  for (int i = 0; i < k->nin; i++) n = add_pieces(p, n, w->in[i], b->hin[i], k->in_size[i] * b->n);
  for (int i = 0; i < k->nout; i++) {
    if (p) memcpy(b->hout[i], w->outs[i], k->out_size[i] * b->n);
    n = add_pieces(p, n, b->hout[i], w->outs[i], k->out_size[i] * b->n);
  }
  return n;
}

/* The best of a warm-up and o->repeat host copies, into c; or why not. */
static void host_copy(mgpu_runtime_t *rt, const opts_t *o, const work_t *w, const cbufs_t *b, ceiling_t *c,
                      const bound_t *bd) {
  if (o->pinned) {
    c->host_skipped = "the arrays are pinned by --pinned: nothing is staged";
    return;
  }
  if (bd && bound_reached(bd)) {
    c->host_skipped = c->bounded = bound_end_why;
    return;
  }
  c->host_threads = mgpu_num_cpu_workers(rt);
  if (c->host_threads == 0) {
    c->host_skipped = "no CPU worker";
    return;
  }
  size_t n = host_pieces(w, b, NULL);
  piece_t *p = malloc(sizeof *p * (n ? n : 1));
  if (!p) check_status(MGPU_ENOMEM, "host copy: its pieces");
  host_pieces(w, b, p);
  c->host_bytes = 0;
  for (size_t i = 0; i < n; i++) c->host_bytes += p[i].len;
  for (int r = -1; r < o->repeat && !interrupted; r++) {
    double t0 = now_s();
    check_status(mgpu_parallel_for(rt, n, copy_pieces, p), "host copy");
    double t = now_s() - t0;
    if (r >= 0 && (c->host_s == 0 || t < c->host_s)) c->host_s = t;
  }
  free(p);
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
 * take over --max-run-time, it is measured on a prefix: first of start items
 * (the gpu mode's prefix, or the whole batch), then, while the warm-up pass
 * still takes over the bound, of fewer (prefix_next, as for the modes; a
 * pass is one launch, which cannot stop early), CEILING_TRIES passes at most.
 * Within --compare's bounds bd (NULL: none), no pass starts past its end. */
#define CEILING_TRIES 4
void ceiling_run(const opts_t *o, work_t *w, int ngpu, size_t start, ceiling_t *c, const bound_t *bd) {
  memset(c, 0, sizeof *c);
  c->asked = true;
  if ((c->skipped = ceiling_skip(w, ngpu)) != NULL) return;
  if (interrupted) { /* while the inputs were made */
    c->skipped = "interrupted";
    return;
  }
  if (bd && bound_reached(bd)) {
    c->skipped = c->bounded = bound_end_why;
    return;
  }
  opts_t one = *o;
  one.cfg.num_gpus = 1;
  one.cfg.ndevices = -1;
  if (o->cfg.ndevices > 0) one.cfg.ndevices = 1, one.cfg.devices[0] = o->cfg.devices[0];
  mgpu_runtime_t *rt = start_runtime(&one, MGPU_SCHED_GPU, 0, false);
  double bound = o->max_run_s;
  size_t n = bound > 0 && start > 0 && start < w->n ? start : w->n;
  cbufs_t b;
  bufs_make(rt, w, n, &b);
  double copy_s;
  w->started = true;
  double t = ceiling_pass(rt, w, &b, &copy_s); /* warm-up: the device's first use */
  bool ended = false; /* the comparison's end came */
  for (int i = 0; i < CEILING_TRIES && bound > 0 && t > bound && n > 1 && !interrupted; i++) {
    if ((ended = bd && bound_reached(bd))) break;
    n = prefix_next(n, n, t, bound, 0, n);
    bufs_free(rt, w, &b);
    bufs_make(rt, w, n, &b);
    t = ceiling_pass(rt, w, &b, &copy_s);
  }
  c->prefix = b.n < w->n ? b.n : 0;
  c->items = b.n;
  c->wall_s = 0;
  for (int r = 0; r < o->repeat && !interrupted && !ended; r++) {
    if ((ended = bd && bound_reached(bd))) break;
    t = ceiling_pass(rt, w, &b, &copy_s);
    if (c->wall_s == 0 || t < c->wall_s) c->wall_s = t, c->copy_s = copy_s;
  }
  if (ended) c->bounded = bound_end_why;
  c->throughput = c->wall_s > 0 ? (double)b.n / c->wall_s : 0;
  if (c->wall_s == 0) c->skipped = ended ? bound_end_why : "interrupted"; /* before the first timed pass */
  ceiling_results(w, &b, c);
  if (!interrupted) host_copy(rt, o, w, &b, c, bd);
  bufs_free(rt, w, &b);
  mgpu_finalize(rt);
}
