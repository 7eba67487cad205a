/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_worker.c: the CPU workers, a persistent OpenMP team started at mgpu_init
 * from a thread of the runtime's own, each member taking chunks until finalize.
 */
#include "workers/workers.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Scratch for up to `count` items of `per` bytes each in w's buffer: as
 * many items as an allocation gets, halving from `count`; 0 where not even
 * one item's fits. */
static size_t scratch_items(mgpu__worker_t *w, size_t per, size_t count) {
  size_t n = MGPU_MIN(count, SIZE_MAX / per);
  if (n * per <= w->scratch_bytes) return n;
  free(w->scratch);
  w->scratch = NULL;
  w->scratch_bytes = 0;
  for (; n > 0; n /= 2) {
    if ((w->scratch = malloc(n * per))) {
      w->scratch_bytes = n * per;
      return n;
    }
  }
  return 0;
}

/* Items [from, to) of claim c (offsets in it), with the scratch of them
 * all in w's buffer (scratch_items); busy: the seconds they took. */
static int run_items(mgpu__worker_t *w, const mgpu__claim_t *c, size_t from, size_t to, double *busy) {
  mgpu__batch_t *b = c->b;
  const mgpu_kernel_t *k = &b->kernel;
  size_t first = c->first + from, count = to - from;
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  const void *consts[MGPU_MAX_CONSTS];
  for (int i = 0; i < k->nin; i++) in[i] = (const char *)b->desc.in[i] + first * k->in_size[i];
  for (int i = 0; i < k->nout; i++) out[i] = (char *)b->desc.out[i] + first * k->out_size[i];
  for (int i = 0; i < b->desc.nconsts; i++) consts[i] = b->desc.consts[i]->host;
  mgpu_chunk_t ch = {
      .in = in, .out = out, .consts = consts, .arg = b->desc.arg, .scratch = k->scratch_per_item ? w->scratch : NULL,
      .first = b->base + first, .count = count, .stream = NULL, .worker = w->id,
  };
  double t0 = mgpu__now();
  int rc = k->cpu(&ch);
  *busy = mgpu__now() - t0;
  return rc;
}

/* Where the piece after `done` of a chunk of n items ends (MGPU_PIECE_FIRST,
 * MGPU_PIECE_GROWTH). A chunk sized by a rate measured on cheap items that
 * meets dear ones is seen after a piece, not after all of it, and the few
 * calls of the kernel cost next to nothing against its items. */
static size_t piece_end(size_t done, size_t n) {
  if (done == 0) return (n + MGPU_PIECE_FIRST - 1) / MGPU_PIECE_FIRST;
  return done < n / MGPU_PIECE_GROWTH ? done * MGPU_PIECE_GROWTH : n;
}

/* Record a call of `items` in `secs` in calls[] (the last one takes any past
 * MGPU_PIECE_CALLS). */
static void note_call(mgpu__call_t *calls, int *ncalls, size_t items, double secs) {
  if (*ncalls == MGPU_PIECE_CALLS) {
    calls[*ncalls - 1].items += (double)items;
    calls[*ncalls - 1].secs += secs;
    return;
  }
  calls[(*ncalls)++] = (mgpu__call_t){(double)items, secs};
}

/* One run of a claim by its worker's thread: what its pieces are judged by,
 * and what they did. */
typedef struct {
  double rate;            /* items/s; 0: the chunk is one call, never judged */
  double call_s;          /* the kernel's cost per call */
  double item_s;          /* > 0: the cost per item its range was handed back with */
  double t0, busy, predicted;
  size_t done, to;        /* items done; the end of the piece last started */
  mgpu__call_t calls[MGPU_PIECE_CALLS];
  int ncalls, made;       /* calls recorded, and made */
  size_t slow_n;          /* items of the last piece, where it overran and awaits confirmation */
  double slow_s, excused; /* its time; overruns the next piece showed were stalls */
  bool over;              /* it hands back the items it has not started */
  int rc;
} run_t;

/* Where the batch steals, pieces are judged by the worker's rate; items a
 * CPU worker handed back by the cost per item it saw (claim.c, install). */
static void run_begin(mgpu_runtime_t *rt, mgpu__worker_t *w, const mgpu__claim_t *c, run_t *r) {
  mgpu__batch_t *b = c->b;
  *r = (run_t){0};
  r->rate = b->steal_ok ? mgpu__worker_speed(b, w->id) : 0;
  /* A kernel's cost per call counts once in every piece's prediction, and
   * not in the cost per item that a hand-back carries: otherwise a piece of
   * a few items overruns by that cost alone, and the items handed back are
   * run one a chunk (claim.c, chunk_len). */
  r->call_s = mgpu__worker_latency(b, w->id);
  r->item_s = atomic_load_explicit(&b->ranges[w->id].item_s, memory_order_relaxed);
  if (r->item_s > 0 && r->rate > 0) r->rate = fmin(r->rate, 1 / r->item_s);
  r->t0 = mgpu__now();
  /* A worker idle as the batch started, on its first chunk of it from its
   * own range: the time in between is the team's start (mgpu__start_cost). */
  if (c->from_share && w->run_end < b->t_start && b->wstats[w->id].chunks == 0)
    mgpu__start_cost_learn(rt, r->t0 - b->t_start);
  atomic_store_explicit(&w->run_since_ns, (uint64_t)(r->t0 * 1e9), memory_order_relaxed);
  atomic_store_explicit(&w->run_batch, b, memory_order_release);
}

/* Whether the chunk hands back the rest after a piece of piece_n items that
 * took `piece` s. An overrun short enough to be the OS holding the thread up
 * (MGPU_HANDBACK_SURE_S) is first confirmed by the next piece, of as many
 * items, and excused where that one is on time; a chunk whose last piece
 * overran that little ends as it is. */
