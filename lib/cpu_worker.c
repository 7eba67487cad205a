/*
 * cpu_worker.c: the CPU workers, a persistent OpenMP team started at mgpu_init
 * from a thread of the runtime's own, each member taking chunks until finalize.
 */
#include "mgpurt_int.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

static int run_chunk(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, double *busy) {
  mgpu__batch_t *b = c->b;
  const mgpu_kernel_t *k = &b->kernel;
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  const void *consts[MGPU_MAX_CONSTS];
  for (int i = 0; i < k->nin; i++) in[i] = (const char *)b->desc.in[i] + c->first * k->in_size[i];
  for (int i = 0; i < k->nout; i++) out[i] = (char *)b->desc.out[i] + c->first * k->out_size[i];
  for (int i = 0; i < b->desc.nconsts; i++) consts[i] = b->desc.consts[i]->host;
  size_t scratch = k->scratch_per_item * c->count;
  if (scratch > w->scratch_bytes) {
    free(w->scratch);
    w->scratch = malloc(scratch);
    w->scratch_bytes = w->scratch ? scratch : 0;
    if (!w->scratch) {
      mgpu__log(MGPU_LOG_ERROR, "CPU worker %d: cannot allocate %zu bytes of scratch", w->id, scratch);
      return -1;
    }
  }
  mgpu_chunk_t ch = {
      .in = in, .out = out, .consts = consts, .arg = b->desc.arg, .scratch = scratch ? w->scratch : NULL,
      .first = b->base + c->first, .count = c->count, .stream = NULL, .worker = w->id,
  };
  double t0 = mgpu__now();
  int rc = k->cpu(&ch);
  double t1 = mgpu__now();
  *busy = t1 - t0;
  if (rt->trace_on) {
    mgpu__tev_t ev = {.t0 = t0, .t1 = t1, .kind = MGPU_TEV_CHUNK, .stream = -1, .name = b->kernel.name,
                      .batch = b->id, .first = c->first, .count = c->count};
    mgpu__trace_add(rt, w, &ev);
  }
  return rc;
}

void mgpu__cpu_worker_loop(mgpu_runtime_t *rt, mgpu__worker_t *w) {
  while (!atomic_load_explicit(&rt->stop, memory_order_relaxed)) {
    uint64_t gen = atomic_load(&rt->work_gen);
    /* Feeding a GPU comes first: its staging copy holds up a device. */
    if (mgpu__copy_wanted(rt)) mgpu__copy_help(rt, w);
    mgpu__claim_t c;
    if (!mgpu__claim(rt, w, SIZE_MAX, 0.5e-3, &c)) {
      mgpu__idle_wait(rt, gen, false);
      continue;
    }
    if (atomic_load(&c.b->failed)) {
      mgpu__drop(rt, w, &c); /* the batch failed: drop, do not compute */
      continue;
    }
    double busy = 0;
    int rc = run_chunk(rt, w, &c, &busy);
    mgpu__complete(rt, w, &c, busy, rc);
  }
}

/* One member of the team, from check-in to check-out. */
static void team_member(mgpu_runtime_t *rt) {
  int id = omp_get_thread_num();
  /* A kernel's own "omp parallel" inside a worker gets one thread: the
   * workers already fill the cores, so nesting would oversubscribe them. This
   * changes only these threads' settings, not the user's OMP_NUM_THREADS. */
  omp_set_num_threads(1);
  omp_set_max_active_levels(1);
  MGPU_LOCK(&rt->team_lock, MGPU_LK_THREADS);
  if (id == 0) rt->team_got = omp_get_num_threads();
  rt->team_ready++;
  pthread_cond_broadcast(&rt->team_cv);
  while (rt->team_go == 0) pthread_cond_wait(&rt->team_cv, &rt->team_lock);
  int go = rt->team_go > 0;
  MGPU_UNLOCK(&rt->team_lock);
  if (go) mgpu__cpu_worker_loop(rt, &rt->workers[id]);
  /* Check out under the team lock: mgpu__team_join waits for every member,
   * so what a worker wrote is ordered before finalize frees it by a pthread
   * mutex as well as by OpenMP's barrier (which race detectors cannot see). */
  MGPU_LOCK(&rt->team_lock, MGPU_LK_THREADS);
  rt->team_done++;
  pthread_cond_broadcast(&rt->team_cv);
  MGPU_UNLOCK(&rt->team_lock);
}

static void *team_main(void *arg) {
  mgpu_runtime_t *rt = arg;
  omp_set_dynamic(0);
  /* OMP_PROC_BIND=master (primary) binds a team to its first thread's
   * place: every CPU worker on one CPU. The workers are bound close instead,
   * each to a place of its own while there are enough; other policies, and
   * no binding, are as the user set them. */
  if (omp_get_proc_bind() == omp_proc_bind_master) {
#pragma omp parallel num_threads(rt->ncpu) proc_bind(close)
    team_member(rt);
  } else {
#pragma omp parallel num_threads(rt->ncpu)
    team_member(rt);
  }
  return NULL;
}

mgpu_status_t mgpu__team_start(mgpu_runtime_t *rt) {
  if (rt->ncpu == 0) return MGPU_OK;
  pthread_mutex_init(&rt->team_lock, NULL);
  pthread_cond_init(&rt->team_cv, NULL);
  rt->team_ready = rt->team_got = rt->team_go = rt->team_done = 0;
  int rc = pthread_create(&rt->team_thread, NULL, team_main, rt);
  if (rc != 0) return mgpu__fail(MGPU_ESYSTEM, "cannot start the CPU worker team: pthread_create returned %d", rc);
  rt->team_started = 1;
  MGPU_LOCK(&rt->team_lock, MGPU_LK_THREADS);
  /* Every member that OpenMP gave us checks in; the first tells the count. */
  while (rt->team_got == 0 || rt->team_ready < rt->team_got) pthread_cond_wait(&rt->team_cv, &rt->team_lock);
  int got = rt->team_got;
  rt->team_go = got == rt->ncpu ? 1 : -1;
  pthread_cond_broadcast(&rt->team_cv);
  MGPU_UNLOCK(&rt->team_lock);
  if (got != rt->ncpu) {
    pthread_join(rt->team_thread, NULL);
    rt->team_started = 0;
    return mgpu__fail(MGPU_ESYSTEM, "OpenMP started %d of the %d CPU workers asked for (is OMP_THREAD_LIMIT set?)", got,
                      rt->ncpu);
  }
  return MGPU_OK;
}

void mgpu__team_join(mgpu_runtime_t *rt) {
  if (!rt->team_started) return;
  MGPU_LOCK(&rt->team_lock, MGPU_LK_THREADS);
  while (rt->team_done < rt->team_got) pthread_cond_wait(&rt->team_cv, &rt->team_lock);
  MGPU_UNLOCK(&rt->team_lock);
  pthread_join(rt->team_thread, NULL);
  rt->team_started = 0;
  pthread_mutex_destroy(&rt->team_lock);
  pthread_cond_destroy(&rt->team_cv);
}
