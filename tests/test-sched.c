/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-sched.c: the scheduler's promises. Every item computed exactly once for
 * every mode, worker mix and awkward size; balance within 15% of the ideal under
 * a known-cost model; the tail rule; static mode's fixed shares.
 */
#include "testutil.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

/* ------------------------------------------------------------ exactly once */

typedef struct {
  _Atomic uint32_t *count; /* executions per item */
} count_arg_t;

static int count_cpu(const mgpu_chunk_t *c) {
  const count_arg_t *a = c->arg;
  const uint64_t *in = c->in[0];
  uint64_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) {
    atomic_fetch_add_explicit(&a->count[c->first + j], 1, memory_order_relaxed);
    out[j] = in[j] * 3 + 1;
  }
  return 0;
}

/* Marks the kernel offloadable; emulated devices run count_cpu instead. */
static int never_gpu(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  return 99;
}

static const mgpu_kernel_t count_kernel = {
    .name = "count", .cpu = count_cpu, .gpu = never_gpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};

static void check_once(int cpus, int emu, mgpu_sched_t mode, size_t n) {
  double t_start = mgpu__now();
  mgpu_test_config_t cfg = mgpu_test_config(cpus, emu);
  cfg.cfg.sched = mode;
  mgpu_runtime_t *rt;
  if ((mode == MGPU_SCHED_GPU && emu == 0) || (cpus == 0 && (mode == MGPU_SCHED_CPU || emu == 0))) {
    /* No worker, or a policy that leaves none: a clear error at init, not
     * at every submit. */
    const char *why = cpus == 0 && emu == 0 ? "MGPU_NUM_THREADS=0" : emu == 0 ? "MGPU_SCHED=gpu" : "MGPU_SCHED=cpu";
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_EINVAL);
    ck_assert_msg(strstr(mgpu_last_error(), why), "%s", mgpu_last_error());
    return;
  }
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  uint64_t *in = malloc(8 * (n ? n : 1)), *out = malloc(8 * (n ? n : 1));
  _Atomic uint32_t *cnt = calloc(n ? n : 1, sizeof *cnt);
  for (size_t i = 0; i < n; i++) in[i] = i, out[i] = 0;
  count_arg_t arg = {cnt};
  mgpu_batch_t b = {.kernel = &count_kernel, .n = n, .in = {in}, .out = {out}, .arg = &arg, .arg_size = sizeof arg};
  mgpu_worker_stats_t ws[8];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 8};
  mgpu_status_t s = mgpu_run(rt, &b, &st);
  ck_assert_msg(s == MGPU_OK, "cpus=%d emu=%d mode=%d n=%zu: %s", cpus, emu, mode, n, mgpu_last_error());
  /* Plain tests in the loop: each Check assertion writes to a pipe. */
  for (size_t i = 0; i < n; i++) {
    if (atomic_load(&cnt[i]) != 1)
      ck_abort_msg("item %zu ran %u times (cpus=%d emu=%d mode=%d n=%zu)", i, atomic_load(&cnt[i]), cpus, emu, mode, n);
    if (out[i] != i * 3 + 1) ck_abort_msg("item %zu wrong", i);
  }
  ck_assert_uint_eq(st.items, n);
  for (int w = 0; w < st.nworkers; w++) {
    if (mode == MGPU_SCHED_CPU) ck_assert(ws[w].kind == MGPU_WORKER_CPU || ws[w].items == 0);
    if (mode == MGPU_SCHED_GPU) ck_assert(ws[w].kind == MGPU_WORKER_GPU || ws[w].items == 0);
  }
  free(in);
  free(out);
  free(cnt);
  mgpu_finalize(rt);
  double took = mgpu__now() - t_start;
  if (took > 0.5) printf("exactly-once: cpus=%d emu=%d mode=%d n=%zu took %.2f s\n", cpus, emu, mode, n, took);
}

START_TEST(test_exactly_once) {
  static const size_t sizes[] = {0, 1, 2, 7919, 1000000};
  mgpu_sched_t mode = (mgpu_sched_t)(MGPU_SCHED_STEAL + _i);
  for (int cpus = 0; cpus <= 4; cpus++)
    for (int emu = 0; emu <= 3; emu++)
      for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        if (sizes[k] < 1000000 || mgpu_test_timing()) /* the million is too slow under valgrind */
          check_once(cpus, emu, mode, sizes[k]);
}
END_TEST

/* ------------------------------------------------------------ known-cost model */

typedef struct {
  double cpu_cost; /* seconds per item on a CPU worker */
} sleep_arg_t;

/* On a CPU worker it sleeps the item cost; on an emulated device the device's
 * emulated speed sets the time (chunk->stream is set there). */
static int sleep_cpu(const mgpu_chunk_t *c) {
  const sleep_arg_t *a = c->arg;
  if (!c->stream) mgpu_test_spend(a->cpu_cost * (double)c->count);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) ^ 0x5a5a5a5au;
  return 0;
}

static const mgpu_kernel_t sleep_kernel = {
    .name = "sleep", .cpu = sleep_cpu, .gpu = never_gpu, .nin = 0, .nout = 1, .out_size = {4}};

/* One batch of n items of kernel k (whose items write i ^ 0x5a5a5a5a),
 * checked; returns its time. */
static double run_footprint(mgpu_runtime_t *rt, const mgpu_kernel_t *k, const void *arg, size_t arg_size, size_t n,
                            uint64_t footprint, mgpu_worker_stats_t *ws, int cap, mgpu_stats_t *st_out) {
  uint32_t *out = malloc(4 * n);
  mgpu_batch_t b = MGPU_BATCH_INIT;
  b.kernel = k, b.n = n, b.out[0] = out, b.arg = arg, b.arg_size = arg_size, b.footprint = footprint;
  mgpu_stats_t st = {.worker = ws, .worker_cap = cap};
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  double t = mgpu__now() - t0;
  for (size_t i = 0; i < n; i++)
    if (out[i] != ((uint32_t)i ^ 0x5a5a5a5au)) ck_abort_msg("item %zu wrong", i);
  free(out);
  if (st_out) *st_out = st;
  return t;
}

static double run_marked(mgpu_runtime_t *rt, const mgpu_kernel_t *k, const void *arg, size_t arg_size, size_t n,
                         mgpu_worker_stats_t *ws, int cap, mgpu_stats_t *st_out) {
  return run_footprint(rt, k, arg, arg_size, n, 0, ws, cap, st_out);
}

static double run_sleep(mgpu_runtime_t *rt, size_t n, double cpu_cost, mgpu_worker_stats_t *ws, int cap,
                        mgpu_stats_t *st_out) {
  sleep_arg_t a = {cpu_cost};
  return run_marked(rt, &sleep_kernel, &a, sizeof a, n, ws, cap, st_out);
}

MGPU_TIMED_TEST(test_balance) {
  /* Two CPU workers at 20,000 items/s each, one emulated GPU 50x faster. */
  const double cpu_cost = 50e-6, gpu_speed = 1e6;
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.test.emulate_speed = gpu_speed;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_worker_stats_t ws[3];
  run_sleep(rt, 20000, cpu_cost, ws, 3, NULL); /* first batch: the model learns */
  const size_t n = 300000;
  double ideal = (double)n / (2 / cpu_cost + gpu_speed);
  mgpu_stats_t st = MGPU_STATS_INIT;
  /* Best of three: a busy machine delays thread wake-ups, not the scheduler. */
  double t = 1e9;
  for (int rep = 0; rep < 3 && t > ideal * 1.15; rep++) {
    double ti = run_sleep(rt, n, cpu_cost, ws, 3, &st);
    printf("balance: makespan %.3f s, ideal %.3f s (%.1f%% over); items cpu %llu + %llu, gpu %llu; steals %llu\n", ti,
           ideal, 100 * (ti / ideal - 1), (unsigned long long)ws[0].items, (unsigned long long)ws[1].items,
           (unsigned long long)ws[2].items, (unsigned long long)st.steals);
    if (ti < t) t = ti;
  }
  mgpu_timing_check(t <= ideal * 1.6, "makespan %.3f s is more than 60%% over the ideal %.3f s", t, ideal);
  /* The CPUs did take part (by their measured speed: not asserted under
   * sanitizers, whose load once made them look too slow to add 2%). */
  mgpu_timing_check(ws[0].items + ws[1].items > 0, "the CPU workers ran no item");
  /* They start with their share by completion time and run it from their
   * own ranges, not by many small steals (doc/tuning.md, "How work is
   * split"). */
  mgpu_timing_check(st.steals <= 12, "%llu steals in the batch: the CPU workers' first ranges fell short",
                    (unsigned long long)st.steals);
  mgpu_finalize(rt);
}
END_TEST

MGPU_TIMED_TEST(test_balance_irregular_first_batch) {
  /* No prior knowledge at all (ratio unknown): stealing still fixes the split. */
  const double cpu_cost = 100e-6, gpu_speed = 2e5;
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.test.emulate_speed = gpu_speed;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_worker_stats_t ws[3];
  const size_t n = 60000;
  double ideal = (double)n / (2 / cpu_cost + gpu_speed);
  mgpu_stats_t st = MGPU_STATS_INIT;
  double t = run_sleep(rt, n, cpu_cost, ws, 3, &st);
  printf("first batch: makespan %.3f s, ideal %.3f s, steals %llu\n", t, ideal, (unsigned long long)st.steals);
  ck_assert_uint_gt(st.steals, 0);
  mgpu_timing_check(t <= ideal * 2.5, "makespan %.3f s vs ideal %.3f s", t, ideal);
  mgpu_finalize(rt);
}
END_TEST

/* ------------------------------------------------------------ cost profile */

/* Items whose cost peaks thirtyfold in the middle of the batch, as the rows of
 * a Mandelbrot image do; on an emulated device a chunk sleeps its items' cost,
 * and the kernel notes each GPU's first chunk of the batch (where its range
 * began). */
typedef struct {
  size_t n;
  _Atomic uint32_t *done; /* per item: times computed */
} peak_arg_t;
static _Atomic size_t peak_begin[6];


static double peak_cost(size_t i, size_t n) {
  double x = ((double)i / (double)n - 0.5) / 0.15;
  return 1e-5 * (1 + 29 * exp(-x * x));
}

static int peak_fn(const mgpu_chunk_t *c) {
  const peak_arg_t *a = c->arg;
  double t = 0;
  for (size_t j = 0; j < c->count; j++) t += peak_cost(c->first + j, a->n);
  for (size_t j = 0; j < c->count && a->done; j++) atomic_fetch_add(&a->done[c->first + j], 1);
  mgpu_test_spend(c->stream ? t : 50 * t);
  if (c->stream && c->worker >= 1 && c->worker <= 5) {
    size_t none = SIZE_MAX;
    atomic_compare_exchange_strong(&peak_begin[c->worker], &none, c->first);
  }
  return 0;
}


