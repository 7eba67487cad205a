/*
 * test-sched.c: the scheduler's promises. Every item computed exactly once for
 * every mode, worker mix and awkward size; balance within 15% of the ideal under
 * a known-cost model; the tail rule; static mode's fixed shares.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>

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
  if (mode == MGPU_SCHED_GPU && emu == 0) cfg.cfg.debug = 0; /* the error is expected */
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  uint64_t *in = malloc(8 * (n ? n : 1)), *out = malloc(8 * (n ? n : 1));
  _Atomic uint32_t *cnt = calloc(n ? n : 1, sizeof *cnt);
  for (size_t i = 0; i < n; i++) in[i] = i, out[i] = 0;
  count_arg_t arg = {cnt};
  mgpu_batch_t b = {.kernel = &count_kernel, .n = n, .in = {in}, .out = {out}, .arg = &arg, .arg_size = sizeof arg};
  mgpu_worker_stats_t ws[8];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 8};
  mgpu_status_t s = mgpu_run(rt, &b, &st);
  if (mode == MGPU_SCHED_GPU && emu == 0) {
    ck_assert_int_eq(s, MGPU_ENOTSUP); /* GPU-only with no GPU: a clear error */
  } else {
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
  for (int cpus = 1; cpus <= 4; cpus++)
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
  if (!c->stream) mgpu_test_sleep(a->cpu_cost * (double)c->count);
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) ^ 0x5a5a5a5au;
  return 0;
}

static const mgpu_kernel_t sleep_kernel = {
    .name = "sleep", .cpu = sleep_cpu, .gpu = never_gpu, .nin = 0, .nout = 1, .out_size = {4}};

