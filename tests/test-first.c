/* SPDX-License-Identifier: BSD-3-Clause */
/* test-first.c: the first batch of a fresh runtime, on emulated devices of
 * known latency: how fast a GPU's chunks reach the saturating size, fixed
 * splits that keep them there, and the model store's prior. */
#include "testutil.h"

#include <limits.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testkern.h"

/* A latency-bound device: each launch costs LATENCY_S, an item 1 ns, and
 * launches on different streams run side by side; a chunk is saturated (its
 * latency at most a tenth of its time) from SAT_ITEMS on, past every batch
 * here. */
#define LATENCY_S 2e-3
#define SPEED 1e9
#define SAT_ITEMS ((size_t)(9 * LATENCY_S * SPEED))
#define N ((size_t)1 << 21)

static uint64_t *xs, *ys;

/* The best of three runs makes a timing claim; where none is made (under
 * MGPURT_NO_TIMING, as in the sanitizer builds) one run shows the behaviour. */
static int tries(void) { return mgpu_test_timing() ? 3 : 1; }

static void setup(void) {
  xs = malloc(N * sizeof *xs);
  ys = malloc(N * sizeof *ys);
  ck_assert(xs && ys);
  for (size_t i = 0; i < N; i++) xs[i] = i;
}

static void teardown(void) {
  free(xs);
  free(ys);
}

/* A runtime of `cpus` CPU workers and one emulated latency-bound GPU,
 * tracing into a new file at path (a mkstemp template), with the model store
 * in dir (NULL: off). */
static mgpu_runtime_t *start_latency_bound(char *path, int cpus, mgpu_sched_t sched, const char *dir) {
  temp_file(path);
  mgpu_test_config_t c = mgpu_test_config(cpus, 1);
  c.cfg.sched = sched;
  c.cfg.trace = path;
  c.cfg.model_dir = dir ? dir : "off";
  c.cfg.reserve_threads = cpus > 1 ? MGPU_RESERVE_AUTO : 0;
  c.test.emulate_latency = LATENCY_S;
  c.test.emulate_speed = SPEED;
  c.test.emulate_overlap = 1;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  return rt;
}