static bool overran(const mgpu__batch_t *b, run_t *r, double piece, size_t piece_n) {
  r->predicted = (double)r->made * r->call_s + (double)r->done / r->rate;
  double late = r->busy - r->excused - MGPU_HANDBACK_FACTOR * r->predicted;
  bool over = false;
  if (r->slow_n) {
    /* As slow again: the items are dear. On time: the overrun was a stall. */
    over = piece > MGPU_HANDBACK_FACTOR * (r->call_s + (double)piece_n / r->rate) + MGPU_HANDBACK_SLACK_S;
    if (!over) r->excused += r->slow_s - r->call_s - (double)r->slow_n / r->rate;
    r->slow_n = 0;
  } else if (late > MGPU_HANDBACK_SURE_S) {
    over = true;
  } else if (late > MGPU_HANDBACK_SLACK_S) {
    r->slow_n = piece_n;
    r->slow_s = piece;
  }
  return over && !atomic_load(&b->failed);
}

/* Run claim c's items, in pieces where the chunk is judged, until they are
 * done, one fails, or the chunk overran. */
static void run_pieces(mgpu__worker_t *w, const mgpu__claim_t *c, run_t *r) {
  mgpu__batch_t *b = c->b;
  size_t per = b->kernel.scratch_per_item;
  while (r->done < c->count && !r->over) {
    r->to = r->rate > 0 ? piece_end(r->done, c->count) : c->count;
    if (r->slow_n) r->to = MGPU_MIN(c->count, r->done + r->slow_n);
    /* A call takes no more items than their scratch can be allocated for;
     * where not one item's can, the batch fails with MGPU_ENOMEM (before the
     * claim closes, which would make it MGPU_EKERNEL) on that item. */
    size_t fit = per ? scratch_items(w, per, r->to - r->done) : r->to - r->done;
    if (fit == 0) {
      mgpu__log(MGPU_LOG_ERROR, "kernel '%s': CPU worker %d cannot allocate one item's %zu bytes of scratch",
                b->kernel.name ? b->kernel.name : "(unnamed)", w->id, per);
      mgpu__batch_fail(b, MGPU_ENOMEM);
      r->to = r->done + 1;
      r->rc = -1;
      return;
    }
    r->to = r->done + fit;
    double piece = 0;
    r->rc = run_items(w, c, r->done, r->to, &piece);
    r->busy += piece;
    if (r->rc != 0) return;
    note_call(r->calls, &r->ncalls, r->to - r->done, piece);
    r->made++;
    size_t piece_n = r->to - r->done;
    r->done = r->to;
    if (r->rate > 0) r->over = overran(b, r, piece, piece_n);
  }
}

/* Close the claim: failed, handed back (with the rest of the worker's own
 * range, for a GPU or a CPU worker that would finish it sooner: claim.c,
 * cpu_takes) or completed. A range with a handed-back cost keeps the cost of
 * its latest chunk, so that cheaper items further on grow its chunks again. */
static void run_end(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, run_t *r) {
  mgpu__batch_t *b = c->b;
  if (rt->trace_on) {
    mgpu__tev_t ev = {.t0 = r->t0, .t1 = r->t0 + r->busy, .kind = MGPU_TEV_CHUNK, .stream = -1,
                      .name = b->kernel.name, .batch = b->id, .first = c->first, .count = r->rc ? r->to : r->done};
    mgpu__trace_add(rt, w, &ev);
  }
  atomic_store_explicit(&w->run_batch, NULL, memory_order_release);
  w->run_end = mgpu__now();
  double cost = r->over || r->item_s > 0 ? mgpu__cpu_items_cost(b, w->id, r->busy, r->done, r->made * r->call_s) : 0;
  if (r->item_s > 0 && r->rc == 0 && !r->over && r->done > 0)
    atomic_store_explicit(&b->ranges[w->id].item_s, cost, memory_order_relaxed);
  c->calls = r->calls;
  c->ncalls = r->ncalls;
  if (r->rc != 0) mgpu__complete_failed(rt, w, c, r->done, r->to - r->done, r->busy, r->rc);
  else if (r->over) mgpu__handback(rt, w, c, r->done, r->busy, r->predicted, cost);
  else mgpu__complete(rt, w, c, r->busy, 0);
}

/* Run claim c and close it. A CPU core must not hold items a GPU would
 * finish many times sooner: where the batch steals, a chunk that has taken
 * far longer than the worker's rate predicts hands back what it has not
 * started. */
static void run_claim(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c) {
  run_t r;
  run_begin(rt, w, c, &r);
  run_pieces(w, c, &r);
  run_end(rt, w, c, &r);
}

void mgpu__cpu_worker_loop(mgpu_runtime_t *rt, mgpu__worker_t *w) {
  mgpu__self_rt = rt;
  while (!atomic_load_explicit(&rt->stop, memory_order_relaxed)) {
    uint64_t gen = atomic_load(&rt->work_gen);
    /* Feeding a GPU comes first: its staging copy holds up a device. */
    if (mgpu__copy_wanted(rt)) mgpu__copy_help(rt, w);
    mgpu__claim_t c = {0};
    if (!mgpu__claim(rt, w, SIZE_MAX, MGPU_CPU_TARGET_S, &c)) {
      mgpu__idle_wait(rt, gen, false);
      continue;
    }
    if (atomic_load(&c.b->failed)) {
      mgpu__drop(rt, w, &c); /* the batch failed: drop, do not compute */
      continue;
    }
    run_claim(rt, w, &c);
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
