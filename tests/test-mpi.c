/* SPDX-License-Identifier: BSD-3-Clause */
/* test-mpi.c: a runtime across MPI ranks, on emulated GPUs. Not a Check
 * suite: Check forks each test, and an MPI process must not fork. Each rank
 * runs the scenario named by argv[1] (tests/test-mpi.sh starts them under
 * mpirun); a failed check prints "FAIL rank R: ..." and the rank exits with
 * 1, which mpirun passes on. The emulated device's speed of each rank comes
 * from MGPU_TEST_SPEEDS, a comma-separated list indexed by rank. */
#include "config.h"

#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static int rank, nranks, failures;
static int cfg_mpi = -1; /* mgpu_config_t.mpi of start() */
static int cfg_threads = 0, cfg_gpus = 1; /* its CPU workers and emulated GPUs */
static const char *cfg_trace;             /* its mgpu_config_t.trace */

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...) {
  if (ok) return;
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL rank %d: ", rank);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  failures++;
}

static double now(void) { return MPI_Wtime(); }

/* Every rank passes here before the next step. */
static void sync_ranks(void) { MPI_Barrier(MPI_COMM_WORLD); }

/* ------------------------------------------------------------ the kernel */

static int *calls;           /* computations of each item on this rank */
static long long fail_from = -1; /* this rank's kernel fails on items from here */

/* Set: this rank's kernel calls wait until held_fail is set, then fail. */
static _Atomic int hold_calls, held_entered, held_fail;

static int lin_cpu(const mgpu_chunk_t *c) {
  const double *x = c->in[0];
  double *y = c->out[0];
  const double *a = c->arg;
  if (atomic_load(&hold_calls)) {
    atomic_store(&held_entered, 1);
    while (!atomic_load(&held_fail)) usleep(100);
    return 6;
  }
  for (size_t i = 0; i < c->count; i++) {
    if (fail_from >= 0 && (long long)(c->first + i) >= fail_from) return 5;
    y[i] = x[i] * a[0] + a[1];
    __atomic_fetch_add(&calls[c->first + i], 1, __ATOMIC_RELAXED);
  }
  return 0;
}

static const mgpu_kernel_t lin = {.size = sizeof lin, .name = "lin", .cpu = lin_cpu, .gpu = lin_cpu, .nin = 1,
                                  .nout = 1, .in_size = {8}, .out_size = {8}};
static const mgpu_kernel_t other = {.size = sizeof other, .name = "other", .cpu = lin_cpu, .gpu = lin_cpu, .nin = 1,
                                    .nout = 1, .in_size = {8}, .out_size = {8}};
static const double coef[2] = {2, 1};

static double speed_of(int r) {
  const char *s = getenv("MGPU_TEST_SPEEDS");
  double v = 1e6;
  for (int i = 0; s && *s; i++) {
    char *end;
    double x = strtod(s, &end);
    if (end == s) break;
    v = x;
    if (i == r) return v;
    s = *end == ',' ? end + 1 : end;
  }
  return v; /* ranks past the list take its last speed */
}

/* A runtime of one emulated GPU per rank at the rank's speed (no CPU
 * worker: the speeds alone set the balance; cfg_threads and cfg_gpus
 * change that), over comm (NULL: the default). */
static mgpu_status_t start(mgpu_runtime_t **rt, const MPI_Comm *comm, double timeout) {
  mgpu_config_t cfg;
  mgpu_config_init(&cfg);
  cfg.ignore_env = 1;
  cfg.num_threads = cfg_threads;
  cfg.num_gpus = cfg_gpus;
  cfg.debug = getenv("MGPU_TEST_DEBUG") ? atoi(getenv("MGPU_TEST_DEBUG")) : 1;
  if (timeout >= 0) cfg.timeout = timeout;
  cfg.mpi = cfg_mpi;
  cfg.trace = cfg_trace;
  if (comm) MGPU_CONFIG_SET_COMM(&cfg, comm);
  mgpu__testcfg_t t;
  mgpu__testcfg_init(&t);
  t.emulate_gpus = cfg_gpus;
  t.emulate_speed = speed_of(rank);
  return mgpu__dist_init(&cfg, &t, rt);
}

/* start() for a scenario that needs the runtime: false, with a failed
 * check, where mgpu_init failed. */
static bool started(mgpu_runtime_t **rt, double timeout) {
  if (start(rt, NULL, timeout) == MGPU_OK) return true;
  check(false, "mgpu_init: %s", mgpu_last_error());
  return false;
}

typedef struct {
  size_t n;
  double *x, *y;
} arrays_t;

static void arrays(arrays_t *a, size_t n) {
  a->n = n;
  a->x = malloc(n * sizeof *a->x);
  a->y = malloc(n * sizeof *a->y);
  calls = calloc(n, sizeof *calls);
  for (size_t i = 0; i < n; i++) a->x[i] = (double)i, a->y[i] = -1;
}

static void arrays_free(arrays_t *a) {
  free(a->x);
  free(a->y);
  free(calls);
  calls = NULL;
}

/* Every item computed exactly once over all ranks (the counts summed at rank 0). */
static void check_once(const arrays_t *a, const char *what) {
  int *sum = rank == 0 ? calloc(a->n, sizeof *sum) : NULL;
  MPI_Reduce(calls, sum, (int)a->n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    size_t once = 0, first_bad = a->n;
    for (size_t i = 0; i < a->n; i++)
      if (sum[i] == 1) once++;
      else if (first_bad == a->n) first_bad = i;
    check(once == a->n, "%s: %zu of %zu items computed exactly once (item %zu: %d times)", what, once, a->n, first_bad,
          first_bad < a->n ? sum[first_bad] : 0);
    free(sum);
  }
  memset(calls, 0, a->n * sizeof *calls);
}

