/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpu-soak: runs mixed work on one runtime after another for a set time and
 * checks that nothing is lost: batches of a built-in kernel (every output
 * checked against the kernel's CPU function), batches canceled midway, and
 * all-reduces on device buffers (every value checked), from many submitting
 * threads at once, while injected faults (failed launches and allocations;
 * on emulated devices also hung chunks and collectives) hit the GPUs. Each
 * runtime lives one phase with its own fault plan, so GPUs retired in one
 * phase come back in the next.
 *
 * Usage: bench/mgpu-soak [--seconds S] [--submitters T] [--phase S] [--seed N] [--no-faults]
 * Prints a line per phase and a summary; exits 1 when an item or a value was
 * lost or wrong, or a call failed that should not have.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "mgpurt.h"
#include "mgpurt_kernels.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* Totals over every phase. */
static _Atomic unsigned long long batches, items, canceled, collectives, lost, failed_calls, retries;

typedef struct {
  mgpu_runtime_t *rt;
  double until;
  uint64_t seed;
} job_t;

/* A batch of mulmod: every output checked against the CPU function. */
static void one_batch(mgpu_runtime_t *rt, uint64_t *rng, bool cancel) {
  uint64_t intensity = 1 + next(rng) % 8;
  mgpu_kernel_t k;
  if (mgpu_kernel_mulmod(intensity, &k) != MGPU_OK) {
    atomic_fetch_add(&failed_calls, 1);
    return;
  }
  size_t n = 1 + next(rng) % 200000;
  uint64_t *x = malloc(8 * n), *y = malloc(8 * n), *ref = malloc(8 * n);
  if (!x || !y || !ref) {
    fprintf(stderr, "mgpu-soak: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++) x[i] = next(rng), y[i] = 0;
  mgpu_mulmod_arg_t a = {intensity};
  mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x}, .out = {y}, .arg = &a, .arg_size = sizeof a};
  mgpu_event_t *ev;
  mgpu_stats_t st = {0};
  mgpu_status_t s = mgpu_submit(rt, &b, 0, NULL, &ev);
  if (s == MGPU_OK) {
    if (cancel) mgpu_event_cancel(ev);
    s = mgpu_event_wait(ev, &st);
    mgpu_event_release(ev);
  }
  const void *in[1] = {x};
  void *out[1] = {ref};
  mgpu_chunk_t c = {.in = in, .out = out, .arg = &a, .first = 0, .count = n};
  k.cpu(&c);
  if (s == MGPU_OK) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != ref[i];
    atomic_fetch_add(&lost, bad);
    atomic_fetch_add(&batches, 1);
    atomic_fetch_add(&items, n);
  } else if (s == MGPU_ECANCELED) {
    /* What was computed is right; the rest is untouched. */
    size_t bad = 0, done = 0;
    for (size_t i = 0; i < n; i++) {
      if (y[i] == 0 && ref[i] != 0) continue;
      done++;
      bad += y[i] != ref[i];
    }
    atomic_fetch_add(&lost, bad + (done < st.items ? st.items - done : 0));
    atomic_fetch_add(&canceled, 1);
  } else {
    fprintf(stderr, "mgpu-soak: batch of %zu items failed: %s\n", n, mgpu_last_error());
    atomic_fetch_add(&failed_calls, 1);
  }
  atomic_fetch_add(&retries, st.retries);
  free(x), free(y), free(ref);
}

static bool any_retired(mgpu_runtime_t *rt) {
  for (int g = 0; g < mgpu_num_gpus(rt); g++) {
    mgpu_device_info_t d = MGPU_DEVICE_INFO_INIT;
    if (mgpu_device_info(rt, g, &d) == MGPU_OK && d.retired) return true;
  }
  return false;
}

/* An all-reduce of g + 1 from each GPU g: every value must be the sum. A GPU
 * given up as hung fails it (MGPU_EDEVICE), which is what it should do. */
