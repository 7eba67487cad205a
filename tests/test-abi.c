/* SPDX-License-Identifier: BSD-3-Clause */
/* test-abi.c: a program built against an older mgpurt.h keeps running. The
 * older layouts are defined here (today's structs with their last fields cut
 * off) and handed to the library with their own sizes: it reads only what
 * they have, gives the rest its defaults and writes nothing past them. Sizes
 * past the library's, and sizes that end inside a field, are refused, naming
 * the struct; size 0 is version 1.
 * Only the public headers are used, and the program links the shared
 * library, as a user's would. */
#include "config.h"

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgpurt.h"
#include "mgpurt_kernels.h"

/* mgpu_config_t without timeout. */
typedef struct {
  size_t size;
  int num_threads, num_gpus, ndevices;
  int devices[MGPU_MAX_DEVICES];
  double device_to_core_ratio;
  long long max_batch_size;
  int streams_per_gpu;
  mgpu_sched_t sched;
  int stats;
  const char *trace;
  int debug;
  int ntensor_split;
  double tensor_split[MGPU_MAX_DEVICES + 1];
  int ignore_env;
  int reserve_threads;
} old_config_t;

/* mgpu_batch_t without arg and arg_size. */
typedef struct {
  size_t size;
  const mgpu_kernel_t *kernel;
  size_t n;
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  int nconsts;
  mgpu_const_t *consts[MGPU_MAX_CONSTS];
} old_batch_t;

/* mgpu_worker_stats_t without batch_cap and staged_bytes. */
typedef struct {
  mgpu_worker_kind_t kind;
  int device;
  uint64_t items, chunks, steals, retries;
  double busy_s;
} old_worker_stats_t;

/* mgpu_stats_t without reserve_workers. */
typedef struct {
  size_t size;
  mgpu_status_t status;
  double wall_s;
  uint64_t items, chunks, steals, retries, batches;
  size_t failed_first, failed_count;
  int nworkers, worker_cap;
  old_worker_stats_t *worker;
  size_t worker_size;
} old_stats_t;

/* Each older layout is today's up to where its first missing field starts:
 * the rule by which versions grow (lib/base/base.h, abi.c). */
#define SAME_PLACE(old, cur, f) _Static_assert(offsetof(old, f) == offsetof(cur, f), #old "." #f " moved")
SAME_PLACE(old_config_t, mgpu_config_t, ignore_env);
SAME_PLACE(old_config_t, mgpu_config_t, reserve_threads);
_Static_assert(sizeof(old_config_t) == offsetof(mgpu_config_t, timeout), "old config");
SAME_PLACE(old_batch_t, mgpu_batch_t, consts);
_Static_assert(sizeof(old_batch_t) == offsetof(mgpu_batch_t, arg), "old batch");
SAME_PLACE(old_worker_stats_t, mgpu_worker_stats_t, busy_s);
_Static_assert(sizeof(old_worker_stats_t) == offsetof(mgpu_worker_stats_t, batch_cap), "old worker stats");
SAME_PLACE(old_stats_t, mgpu_stats_t, worker);
SAME_PLACE(old_stats_t, mgpu_stats_t, worker_size);
_Static_assert(sizeof(old_stats_t) == offsetof(mgpu_stats_t, reserve_workers), "old stats");

#define GUARD 0x5A
#define N 10000

/* A buffer with room for today's struct and more, all guard bytes. */
typedef struct {
  _Alignas(16) unsigned char b[2048];
} buf_t;

static void fill_guard(buf_t *g) { memset(g->b, GUARD, sizeof g->b); }

/* Bytes [from, sizeof) are guard bytes still. */
static int guard_intact(const buf_t *g, size_t from) {
  for (size_t i = from; i < sizeof g->b; i++)
    if (g->b[i] != GUARD) return 0;
  return 1;
}

static int twice_cpu(const mgpu_chunk_t *c) {
  const int32_t *x = c->in[0];
  int32_t *y = c->out[0];
  for (size_t i = 0; i < c->count; i++) y[i] = 2 * x[i];
  return 0;
}

static const mgpu_kernel_t twice = {.name = "twice", .cpu = twice_cpu, .nin = 1, .nout = 1,
                                    .in_size = {sizeof(int32_t)}, .out_size = {sizeof(int32_t)}};

static mgpu_runtime_t *cpu_runtime(int threads) {
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.ignore_env = 1;
  c.num_threads = threads;
  c.num_gpus = 0;
  c.debug = 0;
  mgpu_runtime_t *rt = NULL;
  ck_assert_msg(mgpu_init(&c, &rt) == MGPU_OK, "mgpu_init: %s", mgpu_last_error());
  return rt;
}