/* The outputs of this rank's share are right. */
static void check_share(const arrays_t *a, size_t first, size_t count, const char *what) {
  size_t bad = 0, at = 0;
  for (size_t i = first; i < first + count; i++)
    if (a->y[i] != a->x[i] * coef[0] + coef[1] && bad++ == 0) at = i;
  check(bad == 0, "%s: %zu wrong outputs in this rank's share %zu..+%zu (first at item %zu: %g)", what, bad, first,
        count, at, bad ? a->y[at] : 0.0);
}

/* The ranks' figures of one batch: consistent, and the same on every rank. */
static void check_report(const mgpu_stats_t *s, const mgpu_rank_stats_t *rs, size_t n, const char *what) {
  check(s->nranks == nranks, "%s: stats.nranks = %d, expected %d", what, s->nranks, nranks);
  size_t at = 0;
  uint64_t items = 0, sin = 0, sout = 0, iin = 0, iout = 0;
  for (int r = 0; r < nranks; r++) {
    check(rs[r].rank == r, "%s: rank[%d].rank = %d", what, r, rs[r].rank);
    check(rs[r].share_first == at, "%s: rank %d's share starts at %zu, expected %zu", what, r, rs[r].share_first, at);
    at += rs[r].share_count;
    items += rs[r].items, sin += rs[r].steals_in, sout += rs[r].steals_out;
    iin += rs[r].items_in, iout += rs[r].items_out;
    check(rs[r].wall_s > 0 && rs[r].busy_s >= 0 && rs[r].busy_s <= rs[r].wall_s * 1.01 + 1e-3,
          "%s: rank %d: busy %g s, wall %g s", what, r, rs[r].busy_s, rs[r].wall_s);
  }
  check(at == n, "%s: the shares add up to %zu items, expected %zu", what, at, n);
  check(items == n, "%s: the ranks computed %llu items, expected %zu", what, (unsigned long long)items, n);
  check(sin == sout && iin == iout, "%s: steals in %llu (%llu items), out %llu (%llu items)", what,
        (unsigned long long)sin, (unsigned long long)iin, (unsigned long long)sout, (unsigned long long)iout);
  check(s->items == rs[rank].items, "%s: stats.items %llu, this rank's figure %llu", what,
        (unsigned long long)s->items, (unsigned long long)rs[rank].items);
  /* Every rank holds the same table. */
  mgpu_rank_stats_t *zero = malloc(sizeof *zero * (size_t)nranks);
  memcpy(zero, rs, sizeof *zero * (size_t)nranks);
  MPI_Bcast(zero, (int)(sizeof *zero * (size_t)nranks), MPI_BYTE, 0, MPI_COMM_WORLD);
  check(memcmp(zero, rs, sizeof *zero * (size_t)nranks) == 0, "%s: this rank's table differs from rank 0's", what);
  free(zero);
}

static mgpu_batch_t batch_of(const arrays_t *a, const mgpu_kernel_t *k) {
  mgpu_batch_t b = MGPU_BATCH_INIT;
  b.kernel = k;
  b.n = a->n;
  b.in[0] = a->x;
  b.out[0] = a->y;
  b.arg = coef;
  b.arg_size = sizeof coef;
  return b;
}

/* ------------------------------------------------------------- scenarios */

/* Batches over all ranks: every item once and right, the report consistent;
 * with a slow rank (argv: its number), its range is stolen in the first
 * batch and it gets a smaller share afterwards. */
static void scenario_batch(int argc, char **argv) {
  int slow = argc > 2 ? atoi(argv[2]) : -1;
  size_t n = argc > 3 ? (size_t)atoll(argv[3]) : 200000;
  mgpu_runtime_t *rt;
  if (!started(&rt, -1)) return;
  check(mgpu_num_ranks(rt) == nranks && mgpu_rank(rt) == rank, "mgpu_num_ranks %d, mgpu_rank %d", mgpu_num_ranks(rt),
        mgpu_rank(rt));
  arrays_t a;
  arrays(&a, n);
  mgpu_rank_stats_t *rs = calloc((size_t)nranks, sizeof *rs);
  for (int rep = 0; rep < 3; rep++) {
    char what[64];
    snprintf(what, sizeof what, "batch %d", rep);
    mgpu_batch_t b = batch_of(&a, &lin);
    mgpu_stats_t s = MGPU_STATS_INIT;
    s.rank = rs;
    s.rank_cap = nranks;
    double t0 = now();
    mgpu_status_t st = mgpu_run(rt, &b, &s);
    double t = now() - t0;
    check(st == MGPU_OK, "%s: mgpu_run: %s", what, mgpu_last_error());
    check_once(&a, what);
    check_share(&a, rs[rank].share_first, rs[rank].share_count, what);
    check_report(&s, rs, n, what);
    if (rank == 0) {
      printf("%s: %.3f s, %.4g items/s;", what, t, (double)n / t);
      for (int r = 0; r < nranks; r++)
        printf(" rank %d: share %zu, items %llu, in %llu/%llu, out %llu/%llu;", r, rs[r].share_count,
               (unsigned long long)rs[r].items, (unsigned long long)rs[r].steals_in,
               (unsigned long long)rs[r].items_in, (unsigned long long)rs[r].steals_out,
               (unsigned long long)rs[r].items_out);
      printf("\n");
    }
    if (slow >= 0 && rep == 0)
      check(rs[slow].items_out > 0, "the slow rank %d's range was not stolen in the first batch", slow);
    if (slow >= 0 && rep == 2)
      for (int r = 0; r < nranks; r++)
        check(r == slow || rs[slow].share_count < rs[r].share_count,
              "the slow rank %d's share %zu is not below rank %d's %zu once measured", slow, rs[slow].share_count, r,
              rs[r].share_count);
    sync_ranks();
  }
  free(rs);
  arrays_free(&a);
  mgpu_finalize(rt);
}