static double run_sleep(mgpu_runtime_t *rt, size_t n, double cpu_cost, mgpu_worker_stats_t *ws, int cap,
                        mgpu_stats_t *st_out) {
  uint32_t *out = malloc(4 * n);
  sleep_arg_t a = {cpu_cost};
  mgpu_batch_t b = {.kernel = &sleep_kernel, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
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

START_TEST(test_balance) {
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
  if (mgpu_test_timing())
    ck_assert_msg(t <= ideal * 1.15, "makespan %.3f s is more than 15%% over the ideal %.3f s", t, ideal);
  /* The CPUs did take part (by their measured speed: not asserted under
   * sanitizers, whose load once made them look too slow to add 2%). */
  if (mgpu_test_timing()) ck_assert_uint_gt(ws[0].items + ws[1].items, 0);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_balance_irregular_first_batch) {
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
  if (mgpu_test_timing()) ck_assert_msg(t <= ideal * 1.5, "makespan %.3f s vs ideal %.3f s", t, ideal);
  mgpu_finalize(rt);
}
END_TEST

/* ------------------------------------------------------------ cost profile */

START_TEST(test_prof_bins) {
  /* Bins cover [0, n) in order, for small n, n not a multiple of the bin
   * count, and n near the top of size_t (no overflow). */
  const size_t ns[] = {1, 5, 127, 128, 4096, 1000003, SIZE_MAX - 3};
  for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
    size_t n = ns[k];
    ck_assert_uint_eq(mgpu__prof_lo(n, 0), 0);
    for (int j = 1; j < MGPU_PROF_BINS; j++) ck_assert(mgpu__prof_lo(n, j) >= mgpu__prof_lo(n, j - 1));
    ck_assert(mgpu__prof_lo(n, MGPU_PROF_BINS - 1) < n);
    ck_assert_uint_eq(mgpu__prof_lo(n, MGPU_PROF_BINS), n); /* the end of the last bin */
    if (n >= MGPU_PROF_BINS) ck_assert(mgpu__prof_lo(n, 1) > 0);
  }
  ck_assert_uint_eq(mgpu__prof_lo(SIZE_MAX - 3, 64), (SIZE_MAX - 3) / 2);
  /* A chunk's seconds and items land in the bins it covers, in proportion. */
  double t[MGPU_PROF_BINS] = {0}, it[MGPU_PROF_BINS] = {0};
  mgpu__prof_add(t, it, 4096, 30, 100, 1.0); /* bins of 32: items 30..129 */
  double st = 0, si = 0;
  for (int j = 0; j < MGPU_PROF_BINS; j++) st += t[j], si += it[j];
  ck_assert_double_eq_tol(st, 1.0, 1e-12);
  ck_assert_double_eq_tol(si, 100, 1e-12);
  ck_assert_double_eq_tol(it[0], 2, 1e-12);
  ck_assert_double_eq_tol(it[1], 32, 1e-12);
  ck_assert_double_eq_tol(it[4], 2, 1e-12);
  ck_assert_double_eq_tol(t[1], 0.32, 1e-12);
  ck_assert_double_eq(it[5], 0);
  mgpu__prof_add(t, it, 4096, 4090, 50, 1.0); /* clipped at n */
  ck_assert_double_eq_tol(it[MGPU_PROF_BINS - 1], 6, 1e-12);
}
END_TEST

/* A profile of n = 4096 items whose cost is c(j) in bin j. */
static void prof_fill(double *prof, int peak) {
  for (int j = 0; j < MGPU_PROF_BINS; j++) {
    double x = (j + 0.5 - MGPU_PROF_BINS / 2.0) / (0.15 * MGPU_PROF_BINS);
    prof[j] = 1e-6 * (1 + (peak - 1) * exp(-x * x));
  }
}

START_TEST(test_prof_cuts) {
  double prof[MGPU_PROF_BINS];
  size_t cut[4] = {7, 7, 7, 7};
  /* Alike items, or noise: no cut (the speeds split them). */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = 1e-6;
  ck_assert(!mgpu__prof_cuts(prof, 4096, 0, 2, cut));
  uint64_t rs = 7;
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = 1e-6 * (1 + (double)(mgpu_test_rand(&rs) % 1000) / 1000);
  ck_assert(!mgpu__prof_cuts(prof, 4096, 0, 2, cut));
  /* A few dear bins, as the odd slow chunk leaves: no cut either. */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = j % 40 == 3 ? 2e-5 : 1e-6;
  ck_assert(!mgpu__prof_cuts(prof, 4096, 0, 2, cut));
  ck_assert_uint_eq(cut[0], 7);
  /* Smooth but mild (2x): no cut. */
  prof_fill(prof, 2);
  ck_assert(!mgpu__prof_cuts(prof, 4096, 0, 2, cut));
  /* A 30x peak in the middle: two parts meet in the middle, and four parts
   * have equal cost, each within one item's cost. */
  prof_fill(prof, 30);
  ck_assert(mgpu__prof_cuts(prof, 4096, 0, 2, cut));
  ck_assert_uint_eq(cut[0] + cut[1], 4096);
  ck_assert_uint_le(cut[0] > 2048 ? cut[0] - 2048 : 2048 - cut[0], 1);
  ck_assert(mgpu__prof_cuts(prof, 4096, 100, 4, cut));
  size_t at = 100;
  double total = 0, part[4];
  for (int p = 0; p < 4; p++) {
    part[p] = 0;
    for (size_t i = at; i < at + cut[p]; i++) part[p] += prof[i / 32];
    total += part[p];
    at += cut[p];
  }
  ck_assert_uint_eq(at, 4096);
  for (int p = 0; p < 4; p++) ck_assert_double_eq_tol(part[p], total / 4, 30e-6);
  /* The outer parts, over cheap items, have more of them. */
  ck_assert_uint_gt(cut[0], 2 * cut[1]);
  /* A bin not learnt: no cut. */
  prof[100] = 0;
  ck_assert(!mgpu__prof_cuts(prof, 4096, 0, 2, cut));
  /* ...unless it lies before the part to cut. */
  prof_fill(prof, 30);
  prof[2] = 0;
  ck_assert(mgpu__prof_cuts(prof, 4096, 32 * 3, 2, cut));
  ck_assert(!mgpu__prof_cuts(prof, 4096, 32 * 3 - 1, 2, cut));
}
END_TEST

START_TEST(test_prof_learn) {
  mgpu__model_t m = {0};
  double prof[MGPU_PROF_BINS] = {0};
  m.prof = prof;
  double sums[2 * 2 * MGPU_PROF_BINS] = {0};
  /* Two GPUs' rows: the first did bins 0..63 at 1 us an item, the second
   * bins 32..127 at 3 us an item. */
  mgpu__prof_add(sums, sums + MGPU_PROF_BINS, 4096, 0, 2048, 2048 * 1e-6);
  mgpu__prof_add(sums + 2 * MGPU_PROF_BINS, sums + 3 * MGPU_PROF_BINS, 4096, 1024, 3072, 3072 * 3e-6);
  mgpu__prof_learn(&m, 4096, sums, 2);
  ck_assert_uint_eq(m.prof_n, 4096);
  ck_assert_double_eq_tol(prof[0], 1e-6, 1e-15);
  ck_assert_double_eq_tol(prof[40], 2e-6, 1e-15); /* both: the mean per item */
  ck_assert_double_eq_tol(prof[100], 3e-6, 1e-15);
  /* The next batch moves each bin halfway to what it measured. */
  memset(sums, 0, sizeof sums);
  mgpu__prof_add(sums, sums + MGPU_PROF_BINS, 4096, 0, 4096, 4096 * 5e-6);
  mgpu__prof_learn(&m, 4096, sums, 2);
  ck_assert_double_eq_tol(prof[0], 3e-6, 1e-15);
  ck_assert_double_eq_tol(prof[100], 4e-6, 1e-15);
  /* A batch no GPU worked on (all zero sums) changes nothing, even of
   * another size. */
  memset(sums, 0, sizeof sums);
  mgpu__prof_learn(&m, 1000, sums, 2);
  ck_assert_uint_eq(m.prof_n, 4096);
  ck_assert_double_eq_tol(prof[0], 3e-6, 1e-15);
  /* Another batch size starts over. */
  memset(sums, 0, sizeof sums);
  mgpu__prof_add(sums, sums + MGPU_PROF_BINS, 1000, 0, 10, 1e-3);
  mgpu__prof_learn(&m, 1000, sums, 2);
  ck_assert_uint_eq(m.prof_n, 1000);
  ck_assert_double_eq_tol(prof[0], 1e-4, 1e-15);
  ck_assert_double_eq(prof[100], 0);
}
END_TEST

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
  mgpu_test_sleep(c->stream ? t : 50 * t);
  if (c->stream && c->worker >= 1 && c->worker <= 5) {
    size_t none = SIZE_MAX;
    atomic_compare_exchange_strong(&peak_begin[c->worker], &none, c->first);
  }
  return 0;
}

/* A batch's cost by position: its running cost and inverse, chunks of equal
 * cost and the share a GPU steals by cost, and the window that keeps a bin
 * learnt too cheap from sizing chunks. */