MGPU_TIMED_TEST(test_cost_profile_split) {
  /* Four alike GPUs, GPU-only. Split by items per second, learnt on
   * whichever rows each did last, the split moved from batch to batch; split
   * by the cost profile, each GPU's range begins where its share of the cost
   * does. Judged in cost: how far from its ideal start each range begins, as a
   * share of one GPU's ideal cost. */
  enum { GPUS = 4, BATCHES = 16, LAST = 8 };
  mgpu_test_config_t cfg = mgpu_test_config(1, GPUS);
  cfg.cfg.sched = MGPU_SCHED_GPU;
  /* One chunk in flight a GPU, so that the first chunk each one runs is the
   * first it claimed (an emulated device runs its streams' kernels in any
   * order), which begins its range. */
  cfg.cfg.streams_per_gpu = 1;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_kernel_t k = {.name = "peak", .cpu = peak_fn, .gpu = never_gpu};
  const size_t n = 4096;
  double *cum = malloc((n + 1) * sizeof *cum);
  cum[0] = 0;
  for (size_t i = 0; i < n; i++) cum[i + 1] = cum[i] + peak_cost(i, n);
  double part = cum[n] / GPUS, worst[LAST];
  _Atomic uint32_t *done = calloc(n, sizeof *done);
  for (int bi = 0; bi < BATCHES; bi++) {
    peak_arg_t a = {.n = n, .done = done};
    for (int w = 0; w <= GPUS; w++) atomic_store(&peak_begin[w], SIZE_MAX);
    for (size_t i = 0; i < n; i++) atomic_store(&done[i], 0);
    mgpu_batch_t b = {.kernel = &k, .n = n, .arg = &a, .arg_size = sizeof a};
    ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
    /* From the third batch on, GPUs size chunks and steal by cost: each item once all the same. */
    for (size_t i = 0; i < n; i++)
      if (atomic_load(&done[i]) != 1) ck_abort_msg("batch %d: item %zu computed %u times", bi, i, atomic_load(&done[i]));
    if (bi < BATCHES - LAST) continue;
    double off = 0;
    printf("cost profile split: batch %d, GPU ranges begin at", bi);
    for (int g = 1; g < GPUS; g++) {
      size_t at = atomic_load(&peak_begin[1 + g]);
      ck_assert_uint_lt(at, n);
      off = fmax(off, fabs(cum[at] - g * part) / part);
      printf(" %zu", at);
    }
    printf(": %.0f%% of a share off\n", 100 * off);
    worst[bi - (BATCHES - LAST)] = off;
  }
  mgpu_finalize(rt);
  free(cum);
  free(done);
  /* In half the batches or more, every range begins within a quarter of a
   * share of its place (split by speeds: in none, most of a share off). */
  int near = 0;
  for (int i = 0; i < LAST; i++) near += worst[i] <= 0.25;
  mgpu_timing_check(near >= LAST / 2, "only %d of the last %d batches split within 25%%", near, LAST);
}
END_TEST

/* A latency-bound emulated device: each launch takes 5 ms, and it runs 2048
 * items at once in waves of 1.024 ms (2e6 items/s): a launch costs about the
 * same for one item as for 2048, and 16,384 items take 13.2 ms as one. */
#define LB_LATENCY 5e-3
#define LB_WIDTH 2048
#define LB_SPEED 2e6
static double lb_launch(size_t n) {
  return LB_LATENCY + ceil((double)n / LB_WIDTH) * LB_WIDTH / LB_SPEED;
}
static mgpu_runtime_t *lb_runtime(int cpus, mgpu_sched_t mode) {
  mgpu_test_config_t cfg = mgpu_test_config(cpus, 1);
  cfg.cfg.sched = mode;
  cfg.test.emulate_latency = LB_LATENCY;
  cfg.test.emulate_width = LB_WIDTH;
  cfg.test.emulate_speed = LB_SPEED;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  return rt;
}

/* GPU-only on the latency-bound device: chunks sized by their rate alone
 * stay at a few items (a launch of one item looks 2000 times slower than the
 * device), and the batch takes thousands of launches (over 20 times the one
 * launch). From a probe, the chunks grow until the rate stops rising: the
 * first batch takes a few launches, the next ones one or two. */
START_TEST(test_latency_bound_gpu_only) {
  mgpu_runtime_t *rt = lb_runtime(1, MGPU_SCHED_GPU);
  const size_t n = 16384;
  double one = lb_launch(n);
  mgpu_worker_stats_t ws[2];
  for (int b = 0; b < 3; b++) {
    mgpu_stats_t st;
    double t = run_sleep(rt, n, 0, ws, 2, &st);
    printf("latency-bound, GPU only, batch %d: %.4f s in %llu launches, one launch %.4f s (%.1fx)\n", b, t,
           (unsigned long long)ws[1].chunks, one, t / one);
    ck_assert_uint_eq(ws[1].items, n);
    /* The first batch's launches grow from a probe: their number depends on
     * how the streams' timings fall; from the second on, one or two. */
    if (b > 0) ck_assert_uint_le(ws[1].chunks, 2);
    ck_assert_msg(t < 20 * one, "batch %d took %.3f s, %.0f times one launch", b, t, t / one);
  }
  mgpu_finalize(rt);
}
END_TEST

/* Steal mode with two CPU workers (1e4 items/s each) beside the
 * latency-bound device: the CPU workers must not starve it. 65,536 items are
 * 38 ms as one launch and 3.3 s on the CPU workers; judged by the rate of
 * small probe chunks the device looks slower than one core, gets a sliver
 * of the split and has its range stolen. By predicted completion time it
 * takes nearly all. */
START_TEST(test_latency_bound_steal) {
  mgpu_runtime_t *rt = lb_runtime(2, MGPU_SCHED_STEAL);
  const size_t n = 65536;
  double one = lb_launch(n);
  mgpu_worker_stats_t ws[3];
  for (int b = 0; b < 4; b++) {
    mgpu_stats_t st;
    double t = run_sleep(rt, n, 100e-6, ws, 3, &st);
    printf("latency-bound, steal, batch %d: %.4f s; GPU %llu items in %llu launches, CPU %llu + %llu; one launch "
           "%.4f s\n",
           b, t, (unsigned long long)ws[2].items, (unsigned long long)ws[2].chunks, (unsigned long long)ws[0].items,
           (unsigned long long)ws[1].items, one);
    if (b == 0) continue; /* the model learns */
    ck_assert_uint_ge(ws[2].items, (size_t)(0.9 * (double)n));
    ck_assert_msg(t < 10 * one, "batch %d took %.3f s, %.0f times the device's one launch", b, t, t / one);
  }
  mgpu_finalize(rt);
}
END_TEST

/* The reverse shape: a device whose launch (50 ms) outlasts the CPU
 * workers' whole batch (40 items of 1 ms on two workers, 20 ms), under a
 * prior that rates the device 100 cores. Judged by rates the CPU workers
 * look 50 times slower: with no share and no measurement of them they never
 * run an item, and once measured the far slower ones would be skipped as
 * adding little. By predicted completion time they take the
 * batch and the device none of it. Three devices of that shape: a launch
 * latency, a launch as long for 1 item as for the device's width of 64 (no
 * latency to see where every launch is one size), and a launch latency with
 * launches side by side on four streams, where the fit learns the latency
 * only by joining each chunk to the one it ran beside. */
MGPU_TIMED_TEST(test_latency_bound_cpus_first) {
  static const char *const shapes[] = {"latency", "width", "latency, side by side"};
  for (int shape = 0; shape < 3; shape++) {
    mgpu_test_config_t cfg = mgpu_test_config(2, 1);
    cfg.cfg.device_to_core_ratio = 100;
    /* One launch at a time (each chunk's time is its own), or four at once. */
    cfg.cfg.streams_per_gpu = shape == 2 ? 4 : 1;
    const double launch = 50e-3;
    if (shape != 1) {
      cfg.test.emulate_latency = launch;
      cfg.test.emulate_speed = 1e6;
      cfg.test.emulate_overlap = shape == 2;
    } else {
      cfg.test.emulate_width = 64;
      cfg.test.emulate_speed = 64 / launch;
    }
    mgpu_runtime_t *rt;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    const size_t n = 40;
    const double cpu_cost = 1e-3;
    mgpu_worker_stats_t ws[3];
    for (int b = 0; b < 7; b++) {
      mgpu_stats_t st;
      double t = run_sleep(rt, n, cpu_cost, ws, 3, &st);
      printf("launch-bound device (%s) beside faster CPU workers, batch %d: %.4f s; CPU %llu + %llu items, GPU %llu\n",
             shapes[shape], b, t, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items,
             (unsigned long long)ws[2].items);
      /* The model learns both sides: the GPU from the first batch, the CPU
       * workers from their probe, one item each, in the second; the GPU's
       * latency shows once it has run two sizes of launch (the probe's and
       * the split's), and its last timing can come in after a batch starts. */
      if (b < 4) continue;
      ck_assert_uint_eq(ws[2].items, 0);
      mgpu_timing_check(t < 0.7 * launch, "batch %d took %.3f s", b, t);
    }
    mgpu_finalize(rt);
  }
}
END_TEST

/* A device whose launches on different streams run side by side, as a real
 * device's latency-bound kernels do (MGPU_EMULATE_OVERLAP): any launch takes
 * 50 ms, its items 1 us each. A chunk that ends just after another one that
 * ran beside it is credited only the moment between their ends; learnt as a
 * chunk of its own it makes items look nearly free, and the GPU's fit never
 * sees the launch's latency (doc/tuning.md, "Completion times", has the
 * figures). Joined to the chunk it ran beside, the fit learns the latency and
 * predicts the batch. */
MGPU_TIMED_TEST(test_overlapped_launches) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 1);
  cfg.cfg.sched = MGPU_SCHED_GPU;
  const double launch = 50e-3;
  cfg.test.emulate_overlap = 1;
  cfg.test.emulate_latency = launch;
  cfg.test.emulate_speed = 1e6;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 4096;
  mgpu_worker_stats_t ws[2];
  for (int b = 0; b < 6; b++) {
    double t = run_sleep(rt, n, 0, ws, 2, NULL);
    MGPU_LOCK(&rt->lock, MGPU_LK_RT);
    const mgpu__fit_t *f = &mgpu__model_get(rt, &sleep_kernel, 0)->fit[1];
    double a = f->line.a, pred = mgpu__fit_time(f, (double)n), nmax = f->knee.top.n;
    size_t claimed = f->claims.largest;
    MGPU_UNLOCK(&rt->lock);
    printf("overlapped launches, batch %d: %.4f s in %llu launches; the GPU's fit %.4f s + %.3g s/item, %.4f s for "
           "the batch; largest size class %.0f, largest claim %zu\n",
           b, t, (unsigned long long)ws[1].chunks, a, f->line.c, pred, nmax, claimed);
    ck_assert_uint_eq(ws[1].items, n);
    /* The first batch's launches grow from a probe, side by side. */
    if (b < 2 || !mgpu_test_timing()) continue;
    mgpu_timing_check(a >= 0.5 * launch, "batch %d: the fit's latency is %.4f s, a launch %.4f s", b, a, launch);
    mgpu_timing_check(pred >= 0.8 * t && pred <= 1.25 * t,
                      "batch %d: the fit gives the batch %.4f s, it took %.4f s", b, pred, t);
  }
  mgpu_finalize(rt);
}
END_TEST

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A latency-bound GPU (a 20 ms launch, 4,096 items a wave at 1e7 items/s)
 * beside one CPU worker at 1e5 items/s, 20,000 items: one launch takes 22 ms,
 * and the CPU worker can add about 2,000 items in it. A split that counted
 * the launch latency on top of the GPU's rate at its chunks' size (which
 * holds it already) predicted the GPU's share twice the latency long, gave
 * the CPU worker about twice what it finishes in one launch, and every batch
 * took 28 to 53 ms (test-policy's test_split_counts_latency_once_with_peak has the numbers). */
MGPU_TIMED_TEST(test_latency_counted_once) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 1);
  cfg.test.emulate_latency = 20e-3;
  cfg.test.emulate_width = 4096;
  cfg.test.emulate_speed = 1e7;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 20000;
  const double one = 20e-3 + 5 * 4096 / 1e7;
  mgpu_worker_stats_t ws[2];
  double t[8];
  for (int b = 0; b < 8; b++) {
    t[b] = run_sleep(rt, n, 1e-5, ws, 2, NULL);
    printf("latency-bound GPU beside a CPU worker, batch %d: %.4f s (one launch %.4f s); CPU %llu items, GPU %llu\n", b,
           t[b], one, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items);
  }
  /* The model learns in the first batches; the median of the rest. */
  qsort(t + 3, 5, sizeof *t, cmp_dbl);
  mgpu_timing_check(t[5] < 1.2 * one, "median batch %.4f s, one launch %.4f s", t[5], one);
  mgpu_finalize(rt);
}
END_TEST