/* mgpu_batch_plan: a rank fills only the inputs of its share, and only
 * those are read. */
static void scenario_plan(void) {
  mgpu_runtime_t *rt;
  if (!started(&rt, -1)) return;
  arrays_t a;
  arrays(&a, 100000);
  mgpu_rank_stats_t *rs = calloc((size_t)nranks, sizeof *rs);
  for (int rep = 0; rep < 2; rep++) {
    mgpu_batch_t b = batch_of(&a, &lin);
    size_t first = 0, count = 0;
    mgpu_status_t st = mgpu_batch_plan(rt, &b, &first, &count);
    check(st == MGPU_OK, "mgpu_batch_plan: %s", mgpu_last_error());
    /* Inputs outside the share are poison: a rank that read them computes NaN. */
    for (size_t i = 0; i < a.n; i++) a.x[i] = i >= first && i < first + count ? (double)i : 0.0 / 0.0;
    mgpu_stats_t s = MGPU_STATS_INIT;
    s.rank = rs;
    s.rank_cap = nranks;
    st = mgpu_run(rt, &b, &s);
    check(st == MGPU_OK, "mgpu_run after mgpu_batch_plan: %s", mgpu_last_error());
    check(rs[rank].share_first == first && rs[rank].share_count == count,
          "the batch's share %zu..+%zu is not the plan's %zu..+%zu", rs[rank].share_first, rs[rank].share_count, first,
          count);
    for (size_t i = first; i < first + count; i++) a.x[i] = (double)i;
    check_share(&a, first, count, "after mgpu_batch_plan");
    check_once(&a, "after mgpu_batch_plan");
  }
  free(rs);
  arrays_free(&a);
  mgpu_finalize(rt);
}

/* Bad input across ranks: each is an error naming what differs, on every
 * rank, and the call that was made (mgpu_run), and the runtime still runs
 * the next good batch. */