START_TEST(test_cost_model) {
  static mgpu__cost_t c;
  double prof[MGPU_PROF_BINS];
  const size_t n = 1280; /* bins of 10 items */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = 1e-6;
  mgpu__cost_init(&c, prof, n);
  for (size_t x = 0; x <= n; x++) {
    ck_assert_double_eq_tol(mgpu__cost_at(&c, x), 1e-6 * (double)x, 1e-15);
    ck_assert_uint_eq(mgpu__cost_find(&c, mgpu__cost_at(&c, x)), x);
  }
  ck_assert_uint_eq(mgpu__cost_chunk(&c, 100, 37), 37); /* flat: items are items */
  /* Even: each ends at (100 + 300) / 2 of the owner's 300 left and 100 in flight. */
  ck_assert_uint_eq(mgpu__cost_steal(&c, 500, 800, 100e-6, 100e-6), 150);
  ck_assert_uint_eq(mgpu__cost_steal(&c, 500, 800, 400e-6, 100e-6), 0); /* the tail rule */
  /* Cheap first half, ten times dearer second half: the window of
   * MGPU_COST_REACH bins each way makes the last cheap bins dear too. */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = j < 64 ? 1e-6 : 1e-5;
  mgpu__cost_init(&c, prof, n);
  ck_assert_double_eq_tol(c.per[64 - MGPU_COST_REACH - 1], 1e-6, 1e-18);
  ck_assert_double_eq_tol(c.per[64 - MGPU_COST_REACH], 1e-5, 1e-18);
  size_t edge = 10 * (64 - MGPU_COST_REACH);
  double avg = mgpu__cost_at(&c, n) / (double)n;
  /* A chunk of 100 average items from 0: the fewest cheap items that cost 100 * avg. */
  ck_assert_uint_eq(mgpu__cost_chunk(&c, 0, 100), (size_t)ceil(100 * avg / 1e-6 - 1e-9));
  /* From the edge on, a tenth as many items as cheap ones. */
  ck_assert_uint_eq(mgpu__cost_chunk(&c, edge, 100), (size_t)ceil(100 * avg / 1e-5 - 1e-9));
  ck_assert_uint_eq(mgpu__cost_chunk(&c, n - 1, 100), 1); /* at least one */
  /* Chunk after chunk through a stretch 14 times dearer than the average, a
   * plan of 100 average items stays 100 average items: the growth limit
   * counts in those too (counted in items, it fell fourfold a chunk to one
   * item). */
  {
    static mgpu__cost_t d;
    double p2[MGPU_PROF_BINS];
    for (int j = 0; j < MGPU_PROF_BINS; j++) p2[j] = j < 120 ? 1e-6 : 1e-4;
    mgpu__cost_init(&d, p2, n);
    double davg = mgpu__cost_at(&d, n) / (double)n;
    size_t last = 100, at = 1200, planned = 0, want = (size_t)ceil(100 * davg / 1e-4 - 1e-9);
    for (int k = 0; k < 5; k++) {
      size_t got = mgpu__cost_plan(&d, 100, &last, at, n - at, SIZE_MAX, 1.0, &planned);
      ck_assert_uint_ge(got, want - 1);
      ck_assert_uint_le(got, want + 1);
      at += got;
    }
  }
  /* Stealing from [0, n) with nothing in flight: half the cost, from the back. */
  size_t take = mgpu__cost_steal(&c, 0, n, 0, 0);
  double half = mgpu__cost_at(&c, n) / 2;
  ck_assert_double_le(mgpu__cost_at(&c, n) - mgpu__cost_at(&c, n - take), half + 1e-12);
  ck_assert_double_gt(mgpu__cost_at(&c, n) - mgpu__cost_at(&c, n - take - 1), half);
  /* Never past the range, whatever the rounding: tiny and huge costs, shares
   * of an item or less (a steal past the owner's end computed items twice). */
  uint64_t rng = 7;
  for (int trial = 0; trial < 20000; trial++) {
    size_t m = 128 + mgpu_test_rand(&rng) % 100000;
    for (int j = 0; j < MGPU_PROF_BINS; j++)
      prof[j] = (mgpu_test_rand(&rng) % 4 == 0 ? 1e-12 : 1e-6) * (1 + (double)(mgpu_test_rand(&rng) % 1000));
    mgpu__cost_init(&c, prof, m);
    size_t b0 = mgpu_test_rand(&rng) % m, b1 = b0 + 1 + mgpu_test_rand(&rng) % (m - b0);
    double left = mgpu__cost_at(&c, b1) - mgpu__cost_at(&c, b0);
    double po = left * (double)(mgpu_test_rand(&rng) % 3), pt = po + left * (1 - 1e-12 * (double)(mgpu_test_rand(&rng) % 8));
    size_t tk = mgpu__cost_steal(&c, b0, b1, pt, po);
    if (tk > b1 - b0) ck_abort_msg("took %zu of [%zu, %zu) of %zu", tk, b0, b1, m);
    size_t ch = mgpu__cost_chunk(&c, b0, 1 + mgpu_test_rand(&rng) % 1000);
    ck_assert_uint_ge(ch, 1);
    ck_assert_uint_le(ch, m - b0 > 0 ? MGPU_MAX(m - b0, (size_t)1) : 1);
    size_t x = mgpu_test_rand(&rng) % (m + 1);
    ck_assert_uint_le(mgpu__cost_find(&c, mgpu__cost_at(&c, x)), x);
  }
}
END_TEST