/* A CPU kernel with a fixed cost per call (2 ms of set-up, then 1e5 items/s)
 * on two CPU workers, 4,000 items: each worker's half takes 20 ms and one
 * call's set-up. Chunks sized by the mean rate alone, which holds the set-up,
 * shrank to one item a call, and every batch took 4 s. */
typedef struct {
  double call_s, item_s; /* seconds per call and per item */
  atomic_int *calls;     /* calls made */
} setup_arg_t;

static int setup_cpu(const mgpu_chunk_t *c) {
  const setup_arg_t *a = c->arg;
  atomic_fetch_add(a->calls, 1);
  mgpu_test_sleep(a->call_s);
  mgpu_test_spend(a->item_s * (double)c->count);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) ^ 0x5a5a5a5au;
  return 0;
}

static const mgpu_kernel_t setup_kernel = {
    .name = "setup", .cpu = setup_cpu, .gpu = NULL, .nin = 0, .nout = 1, .out_size = {4}};

MGPU_TIMED_TEST(test_cpu_cost_per_call) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 0);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 4000;
  atomic_int calls = 0;
  const setup_arg_t a = {2e-3, 1e-5, &calls};
  const double ideal = a.call_s + (double)n / 2 * a.item_s;
  mgpu_worker_stats_t ws[2];
  mgpu_stats_t st;
  double t[6];
  for (int b = 0; b < 6; b++) {
    atomic_store(&calls, 0);
    t[b] = run_marked(rt, &setup_kernel, &a, sizeof a, n, ws, 2, &st);
    unsigned long long chunks = ws[0].chunks + ws[1].chunks;
    printf("CPU kernel with 2 ms a call, batch %d: %.4f s (ideal %.4f s); %llu + %llu items in %llu chunks, %d calls\n",
           b, t[b], ideal, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items, chunks,
           atomic_load(&calls));
    /* Items handed back are run in chunks of the same rule: a hand-back
     * whose cost per item held the cost per call ran them one a chunk. */
    if (b > 0) mgpu_timing_check(chunks <= 8, "batch %d ran in %llu chunks", b, chunks);
  }
  /* The first batches learn the cost; the median of the last three. */
  qsort(t + 3, 3, sizeof *t, cmp_dbl);
  mgpu_timing_check(t[4] < 3 * ideal, "median batch %.4f s, ideal %.4f s", t[4], ideal);
  mgpu_finalize(rt);
}
END_TEST

/* A kernel whose GPU cost changes for good, 1,000 times dearer per item,
 * beside one CPU worker that it leaves unchanged. */
typedef struct {
  double gpu_s, cpu_s; /* seconds per item on the (emulated) GPU and on a CPU worker */
} shift_arg_t;

static int shift_fn(const mgpu_chunk_t *c) {
  const shift_arg_t *a = c->arg;
  mgpu_test_spend((c->stream ? a->gpu_s : a->cpu_s) * (double)c->count);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) ^ 0x5a5a5a5au;
  return 0;
}

static const mgpu_kernel_t shift_kernel = {
    .name = "shift", .cpu = shift_fn, .gpu = shift_fn, .nin = 0, .nout = 1, .out_size = {4}};

static double run_shift(mgpu_runtime_t *rt, size_t n, shift_arg_t a, mgpu_worker_stats_t *ws) {
  return run_marked(rt, &shift_kernel, &a, sizeof a, n, ws, 2, NULL);
}

/* The fit of a GPU whose batches run far off its prediction two in a row
 * starts over: weighed as stalls of the OS, such chunks moved the line only
 * over tens of batches, and every batch in between gave the GPU nearly all
 * the items at the old cost. */
MGPU_TIMED_TEST(test_cost_changes_for_good) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 4000;
  mgpu_worker_stats_t ws[2];
  shift_arg_t cheap = {1e-7, 1e-5}, dear = {1e-4, 1e-5};
  for (int b = 0; b < 10; b++) run_shift(rt, n, cheap, ws);
  const double ideal = n / (1 / dear.gpu_s + 1 / dear.cpu_s), gpu_alone = n * dear.gpu_s;
  double t[8];
  for (int b = 0; b < 8; b++) {
    t[b] = run_shift(rt, n, dear, ws);
    printf("GPU 1000x dearer for good, batch %d: %.4f s (ideal %.4f s, GPU alone %.4f s); CPU %llu items, GPU %llu\n",
           b, t[b], ideal, gpu_alone, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items);
  }
  /* 40 to 55 ms on an idle two-core machine, 70 to 140 ms where its host
   * takes the vCPUs at times (a CPU worker's short sleeps then overrun); an
   * old fit kept gives 0.4 s. */
  for (int b = 4; b < 8; b++)
    mgpu_timing_check(t[b] < 4 * ideal, "batch %d took %.4f s, ideal %.4f s", b, t[b], ideal);
  /* And back: the GPU's chunks run far under the dear line, and it takes
   * the batch again. */
  for (int b = 0; b < 8; b++) {
    t[b] = run_shift(rt, n, cheap, ws);
    printf("GPU cheap again, batch %d: %.4f s; CPU %llu items, GPU %llu\n", b, t[b], (unsigned long long)ws[0].items,
           (unsigned long long)ws[1].items);
  }
  mgpu_speed_check(ws[1].items >= n * 9 / 10, "the GPU ran %llu of %zu items", (unsigned long long)ws[1].items, n);
  mgpu_finalize(rt);
}
END_TEST

/* One kernel whose GPU cost depends on its argument, cheap and 1,000 times
 * dearer in turn, batch after batch, beside one CPU worker: one model for
 * both is always the other batch's, and each dear batch puts all 4,000
 * items in one GPU launch of 0.4 s (11 times the best split's 36 ms). With
 * a footprint for each cost, each is split by its own model. */
MGPU_TIMED_TEST(test_footprint_alternating) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 4000;
  mgpu_worker_stats_t ws[2];
  const shift_arg_t cost[2] = {{1e-7, 1e-5}, {1e-4, 1e-5}};
  const double ideal = n / (1 / cost[1].gpu_s + 1 / cost[1].cpu_s);
  double dear[8];
  for (int b = 0; b < 24; b++) {
    int d = b % 2;
    double t = run_footprint(rt, &shift_kernel, &cost[d], sizeof cost[d], n, d ? 2 : 1, ws, 2, NULL);
    printf("GPU cheap and 1000x dearer in turn, footprints 1 and 2, batch %d (%s): %.4f s; CPU %llu items, GPU %llu\n",
           b, d ? "dear" : "cheap", t, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items);
    if (d && b >= 8) dear[(b - 8) / 2] = t;
    if (!d && b >= 8)
      mgpu_speed_check(ws[1].items >= n * 9 / 10, "cheap batch %d: the GPU ran %llu of %zu items", b,
                    (unsigned long long)ws[1].items, n);
  }
  /* 37 to 41 ms on an idle two-core machine, 80 to 105 ms where its host
   * takes a tenth of its time; one model for both costs: 0.4 s. */
  qsort(dear, 8, sizeof *dear, cmp_dbl);
  mgpu_timing_check(dear[4] < 4 * ideal, "median dear batch %.4f s, ideal %.4f s", dear[4], ideal);
  /* One model each, and none for footprint 0. */
  int models = 0;
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  for (const mgpu__model_t *m = rt->models; m; m = m->next) {
    ck_assert(m->footprint == 1 || m->footprint == 2);
    models++;
  }
  MGPU_UNLOCK(&rt->lock);
  ck_assert_int_eq(models, 2);
  mgpu_finalize(rt);
}
END_TEST

/* Launches side by side at MGPU_MAX_BATCH_SIZE (256 items, four streams, a
 * launch 20 ms): the GPU's host thread joins each launch to those it ran
 * beside into one sample (gpu_chunk.c), which tells the growth of launches
 * of the largest of them, not of one launch of their total: no size class
 * is larger than a launch. */
START_TEST(test_joined_launch_sizes) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 1);
  cfg.cfg.sched = MGPU_SCHED_GPU;
  cfg.cfg.streams_per_gpu = 4;
  cfg.cfg.max_batch_size = 256;
  cfg.test.emulate_overlap = 1;
  cfg.test.emulate_latency = 20e-3;
  cfg.test.emulate_speed = 1e6;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 4096;
  mgpu_worker_stats_t ws[2];
  for (int b = 0; b < 3; b++) {
    double t = run_sleep(rt, n, 0, ws, 2, NULL);
    MGPU_LOCK(&rt->lock, MGPU_LK_RT);
    const mgpu__fit_t *f = &mgpu__model_get(rt, &sleep_kernel, 0)->fit[1];
    double nmax = f->knee.top.n;
    size_t claimed = f->claims.largest;
    MGPU_UNLOCK(&rt->lock);
    printf("launches side by side at the cap, batch %d: %.4f s in %llu launches; largest size class %.0f, largest "
           "launch %zu\n",
           b, t, (unsigned long long)ws[1].chunks, nmax, claimed);
    ck_assert_uint_eq(ws[1].items, n);
    ck_assert_uint_le(claimed, 256);
    ck_assert_msg(nmax <= (double)claimed, "batch %d: a size class of %.0f items, the largest launch %zu", b, nmax,
                  claimed);
  }
  mgpu_finalize(rt);
}
END_TEST

/* A batch of one item, which costs a 50 ms launch on the device and 5 ms on
 * a CPU worker, under a prior that rates the device 100 cores: the GPU runs
 * the first batch, the CPU workers' probe takes the only item of the next
 * (a GPU keeps one item of a larger batch), and from then on a CPU worker
 * runs it. */