/* One batch of n items of axpk, every item checked. */
static void run_batch(mgpu_runtime_t *rt, size_t n, uint64_t k) {
  axpk_arg_t a = {.k = k};
  mgpu_batch_t b = axpk_batch(&axpk, n, xs, ys, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  axpk_assert_right(xs, ys, n, k);
}

/* The sizes of the GPU's kernel launches of the trace's batch number
 * `batch` (0: the first), in the order they were launched; their count. */
static int gpu_chunks(mgpu_runtime_t *rt, int batch, size_t *size, int max) {
  size_t m;
  mgpu_trace_event_t *e = trace_copy(rt, &m);
  uint64_t id = UINT64_MAX;
  int seen = 0;
  for (size_t i = 0; i < m; i++)
    if (!strcmp(e[i].kind, "batch") && seen++ == batch) id = e[i].batch;
  int n = 0;
  double t0[256];
  for (size_t i = 0; i < m && n < max && n < 256; i++) {
    if (e[i].batch != id || strcmp(e[i].kind, "kernel")) continue;
    int j = n++;
    for (; j > 0 && t0[j - 1] > e[i].t0; j--) t0[j] = t0[j - 1], size[j] = size[j - 1];
    t0[j] = e[i].t0, size[j] = e[i].count;
  }
  free(e);
  return n;
}

/* The first batch of a latency-bound device, launches side by side: every
 * item computed once and right, in at most 30 launches from a one-item probe
 * (the launches' times on a loaded machine vary, so the best of three fresh
 * runtimes counts). */
START_TEST(test_first_batch_launches) {
  int best = INT_MAX;
  for (int run = 0; run < tries() && best > 30; run++) {
    char path[] = "/tmp/mgpu-first-XXXXXX";
    mgpu_runtime_t *rt = start_latency_bound(path, 0, MGPU_SCHED_GPU, NULL);
    run_batch(rt, N, 1);
    size_t size[256];
    int n = gpu_chunks(rt, 0, size, 256);
    printf("first batch:");
    for (int i = 0; i < n; i++) printf(" %zu", size[i]);
    printf(" (%d launches)\n", n);
    ck_assert_int_ge(n, 1);
    if (n < best) best = n;
    mgpu_finalize(rt);
    unlink(path);
  }
  if (mgpu_test_timing()) ck_assert_int_le(best, 30); /* launch counts follow the clocks */
}
END_TEST

/* Static mode fixes the shares, not the chunks: at any ratio the GPU's
 * share runs in a few launches, not in chunks sized from the ratio's
 * guess of its speed. */
START_TEST(test_static_keeps_gpu_chunks_large) {
  static const double ratios[] = {0.5, 20, 5000};
  double ratio = ratios[_i];
  char path[] = "/tmp/mgpu-first-XXXXXX";
  temp_file(path);
  mgpu_test_config_t c = mgpu_test_config(1, 1);
  c.cfg.sched = MGPU_SCHED_STATIC;
  c.cfg.trace = path;
  c.cfg.model_dir = "off";
  c.cfg.device_to_core_ratio = ratio;
  c.test.emulate_latency = LATENCY_S;
  c.test.emulate_speed = SPEED;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  size_t n = N / 4;
  run_batch(rt, n, 2);
  run_batch(rt, n, 3);
  size_t size[256];
  for (int batch = 0; batch < 2; batch++) {
    int k = gpu_chunks(rt, batch, size, 256);
    size_t items = 0;
    for (int i = 0; i < k; i++) items += size[i];
    printf("ratio %g, batch %d: %d GPU launches, %zu items\n", ratio, batch, k, items);
    /* The GPU's share is the ratio's; once its chunks are known, they are
     * of the saturating size, a few launches for the whole share. */
    double want = (double)n * ratio / (ratio + 1);
    ck_assert_msg(fabs((double)items - want) <= 1, "GPU items %zu, the ratio's %.1f", items, want);
    if (batch == 1 && mgpu_test_timing()) ck_assert_int_le(k, 4);
  }
  mgpu_finalize(rt);
  unlink(path);
}
END_TEST

/* The splits that static mode names are the ones it runs: under
 * MGPU_RESERVE_THREADS=auto no CPU worker is kept out of a fixed split. */
START_TEST(test_static_split_is_the_named_one) {
  mgpu_test_config_t c = mgpu_test_config(2, 1);
  c.cfg.sched = MGPU_SCHED_STATIC;
  c.cfg.model_dir = "off";
  c.cfg.device_to_core_ratio = 2;
  c.cfg.reserve_threads = MGPU_RESERVE_AUTO;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  size_t n = 40000;
  for (int b = 0; b < 3; b++) {
    axpk_arg_t a = {.k = 7};
    mgpu_batch_t d = axpk_batch(&axpk, n, xs, ys, &a);
    mgpu_worker_stats_t ws[3];
    mgpu_stats_t s = MGPU_STATS_INIT;
    s.worker = ws, s.worker_cap = 3, s.worker_size = sizeof ws[0];
    ck_assert_int_eq(mgpu_run(rt, &d, &s), MGPU_OK);
    /* Ratio 2 over two CPU workers: each worker of the team a quarter. */
    ck_assert_uint_eq(ws[0].items, n / 4);
    ck_assert_uint_eq(ws[1].items, n / 4);
    ck_assert_uint_eq(ws[2].items, n / 2);
  }
  mgpu_finalize(rt);
}
END_TEST

static char store_dir[64];

static void store_setup(void) {
  setup();
  snprintf(store_dir, sizeof store_dir, "/tmp/mgpu-models-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(store_dir));
}

static void store_teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", store_dir);
  ck_assert_int_eq(system(cmd), 0);
  teardown();
}

/* Runs batches of a fresh runtime with the store and finalizes it: the
 * launches of its first batch (sizes into size) and of its last. */
static int fresh_run(size_t *size, int batches, int *last_p) {
  char path[] = "/tmp/mgpu-first-XXXXXX";
  mgpu_runtime_t *rt = start_latency_bound(path, 0, MGPU_SCHED_GPU, store_dir);
  for (int b = 0; b < batches; b++) run_batch(rt, N, (uint64_t)b);
  size_t last[256];
  int n = gpu_chunks(rt, 0, size, 256);
  if (last_p) *last_p = gpu_chunks(rt, batches - 1, last, 256);
  mgpu_finalize(rt);
  unlink(path);
  return n;
}

/* The store's entry for the test's device and kernel. */
static mgpu__store_entry_t stored_entry(void) {
  mgpu_test_config_t c = mgpu_test_config(0, 1);
  c.cfg.model_dir = "off";
  c.test.emulate_latency = LATENCY_S;
  c.test.emulate_speed = SPEED;
  c.test.emulate_overlap = 1;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  char cls[MGPU_STORE_CLASS_LEN], why[1400];
  snprintf(cls, sizeof cls, "%s", rt->classes[rt->worker_class[0]]);
  mgpu_finalize(rt);
  mgpu__store_entry_t e;
  ck_assert_msg(mgpu__store_lookup(store_dir, &axpk, 0, cls, (double)time(NULL), MGPU_STORE_MAX_AGE_S, &e, why,
                                   sizeof why) == 0, "no stored entry: %s", why);
  return e;
}

/* A second process starts where the first ended: its first batch's first
 * chunk is of the stored knee, with no probe, and the batch takes no more
 * launches than the first process's last batch, give or take two (the
 * launches' times on a loaded machine vary, so the best of three counts). */
START_TEST(test_stored_model_skips_the_probe) {
  size_t size[256];
  int best = INT_MAX, bound = 0;
  for (int run = 0; run < tries() && best > bound; run++) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.model", store_dir);
    ck_assert_int_eq(system(cmd), 0);
    int last, scratch = fresh_run(size, 4, &last);
    mgpu__store_entry_t e = stored_entry();
    int stored = fresh_run(size, 1, NULL);
    printf("from scratch: %d launches, later %d; with the stored model (knee %.0f): %d, the first of %zu items\n",
           scratch, last, e.knee, stored, size[0]);
    ck_assert_uint_ge(size[0], (size_t)e.knee);
    if (stored - (last + 2) < best - bound) best = stored, bound = last + 2;
  }
  if (mgpu_test_timing()) ck_assert_int_le(best, bound);
}
END_TEST