/* The setting named name, as mgpu-run --info shows it. */
static mgpu_setting_t setting(mgpu_runtime_t *rt, const char *name) {
  mgpu_setting_t s = MGPU_SETTING_INIT;
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++)
    if (!strcmp(s.name, name)) return s;
  ck_abort_msg("no setting %s", name);
  return s;
}

START_TEST(test_old_config) {
  /* mgpu_config_init of the older program writes only its bytes. */
  buf_t g;
  fill_guard(&g);
  old_config_t *old = (old_config_t *)(void *)g.b;
  mgpu_config_init_size((mgpu_config_t *)(void *)old, sizeof *old);
  ck_assert(guard_intact(&g, sizeof *old));
  ck_assert_uint_eq(old->size, sizeof *old);
  ck_assert_int_eq(old->num_threads, -1);
  ck_assert_int_eq(old->reserve_threads, -1);
  old->ignore_env = 1;
  old->num_threads = 2;
  old->num_gpus = 0;
  old->debug = 0;
  /* Where today's timeout lies, a value mgpu_init would refuse: it must not
   * be read. */
  double bad = -5;
  memcpy(g.b + offsetof(mgpu_config_t, timeout), &bad, sizeof bad);
  mgpu_runtime_t *rt = NULL;
  ck_assert_msg(mgpu_init((const mgpu_config_t *)(void *)old, &rt) == MGPU_OK, "%s", mgpu_last_error());
  ck_assert_int_eq(mgpu_num_cpu_workers(rt), 2);
  mgpu_setting_t t = setting(rt, "MGPU_TIMEOUT");
  ck_assert_str_eq(t.source, "default");
  ck_assert_msg(!strncmp(t.value, "auto", 4), "MGPU_TIMEOUT is %s", t.value);
  ck_assert_str_eq(setting(rt, "MGPU_NUM_THREADS").source, "argument");
  mgpu_finalize(rt);
  ck_assert(guard_intact(&g, sizeof *old + sizeof bad));
}
END_TEST

/* A batch of N items on rt, its statistics in the first `size` bytes of
 * gs (guard bytes past them), which the runtime must not write past. */
static mgpu_stats_t *run_sized_stats(mgpu_runtime_t *rt, buf_t *gs, size_t size) {
  int32_t x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = i;
  mgpu_batch_t b = {.size = sizeof b, .kernel = &twice, .n = N, .in = {x}, .out = {y}};
  fill_guard(gs);
  mgpu_stats_t *st = (mgpu_stats_t *)(void *)gs->b;
  memset(st, 0, size);
  st->size = size;
  ck_assert_msg(mgpu_run(rt, &b, st) == MGPU_OK, "%s", mgpu_last_error());
  ck_assert_uint_eq(st->items, N);
  ck_assert(guard_intact(gs, size));
  return st;
}

/* Version 1 of mgpu_config_t and mgpu_stats_t: today's without the fields
 * of the runtime across MPI ranks. */
START_TEST(test_v1_without_ranks) {
  buf_t g;
  fill_guard(&g);
  mgpu_config_t *c = (mgpu_config_t *)(void *)g.b;
  size_t v1 = offsetof(mgpu_config_t, mpi);
  mgpu_config_init_size(c, v1);
  ck_assert(guard_intact(&g, v1));
  c->ignore_env = 1;
  c->num_threads = 1;
  c->num_gpus = 0;
  c->debug = 0;
  /* Where today's mpi_comm lies, a pointer mgpu_init must not read. */
  const void *junk = (const void *)(uintptr_t)0x8;
  memcpy(g.b + offsetof(mgpu_config_t, mpi_comm), &junk, sizeof junk);
  mgpu_runtime_t *rt = NULL;
  ck_assert_msg(mgpu_init(c, &rt) == MGPU_OK, "%s", mgpu_last_error());
  ck_assert_int_eq(mgpu_num_ranks(rt), 1);
  ck_assert_str_eq(setting(rt, "MGPU_MPI").source, "default");
  buf_t gs;
  run_sized_stats(rt, &gs, offsetof(mgpu_stats_t, rank));
  mgpu_finalize(rt);
}
END_TEST

/* Version 2 of mgpu_stats_t: today's without gpus_out_batches, which the
 * runtime must not write past. */