START_TEST(test_cost_profile_split) {
  /* Four alike GPUs, GPU-only. Split by items per second, learnt on
   * whichever rows each did last, the split moved from batch to batch; split
   * by the cost profile, each GPU's range begins where its share of the cost
   * does. Judged in cost: how far from its ideal start each range begins, as a
   * share of one GPU's ideal cost. */
  enum { GPUS = 4, BATCHES = 16, LAST = 8 };
  mgpu_test_config_t cfg = mgpu_test_config(1, GPUS);
  cfg.cfg.sched = MGPU_SCHED_GPU;
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
  if (mgpu_test_timing()) ck_assert_msg(near >= LAST / 2, "only %d of the last %d batches split within 25%%", near, LAST);
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
    ck_assert_uint_eq(ws[0].items + ws[1].items, 0);
    ck_assert_uint_eq(ws[2].items, n);
    if (mgpu_test_timing())
      ck_assert_msg(t < gpu_only + cpu_cost * 0.5, "the batch took %.4f s, a CPU item would be %.3f s", t, cpu_cost);
    mgpu_finalize(rt);
  }
}
END_TEST

/* CPU workers that together are measured to add under 2% to the GPUs sit the
 * batch out (on 4 x H200 their cost to the GPUs' host threads was more than
 * they added); where they add more, they take part. Under the auto reserve
 * (on the first case), a batch they all sit out reports no reserve: it played
 * no part. */
START_TEST(test_cpus_sit_out) {
  const double cpu_cost = 100e-6; /* two CPU workers: 2e4 items/s */
  const double gpu_speeds[] = {2e6, 2e5};
  for (int k = 0; k < 2; k++) {
    mgpu_test_config_t cfg = mgpu_test_config(2, 1);
    cfg.test.emulate_speed = gpu_speeds[k];
    if (k == 0) cfg.cfg.reserve_threads = MGPU_RESERVE_AUTO;
    mgpu_runtime_t *rt;
    ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
    mgpu_worker_stats_t ws[3];
    run_sleep(rt, 20000, cpu_cost, ws, 3, NULL); /* the model learns both kinds */
    ck_assert_uint_gt(ws[0].items + ws[1].items, 0);
    uint64_t cpu_items = 0;
    const size_t n = (size_t)(gpu_speeds[k] * 0.05);
    for (int rep = 0; rep < 3; rep++) {
      mgpu_stats_t st = MGPU_STATS_INIT;
      run_sleep(rt, n, cpu_cost, ws, 3, &st);
      cpu_items += ws[0].items + ws[1].items;
      if (k == 0) ck_assert_int_eq(st.reserve_workers, 0);
    }
    printf("sit out: GPU %.0e items/s, CPU workers %.0e: CPU items %llu of %zu\n", gpu_speeds[k], 2 / cpu_cost,
           (unsigned long long)cpu_items, 3 * n);
    if (k == 0) ck_assert_uint_eq(cpu_items, 0);
    else ck_assert_uint_gt(cpu_items, 0);
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

/* MGPU_RESERVE_THREADS=auto, the choice alone: warm-up with the reserve out
 * (not timed), two timed batches each way by turns, then the faster by the
 * better of each way's last two, with the other timed again every
 * MGPU_RESERVE_REFRESH-th batch; a batch size more than twice off starts
 * again. Offered none and a quarter only (0x3). */
START_TEST(test_reserve_pick) {
  mgpu__model_t m;
  memset(&m, 0, sizeof m);
  bool rec;
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x3, &rec), 1);
  ck_assert(!rec);
  const int trial[4] = {1, 0, 1, 0};
  const double rate[4] = {100, 120, 130, 90}; /* reserve best 130, none best 120 */
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x3, &rec), trial[i]);
    ck_assert(rec);
    mgpu__reserve_learn(&m, trial[i], rate[i]);
  }
  for (int k = 1 + 4; k < MGPU_RESERVE_REFRESH; k++) ck_assert_int_eq(mgpu__reserve_pick(&m, 1500, 0x3, &rec), 1);
  /* The refresh times no reserve again: 140 replaces its older time (120),
   * and beats the reserve's better one. */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x3, &rec), 0);
  mgpu__reserve_learn(&m, 0, 140);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x3, &rec), 0);
  /* Within 1% the reserve does not win: every worker stays in. */
  mgpu__reserve_learn(&m, 1, 141); /* replaces 100: the reserve's best is 141 */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x3, &rec), 0);
  mgpu__reserve_learn(&m, 1, 142); /* replaces 130 */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x3, &rec), 1);
  /* Five times larger: both ways are tried again. */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 5000, 0x3, &rec), 1);
  ck_assert(rec);
  ck_assert_int_eq(m.reserve_runs[0] + m.reserve_runs[1], 0);
  mgpu__reserve_learn(&m, 1, 10);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 5000, 0x3, &rec), 0);
  mgpu__reserve_learn(&m, 0, 0); /* no time: not learnt */
  ck_assert_int_eq(m.reserve_runs[0], 0);
  mgpu__reserve_learn(&m, MGPU_RESERVE_LEVELS, 10); /* no such way */
  ck_assert_int_eq(m.reserve_runs[0] + m.reserve_runs[1] + m.reserve_runs[2] + m.reserve_runs[3], 1);
  /* None and a quarter are always offered. */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 5000, 0x0, &rec), 0);
}
END_TEST