static void one_allreduce(mgpu_runtime_t *rt, double **buf, double *host, size_t count) {
  int ng = mgpu_num_gpus(rt);
  for (int g = 0; g < ng; g++) {
    for (size_t i = 0; i < count; i++) host[i] = g + 1;
    if (mgpu_memcpy_to_device(rt, g, buf[g], host, 8 * count) != MGPU_OK) {
      if (!any_retired(rt)) fprintf(stderr, "mgpu-soak: copy failed: %s\n", mgpu_last_error());
      return;
    }
  }
  mgpu_status_t s = mgpu_allreduce(rt, (const void *const *)buf, (void *const *)buf, count, MGPU_FLOAT64, MGPU_OP_SUM);
  if (s != MGPU_OK) {
    if (!any_retired(rt)) {
      fprintf(stderr, "mgpu-soak: all-reduce failed with every GPU in service: %s\n", mgpu_last_error());
      atomic_fetch_add(&failed_calls, 1);
    }
    return;
  }
  double want = ng * (ng + 1) / 2.0;
  for (int g = 0; g < ng; g++) {
    if (mgpu_memcpy_from_device(rt, g, host, buf[g], 8 * count) != MGPU_OK) return;
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) bad += host[i] != want;
    atomic_fetch_add(&lost, bad);
  }
  atomic_fetch_add(&collectives, 1);
}

static void *submitter(void *arg) {
  job_t *j = arg;
  uint64_t rng = j->seed | 1;
  int ng = mgpu_num_gpus(j->rt);
  size_t count = 4096;
  double *buf[MGPU_MAX_DEVICES], *host = malloc(8 * count);
  bool have_buf = ng > 0;
  for (int g = 0; g < ng; g++)
    if (mgpu_device_alloc(j->rt, g, 8 * count, (void **)&buf[g]) != MGPU_OK) {
      if (!any_retired(j->rt)) fprintf(stderr, "mgpu-soak: mgpu_device_alloc failed: %s\n", mgpu_last_error());
      have_buf = false;
    }
  while (now() < j->until) {
    unsigned r = (unsigned)(next(&rng) % 10);
    if (r < 7) one_batch(j->rt, &rng, false);
    else if (r < 8) one_batch(j->rt, &rng, true);
    else if (have_buf) one_allreduce(j->rt, buf, host, count);
  }
  free(host);
  /* Buffers on a GPU given up stay with it; finalize says so. */
  for (int g = 0; g < ng && have_buf; g++) mgpu_device_free(j->rt, g, buf[g]);
  return NULL;
}

/* MGPU_FAULT_INJECT as the user set it (NULL: unset), or plan. */
static void set_plan(const char *user, const char *plan) {
  const char *v = plan ? plan : user;
  if (v) setenv("MGPU_FAULT_INJECT", v, 1);
  else unsetenv("MGPU_FAULT_INJECT");
}