MGPU_TIMED_TEST(test_one_item_batch) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.cfg.device_to_core_ratio = 100;
  const double launch = 50e-3, cpu_cost = 5e-3;
  cfg.test.emulate_latency = launch;
  cfg.test.emulate_speed = 1e6;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_worker_stats_t ws[3];
  for (int b = 0; b < 6; b++) {
    double t = run_sleep(rt, 1, cpu_cost, ws, 3, NULL);
    printf("one item, a 50 ms launch against 5 ms on a CPU worker, batch %d: %.4f s; CPU %llu + %llu, GPU %llu\n", b,
           t, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items, (unsigned long long)ws[2].items);
    if (b < 2) continue;
    mgpu_speed_check(ws[2].items == 0, "batch %d: the GPU ran the item", b);
    mgpu_timing_check(t < 0.5 * launch, "batch %d took %.3f s", b, t);
  }
  mgpu_finalize(rt);
}
END_TEST

/* The probe of the test above on short batches: beside a GPU that runs a
 * batch in about 1 ms, under a prior that gives each CPU worker under one
 * item, the CPU workers (1,000 times slower than the GPU) probe the kernel
 * once the GPU has spent 10 ms on it, one item each in one batch, and then
 * sit out: they would add 0.2%. */
MGPU_TIMED_TEST(test_probe_short_batches_once) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.cfg.device_to_core_ratio = 1000;
  cfg.test.emulate_speed = 1e6;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_worker_stats_t ws[3];
  int probes = 0;
  unsigned long long cpu_items = 0;
  for (int b = 0; b < 24; b++) {
    mgpu_stats_t st;
    run_sleep(rt, 1000, 1e-3, ws, 3, &st);
    unsigned long long cpu = ws[0].items + ws[1].items;
    probes += cpu > 0;
    cpu_items += cpu;
  }
  printf("short batches beside CPU workers 1000x slower: %d batches with CPU items, %llu items\n", probes, cpu_items);
  /* The probe ran; and only it, where the clocks are not slowed: under
   * valgrind a CPU worker's chunk costs far more than its items, and by the
   * measured speeds a thief may take an item of a later batch. */
  ck_assert_int_ge(probes, 1);
  mgpu_timing_check(probes == 1 && cpu_items <= 2, "%d batches with CPU items, %llu items", probes, cpu_items);
  mgpu_finalize(rt);
}
END_TEST

/* Chunks that ran to their end in a canceled batch teach the model like any
 * other: an emulated GPU whose launch takes 0.3 s, first met in a batch
 * canceled while that launch ran, gets no item of the next batch, which the
 * two CPU workers finish in about 2 ms (400 items of 10 us). Unlearnt, the
 * GPU would be planned on the prior again, and the next batch would wait for
 * another launch. */
START_TEST(test_canceled_batch_teaches) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.test.emulate_latency = 0.3;
  cfg.test.emulate_speed = 1e9;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 400, first = 40000; /* the first batch: 0.2 s of the CPU workers' */
  sleep_arg_t a = {1e-5};
  uint32_t *out = malloc(4 * first);
  mgpu_batch_t b = MGPU_BATCH_INIT;
  b.kernel = &sleep_kernel, b.n = first, b.out[0] = out, b.arg = &a, b.arg_size = sizeof a;
  mgpu_event_t *ev;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  mgpu_worker_stats_t ws[3];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 3};
  mgpu__nap(0.05); /* the GPU's launch is under way */
  ck_assert_int_eq(mgpu_event_cancel(ev), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(ev, &st), MGPU_ECANCELED);
  mgpu_event_release(ev);
  printf("canceled batch: GPU %llu items\n", (unsigned long long)ws[2].items);
  ck_assert_uint_ge(ws[2].items, 1); /* the launch that the next batch learns from */
  double t = run_sleep(rt, n, a.cpu_cost, ws, 3, NULL);
  printf("the batch after it: %.4f s; CPU %llu + %llu items, GPU %llu\n", t, (unsigned long long)ws[0].items,
         (unsigned long long)ws[1].items, (unsigned long long)ws[2].items);
  ck_assert_msg(ws[2].items == 0, "the GPU ran %llu items, in a launch of 0.3 s", (unsigned long long)ws[2].items);
  free(out);
  mgpu_finalize(rt);
}
END_TEST

/* A prior that rates the GPU at a hundredth of a CPU worker
 * (MGPU_DEVICE_TO_CORE_RATIO=0.01), in batches of 64 items that two CPU
 * workers take 32 ms over: the GPU's share is under MGPU_MIN_SHARE_ITEMS in
 * every batch, and as a far slower thief it takes nothing. Once the CPU
 * workers have spent 10 ms on the kernel the GPU probes it with one item.
 * A GPU 1,000 times faster than a CPU worker then runs the batches (0.1 ms
 * each, not 32 ms); one 10 times slower runs its probe and nothing else. */
MGPU_TIMED_TEST(test_gpu_probe_low_ratio) {
  for (int fast = 1; fast >= 0; fast--) {
    mgpu_test_config_t cfg = mgpu_test_config(2, 1);
    cfg.cfg.device_to_core_ratio = 0.01;
    cfg.test.emulate_speed = fast ? 1e6 : 100;
    mgpu_runtime_t *rt;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    const size_t n = 64;
    const double cpu_alone = n / 2 * 1e-3;
    mgpu_worker_stats_t ws[3];
    double t[12];
    int gpu_batches = 0;
    unsigned long long gpu_items = 0;
    for (int b = 0; b < 12; b++) {
      t[b] = run_sleep(rt, n, 1e-3, ws, 3, NULL);
      printf("GPU %s under a prior of 0.01, batch %d: %.4f s (CPU alone %.4f s); CPU %llu + %llu items, GPU %llu\n",
             fast ? "1000x faster" : "10x slower", b, t[b], cpu_alone, (unsigned long long)ws[0].items,
             (unsigned long long)ws[1].items, (unsigned long long)ws[2].items);
      gpu_batches += ws[2].items > 0;
      gpu_items += ws[2].items;
      if (fast && b >= 3)
        mgpu_speed_check(ws[2].items >= n * 9 / 10, "batch %d: the GPU ran %llu of %zu items", b,
                      (unsigned long long)ws[2].items, n);
    }
    if (fast) {
      qsort(t + 3, 9, sizeof *t, cmp_dbl);
      mgpu_timing_check(t[7] < 0.25 * cpu_alone, "median batch %.4f s, CPU alone %.4f s", t[7], cpu_alone);
    } else {
      /* The probe ran; and only it, where the clocks are not slowed
       * (valgrind and the sanitizers slow the CPU workers' chunks, and
       * by the measured speeds a GPU thief may then take an item more). */
      ck_assert_int_ge(gpu_batches, 1);
      mgpu_timing_check(gpu_batches == 1 && gpu_items == 1, "the GPU ran %llu items in %d batches", gpu_items,
                        gpu_batches);
    }
    mgpu_finalize(rt);
  }
}
END_TEST

/* A kernel that runs 20 times slower on the GPU (1e4 items/s) than on the
 * two CPU workers (1e5 items/s each), in batches of 40 items the GPU takes
 * 4 ms over, under a prior that rates the GPU 1,000 cores: no batch's GPU
 * share is long, but once the GPU has spent 10 ms on the kernel the CPU
 * workers probe it, and from then on they run nearly every item. */
MGPU_TIMED_TEST(test_gpu_slow_short_batches) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.cfg.device_to_core_ratio = 1000;
  cfg.test.emulate_speed = 1e4;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 40;
  const double gpu_alone = n / 1e4;
  mgpu_worker_stats_t ws[3];
  double t[12];
  for (int b = 0; b < 12; b++) {
    t[b] = run_sleep(rt, n, 1e-5, ws, 3, NULL);
    printf("kernel slower on the GPU, batch %d: %.4f s (GPU alone %.4f s); CPU %llu + %llu items, GPU %llu\n", b, t[b],
           gpu_alone, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items,
           (unsigned long long)ws[2].items);
    /* Not under valgrind or the sanitizers (MGPURT_NO_TIMING): they slow
     * the CPU workers' chunks of 10 us items, not the emulated GPU's
     * sleeps, and the measured speeds then rightly give the GPU more. */
    if (b >= 6)
      mgpu_timing_check(ws[2].items <= n / 4, "batch %d: the GPU ran %llu of %zu items", b,
                        (unsigned long long)ws[2].items, n);
  }
  qsort(t + 6, 6, sizeof *t, cmp_dbl);
  mgpu_timing_check(t[9] < 0.5 * gpu_alone, "median batch %.4f s, GPU alone %.4f s", t[9], gpu_alone);
  /* The workers slept between batches: their start was learnt. */
  double start = mgpu__start_cost(rt);
  printf("the CPU team's start: %.3g s\n", start);
  ck_assert(start > 0 && start < 1);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_tail_rule) {
  /* A GPU 5000x faster than a CPU worker: no CPU item may delay the batch. */
  const double gpu_speed = 1e5, cpu_cost = 5000 / gpu_speed; /* 50 ms per CPU item */
  for (int known = 0; known < 2; known++) {
    mgpu_test_config_t cfg = mgpu_test_config(2, 1);
    cfg.test.emulate_speed = gpu_speed;
    if (known) cfg.cfg.device_to_core_ratio = 5000;
    mgpu_runtime_t *rt;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    mgpu_worker_stats_t ws[3];
    if (!known) { /* learn the speeds: the first batch starts from nothing */
      run_sleep(rt, 3000, cpu_cost, ws, 3, NULL);
      run_sleep(rt, 3000, cpu_cost, ws, 3, NULL);
    }
    const size_t n = 2000;                                 /* 20 ms on the GPU alone */
    double gpu_only = (double)n / gpu_speed;
    double t = run_sleep(rt, n, cpu_cost, ws, 3, NULL);
    printf("tail rule (%s): %.4f s, GPU alone %.4f s; CPU items %llu, %llu\n", known ? "ratio given" : "measured", t,
           gpu_only, (unsigned long long)ws[0].items, (unsigned long long)ws[1].items);
    /* No CPU item, so none delayed the batch (the time is printed, not
     * bounded: a loaded machine stretches it). */
    ck_assert_uint_eq(ws[0].items + ws[1].items, 0);
    ck_assert_uint_eq(ws[2].items, n);
    mgpu_finalize(rt);
  }
}
END_TEST

/* CPU workers that together are measured to add under 1% to the GPUs sit the
 * batch out (on 4 x H200, adding 0.5% and less, their cost to the GPUs' host
 * threads was more than they added); where they add more, they take part.
 * The cases, 0.25%, 6.7% and 10%, lie four times or more from the 1%: on a
 * loaded 2-core machine a rate learnt in the first batches was seen 2.5
 * times under the emulated GPU's (4e6 items/s measured 1.5e6) and 4 times
 * under the CPU workers' own. Under the auto reserve (on the first case), a
 * batch they all sit out reports no reserve: it played no part. Whether they
 * sit out follows measured speeds, which valgrind (MGPURT_NO_TIMING)
 * distorts either way by running one thread at a time: there only the items
 * are checked. */