/* A stored model ten times wrong either way costs no more launches than
 * learning from scratch, give or take the two that show it wrong (the best
 * of three, as above). */
START_TEST(test_wrong_stored_model_is_dropped) {
  static const double factor[] = {10, 0.1};
  size_t size[256];
  int excess = INT_MAX;
  for (int run = 0; run < tries() && excess > 2; run++) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.model", store_dir);
    ck_assert_int_eq(system(cmd), 0);
    int scratch = fresh_run(size, 3, NULL);
    mgpu__store_entry_t e = stored_entry();
    e.latency *= factor[_i];
    e.cost *= factor[_i];
    e.knee /= factor[_i];
    char why[1400];
    ck_assert_int_eq(mgpu__store_write(store_dir, &axpk, 0, &e, 1, why, sizeof why), 0);
    int wrong = fresh_run(size, 1, NULL);
    printf("from scratch %d launches, with a model %g times off %d\n", scratch, factor[_i], wrong);
    if (wrong - scratch < excess) excess = wrong - scratch;
  }
  if (mgpu_test_timing()) ck_assert_int_le(excess, 2);
}
END_TEST

/* The inode of kernel k's file in the store (0: none): a rewrite renames a
 * new file over it. */
static ino_t stored_inode(const mgpu_kernel_t *k) {
  char path[1200];
  ck_assert_int_eq(mgpu__store_path(store_dir, k, 0, path, sizeof path), 0);
  struct stat st;
  return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* A long run stores what it learnt while it runs: a submit made
 * MGPU_STORE_PERIOD_S after the runtime started writes the models, before
 * finalize; finalize then writes only the kernels that learnt since (here
 * not axpk, whose file another process changed meanwhile). An event waited
 * on after its runtime is finalized touches nothing of the runtime (the
 * memory checkers of CI see it). */
START_TEST(test_long_run_stores_while_running) {
  char path[] = "/tmp/mgpu-first-XXXXXX";
  double t0 = mgpu__now();
  mgpu_runtime_t *rt = start_latency_bound(path, 0, MGPU_SCHED_GPU, store_dir);
  run_batch(rt, N, 1);
  /* Unless the batch took the period (as under valgrind), nothing is stored yet. */
  if (mgpu__now() - t0 < MGPU_STORE_PERIOD_S - 0.5)
    ck_assert_int_eq(mgpu_model_stored(rt, &axpk, 0, MGPU_WORKER_GPU), 0);
  usleep((useconds_t)((MGPU_STORE_PERIOD_S + 0.2) * 1e6));
  mgpu_kernel_t other = axpk;
  other.name = "axpk-other";
  axpk_arg_t a = {.k = 2};
  mgpu_batch_t b = axpk_batch(&other, 1000, xs, ys, &a);
  mgpu_event_t *ev;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev), MGPU_OK);
  ck_assert_int_eq(mgpu_model_stored(rt, &axpk, 0, MGPU_WORKER_GPU), 1);
  mgpu__store_entry_t e = stored_entry();
  e.cost *= 10;
  char why[1400];
  ck_assert_int_eq(mgpu__store_write(store_dir, &axpk, 0, &e, 1, why, sizeof why), 0);
  ino_t before = stored_inode(&axpk);
  ck_assert(before != 0);
  mgpu_finalize(rt);
  ck_assert_int_eq(mgpu_event_wait(ev, NULL), MGPU_OK);
  mgpu_event_release(ev);
  axpk_assert_right(xs, ys, 1000, 2);
  ck_assert_msg(stored_inode(&axpk) == before, "finalize rewrote a model that learnt nothing since it was stored");
  ck_assert(stored_inode(&other) != 0);
  unlink(path);
}
END_TEST