START_TEST(test_v2_stats) {
  mgpu_runtime_t *rt = cpu_runtime(2);
  buf_t gs;
  size_t sv2 = offsetof(mgpu_stats_t, gpus_out_batches);
  mgpu_stats_t *st = run_sized_stats(rt, &gs, sv2);
  ck_assert_int_eq(mgpu_runtime_stats(rt, st), MGPU_OK);
  ck_assert_uint_eq(st->batches, 1);
  ck_assert(guard_intact(&gs, sv2));
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_old_batch_and_stats) {
  mgpu_runtime_t *rt = cpu_runtime(2);
  int32_t *x = malloc(N * sizeof *x), *y = calloc(N, sizeof *y);
  ck_assert(x && y);
  for (int i = 0; i < N; i++) x[i] = i;
  /* The batch: where today's arg and arg_size lie, a NULL argument of 4096
   * bytes, which mgpu_submit would refuse. */
  buf_t gb;
  fill_guard(&gb);
  old_batch_t *ob = (old_batch_t *)(void *)gb.b;
  memset(ob, 0, sizeof *ob);
  ob->size = sizeof *ob;
  ob->kernel = &twice;
  ob->n = N;
  ob->in[0] = x;
  ob->out[0] = y;
  const void *null_arg = NULL;
  size_t arg_size = 4096;
  memcpy(gb.b + offsetof(mgpu_batch_t, arg), &null_arg, sizeof null_arg);
  memcpy(gb.b + offsetof(mgpu_batch_t, arg_size), &arg_size, sizeof arg_size);
  /* The statistics and their workers, each with guard bytes behind. */
  buf_t gs, gw;
  fill_guard(&gs);
  fill_guard(&gw);
  old_stats_t *os = (old_stats_t *)(void *)gs.b;
  memset(os, 0, sizeof *os);
  os->size = sizeof *os;
  os->worker = (old_worker_stats_t *)(void *)gw.b;
  os->worker_cap = 2;
  os->worker_size = sizeof(old_worker_stats_t);
  memset(gw.b, 0, 2 * sizeof(old_worker_stats_t));

  mgpu_status_t st = mgpu_run(rt, (const mgpu_batch_t *)(void *)ob, (mgpu_stats_t *)(void *)os);
  ck_assert_msg(st == MGPU_OK, "mgpu_run: %s", mgpu_last_error());
  for (int i = 0; i < N; i++) ck_assert_int_eq(y[i], 2 * i);
  ck_assert(guard_intact(&gs, sizeof *os));
  ck_assert(guard_intact(&gw, 2 * sizeof(old_worker_stats_t)));
  ck_assert_int_eq(os->status, MGPU_OK);
  ck_assert_uint_eq(os->items, N);
  ck_assert_uint_eq(os->batches, 1);
  ck_assert_int_eq(os->nworkers, 2);
  /* The fields the program gives are as it gave them. */
  ck_assert_uint_eq(os->size, sizeof *os);
  ck_assert_uint_eq(os->worker_size, sizeof(old_worker_stats_t));
  ck_assert_int_eq(os->worker_cap, 2);
  ck_assert_ptr_eq(os->worker, gw.b);
  uint64_t sum = 0;
  for (int w = 0; w < 2; w++) {
    ck_assert_int_eq(os->worker[w].kind, MGPU_WORKER_CPU);
    ck_assert_int_eq(os->worker[w].device, -1);
    sum += os->worker[w].items;
  }
  ck_assert_uint_eq(sum, N);

  /* The same through mgpu_submit and mgpu_event_wait, and the runtime's
   * statistics, with a worker array shorter than the workers. */
  memset(y, 0, N * sizeof *y);
  os->worker_cap = 1;
  fill_guard(&gw);
  mgpu_event_t *ev;
  ck_assert_int_eq(mgpu_submit(rt, (const mgpu_batch_t *)(void *)ob, 0, NULL, &ev), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(ev, (mgpu_stats_t *)(void *)os), MGPU_OK);
  mgpu_event_release(ev);
  ck_assert_int_eq(y[N - 1], 2 * (N - 1));
  ck_assert(guard_intact(&gs, sizeof *os));
  ck_assert(guard_intact(&gw, sizeof(old_worker_stats_t)));
  ck_assert_uint_eq(os->items, N);
  ck_assert_int_eq(mgpu_runtime_stats(rt, (mgpu_stats_t *)(void *)os), MGPU_OK);
  ck_assert(guard_intact(&gs, sizeof *os));
  ck_assert(guard_intact(&gw, sizeof(old_worker_stats_t)));
  ck_assert_uint_eq(os->batches, 2);
  ck_assert_uint_eq(os->items, 2 * N);
  /* mgpu_stats_print reads the older layout too. */
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  os->worker_cap = 2;
  mgpu_stats_print(rt, (const mgpu_stats_t *)(void *)os, f);
  rewind(f);
  char line[256], all[2048] = "";
  while (fgets(line, sizeof line, f)) strncat(all, line, sizeof all - strlen(all) - 1);
  fclose(f);
  ck_assert_msg(strstr(all, "total: 20000 items") != NULL, "%s", all);
  mgpu_finalize(rt);
  free(x);
  free(y);
}
END_TEST