MGPU_TIMED_TEST(test_cpus_sit_out) {
  const double cpu_cost = 100e-6; /* two CPU workers: 2e4 items/s */
  const double gpu_speeds[] = {8e6, 3e5, 2e5};
  for (int k = 0; k < 3; k++) {
    mgpu_test_config_t cfg = mgpu_test_config(2, 1);
    cfg.test.emulate_speed = gpu_speeds[k];
    if (k == 0) cfg.cfg.reserve_threads = MGPU_RESERVE_AUTO;
    mgpu_runtime_t *rt;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    mgpu_worker_stats_t ws[3];
    /* The model learns both kinds, in two batches, the second 20 ms of the
     * GPU's work: after one of 20,000 items (2.5 ms at 8e6 items/s), the
     * GPU's chunks have not all grown to the device's rate. */
    run_sleep(rt, 20000, cpu_cost, ws, 3, NULL);
    ck_assert_uint_gt(ws[0].items + ws[1].items, 0);
    run_sleep(rt, (size_t)fmax(20000, gpu_speeds[k] * 0.02), cpu_cost, ws, 3, NULL);
    uint64_t cpu_items = 0;
    const size_t n = (size_t)(gpu_speeds[k] * 0.05);
    for (int rep = 0; rep < 3; rep++) {
      mgpu_stats_t st = MGPU_STATS_INIT;
      run_sleep(rt, n, cpu_cost, ws, 3, &st);
      cpu_items += ws[0].items + ws[1].items;
      if (k == 0) mgpu_timing_check(st.reserve_workers == 0, "%d CPU workers kept out", st.reserve_workers);
    }
    printf("sit out: GPU %.2g items/s, CPU workers %.2g: CPU items %llu of %zu\n", gpu_speeds[k], 2 / cpu_cost,
           (unsigned long long)cpu_items, 3 * n);
    mgpu_timing_check(k == 0 ? cpu_items == 0 : cpu_items > 0, "GPU at %.2g items/s: %llu CPU items", gpu_speeds[k],
                      (unsigned long long)cpu_items);
    mgpu_finalize(rt);
  }
}
END_TEST

/* Reserve workers (MGPU_RESERVE_THREADS) take no item of a batch that a GPU
 * also runs, and their share of a batch without a GPU function. */
START_TEST(test_reserve_workers) {
  mgpu_test_config_t cfg = mgpu_test_config(3, 1);
  cfg.test.emulate_speed = 1e5;
  cfg.cfg.reserve_threads = 2;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_worker_stats_t ws[4];
  for (int rep = 0; rep < 3; rep++) {
    run_sleep(rt, 4000, 50e-6, ws, 4, NULL);
    printf("reserve: GPU batch: items %llu %llu %llu, gpu %llu\n", (unsigned long long)ws[0].items,
           (unsigned long long)ws[1].items, (unsigned long long)ws[2].items, (unsigned long long)ws[3].items);
    ck_assert_uint_eq(ws[1].items + ws[2].items, 0);
    ck_assert_uint_eq(ws[0].items + ws[3].items, 4000);
  }
  /* The same work without a GPU function: every CPU worker takes part. */
  static const mgpu_kernel_t cpu_only = {.name = "sleep-cpu", .cpu = sleep_cpu, .nin = 0, .nout = 1, .out_size = {4}};
  const size_t n = 3000;
  uint32_t *out = malloc(4 * n);
  sleep_arg_t a = {100e-6};
  mgpu_batch_t b = {.kernel = &cpu_only, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  mgpu_stats_t st = {.worker = ws, .worker_cap = 4};
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  for (size_t i = 0; i < n; i++)
    if (out[i] != ((uint32_t)i ^ 0x5a5a5a5au)) ck_abort_msg("item %zu wrong", i);
  printf("reserve: CPU-only batch: items %llu %llu %llu\n", (unsigned long long)ws[0].items,
         (unsigned long long)ws[1].items, (unsigned long long)ws[2].items);
  ck_assert_uint_gt(ws[1].items, 0);
  ck_assert_uint_gt(ws[2].items, 0);
  ck_assert_uint_eq(ws[0].items + ws[1].items + ws[2].items, n);
  free(out);
  mgpu_finalize(rt);
}
END_TEST

/* MGPU_RESERVE_THREADS=auto through the runtime, under a known-cost model of
 * an emulated GPU that slows down `slow` times while `busy_at` or more of the
 * four CPU workers are busy (its host thread finds no core). With slow 8 at
 * 4 busy, one CPU worker kept out gives 3 x 20,000 + 80,000 items/s against
 * 4 x 20,000 + 10,000 and, with two out (half), 2 x 20,000 + 80,000: the
 * runtime must keep one out once it has timed all three. With a GPU as fast
 * as one CPU worker and no slowdown (80,000 + 20,000 against 60,000 + 20,000
 * and 40,000 + 20,000), it must keep every worker in. With a GPU
 * at 2,000,000 items/s, halved while any CPU worker is busy, the CPU workers
 * add under a fifth, so all of them out is tried too, and must be kept:
 * 2,000,000 against 80,000 + 1,000,000. */
typedef struct {
  double cpu_cost, gpu_cost, slow;
  int busy_at;
} contend_arg_t;

static _Atomic int contend_busy; /* CPU workers inside a chunk */

/* s seconds of work, counted in *busy while it runs. */
static void sleep_busy(_Atomic int *busy, double s) {
  atomic_fetch_add(busy, 1);
  mgpu_test_sleep(s);
  atomic_fetch_sub(busy, 1);
}

/* s seconds of work at full speed, in slices of 0.5 ms at the speed of the
 * moment: slow times slower while *busy is at least `at`. */
static void sleep_slowed(double s, _Atomic int *busy, int at, double slow) {
  while (s > 0) {
    double f = atomic_load(busy) >= at ? slow : 1, slice = MGPU_MIN(0.5e-3, s * f);
    mgpu_test_sleep(slice);
    s -= slice / f;
  }
}

static int contend_cpu(const mgpu_chunk_t *c) {
  const contend_arg_t *a = c->arg;
  if (!c->stream) sleep_busy(&contend_busy, a->cpu_cost * (double)c->count);
  else sleep_slowed(a->gpu_cost * (double)c->count, &contend_busy, a->busy_at, a->slow);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) * 7u + 1u;
  return 0;
}
static const mgpu_kernel_t contend_kernel = {
    .name = "contend", .cpu = contend_cpu, .gpu = never_gpu, .nin = 0, .nout = 1, .out_size = {4}};

/* A runtime of 4 CPU workers and one emulated GPU under
 * MGPU_RESERVE_THREADS=auto. */
static mgpu_runtime_t *auto_runtime(void) {
  mgpu_test_config_t cfg = mgpu_test_config(4, 1);
  cfg.cfg.reserve_threads = MGPU_RESERVE_AUTO;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  return rt;
}

/* Batch k of b on rt, its statistics and its 5 workers' in *st and ws; every
 * item of its one output (n words, cleared first) must be i * mul + add. */
static void run_auto_batch(mgpu_runtime_t *rt, const mgpu_batch_t *b, uint32_t mul, uint32_t add, int k,
                           mgpu_stats_t *st, mgpu_worker_stats_t *ws) {
  uint32_t *out = b->out[0];
  memset(out, 0, 4 * b->n);
  *st = (mgpu_stats_t)MGPU_STATS_INIT;
  st->worker = ws, st->worker_cap = 5;
  ck_assert_int_eq(mgpu_run(rt, b, st), MGPU_OK);
  for (size_t i = 0; i < b->n; i++)
    if (out[i] != (uint32_t)i * mul + add) ck_abort_msg("batch %d: item %zu wrong", k, i);
}

/* want[j]: the CPU workers the j-th batch that runs on the GPU must keep
 * out, j < 11. Where the GPU's measured speed, slowed by the contention, is
 * under MGPU_GPU_OUT_TRY of the total, the trials also time every GPU out:
 * twice, from a batch that depends on when the GPU's fit slowed (after the
 * other ways' trials too), leaving their order as it is. Those two batches
 * run besides the 11. */
static void run_contend(double gpu_cost, double slow, int busy_at, int trials, const int *want) {
  mgpu_runtime_t *rt = auto_runtime();
  const size_t n = 16000;
  uint32_t *out = malloc(4 * n);
  contend_arg_t a = {50e-6, gpu_cost, slow, busy_at};
  mgpu_batch_t b = {.kernel = &contend_kernel, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  mgpu_worker_stats_t ws[5];
  const int out_of[MGPU_RESERVE_LEVELS] = {0, 1, 2, 4, -1}; /* GPUs out: by gpus_out_batches */
  for (int k = 0, j = 0; j < 11; k++) {
    /* The ways' times as the batch's choice sees them (the batch adds its own after). */
    double score[MGPU_RESERVE_LEVELS], best = 0;
    MGPU_LOCK(&rt->lock, MGPU_LK_RT);
    mgpu__model_t *m = mgpu__model_get(rt, &contend_kernel, 0);
    for (int l = 0; l < MGPU_RESERVE_LEVELS; l++) {
      score[l] = mgpu__reserve_score(m, l);
      best = MGPU_MAX(best, score[l]);
    }
    int out_trials = m->reserve_runs[MGPU_RESERVE_GPUS_OUT];
    MGPU_UNLOCK(&rt->lock);
    mgpu_stats_t st;
    run_auto_batch(rt, &b, 7u, 1u, k, &st, ws);
    printf("reserve auto (gpu_cost %g, slow %g): batch %d (%d): %.3f s, %d kept out%s, items %llu %llu %llu %llu gpu %llu\n",
           gpu_cost, slow, k, j, st.wall_s, st.reserve_workers, st.gpus_out_batches ? " and the GPU" : "",
           (unsigned long long)ws[0].items, (unsigned long long)ws[1].items, (unsigned long long)ws[2].items,
           (unsigned long long)ws[3].items, (unsigned long long)ws[4].items);
    if (st.gpus_out_batches) ck_assert_uint_eq(ws[4].items, 0);
    if (st.gpus_out_batches && out_trials < MGPU_RESERVE_RUNS_PER_WAY) {
      ck_assert_int_le(k - j, 1); /* at most two such trials */
      continue;
    }
    /* The trials follow a fixed order. The way kept after them is chosen by
     * the batches' times: it must be the one the contention model makes
     * fastest wherever the times show that way clearly ahead (by 10%); where
     * a loaded machine blurred them, a way the times showed about as fast as
     * the fastest. Under sanitizers (MGPURT_NO_TIMING) only its consequences
     * are checked. */
    int out_now = st.reserve_workers;
    if (j < trials) mgpu_timing_check(out_now == want[j], "batch %d: %d kept out, %d wanted", k, out_now, want[j]);
    if (j >= trials && mgpu_test_timing()) {
      int want_level = -1, got_level = st.gpus_out_batches ? MGPU_RESERVE_GPUS_OUT : -1;
      for (int l = 0; l < MGPU_RESERVE_LEVELS; l++) {
        if (out_of[l] == want[j]) want_level = l;
        if (out_of[l] == out_now && got_level < 0) got_level = l;
      }
      ck_assert_int_ge(got_level, 0);
      bool clear = want_level >= 0 && score[want_level] > 0;
      for (int l = 0; l < MGPU_RESERVE_LEVELS && clear; l++)
        if (l != want_level && score[l] > 0 && score[want_level] < 1.1 * score[l]) clear = false;
      if (clear)
        mgpu_timing_check(got_level == want_level, "batch %d: %d kept out, %d wanted", k, out_now, want[j]);
      else
        mgpu_timing_check(score[got_level] >= best / 1.02, "batch %d kept %d out at %.4g items/s, %.4g possible", k,
                          out_now, score[got_level], best);
    }
    for (int w = 0; w < 4; w++)
      if (w >= 4 - out_now) ck_assert_uint_eq(ws[w].items, 0);
    if (want[j] < 4) mgpu_timing_check(ws[0].items > 0, "batch %d: CPU worker 0 ran no item", k);
    if (want[j] == 0) mgpu_timing_check(ws[3].items > 0, "batch %d: CPU worker 3 ran no item", k);
    j++;
  }
  free(out);
  mgpu_finalize(rt);
}

MGPU_TIMED_TEST(test_reserve_auto) {
  /* Warm-up with one worker out, trials one, none and two out, twice, then
   * the fastest. */
  run_contend(12.5e-6, 8, 4, 7, (const int[]){1, 1, 0, 2, 1, 0, 2, 1, 1, 1, 1});
  run_contend(50e-6, 1, 4, 7, (const int[]){1, 1, 0, 2, 1, 0, 2, 0, 0, 0, 0});
  /* Four ways: one out, none, two, all four, twice each, then all four. The
   * CPU workers add about 4% as measured (7% at the GPU's full speed):
   * clear of the 1% under which they sit out with no trials
   * (MGPU_CPU_NEGLIGIBLE), and under the fifth that offers all four out. */
  run_contend(1e-6, 2, 1, 9, (const int[]){1, 1, 0, 2, 4, 1, 0, 2, 4, 4, 4});
}
END_TEST

/* A kernel whose CPU chunks run at half speed while the GPU is inside one
 * (as its pageable staging copies take host memory bandwidth from them), on a
 * GPU 32 times slower than the 4 CPU workers together: the CPU workers alone
 * are faster than all together, and auto's trials keep the GPU out. */
static _Atomic int hog_gpu_busy;

static int hog_cpu(const mgpu_chunk_t *c) {
  const double *cost = c->arg; /* seconds per item: CPU worker, GPU */
  if (c->stream) sleep_busy(&hog_gpu_busy, cost[1] * (double)c->count);
  else sleep_slowed(cost[0] * (double)c->count, &hog_gpu_busy, 1, 2);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) * 5u + 3u;
  return 0;
}
static const mgpu_kernel_t hog_kernel = {
    .name = "hog", .cpu = hog_cpu, .gpu = never_gpu, .nin = 0, .nout = 1, .out_size = {4}};