int main(int argc, char **argv) {
  double seconds = 300, phase = 30;
  int threads = 16;
  bool faults = true;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && !strcmp(argv[i], "--seconds")) seconds = atof(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--phase")) phase = atof(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--submitters")) threads = atoi(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--seed")) seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--no-faults")) faults = false;
    else {
      fprintf(stderr, "usage: %s [--seconds S] [--submitters T] [--phase S] [--seed N] [--no-faults]\n", argv[0]);
      return 2;
    }
  }
  if (!(seconds > 0) || !(phase > 0) || threads < 1 || threads > 1024) {
    fprintf(stderr, "mgpu-soak: expected --seconds > 0, --phase > 0 and --submitters in 1..1024\n");
    return 2;
  }
  double t0 = now(), end = t0 + seconds;
  int phases = 0, planned = 0, given_up = 0;
  uint64_t rng = seed * 2654435761u + 1;
  /* A phase's fault plan goes to its runtime through MGPU_FAULT_INJECT, the
   * way a program reaches the library's settings for tests; the user's own
   * value holds for the probes and for phases without a plan. */
  char *user_plan = getenv("MGPU_FAULT_INJECT") ? strdup(getenv("MGPU_FAULT_INJECT")) : NULL;
  while (now() < end) {
    /* This phase's fault plan: launch and allocation failures on random GPUs
     * and, on emulated devices, a hung chunk and a hung collective. */
    set_plan(user_plan, NULL);
    mgpu_config_t probe_cfg;
    mgpu_config_init(&probe_cfg);
    probe_cfg.debug = 0;
    mgpu_runtime_t *probe;
    if (mgpu_init(&probe_cfg, &probe) != MGPU_OK) {
      fprintf(stderr, "mgpu-soak: mgpu_init: %s\n", mgpu_last_error());
      return 1;
    }
    int ng = mgpu_num_gpus(probe);
    mgpu_device_info_t d0 = {0};
    if (ng) mgpu_device_info(probe, 0, &d0);
    mgpu_finalize(probe);
    char plan[512] = "";
    int nplan = 0;
    for (int f = 0; f < 8 && ng && faults; f++) {
      size_t len = strlen(plan);
      snprintf(plan + len, sizeof plan - len, "%s%s:%d:%llu", len ? "," : "", f < 6 ? "launch" : "alloc",
               (int)(next(&rng) % (uint64_t)ng), (unsigned long long)(next(&rng) % 400));
      nplan++;
    }
    if (ng && d0.emulated && faults) {
      size_t len = strlen(plan);
      snprintf(plan + len, sizeof plan - len, ",hang:%d:%llu,hangcoll:%d:%llu", (int)(next(&rng) % (uint64_t)ng),
               (unsigned long long)(next(&rng) % 200), (int)(next(&rng) % (uint64_t)ng),
               (unsigned long long)(50 + next(&rng) % 200));
      nplan += 2;
    }
    mgpu_config_t cfg;
    mgpu_config_init(&cfg);
    cfg.debug = 1;
    set_plan(user_plan, nplan ? plan : NULL);
    if (d0.emulated) cfg.timeout = 1;
    mgpu_runtime_t *rt;
    if (mgpu_init(&cfg, &rt) != MGPU_OK) {
      fprintf(stderr, "mgpu-soak: mgpu_init: %s\n", mgpu_last_error());
      return 1;
    }
    double until = now() + phase < end ? now() + phase : end;
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    job_t *jobs = calloc((size_t)threads, sizeof *jobs);
    for (int i = 0; i < threads; i++) {
      jobs[i] = (job_t){rt, until, next(&rng)};
      if (pthread_create(&th[i], NULL, submitter, &jobs[i]) != 0) {
        fprintf(stderr, "mgpu-soak: pthread_create failed\n");
        return 1;
      }
    }
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    for (int g = 0; g < ng; g++) {
      mgpu_device_info_t d = MGPU_DEVICE_INFO_INIT;
      if (mgpu_device_info(rt, g, &d) == MGPU_OK && d.retired) given_up++;
    }
    double tf = now();
    mgpu_finalize(rt);
    double fin = now() - tf;
    free(th), free(jobs);
    phases++;
    planned += nplan;
    printf("phase %d: %.0f s, %d GPU%s%s, plan '%s'; finalize %.3f s; so far %llu batches, %llu canceled, %llu "
           "all-reduces, %llu retried chunks, %llu lost\n",
           phases, now() - t0, ng, ng == 1 ? "" : "s", d0.emulated ? " (emulated)" : "", plan, fin,
           (unsigned long long)batches, (unsigned long long)canceled, (unsigned long long)collectives,
           (unsigned long long)retries, (unsigned long long)lost);
    fflush(stdout);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("soak: %.0f s, %d phases, %d submitters: %llu batches (%llu items) checked, %llu canceled, %llu all-reduces "
         "checked; faults: %d planned, %llu chunks retried, %d GPU retirements; items or values lost: %llu; failed "
         "calls: %llu; peak memory %.1f MiB\n",
         now() - t0, phases, threads, (unsigned long long)batches, (unsigned long long)items,
         (unsigned long long)canceled, (unsigned long long)collectives, planned, (unsigned long long)retries, given_up,
         (unsigned long long)lost, (unsigned long long)failed_calls, (double)ru.ru_maxrss / 1024);
  free(user_plan);
  return lost || failed_calls ? 1 : 0;
}