/* More ways: none, a quarter and all out (0xb), or all four (0xf): warm-up,
 * then two trials each by turns, the fastest kept, and the refresh batches
 * take the others in turn, fewer workers out first. */
START_TEST(test_reserve_pick3) {
  mgpu__model_t m;
  memset(&m, 0, sizeof m);
  bool rec;
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), 1);
  ck_assert(!rec);
  const int trial[6] = {1, 0, 3, 1, 0, 3};
  const double rate[6] = {100, 110, 150, 105, 120, 140}; /* best: all out, 150 */
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), trial[i]);
    ck_assert(rec);
    mgpu__reserve_learn(&m, trial[i], rate[i]);
  }
  for (int k = 1 + 6; k < MGPU_RESERVE_REFRESH; k++) ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), 3);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), 1); /* refresh 1: the first other way */
  for (int k = MGPU_RESERVE_REFRESH + 1; k < 2 * MGPU_RESERVE_REFRESH; k++) ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), 3);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), 0); /* refresh 2: the second */
  /* Offered only two ways now, it keeps the better of those (none, 120). */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x3, &rec), 0);
  /* Within 1% of a way with fewer workers out, more out does not win. */
  memset(&m, 0, sizeof m);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), 1);
  const double close[6] = {100, 100, 100.5, 100, 100, 100.5};
  for (int i = 0; i < 6; i++) mgpu__reserve_learn(&m, mgpu__reserve_pick(&m, 1000, 0xb, &rec), close[i]);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xb, &rec), 0);
  /* A way offered late (all out) is timed twice before the choice. */
  memset(&m, 0, sizeof m);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0x7, &rec), 1);
  for (int i = 0; i < 6; i++) mgpu__reserve_learn(&m, mgpu__reserve_pick(&m, 1000, 0x7, &rec), 100 + i);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), 3);
  mgpu__reserve_learn(&m, 3, 50);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), 3);
  mgpu__reserve_learn(&m, 3, 60);
  /* none 104, a quarter 103, half 105 (not 1% over 104), all 60 */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), 0);
  /* All four: trials 1, 0, 2, 3 by turns; half out the fastest is kept, and
   * the refresh batches take none, a quarter and all in turn. */
  memset(&m, 0, sizeof m);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), 1);
  const int trial4[8] = {1, 0, 2, 3, 1, 0, 2, 3};
  const double rate4[8] = {100, 90, 130, 110, 105, 95, 125, 100};
  for (int i = 0; i < 8; i++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), trial4[i]);
    mgpu__reserve_learn(&m, trial4[i], rate4[i]);
  }
  ck_assert_int_eq(1 + 8, MGPU_RESERVE_TRIALS);
  for (int k = MGPU_RESERVE_TRIALS; k < MGPU_RESERVE_REFRESH; k++) ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), 2);
  const int refresh[4] = {1, 3, 0, 1}; /* k = 16, 32, 48, 64: others {0, 1, 3} at (k / 16) % 3 */
  for (int r = 0; r < 4; r++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), refresh[r]);
    for (int k = 1; k < MGPU_RESERVE_REFRESH; k++) ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, 0xf, &rec), 2);
  }
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

static int contend_cpu(const mgpu_chunk_t *c) {
  const contend_arg_t *a = c->arg;
  if (!c->stream) {
    atomic_fetch_add(&contend_busy, 1);
    mgpu_test_sleep(a->cpu_cost * (double)c->count);
    atomic_fetch_sub(&contend_busy, 1);
  } else {
    /* The GPU's work, in slices of 0.5 ms at the speed of the moment. */
    double left = a->gpu_cost * (double)c->count; /* seconds at full speed */
    while (left > 0) {
      double f = atomic_load(&contend_busy) >= a->busy_at ? a->slow : 1;
      double slice = MGPU_MIN(0.5e-3, left * f);
      mgpu_test_sleep(slice);
      left -= slice / f;
    }
  }
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) * 7u + 1u;
  return 0;
}
static const mgpu_kernel_t contend_kernel = {
    .name = "contend", .cpu = contend_cpu, .gpu = never_gpu, .nin = 0, .nout = 1, .out_size = {4}};

/* want[k]: the CPU workers batch k must keep out, k < 11. */
static void run_contend(double gpu_cost, double slow, int busy_at, const int *want) {
  mgpu_test_config_t cfg = mgpu_test_config(4, 1);
  cfg.cfg.reserve_threads = MGPU_RESERVE_AUTO;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&cfg, &rt), MGPU_OK);
  const size_t n = 16000;
  uint32_t *out = malloc(4 * n);
  contend_arg_t a = {50e-6, gpu_cost, slow, busy_at};
  mgpu_batch_t b = {.kernel = &contend_kernel, .n = n, .out = {out}, .arg = &a, .arg_size = sizeof a};
  mgpu_worker_stats_t ws[5];
  for (int k = 0; k < 11; k++) {
    memset(out, 0, 4 * n);
    mgpu_stats_t st = {.worker = ws, .worker_cap = 5};
    ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
    for (size_t i = 0; i < n; i++)
      if (out[i] != (uint32_t)i * 7u + 1u) ck_abort_msg("batch %d: item %zu wrong", k, i);
    printf("reserve auto (gpu_cost %g, slow %g): batch %d: %.3f s, %d kept out, items %llu %llu %llu %llu gpu %llu\n",
           gpu_cost, slow, k, st.wall_s, st.reserve_workers, (unsigned long long)ws[0].items,
           (unsigned long long)ws[1].items, (unsigned long long)ws[2].items, (unsigned long long)ws[3].items,
           (unsigned long long)ws[4].items);
    /* The way kept is chosen by timing batches: under sanitizers
     * (MGPURT_NO_TIMING), whose load in a parallel `make check` once made
     * the CPU workers look too slow to keep in, only its consequences are
     * checked. */
    int out_now = st.reserve_workers;
    if (mgpu_test_timing()) ck_assert_int_eq(out_now, want[k]);
    for (int w = 0; w < 4; w++)
      if (w >= 4 - out_now) ck_assert_uint_eq(ws[w].items, 0);
    if (mgpu_test_timing() && want[k] < 4) ck_assert_uint_gt(ws[0].items, 0);
    if (mgpu_test_timing() && want[k] == 0) ck_assert_uint_gt(ws[3].items, 0);
  }
  free(out);
  mgpu_finalize(rt);
}