MGPU_TIMED_TEST(test_reserve_gpus_out) {
  mgpu_runtime_t *rt = auto_runtime();
  const size_t n = 8000;
  uint32_t *out = malloc(4 * n);
  double cost[2] = {50e-6, 400e-6};
  mgpu_batch_t b = {.kernel = &hog_kernel, .n = n, .out = {out}, .arg = cost, .arg_size = sizeof cost};
  mgpu_worker_stats_t ws[5];
  /* Warm-up with a quarter out, then one out, none, two, the GPU out, twice
   * (the CPU workers add over a fifth: no all-out way), then the GPU out. */
  const int gpu_out[11] = {0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1};
  for (int k = 0; k < 11; k++) {
    mgpu_stats_t st;
    run_auto_batch(rt, &b, 5u, 3u, k, &st, ws);
    printf("reserve auto, GPU out: batch %d: %.3f s, %d CPU workers kept out, GPU out %llu, GPU items %llu\n", k,
           st.wall_s, st.reserve_workers, (unsigned long long)st.gpus_out_batches, (unsigned long long)ws[4].items);
    ck_assert_uint_eq(st.items, n);
    if (st.gpus_out_batches) ck_assert_uint_eq(ws[4].items, 0);
    if (st.gpus_out_batches) ck_assert_int_eq(st.reserve_workers, 0);
    mgpu_timing_check(st.gpus_out_batches == (uint64_t)gpu_out[k], "batch %d: the GPU out %llu times, %d wanted", k,
                      (unsigned long long)st.gpus_out_batches, gpu_out[k]);
    if (!gpu_out[k]) mgpu_timing_check(ws[4].items > 0, "batch %d: the GPU ran no item", k);
  }
  mgpu_stats_t rs = MGPU_STATS_INIT;
  ck_assert_int_eq(mgpu_runtime_stats(rt, &rs), MGPU_OK);
  ck_assert_uint_eq(rs.batches, 11);
  mgpu_timing_check(rs.gpus_out_batches == 4, "the GPU out in %llu batches, 4 wanted",
                    (unsigned long long)rs.gpus_out_batches);
  free(out);
  mgpu_finalize(rt);
}
END_TEST

/* Items of irregular cost (a block of items 40x dearer on a CPU, like the
 * middle of the Mandelbrot set) and a GPU 20x faster than a CPU worker on
 * average: stealing must not let a CPU worker strand the batch on a dear item,
 * so steal mode is about as fast as the GPU alone. */
typedef struct {
  double cpu_cost;
  size_t heavy_first, heavy_count;
} irregular_arg_t;

static int irregular_cpu(const mgpu_chunk_t *c) {
  const irregular_arg_t *a = c->arg;
  double t = 0;
  for (size_t j = 0; j < c->count; j++) {
    size_t i = c->first + j;
    t += a->cpu_cost * (i - a->heavy_first < a->heavy_count ? 40 : 1);
  }
  if (!c->stream) mgpu_test_spend(t);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j);
  return 0;
}
static const mgpu_kernel_t irregular_kernel = {
    .name = "irregular", .cpu = irregular_cpu, .gpu = never_gpu, .nin = 0, .nout = 1, .out_size = {4}};

static double run_irregular(mgpu_sched_t mode) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.test.emulate_speed = 2e4;
  cfg.cfg.sched = mode;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 4000;
  uint32_t *out = malloc(4 * n);
  irregular_arg_t a = {1e-3, n - 60, 40}; /* near the back, where thieves take from */
  mgpu_batch_t b = {.kernel = &irregular_kernel, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  double best = 1e9;
  for (int rep = 0; rep < 3; rep++) { /* the first run teaches the model */
    double t0 = mgpu__now();
    ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
    double t = mgpu__now() - t0;
    if (rep > 0 && t < best) best = t;
  }
  for (size_t i = 0; i < n; i++)
    if (out[i] != i) ck_abort_msg("item %zu wrong", i);
  free(out);
  mgpu_finalize(rt);
  return best;
}

MGPU_TIMED_TEST(test_irregular_tail) {
  double gpu = run_irregular(MGPU_SCHED_GPU), steal = run_irregular(MGPU_SCHED_STEAL);
  printf("irregular items: steal %.3f s, GPU alone %.3f s\n", steal, gpu);
  /* 15%: runs of separate runtimes on a virtual machine differ by about 10%. */
  mgpu_timing_check(steal <= gpu * 1.6, "steal took %.3f s, the GPU alone %.3f s", steal, gpu);
}
END_TEST

/* CPU workers alone, cost by position: the last eighth of the items is 40
 * times dearer, so the worker that steals them measures a low items/s. Both
 * cores are alike: in every batch each must do a fair part of the work (by
 * busy time), neither sits idle because it once looked slow. */
START_TEST(test_cpu_cost_by_position) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 0);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 256;
  uint32_t *out = malloc(4 * n);
  irregular_arg_t a = {0.1e-3, 96, 32};
  mgpu_batch_t b = {.kernel = &irregular_kernel, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  for (int rep = 0; rep < 5; rep++) {
    mgpu_worker_stats_t ws[2];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    for (size_t i = 0; i < n; i++)
      if (out[i] != i) ck_abort_msg("item %zu wrong", i);
    double lo = MGPU_MIN(ws[0].busy_s, ws[1].busy_s), sum = ws[0].busy_s + ws[1].busy_s;
    printf("cost by position, batch %d: items %llu + %llu, busy %.1f + %.1f ms, steals %llu\n", rep,
           (unsigned long long)ws[0].items, (unsigned long long)ws[1].items, 1e3 * ws[0].busy_s, 1e3 * ws[1].busy_s,
           (unsigned long long)st.steals);
    /* An even split is 50%; a worker judged by its own items/s does 27% or less. */
    ck_assert_msg(lo >= 0.4 * sum, "batch %d: one CPU worker was busy %.1f ms of %.1f ms", rep, 1e3 * lo, 1e3 * sum);
  }
  free(out);
  mgpu_finalize(rt);
}
END_TEST

/* The CPU team's rate, from each worker's recent chunks (the decayed sums of
 * its mean rate). Where items differ in cost, one worker ran five chunks of
 * 15 cheap rows in 0.5 ms each (30,000 items/s) and the other five dear
 * rows in 0.3 s each (3.3 items/s), as on a divergent image's top and
 * middle: the team runs 80 items in 1.5 s, 53 items/s a worker, not the
 * rates' plain mean (15,000 items/s, which gave the team a share of dear
 * rows it needed seconds for, beside a GPU that did the batch in 38 ms).
 * Where cores differ in speed on alike items (10,000 and 5,000 items/s over
 * chunks of equal time), it is the mean of their rates. A known GPU keeps
 * its own rate. */
static void set_cpu(mgpu__model_t *m, int w, double items, double secs) {
  atomic_store(&m->speed[w], items / secs);
  atomic_store(&m->mean_items[w], items);
  atomic_store(&m->mean_secs[w], secs);
}

START_TEST(test_cpu_team_rate) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  mgpu__model_t *m = mgpu__model_get(rt, &sleep_kernel, 0);
  MGPU_UNLOCK(&rt->lock);
  atomic_store(&m->speed[2], 2e4);
  atomic_store(&m->known[2], 1);
  mgpu__range_t ranges[3] = {0};
  mgpu__batch_t b = {.rt = rt, .model = m, .ranges = ranges};
  b.desc.n = 512;
  set_cpu(m, 0, 75, 2.5e-3);
  set_cpu(m, 1, 5, 1.5);
  for (int w = 0; w < 2; w++) ck_assert_double_eq_tol(mgpu__worker_speed(&b, w), 80 / 1.5025, 1e-9);
  ck_assert_double_eq(mgpu__worker_speed(&b, 2), 2e4);
  set_cpu(m, 0, 10, 1e-3);
  set_cpu(m, 1, 5, 1e-3);
  for (int w = 0; w < 2; w++) ck_assert_double_eq_tol(mgpu__worker_speed(&b, w), 7500, 1e-9);
  mgpu_finalize(rt);
}
END_TEST

/* Items whose cost on a CPU worker jumps by position, as the rows of a
 * Mandelbrot image do: the first and last eighths are nearly free, the
 * middle ones cost 120 ms each; the emulated GPU does the whole batch in
 * 25.6 ms. The CPU workers' probe measures free rows, and the next steals
 * then take chunks of dear ones at that rate: a CPU chunk that runs far past
 * its prediction hands back what it has not started, and the batch costs
 * about one dear row, not the chunk's. */