static void scenario_mismatch(void) {
  mgpu_runtime_t *rt;
  if (!started(&rt, 20)) return;
  arrays_t a;
  arrays(&a, 20000);
  struct {
    const char *what, *expect;
  } cases[] = {{"n", "mgpu_run: the ranks disagree on batch->n"},
               {"kernel", "mgpu_run: the ranks disagree on the kernel"},
               {"arg", "mgpu_run: the ranks disagree on batch->arg"},
               {"footprint", "mgpu_run: the ranks disagree on batch->footprint: 0 on rank 0, 5 on rank 1"},
               {"null", "mgpu_run: rank 1 refused the batch: mgpu_run: batch->in[0] is NULL"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mgpu_batch_t b = batch_of(&a, &lin);
    double c2[2] = {3, 1};
    if (rank == 1 && !strcmp(cases[i].what, "n")) b.n--;
    if (rank == 1 && !strcmp(cases[i].what, "kernel")) b.kernel = &other;
    if (rank == 1 && !strcmp(cases[i].what, "arg")) b.arg = c2;
    if (rank == 1 && !strcmp(cases[i].what, "footprint")) b.footprint = 5;
    if (rank == 1 && !strcmp(cases[i].what, "null")) b.in[0] = NULL;
    double t0 = now();
    mgpu_status_t st = mgpu_run(rt, &b, NULL);
    const char *msg = mgpu_last_error();
    const char *expect =
        rank == 1 && !strcmp(cases[i].what, "null") ? "mgpu_run: batch->in[0] is NULL" : cases[i].expect;
    check(st == MGPU_EINVAL && strstr(msg, expect), "a batch whose %s differs on rank 1: %s (%s), expected "
          "MGPU_EINVAL naming '%s'", cases[i].what, mgpu_status_name(st), msg, expect);
    check(now() - t0 < 10, "the refusal took %.1f s", now() - t0);
    if (rank == 0) printf("%s differs: %s\n", cases[i].what, msg);
  }
  mgpu_batch_t b = batch_of(&a, &lin);
  check(mgpu_run(rt, &b, NULL) == MGPU_OK, "a good batch after the refused ones: %s", mgpu_last_error());
  check_once(&a, "the good batch");
  arrays_free(&a);
  mgpu_finalize(rt);
}

/* The ranks make different calls: both refuse, naming the calls each rank's
 * program made (mgpu_run, not the mgpu_submit it makes the ranks' call of). */
static void scenario_calls(void) {
  mgpu_runtime_t *rt;
  if (!started(&rt, 20)) return;
  arrays_t a;
  arrays(&a, 1000);
  mgpu_batch_t b = batch_of(&a, &lin);
  size_t f, c;
  mgpu_status_t st = rank == 1 ? mgpu_batch_plan(rt, &b, &f, &c) : mgpu_run(rt, &b, NULL);
  check(st == MGPU_EINVAL && strstr(mgpu_last_error(), "different calls") &&
            strstr(mgpu_last_error(), "rank 0 called mgpu_run (its call") &&
            strstr(mgpu_last_error(), "rank 1 called mgpu_batch_plan (its call") &&
            !strstr(mgpu_last_error(), "mgpu_submit"),
        "different calls: %s (%s)", mgpu_status_name(st), mgpu_last_error());
  if (rank == 0) printf("different calls: %s\n", mgpu_last_error());
  arrays_free(&a);
  mgpu_finalize(rt);
}

/* A kernel fails on rank 1's CPU worker: the batch ends on every rank with
 * an error that names it, within a few seconds. */
static void scenario_fail(void) {
  mgpu_runtime_t *rt;
  cfg_threads = 1, cfg_gpus = 0;
  if (!started(&rt, 20)) return;
  arrays_t a;
  arrays(&a, 400000);
  mgpu_batch_t b = batch_of(&a, &lin);
  mgpu_rank_stats_t *rs = calloc((size_t)nranks, sizeof *rs);
  mgpu_stats_t s = MGPU_STATS_INIT;
  s.rank = rs;
  s.rank_cap = nranks;
  if (rank == 1) fail_from = 0;
  double t0 = now();
  mgpu_status_t st = mgpu_run(rt, &b, &s);
  double t = now() - t0;
  const char *msg = mgpu_last_error();
  if (rank == 1)
    check(st == MGPU_EKERNEL && strstr(msg, "kernel 'lin' failed"), "the failing rank: %s (%s)", mgpu_status_name(st),
          msg);
  else
    check(st == MGPU_EREMOTE && strstr(msg, "rank 1") && strstr(msg, "kernel 'lin' failed"),
          "a rank whose kernel ran: %s (%s), expected MGPU_EREMOTE naming rank 1 and the kernel", mgpu_status_name(st),
          msg);
  check(t < 10, "the failed batch took %.1f s to end", t);
  check(s.nranks == nranks && rs[1].status == MGPU_EKERNEL, "the report gives rank 1 status %s",
        mgpu_status_name(rs[1].status));
  if (rank == 0) printf("rank 0 after rank 1's kernel failed, in %.3f s: %s\n", t, msg);
  fail_from = -1;
  sync_ranks();
  check(mgpu_run(rt, &b, NULL) == MGPU_OK, "a batch after the failed one: %s", mgpu_last_error());
  free(rs);
  arrays_free(&a);
  mgpu_finalize(rt);
}

/* mgpu_event_cancel on rank 0 ends the batch on every rank. */
static void scenario_cancel(void) {
  mgpu_runtime_t *rt;
  if (!started(&rt, 20)) return;
  arrays_t a;
  arrays(&a, 2000000); /* seconds of work at the test's speeds */
  mgpu_batch_t b = batch_of(&a, &lin);
  mgpu_event_t *ev;
  check(mgpu_submit(rt, &b, 0, NULL, &ev) == MGPU_OK, "mgpu_submit: %s", mgpu_last_error());
  double t0 = now();
  while (mgpu_event_test(ev) == MGPU_ESTATE && now() - t0 < 0.2) usleep(1000);
  if (rank == 0) mgpu_event_cancel(ev);
  mgpu_status_t st = mgpu_event_wait(ev, NULL);
  check(st == MGPU_ECANCELED, "canceled on rank 0: %s (%s)", mgpu_status_name(st), mgpu_last_error());
  check(now() - t0 < 5, "the canceled batch took %.1f s to end", now() - t0);
  mgpu_event_release(ev);
  arrays_free(&a);
  mgpu_finalize(rt);
}

/* Rank 0 cancels the batch while its kernel runs, and that kernel then
 * fails: on rank 0 the kernel's error replaces the cancel, as on one process
 * (the cancel would hide items that were never computed for another reason);
 * the other rank reports MGPU_EREMOTE naming rank 0 and the kernel. */
static void scenario_cancel_fail(void) {
  mgpu_runtime_t *rt;
  cfg_threads = 1, cfg_gpus = 0;
  if (!started(&rt, 20)) return;
  arrays_t a;
  arrays(&a, 400000);
  mgpu_batch_t b = batch_of(&a, &lin);
  if (rank == 0) atomic_store(&hold_calls, 1);
  mgpu_event_t *ev;
  check(mgpu_submit(rt, &b, 0, NULL, &ev) == MGPU_OK, "mgpu_submit: %s", mgpu_last_error());
  if (rank == 0) {
    double t0 = now();
    while (!atomic_load(&held_entered) && now() - t0 < 10) usleep(100);
    check(atomic_load(&held_entered), "rank 0's kernel never ran");
    mgpu_event_cancel(ev);
    atomic_store(&held_fail, 1);
  }
  mgpu_status_t st = mgpu_event_wait(ev, NULL);
  const char *msg = mgpu_last_error();
  if (rank == 0)
    check(st == MGPU_EKERNEL && strstr(msg, "kernel 'lin' failed"), "rank 0, canceled, then its kernel failed: %s (%s)",
          mgpu_status_name(st), msg);
  else
    check(st == MGPU_EREMOTE && strstr(msg, "rank 0") && strstr(msg, "kernel 'lin' failed"),
          "the other rank: %s (%s), expected MGPU_EREMOTE naming rank 0 and the kernel", mgpu_status_name(st), msg);
  mgpu_event_release(ev);
  atomic_store(&hold_calls, 0);
  sync_ranks();
  check(mgpu_run(rt, &b, NULL) == MGPU_OK, "a batch after the failed one: %s", mgpu_last_error());
  arrays_free(&a);
  mgpu_finalize(rt);
}

enum { TAG_ANSWERED = 71 }; /* rank 0 to rank 1 in scenario_lost */

/* Rank 1 is killed in the middle of a batch (argv[2] "kill"), or stays
 * away from it ("away") until rank 0 has had its answers: no rank hangs.
 * Under Open MPI the launcher ends the job when a process dies; a rank that
 * is alive but away is seen by the others' deadline (MGPU_TIMEOUT). */
static void scenario_lost(int argc, char **argv) {
  bool kill_it = argc > 2 && !strcmp(argv[2], "kill");
  mgpu_runtime_t *rt;
  if (!started(&rt, 3)) return;
  arrays_t a;
  arrays(&a, 2000000);
  mgpu_batch_t b = batch_of(&a, &lin);
  if (rank == 1 && kill_it) {
    mgpu_event_t *ev;
    mgpu_submit(rt, &b, 0, NULL, &ev);
    usleep(200000);
    raise(SIGKILL);
  }
  if (rank == 1) {
    /* Away until rank 0 has had its answers, however late it came to its
     * call on a loaded machine: a rank back sooner makes another call
     * (mgpu_finalize), which the others rightly report as different calls. */
    int word = 0;
    MPI_Request req;
    MPI_Irecv(&word, 1, MPI_INT, 0, TAG_ANSWERED, MPI_COMM_WORLD, &req);
    double t0 = now();
    int flag = 0;
    while (!flag && now() - t0 < 60) {
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      if (!flag) usleep(10000);
    }
    if (!flag) {
      check(false, "rank 0 had no answer within 60 s");
      MPI_Cancel(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    mgpu_finalize(rt);
    arrays_free(&a);
    return;
  }
  double t0 = now();
  mgpu_status_t st = mgpu_run(rt, &b, NULL);
  double t = now() - t0;
  check(st == MGPU_EREMOTE, "rank 1 away: %s (%s), expected MGPU_EREMOTE", mgpu_status_name(st), mgpu_last_error());
  check(t < 8, "the rank waited %.1f s for the one away", t);
  /* The message names the call the user made, once. */
  char want[96];
  snprintf(want, sizeof want, "mgpu_run on rank %d: not every rank took part within 3 s (MGPU_TIMEOUT)", rank);
  if (!kill_it)
    check(strstr(mgpu_last_error(), want) != NULL, "rank 1 away: '%s', expected it to hold '%s'", mgpu_last_error(),
          want);
  if (rank == 0) printf("rank 0 with rank 1 away, after %.1f s: %s\n", t, mgpu_last_error());
  st = mgpu_run(rt, &b, NULL);
  check(st == MGPU_EREMOTE, "a batch after a rank was lost: %s, expected MGPU_EREMOTE", mgpu_status_name(st));
  if (rank == 0) {
    int word = 1;
    MPI_Send(&word, 1, MPI_INT, 1, TAG_ANSWERED, MPI_COMM_WORLD);
  }
  mgpu_finalize(rt);
  arrays_free(&a);
}

/* Communicators: the wrong kinds are refused on every rank that passes
 * them; a communicator of half the ranks spans those. */
static void scenario_comm(void) {
  mgpu_runtime_t *rt;
  MPI_Comm null = MPI_COMM_NULL;
  check(start(&rt, &null, -1) == MGPU_EINVAL && strstr(mgpu_last_error(), "MPI_COMM_NULL"), "MPI_COMM_NULL: %s",
        mgpu_last_error());
  /* The size of another MPI's communicator. */
  mgpu_config_t cfg;
  mgpu_config_init(&cfg);
  cfg.ignore_env = 1;
  cfg.num_threads = 1;
  cfg.num_gpus = 0;
  MPI_Comm world = MPI_COMM_WORLD;
  cfg.mpi_comm = &world;
  cfg.mpi_comm_size = sizeof world + 4;
  check(mgpu_init(&cfg, &rt) == MGPU_EINVAL && strstr(mgpu_last_error(), "cfg->mpi_comm_size"), "a wrong size: %s",
        mgpu_last_error());
  cfg.mpi_comm_size = sizeof world;
  cfg.mpi = 0;
  check(mgpu_init(&cfg, &rt) == MGPU_EINVAL && strstr(mgpu_last_error(), "cfg->mpi"), "a communicator with mpi off: %s",
        mgpu_last_error());
  /* An intercommunicator between the even and the odd ranks. */
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
  check(start(&rt, &inter, -1) == MGPU_EINVAL && strstr(mgpu_last_error(), "intercommunicator"),
        "an intercommunicator: %s", mgpu_last_error());
  if (rank == 0) printf("intercommunicator: %s\n", mgpu_last_error());
  MPI_Comm_free(&inter);
  /* The even half of the ranks. (Not both halves at once: Open MPI 4.1
   * names the shared memory of windows made on disjoint communicators at
   * the same time alike, and one half's creation removes the other's.) */
  if (rank % 2) {
    /* away */
  } else if (start(&rt, &half, -1) != MGPU_OK) {
    check(false, "a communicator of half the ranks: %s", mgpu_last_error());
  } else {
    int hsize;
    MPI_Comm_size(half, &hsize);
    check(mgpu_num_ranks(rt) == hsize, "mgpu_num_ranks %d over a communicator of %d", mgpu_num_ranks(rt), hsize);
    arrays_t a;
    arrays(&a, 50000);
    mgpu_batch_t b = batch_of(&a, &lin);
    check(mgpu_run(rt, &b, NULL) == MGPU_OK, "a batch over half the ranks: %s", mgpu_last_error());
    int *sum = calloc(a.n, sizeof *sum);
    MPI_Allreduce(calls, sum, (int)a.n, MPI_INT, MPI_SUM, half);
    size_t once = 0;
    for (size_t i = 0; i < a.n; i++) once += sum[i] == 1;
    check(once == a.n, "over half the ranks: %zu of %zu items once", once, a.n);
    free(sum);
    arrays_free(&a);
    mgpu_finalize(rt);
  }
  MPI_Comm_free(&half);
}

/* One rank, or several with mgpu_config_t.mpi = 0 (MGPU_MPI=off): the
 * runtime of one process, as without MPI. */
static void scenario_single(void) {
  mgpu_runtime_t *rt;
  if (nranks > 1) cfg_mpi = 0;
  if (!started(&rt, -1)) return;
  check(mgpu_num_ranks(rt) == 1 && mgpu_rank(rt) == 0 && rt->dist == NULL, "one rank: mgpu_num_ranks %d",
        mgpu_num_ranks(rt));
  arrays_t a;
  arrays(&a, 50000);
  mgpu_batch_t b = batch_of(&a, &lin);
  mgpu_rank_stats_t rs[1];
  mgpu_stats_t s = MGPU_STATS_INIT;
  s.rank = rs;
  s.rank_cap = 1;
  check(mgpu_run(rt, &b, &s) == MGPU_OK, "mgpu_run: %s", mgpu_last_error());
  check(s.nranks == 0 && s.items == a.n, "a batch of one process: nranks %d, items %llu", s.nranks,
        (unsigned long long)s.items);
  check_share(&a, 0, a.n, "one process");
  arrays_free(&a);
  mgpu_finalize(rt);
}

/* Whether the file at path begins as a trace does: true where it is s. */
static bool file_begins(const char *path, const char *s) {
  char buf[64] = "";
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[got] = 0;
  return strncmp(buf, s, strlen(s)) == 0;
}

/* Ranks that trace to one file: mgpu_init fails on every rank, naming the
 * ranks and %r, and leaves the file as it was; with %r each rank writes its
 * own. argv[2] is a folder for the files. */
static void scenario_trace(int argc, char **argv) {
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  char same[512], pat[512], mine[600];
  snprintf(same, sizeof same, "%s/same.json", dir);
  if (rank == 0) {
    FILE *f = fopen(same, "w");
    check(f && fputs("old\n", f) >= 0 && fclose(f) == 0, "cannot write %s", same);
  }
  sync_ranks();
  cfg_trace = same;
  mgpu_runtime_t *rt;
  mgpu_status_t st = start(&rt, NULL, 10);
  check(st == MGPU_EINVAL, "two ranks tracing to %s: %s (%s), expected MGPU_EINVAL", same, mgpu_status_name(st),
        mgpu_last_error());
  if (st == MGPU_OK) mgpu_finalize(rt);
  check(strstr(mgpu_last_error(), "mgpu_init: ranks 0 and 1 trace to one file") &&
            strstr(mgpu_last_error(), "put %r in the path"),
        "the message: '%s'", mgpu_last_error());
  sync_ranks();
  check(file_begins(same, "old\n"), "%s was changed by an mgpu_init that failed", same);
  if (rank == 0) printf("two ranks on one trace file: %s\n", mgpu_last_error());
  snprintf(pat, sizeof pat, "%s/t-%%r.json", dir);
  cfg_trace = pat;
  if (!started(&rt, 10)) return;
  arrays_t a;
  arrays(&a, 20000);
  mgpu_batch_t b = batch_of(&a, &lin);
  check(mgpu_run(rt, &b, NULL) == MGPU_OK, "mgpu_run: %s", mgpu_last_error());
  check(mgpu_finalize_checked(rt) == MGPU_OK, "mgpu_finalize: %s", mgpu_last_error());
  arrays_free(&a);
  snprintf(mine, sizeof mine, "%s/t-%d.json", dir, rank);
  check(file_begins(mine, "{\"displayTimeUnit\""), "no trace of rank %d in %s", rank, mine);
  cfg_trace = NULL;
}

/* Collectives over every GPU of every rank: rank r has (r % 3 == 2 ? 0 :
 * r % 2 + 1) emulated GPUs, so that some rank has none once there are three;
 * GPUs are numbered over the ranks, rank 0's first. */
static void scenario_coll(void) {
  cfg_threads = 1;
  cfg_gpus = rank % 3 == 2 ? 0 : rank % 2 + 1;
  mgpu_runtime_t *rt;
  if (!started(&rt, 20)) return;
  int ng = mgpu_num_gpus(rt), base = 0, total = 0;
  MPI_Exscan(&ng, &base, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) base = 0;
  MPI_Allreduce(&ng, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  check(strstr(mgpu_collectives_backend(rt), "across") != NULL, "mgpu_collectives_backend: %s",
        mgpu_collectives_backend(rt));
  const size_t count = 1000;
  double *send[4] = {0}, *recv[4] = {0}, *host = malloc(sizeof(double) * count * (size_t)total);
  int32_t *isend[4] = {0}, *irecv[4] = {0};
  for (int g = 0; g < ng; g++) {
    check(mgpu_device_alloc(rt, g, sizeof(double) * count * (size_t)total, (void **)&send[g]) == MGPU_OK &&
          mgpu_device_alloc(rt, g, sizeof(double) * count * (size_t)total, (void **)&recv[g]) == MGPU_OK &&
          mgpu_device_alloc(rt, g, sizeof(int32_t) * count, (void **)&isend[g]) == MGPU_OK &&
          mgpu_device_alloc(rt, g, sizeof(int32_t) * count, (void **)&irecv[g]) == MGPU_OK,
          "mgpu_device_alloc: %s", mgpu_last_error());
  }
  /* send[g][j] = G * 1000 + j, G the GPU's number over all ranks. */
  for (int g = 0; g < ng; g++) {
    for (size_t j = 0; j < count * (size_t)total; j++) host[j] = (base + g) * 1000.0 + (double)j;
    mgpu_memcpy_to_device(rt, g, send[g], host, sizeof(double) * count * (size_t)total);
    int32_t iv[1000];
    for (size_t j = 0; j < count; j++) iv[j] = (int32_t)((base + g) * 1000 + (int)j);
    mgpu_memcpy_to_device(rt, g, isend[g], iv, sizeof iv);
  }
  double gsum = (double)total * (total - 1) / 2; /* sum of the GPUs' numbers */
#define EACH_GPU_CHECK(what, n, expect)                                                             \
  for (int g = 0; g < ng; g++) {                                                                    \
    mgpu_memcpy_from_device(rt, g, host, recv[g], sizeof(double) * (n));                            \
    size_t bad = 0, at = 0;                                                                         \
    for (size_t i = 0; i < (n); i++)                                                                \
      if (host[i] != (expect) && bad++ == 0) at = i;                                               \
    check(bad == 0, "%s on GPU %d: %zu wrong (element %zu: %g)", what, g, bad, at, host[at]);      \
  }
  mgpu_status_t st = mgpu_allreduce(rt, (const void *const *)send, (void *const *)recv, count, MGPU_FLOAT64, MGPU_OP_SUM);
  check(st == MGPU_OK, "mgpu_allreduce: %s", mgpu_last_error());
  EACH_GPU_CHECK("allreduce sum", count, 1000 * gsum + (double)total * (double)i);
  st = mgpu_allreduce(rt, (const void *const *)isend, (void *const *)irecv, count, MGPU_INT32, MGPU_OP_MAX);
  check(st == MGPU_OK, "mgpu_allreduce max: %s", mgpu_last_error());
  for (int g = 0; g < ng; g++) {
    int32_t iv[1000];
    mgpu_memcpy_from_device(rt, g, iv, irecv[g], sizeof iv);
    check(iv[7] == (total - 1) * 1000 + 7, "allreduce max on GPU %d: %d", g, iv[7]);
  }
  int root = total - 1;
  st = mgpu_broadcast(rt, (const void *const *)send, (void *const *)recv, count, MGPU_FLOAT64, root);
  check(st == MGPU_OK, "mgpu_broadcast: %s", mgpu_last_error());
  EACH_GPU_CHECK("broadcast", count, root * 1000.0 + (double)i);
  st = mgpu_allgather(rt, (const void *const *)send, (void *const *)recv, count, MGPU_FLOAT64);
  check(st == MGPU_OK, "mgpu_allgather: %s", mgpu_last_error());
  EACH_GPU_CHECK("allgather", count * (size_t)total, (double)(i / count) * 1000.0 + (double)(i % count));
  st = mgpu_reduce_scatter(rt, (const void *const *)send, (void *const *)recv, count, MGPU_FLOAT64, MGPU_OP_SUM);
  check(st == MGPU_OK, "mgpu_reduce_scatter: %s", mgpu_last_error());
  EACH_GPU_CHECK("reduce_scatter", count, 1000 * gsum + (double)total * (double)((base + g) * count + i));
  mgpu_event_t *ev = NULL;
  st = mgpu_allreduce_async(rt, (const void *const *)send, (void *const *)recv, count, MGPU_FLOAT64, MGPU_OP_SUM, 0,
                            NULL, &ev);
  check(st == MGPU_OK && mgpu_event_wait(ev, NULL) == MGPU_OK, "mgpu_allreduce_async: %s", mgpu_last_error());
  mgpu_event_release(ev);
  EACH_GPU_CHECK("allreduce_async", count, 1000 * gsum + (double)total * (double)i);
  /* Ranks that disagree on the count: refused on every rank, naming it. */
  st = mgpu_allreduce(rt, (const void *const *)send, (void *const *)recv, rank == 1 ? count - 1 : count, MGPU_FLOAT64,
                      MGPU_OP_SUM);
  check(st == MGPU_EINVAL && strstr(mgpu_last_error(), "disagree on count"), "counts that differ: %s",
        mgpu_last_error());
  if (rank == 0) printf("%s; counts that differ: %s\n", mgpu_collectives_backend(rt), mgpu_last_error());
  /* A root past the GPUs of all ranks. */
  st = mgpu_broadcast(rt, (const void *const *)send, (void *const *)recv, count, MGPU_FLOAT64, total);
  check(st == MGPU_EINVAL && strstr(mgpu_last_error(), "root"), "a root past the GPUs: %s", mgpu_last_error());
  /* A count past the end of the buffers' allocations: refused before
   * anything moves, on every rank (those whose GPUs refuse it, and the
   * others, which get their message), naming the buffer and its size. */
  st = mgpu_allreduce(rt, (const void *const *)isend, (void *const *)irecv, count + 1, MGPU_INT32, MGPU_OP_MAX);
  check(st == MGPU_EINVAL && strstr(mgpu_last_error(), "mgpu_allreduce: 4004 bytes at send[0]") &&
        strstr(mgpu_last_error(), "run 4 bytes past the end of its allocation (4000 bytes at"),
        "a count past the buffers: %s (%s)", mgpu_status_name(st), mgpu_last_error());
  if (rank == 0) printf("a count past the buffers: %s\n", mgpu_last_error());
#undef EACH_GPU_CHECK
  for (int g = 0; g < ng; g++) {
    mgpu_device_free(rt, g, send[g]);
    mgpu_device_free(rt, g, recv[g]);
    mgpu_device_free(rt, g, isend[g]);
    mgpu_device_free(rt, g, irecv[g]);
  }
  free(host);
  mgpu_finalize(rt);
}

/* Split arrays across the ranks: rank r has r % 2 + 1 emulated GPUs, so the
 * ranks' parts differ in size; parts are numbered over all ranks. */
static void scenario_array(void) {
  cfg_threads = 1;
  cfg_gpus = rank % 2 + 1;
  mgpu_runtime_t *rt;
  if (!started(&rt, 20)) return;
  const size_t n = 10007;
  arrays_t h;
  arrays(&h, n); /* full-size host arrays and the counts of the kernel's calls */
  mgpu_array_t *x = NULL, *y = NULL;
  check(mgpu_array_create(rt, n, sizeof(double), 0, NULL, &x) == MGPU_OK &&
        mgpu_array_create(rt, n, sizeof(double), 0, NULL, &y) == MGPU_OK, "mgpu_array_create: %s", mgpu_last_error());
  if (!x || !y) return;
  /* This rank's parts: consecutive, and over the ranks they cover [0, n). */
  size_t lo = SIZE_MAX, hi = 0, cnt = 0;
  for (int i = 0; i < mgpu_array_nparts(x); i++) {
    mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
    mgpu_array_part(x, i, &p);
    if (p.count) lo = p.first < lo ? p.first : lo, hi = p.first + p.count > hi ? p.first + p.count : hi;
    cnt += p.count;
  }
  if (cnt == 0) lo = hi = 0;
  unsigned long long mine[2] = {lo, hi}, *all = calloc(2 * (size_t)nranks, sizeof *all);
  MPI_Allgather(mine, 2, MPI_UNSIGNED_LONG_LONG, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
  unsigned long long at = 0;
  for (int r = 0; r < nranks; r++) {
    check(all[2 * r] == at || all[2 * r] == all[2 * r + 1], "rank %d's part starts at %llu, expected %llu", r,
          all[2 * r], at);
    if (all[2 * r + 1] > all[2 * r]) at = all[2 * r + 1];
  }
  check(at == n, "the ranks' parts end at %llu, expected %zu", at, n);
  free(all);
  check(mgpu_array_scatter(x, h.x) == MGPU_OK, "mgpu_array_scatter: %s", mgpu_last_error());
  mgpu_array_batch_t ab = MGPU_ARRAY_BATCH_INIT;
  ab.kernel = &lin;
  ab.in[0] = x;
  ab.out[0] = y;
  ab.arg = coef;
  ab.arg_size = sizeof coef;
  check(mgpu_array_run(rt, &ab, NULL) == MGPU_OK, "mgpu_array_run: %s", mgpu_last_error());
  check(mgpu_array_gather(y, h.y) == MGPU_OK, "mgpu_array_gather: %s", mgpu_last_error());
  check_share(&h, lo, hi - lo, "mgpu_array_run over this rank's part");
  check_once(&h, "mgpu_array_run over the ranks' parts");
  double s = 0, want = (double)n * (double)(n - 1) / 2;
  check(mgpu_array_sum(x, MGPU_FLOAT64, &s) == MGPU_OK && s == want, "mgpu_array_sum: %g, expected %g (%s)", s, want,
        mgpu_last_error());
  if (rank == 0) printf("an array of %zu elements over %d ranks: sum %g\n", n, nranks, s);
  mgpu_array_destroy(x);
  mgpu_array_destroy(y);
  /* Ranks that disagree on n: refused on every rank. */
  mgpu_array_t *z = NULL;
  mgpu_status_t st = mgpu_array_create(rt, rank == 1 ? n - 1 : n, sizeof(double), 0, NULL, &z);
  check(st == MGPU_EINVAL && strstr(mgpu_last_error(), "disagree on n"), "n that differs: %s", mgpu_last_error());
  arrays_free(&h);
  mgpu_finalize(rt);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char *sc = argc > 1 ? argv[1] : "batch";
  if (!strcmp(sc, "batch")) scenario_batch(argc, argv);
  else if (!strcmp(sc, "plan")) scenario_plan();
  else if (!strcmp(sc, "mismatch")) scenario_mismatch();
  else if (!strcmp(sc, "calls")) scenario_calls();
  else if (!strcmp(sc, "fail")) scenario_fail();
  else if (!strcmp(sc, "cancel")) scenario_cancel();
  else if (!strcmp(sc, "cancel-fail")) scenario_cancel_fail();
  else if (!strcmp(sc, "lost")) scenario_lost(argc, argv);
  else if (!strcmp(sc, "comm")) scenario_comm();
  else if (!strcmp(sc, "single")) scenario_single();
  else if (!strcmp(sc, "trace")) scenario_trace(argc, argv);
  else if (!strcmp(sc, "coll")) scenario_coll();
  else if (!strcmp(sc, "array")) scenario_array();
  else {
    fprintf(stderr, "test-mpi: unknown scenario '%s'\n", sc);
    failures++;
  }
  fflush(stdout);
  MPI_Finalize();
  return failures ? 1 : 0;
}