START_TEST(test_reserve_auto) {
  /* Warm-up with one worker out, trials one, none and two out, twice, then
   * the fastest. */
  run_contend(12.5e-6, 8, 4, (const int[]){1, 1, 0, 2, 1, 0, 2, 1, 1, 1, 1});
  run_contend(50e-6, 1, 4, (const int[]){1, 1, 0, 2, 1, 0, 2, 0, 0, 0, 0});
  /* Four ways: one out, none, two, all four, twice each, then all four. */
  run_contend(0.5e-6, 2, 1, (const int[]){1, 1, 0, 2, 4, 1, 0, 2, 4, 4, 4});
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
  if (!c->stream) mgpu_test_sleep(t);
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

START_TEST(test_irregular_tail) {
  double gpu = run_irregular(MGPU_SCHED_GPU), steal = run_irregular(MGPU_SCHED_STEAL);
  printf("irregular items: steal %.3f s, GPU alone %.3f s\n", steal, gpu);
  /* 15%: runs of separate runtimes on a virtual machine differ by about 10%. */
  if (mgpu_test_timing()) ck_assert_msg(steal <= gpu * 1.15, "steal took %.3f s, the GPU alone %.3f s", steal, gpu);
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

/* Coarse items: a CPU worker would finish only a few items in the time the GPU
 * does the whole batch, and the first items (a CPU's first share) are ten
 * times dearer. Such a worker must get no first share: the batch then takes
 * about what the GPU alone needs, not the time of two dear items on a CPU. */
START_TEST(test_coarse_items) {
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
  if (mgpu_test_timing()) ck_assert_msg(t < gpu_alone * 1.2, "%.3f s against %.3f s for the GPU alone", t, gpu_alone);
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

START_TEST(test_split) {
  size_t share[4];
  double sp[4] = {1, 1, 3, 3};
  mgpu__split(sp, 4, 1001, share);
  ck_assert_uint_eq(share[0] + share[1] + share[2] + share[3], 1001);
  ck_assert_uint_eq(share[2], 376);
  double one[3] = {1, 0, 2};
  mgpu__split(one, 3, 10, share);
  ck_assert_uint_eq(share[1], 0);
  ck_assert_uint_eq(share[0] + share[2], 10);
  /* 1:5000, 2000 items: the slow workers get nothing, not the remainder. */
  double tail[3] = {1, 1, 5000};
  mgpu__split(tail, 3, 2000, share);
  ck_assert_uint_eq(share[0], 0);
  ck_assert_uint_eq(share[1], 0);
  ck_assert_uint_eq(share[2], 2000);
  /* Many equal workers: remainder spread one each. */
  double eq[7] = {1, 1, 1, 1, 1, 1, 1};
  size_t s7[7];
  mgpu__split(eq, 7, 20, s7);
  for (int i = 0; i < 7; i++) ck_assert(s7[i] == 2 || s7[i] == 3);
  /* Counts near SIZE_MAX: the shares add up exactly, with no wrap (the test's
   * timeout catches a remainder loop of 2^64 steps). */
  size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 3 * 2, (size_t)1 << 63};
  double sp3[3] = {1, 3, 7};
  for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
    mgpu__split(sp3, 3, huge[h], share);
    ck_assert_uint_ge(share[2], share[1]);
    ck_assert_uint_ge(share[1], share[0]);
    ck_assert_uint_eq(share[0] + share[1], huge[h] - share[2]);
    mgpu__split(sp, 4, huge[h], share);
    ck_assert_uint_eq(share[0] + share[1] + share[2], huge[h] - share[3]);
  }
}
END_TEST

/* GPUs of one kind measured within the tolerance of their median split as
 * equals; an outlier, other groups and CPU workers keep their speeds. */
START_TEST(test_pool_alike) {
  /* Workers: 2 CPUs (no group), 4 GPUs of group 2 (one at half speed, one
   * retired), 2 GPUs of group 6. */
  int group[8] = {-1, -1, 2, 2, 2, 2, 6, 6};
  double sp[8] = {10, 30, 1.00e6, 1.06e6, 0.5e6, 0, 2e6, 2.2e6};
  mgpu__pool_alike(sp, group, 8, 0.2);
  ck_assert(sp[0] == 10 && sp[1] == 30);
  /* Group 2's median is 1.00e6: 1.00e6 and 1.06e6 lie within 20% of it and
   * take their mean; 0.5e6 is half of it and keeps its own. */
  ck_assert(fabs(sp[2] - 1.03e6) < 1 && fabs(sp[3] - 1.03e6) < 1);
  ck_assert(sp[4] == 0.5e6 && sp[5] == 0);
  ck_assert(fabs(sp[6] - 2.1e6) < 1 && fabs(sp[7] - 2.1e6) < 1);
  /* Alone in its group, or nobody within the tolerance: unchanged. */
  int two[2] = {0, 1};
  double apart[2] = {1e6, 1.1e6};
  mgpu__pool_alike(apart, two, 2, 0.2);
  ck_assert(apart[0] == 1e6 && apart[1] == 1.1e6);
  int one[2] = {0, 0};
  double far[2] = {1e6, 3e6};
  mgpu__pool_alike(far, one, 2, 0.2);
  ck_assert(far[0] == 1e6 && far[1] == 3e6);
  /* Four GPUs measured 249k-274k items/s (4 x H200, mulmod 10000): one speed. */
  int four[4] = {0, 0, 0, 0};
  double h200[4] = {2.60e5, 2.70e5, 2.74e5, 2.49e5};
  mgpu__pool_alike(h200, four, 4, 0.2);
  for (int i = 0; i < 4; i++) ck_assert(fabs(h200[i] - 2.6325e5) < 1e-3);
}
END_TEST

/* Which batches are short enough that each GPU's range goes in flight at
 * once (their GPUs split as equals). */
START_TEST(test_ranges_in_flight) {
  /* 4 x H200 mulmod 10000: 4 GPUs at 4e7 items/s, 1 048 576 items: 6.6 ms,
   * under (3 + 1) chunks of 2 ms. */
  double h200[5] = {6e5, 4e7, 4e7, 4e7, 4e7};
  ck_assert(mgpu__ranges_in_flight(h200, 5, 1048576, 3));
  /* With one stream a GPU, 4 ms: not. */
  ck_assert(!mgpu__ranges_in_flight(h200, 5, 1048576, 1));
  /* mulmod 10: 67 108 864 items at 2e9 items/s in all, 34 ms: not. */
  double mm10[2] = {5e8, 1.5e9};
  ck_assert(!mgpu__ranges_in_flight(mm10, 2, 67108864, 3));
  /* Nothing measured or able: not. */
  double none[2] = {0, 0};
  ck_assert(!mgpu__ranges_in_flight(none, 2, 100, 3));
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

/* How much a thief takes from a victim's range. */
START_TEST(test_steal_share) {
  /* Equal speeds, nothing pending: half each. */
  mgpu__steal_view_t eq = {.vt = 100, .vo = 100, .left = 1000};
  ck_assert_uint_eq(mgpu__steal_share(&eq), 500);
  /* A retired owner (speed 0) gives up the whole range. */
  mgpu__steal_view_t gone = {.vt = 100, .vo = 0, .left = 77};
  ck_assert_uint_eq(mgpu__steal_share(&gone), 77);
  /* A CPU core (1e3 items/s) against a GPU (1e6 items/s) with 0.1 s of work
   * left: it plans with a quarter of its speed, so it takes what it finishes
   * in well under the GPU's time. */
  mgpu__steal_view_t far = {.vt = 1e3, .vo = 1e6, .left = 1e5};
  size_t far_take = mgpu__steal_share(&far);
  ck_assert(far_take >= 20 && far_take <= 30);
  /* The slowest rate it has seen itself (an item of 50 ms) lowers that. */
  far.slowest = 20;
  ck_assert_uint_le(mgpu__steal_share(&far), 2);
  /* Another core of its kind once took 0.2 s over one item, more than the
   * owner has left: it takes nothing, though its own history says it could. */
  far.slowest = 0;
  far.worst_item_s = 0.2;
  ck_assert_uint_eq(mgpu__steal_share(&far), 0);
  /* With more left than that, the amount is as before: the worst item only
   * gates, it does not shrink the share of evenly costly work. */
  far.left = 1e6;
  mgpu__steal_view_t ungated = {.vt = 1e3, .vo = 1e6, .left = 1e6};
  ck_assert_uint_eq(mgpu__steal_share(&far), mgpu__steal_share(&ungated));
  /* Workers of similar speed are not gated by the worst item. */
  mgpu__steal_view_t near = {.vt = 100, .vo = 200, .left = 30, .worst_item_s = 10};
  ck_assert_uint_eq(mgpu__steal_share(&near), 10);
}
END_TEST

/* A runtime of one CPU worker and the (empty) model of count_kernel in it. */
static mgpu__model_t *count_model(mgpu_runtime_t **rt) {
  mgpu_test_config_t cfg = mgpu_test_config(1, 0);
  ck_assert_int_eq(mgpu_test_init(&cfg, rt), MGPU_OK);
  pthread_mutex_lock(&(*rt)->lock);
  mgpu__model_t *m = mgpu__model_get(*rt, &count_kernel);
  pthread_mutex_unlock(&(*rt)->lock);
  return m;
}

/* A device's chunk cut short by the end of its range, done in less time than
 * its planned size would take, shows only that the device is at least that
 * fast: latency weighs more on fewer items. The model learns a faster rate
 * from it, never a slower one; a cut chunk slower than a whole one is learnt. */
START_TEST(test_model_cut_chunks) {
  mgpu_runtime_t *rt;
  mgpu__model_t *m = count_model(&rt);
#define SPEED0() atomic_load(&m->speed[0])
  /* No speed known yet: even a cut chunk gives the first estimate. */
  mgpu__model_update(m, 0, 10, 1e-3, 1000);
  ck_assert_double_eq_tol(SPEED0(), 1e4, 1);
  mgpu__model_update(m, 0, 1000, 1e-3, 0);
  double full = SPEED0();
  ck_assert(full > 1e4);
  /* Ten cut chunks of a few items, each in 1 ms where a whole one of 1000
   * items takes longer at this speed, leave it alone... */
  ck_assert(1000 / full > 1e-3);
  for (int i = 0; i < 10; i++) mgpu__model_update(m, 0, 10, 1e-3, 1000);
  double after = SPEED0();
  ck_assert_double_eq(after, full);
  /* ...while a full chunk, however slow, is learnt... */
  mgpu__model_update(m, 0, 10, 1e-3, 0);
  double slower = SPEED0();
  ck_assert(slower < full);
  /* ...and so is a cut chunk that took longer than a whole one would. */
  mgpu__model_update(m, 0, 10, 1.0, 1000);
  double slowest = SPEED0();
  ck_assert(slowest < slower);
  /* A cut chunk faster than the model raises it. */
  mgpu__model_update(m, 0, 100000, 1e-3, 200000);
  ck_assert(SPEED0() > slowest);
#undef SPEED0
  mgpu_finalize(rt);
}
END_TEST

/* The planned size of a chunk is what the model asks for, before the growth
 * limit: a device's small chunks after a run of small stolen ones (a batch's
 * tail) are cut short, and their launch latency is not learnt as a slow
 * device. With the growth limit as the plan, the model of a 4e7 items/s device
 * fell to 1e5 within one batch tail. */
START_TEST(test_chunk_plan) {
  size_t planned;
  ck_assert_uint_eq(mgpu__chunk_plan(4e7, 0, 1000000, SIZE_MAX, 2e-3, &planned), 80000);
  ck_assert_uint_eq(planned, 80000);
  ck_assert_uint_eq(mgpu__chunk_plan(4e7, 100, 1000000, SIZE_MAX, 2e-3, &planned), 400);
  ck_assert_uint_eq(planned, 80000);
  ck_assert_uint_eq(mgpu__chunk_plan(4e7, 36, 5, SIZE_MAX, 2e-3, &planned), 5);
  ck_assert_uint_eq(planned, 80000);
  ck_assert_uint_eq(mgpu__chunk_plan(4e7, 0, 1000000, 1000, 2e-3, &planned), 1000);
  ck_assert_uint_eq(planned, 1000);
  /* Not measured: probes of 1, then fourfold. */
  ck_assert_uint_eq(mgpu__chunk_plan(0, 0, 1000, SIZE_MAX, 2e-3, &planned), 1);
  ck_assert_uint_eq(mgpu__chunk_plan(0, 10, 1000, SIZE_MAX, 2e-3, &planned), 40);
  ck_assert_uint_eq(planned, 40);
  ck_assert_uint_eq(mgpu__chunk_plan(1.0, 0, 0, SIZE_MAX, 2e-3, &planned), 1);

  /* A batch tail as the device sees it: forty stolen pieces of a few items,
   * each 0.1 ms of latency, leave the learnt speed where full chunks put it. */
  mgpu_runtime_t *rt;
  mgpu__model_t *m = count_model(&rt);
  for (int i = 0; i < 20; i++) mgpu__model_update(m, 0, 80000, 2e-3, 0);
  double full = atomic_load(&m->speed[0]);
  ck_assert_double_eq_tol(full, 4e7, 1);
  size_t last = 36;
  for (int i = 0; i < 40; i++) {
    size_t n = mgpu__chunk_plan(atomic_load(&m->speed[0]), last, 5, SIZE_MAX, 2e-3, &planned);
    mgpu__model_update(m, 0, n, 1e-4, planned > n ? planned : 0);
    last = n;
  }
  ck_assert_double_eq(atomic_load(&m->speed[0]), full);
  mgpu_finalize(rt);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sched");
  TCase *tc = tcase_create("sched");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_split);
  tcase_add_test(tc, test_pool_alike);
  tcase_add_test(tc, test_gpu_groups);
  tcase_add_test(tc, test_ranges_in_flight);
  tcase_add_test(tc, test_model_cut_chunks);
  tcase_add_test(tc, test_chunk_plan);
  tcase_add_test(tc, test_steal_share);
  tcase_add_loop_test(tc, test_exactly_once, 0, 4);
  tcase_add_test(tc, test_static_shares);
  tcase_add_test(tc, test_tail_rule);
  tcase_add_test(tc, test_cpus_sit_out);
  tcase_add_test(tc, test_reserve_workers);
  tcase_add_test(tc, test_reserve_pick);
  tcase_add_test(tc, test_reserve_pick3);
  tcase_add_test(tc, test_reserve_auto);
  tcase_add_test(tc, test_balance);
  tcase_add_test(tc, test_balance_irregular_first_batch);
  tcase_add_test(tc, test_irregular_tail);
  tcase_add_test(tc, test_coarse_items);
  tcase_add_test(tc, test_prof_bins);
  tcase_add_test(tc, test_prof_cuts);
  tcase_add_test(tc, test_prof_learn);
  tcase_add_test(tc, test_cost_model);
  tcase_add_test(tc, test_cost_profile_split);
  suite_add_tcase(s, tc);
  TCase *position = tcase_create("position");
  tcase_set_timeout(position, 120);
  tcase_add_test(position, test_cpu_cost_by_position);
  suite_add_tcase(s, position);
  return mgpu_test_main(s);
}