static int rows_cpu(const mgpu_chunk_t *c) {
  const irregular_arg_t *a = c->arg;
  double t = 0;
  for (size_t j = 0; j < c->count; j++) t += c->first + j - a->heavy_first < a->heavy_count ? a->cpu_cost : 20e-6;
  if (!c->stream) mgpu_test_spend(t);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j);
  return 0;
}

MGPU_TIMED_TEST(test_divergent_rows_hand_back) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.test.emulate_speed = 2e4;
  /* The prior rates a CPU worker at 1/1000 of the GPU, as for a real GPU: the
   * CPU workers first sit out, then probe. */
  cfg.cfg.device_to_core_ratio = 1000;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 512;
  mgpu_kernel_t k = {.name = "rows", .cpu = rows_cpu, .gpu = never_gpu, .nout = 1, .out_size = {4}};
  uint32_t *out = malloc(4 * n);
  irregular_arg_t a = {120e-3, n / 8, n - n / 4};
  mgpu_batch_t b = {.kernel = &k, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  double worst = 0;
  for (int rep = 0; rep < 5; rep++) {
    memset(out, 0, 4 * n);
    mgpu_worker_stats_t ws[3];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 3};
    double t0 = mgpu__now();
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    double t = mgpu__now() - t0;
    worst = fmax(worst, t);
    printf("divergent rows, batch %d: %.3f s; items CPU %llu + %llu, GPU %llu\n", rep, t,
           (unsigned long long)ws[0].items, (unsigned long long)ws[1].items, (unsigned long long)ws[2].items);
    for (size_t i = 0; i < n; i++)
      if (out[i] != i) ck_abort_msg("batch %d: item %zu wrong", rep, i);
  }
  free(out);
  mgpu_finalize(rt);
  /* Chunks of dear rows run to their end: 0.6 s or more. With hand-backs a
   * worker runs one dear row, or two where a part of its chunk straddles the
   * step from cheap rows to dear ones. */
  mgpu_timing_check(worst < 0.4, "a batch took %.3f s; the GPU alone takes 0.026 s", worst);
}
END_TEST

/* A runtime of `cpus` CPU workers and `gpus` emulated GPUs that traces to a
 * new file at path (a mkstemp template). */
static mgpu_runtime_t *init_traced(char *path, int cpus, int gpus) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  mgpu_test_config_t cfg = mgpu_test_config(cpus, gpus);
  cfg.cfg.trace = path;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  return rt;
}

/* The hand-backs in the trace of batches from..to-1, and the items their
 * CPU chunks and GPU launches computed. */
static void count_handbacks(mgpu_runtime_t *rt, uint64_t from, uint64_t to, size_t *handbacks, size_t *computed) {
  size_t m = mgpu_trace_events(rt, NULL, 0);
  mgpu_trace_event_t *e = malloc((m ? m : 1) * sizeof *e);
  m = mgpu_trace_events(rt, e, m);
  *handbacks = *computed = 0;
  for (size_t i = 0; i < m; i++) {
    if (e[i].batch < from || e[i].batch >= to) continue;
    if (!strcmp(e[i].kind, "handback")) ++*handbacks;
    if (!strcmp(e[i].kind, "chunk") || !strcmp(e[i].kind, "kernel")) *computed += e[i].count;
  }
  free(e);
}

/* CPU workers alone, where one chunk of cheap-looking items holds all the
 * dear ones (20 items of 30 ms after 200 items of 20 us): the worker hands
 * back what it has not started, the idle one takes it, and the two share the
 * dear items (0.3 s) instead of one running all (0.6 s). The trace shows the
 * hand-backs; every item is computed once. */
MGPU_TIMED_TEST(test_handback_cpu_only) {
  char path[] = "/tmp/mgpu-handback-XXXXXX";
  mgpu_runtime_t *rt = init_traced(path, 2, 0);
  const size_t n = 400;
  mgpu_kernel_t k = {.name = "rows", .cpu = rows_cpu, .nout = 1, .out_size = {4}};
  uint32_t *out = malloc(4 * n);
  irregular_arg_t a = {30e-3, 200, 0};
  mgpu_batch_t b = {.kernel = &k, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK); /* alike cheap items: the rate */
  a.heavy_count = 20;
  memset(out, 0, 4 * n);
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  double t = mgpu__now() - t0;
  for (size_t i = 0; i < n; i++)
    if (out[i] != i) ck_abort_msg("item %zu wrong", i);
  size_t handbacks, computed;
  count_handbacks(rt, 1, 2, &handbacks, &computed);
  printf("hand-back, CPU workers alone: %.3f s, %zu hand-backs\n", t, handbacks);
  ck_assert_uint_gt(handbacks, 0);
  ck_assert_uint_eq(computed, n);
  mgpu_timing_check(t < 0.45, "%.3f s: one worker ran the dear items alone", t);
  free(out);
  mgpu_finalize(rt);
  unlink(path);
}
END_TEST

/* A CPU worker held up once (the OS ran something else for 8 ms) in the
 * first piece of its chunk: the next piece runs on time, so it hands
 * nothing back. Handed to the GPU, ten times slower on these items, its
 * range would cost the batch many times the stall. */
static _Atomic int stall_pending;

static int stall_fn(const mgpu_chunk_t *c) {
  if (!c->stream && atomic_exchange(&stall_pending, 0)) mgpu_test_sleep(8e-3);
  return shift_fn(c);
}

MGPU_TIMED_TEST(test_stall_no_handback) {
  char path[] = "/tmp/mgpu-stall-XXXXXX";
  mgpu_runtime_t *rt = init_traced(path, 1, 1);
  const size_t n = 4000;
  mgpu_kernel_t k = {.name = "stall", .cpu = stall_fn, .gpu = stall_fn, .nout = 1, .out_size = {4}};
  uint32_t *out = malloc(4 * n);
  shift_arg_t a = {1e-4, 1e-5}; /* the GPU ten times slower than the CPU worker */
  mgpu_batch_t b = {.kernel = &k, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  for (int i = 0; i < 6; i++) ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK); /* the model learns */
  const uint64_t first_stalled = 6; /* batches count from 0 */
  for (int i = 0; i < 4; i++) {
    memset(out, 0, 4 * n);
    atomic_store(&stall_pending, 1);
    mgpu_worker_stats_t ws[2];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
    double t0 = mgpu__now();
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    printf("a CPU worker stalled 8 ms, batch %d: %.4f s; CPU %llu items, GPU %llu\n", i, mgpu__now() - t0,
           (unsigned long long)ws[0].items, (unsigned long long)ws[1].items);
    for (size_t j = 0; j < n; j++)
      if (out[j] != ((uint32_t)j ^ 0x5a5a5a5au)) ck_abort_msg("batch %d: item %zu wrong", i, j);
  }
  size_t handbacks, computed;
  count_handbacks(rt, first_stalled, first_stalled + 4, &handbacks, &computed);
  printf("a CPU worker stalled 8 ms: %zu hand-backs in 4 batches\n", handbacks);
  ck_assert_uint_eq(computed, 4 * n);
  /* Under valgrind and the sanitizers the piece after the stall can run
   * late too. */
  mgpu_timing_check(handbacks == 0, "%zu hand-backs", handbacks);
  free(out);
  mgpu_finalize(rt);
  unlink(path);
}
END_TEST

/* Items handed back in one batch while the GPU has its own range in a later
 * one: batch A is the divergent rows above, batch B, submitted just after,
 * holds 1 s of emulated GPU work in chunks of at most 50 ms. The one CPU
 * worker's steal of dear rows in A's probe batch hands them back, and the
 * GPU takes them before the rest of B (A waits on them alone): A ends in
 * about one dear row's time plus B's chunks in flight, not after all of B
 * (1.03 to 1.09 s when requeued items came after every own range). */
MGPU_TIMED_TEST(test_handback_behind_other_batch) {
  const size_t na = 512, nb = 20000;
  mgpu_kernel_t k = {.name = "rows", .cpu = rows_cpu, .gpu = never_gpu, .nout = 1, .out_size = {4}};
  uint32_t *outa = malloc(4 * na), *outb = malloc(4 * nb);
  irregular_arg_t a = {120e-3, na / 8, na - na / 4};
  sleep_arg_t sa = {20e-3};
  mgpu_batch_t ba = {.kernel = &k, .n = na, .out = {outa}, .arg = &a, .arg_size = sizeof a};
  mgpu_batch_t bb = {.kernel = &sleep_kernel, .n = nb, .out = {outb}, .arg = &sa, .arg_size = sizeof sa};
  double worst = 0;
  for (int rep = 0; rep < 3; rep++) {
    mgpu_test_config_t cfg = mgpu_test_config(1, 1);
    cfg.test.emulate_speed = 2e4;
    cfg.cfg.device_to_core_ratio = 1000;
    /* B's GPU chunks of at most 50 ms: A's items wait for those in flight. */
    cfg.cfg.max_batch_size = 1000;
    mgpu_runtime_t *rt;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    /* A's first batch is the GPU's alone; its second brings the CPU worker's
     * probe, and its steal of dear rows. */
    ck_assert_int_eq(mgpu_run(rt, &ba, NULL), MGPU_OK);
    for (int i = 0; i < 2; i++) ck_assert_int_eq(mgpu_run(rt, &bb, NULL), MGPU_OK);
    memset(outa, 0, 4 * na);
    mgpu_event_t *ea, *eb;
    double t0 = mgpu__now();
    ck_assert_int_eq(mgpu_submit(rt, &ba, 0, NULL, &ea), MGPU_OK);
    ck_assert_int_eq(mgpu_submit(rt, &bb, 0, NULL, &eb), MGPU_OK);
    mgpu_worker_stats_t ws[2];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
    ck_assert_int_eq(mgpu_event_wait(ea, &st), MGPU_OK);
    double ta = mgpu__now() - t0;
    ck_assert_int_eq(mgpu_event_wait(eb, NULL), MGPU_OK);
    double tb = mgpu__now() - t0;
    mgpu_event_release(ea);
    mgpu_event_release(eb);
    worst = fmax(worst, ta);
    printf("hand-back behind another batch, %d: A %.3f s (CPU %llu, GPU %llu items), B %.3f s\n", rep, ta,
           (unsigned long long)ws[0].items, (unsigned long long)ws[1].items, tb);
    for (size_t i = 0; i < na; i++)
      if (outa[i] != i) ck_abort_msg("batch %d: item %zu of A wrong", rep, i);
    for (size_t i = 0; i < nb; i++)
      if (outb[i] != ((uint32_t)i ^ 0x5a5a5a5au)) ck_abort_msg("batch %d: item %zu of B wrong", rep, i);
    mgpu_finalize(rt);
  }
  free(outa);
  free(outb);
  mgpu_timing_check(worst < 0.6, "A took %.3f s: its rows waited for the GPU to finish B", worst);
}
END_TEST