START_TEST(test_newer_refused) {
  mgpu_runtime_t *rt = cpu_runtime(1);
  char want[160];
  /* A configuration from a newer header. */
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.size = sizeof c + 16;
  mgpu_runtime_t *other = (mgpu_runtime_t *)0x1;
  ck_assert_int_eq(mgpu_init(&c, &other), MGPU_EINVAL);
  ck_assert_ptr_eq(other, (mgpu_runtime_t *)0x1);
  snprintf(want, sizeof want, "cfg->size = %zu, but this library's mgpu_config_t has %zu bytes", sizeof c + 16,
           sizeof c);
  ck_assert_msg(strstr(mgpu_last_error(), want) != NULL, "%s", mgpu_last_error());
  /* A size too small to hold itself. */
  c.size = 4;
  ck_assert_int_eq(mgpu_init(&c, &other), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "smaller than"));

  int32_t x[4] = {1, 2, 3, 4}, y[4] = {0};
  mgpu_batch_t b = {.size = sizeof b + 8, .kernel = &twice, .n = 4, .in = {x}, .out = {y}};
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_batch_t"));
  mgpu_kernel_t k = twice;
  k.size = sizeof k + 8;
  b.size = sizeof b;
  b.kernel = &k;
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_EINVAL);
  snprintf(want, sizeof want, "batch->kernel->size = %zu, but this library's mgpu_kernel_t", sizeof k + 8);
  ck_assert_msg(strstr(mgpu_last_error(), want) != NULL, "%s", mgpu_last_error());
  /* Statistics the library cannot fill: the batch does not run. */
  b.kernel = &twice;
  mgpu_stats_t s = MGPU_STATS_INIT;
  s.size = sizeof s + 8;
  ck_assert_int_eq(mgpu_run(rt, &b, &s), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_stats_t"));
  ck_assert_int_eq(y[0], 0);
  mgpu_worker_stats_t ws[2];
  s = (mgpu_stats_t)MGPU_STATS_INIT;
  s.worker = ws;
  s.worker_cap = 2;
  s.worker_size = sizeof ws[0] + 8;
  ck_assert_int_eq(mgpu_run(rt, &b, &s), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "stats->worker_size"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_worker_stats_t"));
  ck_assert_int_eq(y[0], 0);
  s.size = sizeof s + 8;
  ck_assert_int_eq(mgpu_runtime_stats(rt, &s), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_stats_t"));
  /* The structs the library fills. */
  mgpu_setting_t set = {.size = sizeof set + 8};
  ck_assert_int_eq(mgpu_info_setting(rt, 0, &set), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_setting_t"));
  ck_assert_ptr_null(set.name);
  mgpu_device_info_t d = {.size = sizeof d + 8};
  ck_assert_int_eq(mgpu_device_info(rt, 0, &d), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_device_info_t"));
  mgpu_array_t *a;
  ck_assert_int_eq(mgpu_array_create(rt, 16, 4, 0, NULL, &a), MGPU_OK);
  mgpu_array_part_t p = {.size = sizeof p + 8};
  ck_assert_int_eq(mgpu_array_part(a, 0, &p), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_array_part_t"));
  mgpu_array_batch_t ab = {.size = sizeof ab + 8, .kernel = &twice, .in = {a}, .out = {a}};
  ck_assert_int_eq(mgpu_array_run(rt, &ab, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_array_batch_t"));
  mgpu_array_destroy(a);
  ck_assert_uint_eq(mgpu_trace_events_size(rt, NULL, 0, sizeof(mgpu_trace_event_t) + 8), 0);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_trace_event_t"));
  mgpu_finalize(rt);
}
END_TEST

/* A size that ends inside a field is no struct's size (every sizeof is a
 * multiple of the struct's alignment): refused, naming the field, what is
 * accepted, and nothing is read, run or written. */
START_TEST(test_size_inside_a_field) {
  mgpu_runtime_t *rt = cpu_runtime(2);
  char want[400];
  int32_t x[4] = {1, 2, 3, 4}, y[4] = {0};
  mgpu_batch_t b = {.size = sizeof b, .kernel = &twice, .n = 4, .in = {x}, .out = {y}};
  /* The worker array's element size: 1, and one that ends inside `items`. */
  size_t inside[] = {1, offsetof(mgpu_worker_stats_t, items) + 4};
  for (int i = 0; i < 2; i++) {
    buf_t gw;
    fill_guard(&gw);
    mgpu_stats_t s = MGPU_STATS_INIT;
    s.worker = (mgpu_worker_stats_t *)(void *)gw.b;
    s.worker_cap = 2;
    s.worker_size = inside[i];
    ck_assert_int_eq(mgpu_run(rt, &b, &s), MGPU_EINVAL);
    snprintf(want, sizeof want, "mgpu_run: stats->worker_size = %zu is not a size that mgpu_worker_stats_t has in any "
             "mgpurt.h: expected 0 (the first version's layout) or the program's sizeof(mgpu_worker_stats_t), a "
             "multiple of %zu (its alignment) from %zu to %zu bytes (this library's)", inside[i],
             _Alignof(mgpu_worker_stats_t), _Alignof(mgpu_worker_stats_t), sizeof(mgpu_worker_stats_t));
    ck_assert_str_eq(mgpu_last_error(), want);
    ck_assert_int_eq(y[0], 0);
    ck_assert(guard_intact(&gw, 0));
  }
  /* The rank array's, the statistics' own, and those of the runtime's. */
  mgpu_rank_stats_t rs[1];
  mgpu_stats_t s = MGPU_STATS_INIT;
  s.rank = rs;
  s.rank_cap = 1;
  s.rank_size = 1;
  ck_assert_int_eq(mgpu_run(rt, &b, &s), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_run: stats->rank_size = 1 is not a size that "
                                                  "mgpu_rank_stats_t has"));
  s = (mgpu_stats_t)MGPU_STATS_INIT;
  s.size = offsetof(mgpu_stats_t, wall_s) + 4;
  ck_assert_int_eq(mgpu_runtime_stats(rt, &s), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_runtime_stats: stats->size = "));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a size that mgpu_stats_t has"));
  ck_assert_int_eq(y[0], 0);
  /* The batch and its kernel. */
  b.size = sizeof(size_t) + 1;
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "batch->size = "));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a size that mgpu_batch_t has"));
  mgpu_kernel_t k = twice;
  k.size = offsetof(mgpu_kernel_t, nin) + 2;
  b.size = sizeof b;
  b.kernel = &k;
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "batch->kernel->size = "));
  ck_assert_int_eq(y[0], 0);
  /* The structs the library fills, and the trace's elements. */
  mgpu_setting_t set = {.size = sizeof set - 1};
  ck_assert_int_eq(mgpu_info_setting(rt, 0, &set), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a size that mgpu_setting_t has"));
  ck_assert_ptr_null(set.name);
  mgpu_device_info_t d = {.size = offsetof(mgpu_device_info_t, sm_count) + 2};
  ck_assert_int_eq(mgpu_device_info(rt, 0, &d), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a size that mgpu_device_info_t has"));
  mgpu_array_t *a;
  ck_assert_int_eq(mgpu_array_create(rt, 16, 4, 0, NULL, &a), MGPU_OK);
  mgpu_array_part_t p = {.size = offsetof(mgpu_array_part_t, gpu) + 1};
  ck_assert_int_eq(mgpu_array_part(a, 0, &p), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a size that mgpu_array_part_t has"));
  mgpu_array_batch_t ab = {.size = sizeof(size_t) + 4, .kernel = &twice, .in = {a}, .out = {a}};
  ck_assert_int_eq(mgpu_array_run(rt, &ab, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a size that mgpu_array_batch_t has"));
  mgpu_array_destroy(a);
  ck_assert_uint_eq(mgpu_trace_events_size(rt, NULL, 0, 1), 0);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "elem_size = 1 is not a size that mgpu_trace_event_t has"));
  mgpu_finalize(rt);
  /* The configuration: mgpu_init fails and leaves *rt_p alone. */
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.ignore_env = 1;
  c.size = offsetof(mgpu_config_t, num_threads) + 2;
  mgpu_runtime_t *other = (mgpu_runtime_t *)0x1;
  ck_assert_int_eq(mgpu_init(&c, &other), MGPU_EINVAL);
  ck_assert_ptr_eq(other, (mgpu_runtime_t *)0x1);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_init: cfg->size = "));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a size that mgpu_config_t has"));
}
END_TEST

START_TEST(test_size_zero) {
  /* Zeroed structs and designated initializers without .size: version 1. */
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.size = 0;
  c.ignore_env = 1;
  c.num_threads = 2;
  c.num_gpus = 0;
  c.debug = 0;
  mgpu_runtime_t *rt = NULL;
  ck_assert_msg(mgpu_init(&c, &rt) == MGPU_OK, "%s", mgpu_last_error());
  int32_t x[100], y[100] = {0};
  for (int i = 0; i < 100; i++) x[i] = i;
  mgpu_kernel_t k = twice;
  k.size = 0;
  mgpu_batch_t b = {.kernel = &k, .n = 100, .in = {x}, .out = {y}};
  mgpu_worker_stats_t ws[2];
  memset(ws, 0xA5, sizeof ws);
  mgpu_stats_t s = {.worker = ws, .worker_cap = 2};
  ck_assert_int_eq(mgpu_run(rt, &b, &s), MGPU_OK);
  ck_assert_int_eq(y[99], 198);
  ck_assert_uint_eq(s.items, 100);
  ck_assert_uint_eq(s.size, 0);
  ck_assert_uint_eq(ws[0].items + ws[1].items, 100);
  ck_assert_uint_eq(ws[0].staged_bytes + ws[1].staged_bytes, 0);
  mgpu_setting_t set = {0};
  ck_assert_int_eq(mgpu_info_setting(rt, 0, &set), MGPU_OK);
  ck_assert_str_eq(set.name, "MGPU_NUM_THREADS");
  ck_assert_uint_eq(set.size, 0);
  /* A built-in kernel's constructor fills version 1 and says so, whatever
   * was in the struct. */
  mgpu_kernel_t sx;
  memset(&sx, 0xA5, sizeof sx);
  ck_assert_int_eq(mgpu_kernel_saxpy(&sx), MGPU_OK);
  ck_assert_uint_eq(sx.size, 0);
  float fx[8] = {1, 2, 3, 4, 5, 6, 7, 8}, fy[8] = {0}, fr[8];
  mgpu_saxpy_arg_t sa = {2.0f};
  mgpu_batch_t sb = MGPU_BATCH_INIT;
  sb.kernel = &sx;
  sb.n = 8;
  sb.in[0] = fx;
  sb.in[1] = fy;
  sb.out[0] = fr;
  sb.arg = &sa;
  sb.arg_size = sizeof sa;
  ck_assert_int_eq(mgpu_run(rt, &sb, NULL), MGPU_OK);
  ck_assert(fr[7] == 16.0f);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_config_init_size) {
  /* A program built against a newer header gets today's fields "unset",
   * zeros in the rest, and mgpu_init refuses it. */
  buf_t g;
  fill_guard(&g);
  size_t newer = sizeof(mgpu_config_t) + 24;
  mgpu_config_init_size((mgpu_config_t *)(void *)g.b, newer);
  const mgpu_config_t *c = (const mgpu_config_t *)(void *)g.b;
  ck_assert_uint_eq(c->size, newer);
  ck_assert_int_eq(c->num_threads, -1);
  ck_assert(c->timeout == -1);
  for (size_t i = sizeof(mgpu_config_t); i < newer; i++) ck_assert_int_eq(g.b[i], 0);
  ck_assert(guard_intact(&g, newer));
  mgpu_runtime_t *rt = (mgpu_runtime_t *)0x1;
  ck_assert_int_eq(mgpu_init(c, &rt), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_config_t"));
  /* Too small to hold its size: nothing is written. */
  fill_guard(&g);
  mgpu_config_init_size((mgpu_config_t *)(void *)g.b, 4);
  ck_assert(guard_intact(&g, 0));
  mgpu_config_init_size(NULL, sizeof(mgpu_config_t));
}
END_TEST

int main(void) {
  Suite *s = suite_create("abi");
  TCase *tc = tcase_create("abi");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_old_config);
  tcase_add_test(tc, test_old_batch_and_stats);
  tcase_add_test(tc, test_v1_without_ranks);
  tcase_add_test(tc, test_v2_stats);
  tcase_add_test(tc, test_newer_refused);
  tcase_add_test(tc, test_size_inside_a_field);
  tcase_add_test(tc, test_size_zero);
  tcase_add_test(tc, test_config_init_size);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