/* A save that fails (the store's directory cannot be made) is tried again:
 * finalize writes what a failed save held, once the directory can be made. */
START_TEST(test_failed_save_is_tried_again) {
  char blocker[128], dir[160], path[] = "/tmp/mgpu-first-XXXXXX";
  snprintf(blocker, sizeof blocker, "%s/blocker", store_dir);
  snprintf(dir, sizeof dir, "%s/models", blocker);
  FILE *fp = fopen(blocker, "w"); /* a file where the directory's parent should be */
  ck_assert_ptr_nonnull(fp);
  fclose(fp);
  mgpu_runtime_t *rt = start_latency_bound(path, 0, MGPU_SCHED_GPU, dir);
  run_batch(rt, N / 16, 1);
  usleep((useconds_t)((MGPU_STORE_PERIOD_S + 0.2) * 1e6));
  /* Another kernel's batch, so that axpk learns nothing after the save that fails. */
  mgpu_kernel_t other = axpk;
  other.name = "axpk-other";
  axpk_arg_t a = {.k = 2};
  mgpu_batch_t b = axpk_batch(&other, 1000, xs, ys, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  ck_assert_int_eq(unlink(blocker), 0);
  mgpu_finalize(rt);
  char file[1200];
  ck_assert_int_eq(mgpu__store_path(dir, &axpk, 0, file, sizeof file), 0);
  struct stat st;
  ck_assert_msg(stat(file, &st) == 0, "the model a failed save held was not written at finalize");
  unlink(path);
}
END_TEST

/* MGPU_MODEL_DIR=off keeps nothing; an unnamed kernel is never stored. */
START_TEST(test_store_off_and_unnamed) {
  mgpu_test_config_t c = mgpu_test_config(1, 1);
  c.cfg.model_dir = "off";
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  run_batch(rt, 10000, 1);
  mgpu_finalize(rt);
  c.cfg.model_dir = store_dir;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  mgpu_kernel_t anon = axpk;
  anon.name = NULL;
  axpk_arg_t a = {.k = 1};
  mgpu_batch_t b = axpk_batch(&anon, 10000, xs, ys, &a);
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  mgpu_finalize(rt);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls '%s')\"", store_dir);
  ck_assert_msg(system(cmd) == 0, "the store is not empty");
}
END_TEST

int main(void) {
  Suite *s = suite_create("first");
  TCase *probe = tcase_create("probe");
  tcase_add_checked_fixture(probe, setup, teardown);
  tcase_set_timeout(probe, 60);
  tcase_add_test(probe, test_first_batch_launches);
  tcase_add_loop_test(probe, test_static_keeps_gpu_chunks_large, 0, 3);
  tcase_add_test(probe, test_static_split_is_the_named_one);
  suite_add_tcase(s, probe);
  TCase *store = tcase_create("store");
  tcase_add_checked_fixture(store, store_setup, store_teardown);
  tcase_set_timeout(store, 60);
  tcase_add_test(store, test_stored_model_skips_the_probe);
  tcase_add_loop_test(store, test_wrong_stored_model_is_dropped, 0, 2);
  tcase_add_test(store, test_store_off_and_unnamed);
  tcase_add_test(store, test_long_run_stores_while_running);
  tcase_add_test(store, test_failed_save_is_tried_again);
  suite_add_tcase(s, store);
  return mgpu_test_main(s);
}