/* Coarse items: a CPU worker would finish only a few items in the time the GPU
 * does the whole batch, and the first items (a CPU's first share) are ten
 * times dearer. Such a worker must get no first share: the batch then takes
 * about what the GPU alone needs, not the time of two dear items on a CPU. */
MGPU_TIMED_TEST(test_coarse_items) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.test.emulate_speed = 1e4;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 2400;
  uint32_t *out = malloc(4 * n);
  irregular_arg_t a = {30e-3, 0, 8}; /* 30 ms per item on a CPU; items 0..7 cost 300 ms */
  mgpu_batch_t b = {.kernel = &irregular_kernel, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  mgpu_worker_stats_t ws[3];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 3};
  for (int rep = 0; rep < 2; rep++) ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK); /* learn */
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  double t = mgpu__now() - t0, gpu_alone = (double)n / 1e4;
  printf("coarse items: %.3f s, GPU alone %.3f s; CPU items %llu + %llu\n", t, gpu_alone,
         (unsigned long long)ws[0].items, (unsigned long long)ws[1].items);
  for (size_t i = 0; i < n; i++)
    if (out[i] != i) ck_abort_msg("item %zu wrong", i);
  mgpu_timing_check(t < gpu_alone * 1.6, "%.3f s against %.3f s for the GPU alone", t, gpu_alone);
  free(out);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_static_shares) {
  /* Static mode with ratio 3, two CPU workers and two GPUs: the fixed split
   * of the older runtimes, no stealing, leftovers to the earliest finisher. */
  mgpu_test_config_t cfg = mgpu_test_config(2, 2);
  cfg.cfg.sched = MGPU_SCHED_STATIC;
  cfg.cfg.device_to_core_ratio = 3;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_worker_stats_t ws[4];
  mgpu_stats_t st = MGPU_STATS_INIT;
  run_sleep(rt, 1001, 0, ws, 4, &st);
  ck_assert_uint_eq(ws[0].items, 125);
  ck_assert_uint_eq(ws[1].items, 125);
  ck_assert_uint_eq(ws[2].items, 376);
  ck_assert_uint_eq(ws[3].items, 375);
  ck_assert_uint_eq(st.steals, 0);
  /* A second batch splits the same way: measurements do not move it. */
  run_sleep(rt, 8000, 0, ws, 4, &st);
  ck_assert_uint_eq(ws[0].items, 1000);
  ck_assert_uint_eq(ws[2].items, 3000);
  mgpu_finalize(rt);
}
END_TEST

/* Which GPUs are of one kind: emulated devices all are; a device with other
 * multiprocessors or another clock is not. */
START_TEST(test_gpu_groups) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 3);
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  int group[5];
  mgpu__gpu_groups(rt, group);
  /* The runtime found the same groups at init. */
  for (int i = 0; i < 5; i++) ck_assert_int_eq(rt->gpu_group[i], group[i]);
  ck_assert_int_eq(group[0], -1);
  ck_assert_int_eq(group[1], -1);
  for (int i = 2; i < 5; i++) ck_assert_int_eq(group[i], 2);
  rt->gpu_info[1].sm_count += 1;
  rt->gpu_info[2].clock_khz += 1;
  mgpu__gpu_groups(rt, group);
  ck_assert_int_eq(group[2], 2);
  ck_assert_int_eq(group[3], 3);
  ck_assert_int_eq(group[4], 4);
  /* Real devices must also share a model name. */
  rt->gpu_info[1] = rt->gpu_info[0];
  for (int g = 0; g < 2; g++) rt->gpu_info[g].emulated = 0;
  snprintf(rt->gpu_info[1].name, sizeof rt->gpu_info[1].name, "another model");
  mgpu__gpu_groups(rt, group);
  ck_assert_int_eq(group[3], 3);
  snprintf(rt->gpu_info[1].name, sizeof rt->gpu_info[1].name, "%s", rt->gpu_info[0].name);
  mgpu__gpu_groups(rt, group);
  ck_assert_int_eq(group[3], 2);
  rt->gpu_info[0].emulated = rt->gpu_info[1].emulated = 1;
  mgpu_finalize(rt);
}
END_TEST

/* A device-to-core ratio far too high (1e7): the GPU's first chunk of a
 * kernel, the prior's probe of 2 ms of work, is the whole batch, and so is
 * every later one (its chunks cannot grow past a batch). The model must have
 * learnt that chunk by the time the batch returns, since the next batch is
 * planned on it: GPU-only, twenty batches of one chunk each, and the
 * GPU's chunks learnt after each, though its host thread pauses 50 ms just
 * after each chunk completes (MGPU_FAULT_INJECT stall), as when the OS takes
 * its core at that moment. Then the case reported, in steal mode:
 * items dear at the head, and the GPU slower than the two CPU workers in
 * truth (20 ms for the batch, 10 ms on the CPU workers): the first batch is
 * the GPU's, by the prior, and the second probes the CPU workers, one item
 * each, in each of eight runtimes. A sample learnt only after the batch
 * returns leaves about a third of second batches to the GPU whole again,
 * its speed not yet measured. */
START_TEST(test_probe_after_one_chunk) {
  mgpu_test_config_t cfg = mgpu_test_config(2, 1);
  cfg.cfg.device_to_core_ratio = 1e7;
  cfg.cfg.sched = MGPU_SCHED_GPU;
  cfg.test.emulate_speed = 4e5;
  cfg.test.fault_inject = "stall:0:all";
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  mgpu_worker_stats_t ws[3];
  uint64_t chunks = 0;
  for (int b = 0; b < 20; b++) {
    mgpu_stats_t st;
    run_sleep(rt, 4000, 0, ws, 3, &st);
    chunks += ws[2].chunks;
    MGPU_LOCK(&rt->lock, MGPU_LK_RT);
    uint64_t learnt = atomic_load(&mgpu__model_get(rt, &sleep_kernel, 0)->samples[2]);
    MGPU_UNLOCK(&rt->lock);
    ck_assert_msg(ws[2].chunks == 1, "batch %d: %llu chunks", b, (unsigned long long)ws[2].chunks);
    ck_assert_msg(learnt == chunks, "batch %d returned with %llu of the GPU's %llu chunks learnt", b,
                  (unsigned long long)learnt, (unsigned long long)chunks);
  }
  mgpu_finalize(rt);

  const size_t n = 400;
  irregular_arg_t a = {50e-6, 0, 8}; /* items 0..7 cost 2 ms on a CPU worker, the others 50 us */
  uint32_t *out = malloc(4 * n);
  mgpu_batch_t batch = {.kernel = &irregular_kernel, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  for (int r = 0; r < 8; r++) {
    cfg = mgpu_test_config(2, 1);
    cfg.cfg.device_to_core_ratio = 1e7;
    cfg.test.emulate_speed = 2e4;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    for (int b = 0; b < 2; b++) {
      mgpu_stats_t st = {.worker = ws, .worker_cap = 3};
      ck_assert_int_eq(mgpu_run(rt, &batch, &st), MGPU_OK);
      for (size_t i = 0; i < n; i++)
        if (out[i] != i) ck_abort_msg("runtime %d, batch %d: item %zu wrong", r, b, i);
      if (b == 0) continue;
      ck_assert_msg(ws[0].items > 0 && ws[1].items > 0,
                    "runtime %d: the second batch did not probe the CPU workers (items %llu, %llu; GPU %llu)", r,
                    (unsigned long long)ws[0].items, (unsigned long long)ws[1].items,
                    (unsigned long long)ws[2].items);
    }
    mgpu_finalize(rt);
  }
  free(out);
}
END_TEST

/* The runs of an MGPU_TIMED_TEST: a body that misses a claim in its first
 * run only passes in its second; one that misses in every run fails after
 * MGPU_TEST_ATTEMPTS; a claim met or a behaviour asserted adds no run. */
static int timed_calls;

static void miss_first_run(int i) {
  int run = ++timed_calls;
  mgpu_timing_check(run > 1 || i, "run %d of the body", run);
}

static void miss_every_run(int i) {
  (void)i;
  timed_calls++;
  mgpu_speed_check(0, "a claim that never holds");
}

START_TEST(test_timed_runs) {
  timed_calls = 0;
  ck_assert_int_eq(mgpu__timed_runs("miss once", miss_first_run, 1), 1);
  ck_assert_int_eq(timed_calls, 1);
  timed_calls = 0;
  ck_assert_int_eq(mgpu__timed_runs("miss once", miss_first_run, 0), mgpu_test_timing() ? 2 : 1);
  ck_assert_int_eq(timed_calls, mgpu_test_timing() ? 2 : 1);
  timed_calls = 0;
  ck_assert_int_eq(mgpu__timed_runs("miss always", miss_every_run, 0), -MGPU_TEST_ATTEMPTS);
  ck_assert_int_eq(timed_calls, MGPU_TEST_ATTEMPTS);
  ck_assert(strstr(mgpu__timing.first, "a claim that never holds") != NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sched");
  TCase *tc = tcase_create("sched");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_timed_runs);
  tcase_add_test(tc, test_gpu_groups);
  tcase_add_loop_test(tc, test_exactly_once, 0, 4);
  tcase_add_test(tc, test_static_shares);
  tcase_add_test(tc, test_tail_rule);
  tcase_add_test(tc, test_latency_bound_gpu_only);
  tcase_add_test(tc, test_latency_bound_steal);
  tcase_add_test(tc, test_latency_bound_cpus_first);
  tcase_add_test(tc, test_one_item_batch);
  tcase_add_test(tc, test_probe_short_batches_once);
  tcase_add_test(tc, test_gpu_slow_short_batches);
  tcase_add_test(tc, test_gpu_probe_low_ratio);
  tcase_add_test(tc, test_canceled_batch_teaches);
  tcase_add_test(tc, test_overlapped_launches);
  tcase_add_test(tc, test_joined_launch_sizes);
  tcase_add_test(tc, test_latency_counted_once);
  tcase_add_test(tc, test_cpu_cost_per_call);
  tcase_add_test(tc, test_cost_changes_for_good);
  tcase_add_test(tc, test_footprint_alternating);
  tcase_add_test(tc, test_cpus_sit_out);
  tcase_add_test(tc, test_reserve_workers);
  tcase_add_test(tc, test_reserve_gpus_out);
  tcase_add_test(tc, test_reserve_auto);
  tcase_add_test(tc, test_balance);
  tcase_add_test(tc, test_balance_irregular_first_batch);
  tcase_add_test(tc, test_irregular_tail);
  tcase_add_test(tc, test_coarse_items);
  tcase_add_test(tc, test_cpu_team_rate);
  tcase_add_test(tc, test_divergent_rows_hand_back);
  tcase_add_test(tc, test_handback_cpu_only);
  tcase_add_test(tc, test_stall_no_handback);
  tcase_add_test(tc, test_handback_behind_other_batch);
  tcase_add_test(tc, test_probe_after_one_chunk);
  tcase_add_test(tc, test_cost_profile_split);
  suite_add_tcase(s, tc);
  TCase *position = tcase_create("position");
  tcase_set_timeout(position, 120);
  tcase_add_test(position, test_cpu_cost_by_position);
  suite_add_tcase(s, position);
  return mgpu_test_main(s);
}
