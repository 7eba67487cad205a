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

/* Where the piece after `done` of a chunk of n items ends: the first piece is
 * 1/MGPU_PIECE_FIRST of the chunk, each next one brings the items done to
 * MGPU_PIECE_GROWTH times. A chunk's items are timed before they all run: a
 * chunk sized by a rate measured on cheap items (the top rows of a Mandelbrot
 * image) that meets dear ones is seen after a piece, not after all of it,
 * and the at most three calls of the kernel cost next to nothing against its
 * items. */
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

/* Run claim c and close it. Where the batch steals, the chunk runs in pieces,
 * and one that has taken far longer than the worker's rate predicts hands
 * back the items it has not started, with the rest of the worker's own range
 * (sized by that rate too): a GPU takes them, or a CPU worker where it would
 * finish them sooner (claim.c, cpu_takes), since a CPU core must not hold
 * items a GPU would finish many times sooner. A range with a handed-back cost
 * keeps the cost of its latest chunk, so that cheaper items further on grow
 * its chunks again. An overrun short enough to be the OS holding the thread
 * up is first confirmed by the next piece (MGPU_HANDBACK_SURE_S); a chunk
 * whose last piece overran that little ends as it is, and its next chunk's
 * pieces are timed afresh. */
static void run_claim(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c) {
  mgpu__batch_t *b = c->b;
  double rate = b->steal_ok ? mgpu__worker_speed(b, w->id) : 0;
  /* A kernel's cost per call counts once in every piece's prediction, and
   * not in the cost per item that a hand-back carries: otherwise a piece of
   * a few items overruns by that cost alone, and the items handed back are
   * run one a chunk (claim.c, chunk_len). */
  double call_s = mgpu__worker_latency(b, w->id);
  mgpu__call_t calls[MGPU_PIECE_CALLS];
  int ncalls = 0, made = 0; /* calls recorded, and made */
  /* Items a CPU worker handed back: at the cost per item it saw (claim.c, install). */
  double item_s = atomic_load_explicit(&b->ranges[w->id].item_s, memory_order_relaxed);
  if (item_s > 0 && rate > 0) rate = fmin(rate, 1 / item_s);
  double t0 = mgpu__now(), busy = 0, predicted = 0;
  /* A worker idle as the batch started, on its first chunk of it from its
   * own range: the time in between is the team's start (mgpu__start_cost). */
  if (c->from_share && w->run_end < b->t_start && b->wstats[w->id].chunks == 0)
    mgpu__start_cost_learn(rt, t0 - b->t_start);
  atomic_store_explicit(&w->run_since_ns, (uint64_t)(t0 * 1e9), memory_order_relaxed);
  atomic_store_explicit(&w->run_batch, b, memory_order_release);
  size_t done = 0, to = 0;
  size_t slow_n = 0; /* items of the last piece, where it overran and awaits confirmation */
  double slow_s = 0, excused = 0; /* its time; overruns the next piece showed were stalls */
  bool over = false;
  int rc = 0;
  size_t per = b->kernel.scratch_per_item;
  while (done < c->count && !over) {
    to = rate > 0 ? piece_end(done, c->count) : c->count;
    if (slow_n) to = MGPU_MIN(c->count, done + slow_n);
    /* A call takes no more items than their scratch can be allocated for;
     * where not one item's can, the batch fails with MGPU_ENOMEM (before the
     * claim closes, which would make it MGPU_EKERNEL) on that item. */
    size_t fit = per ? scratch_items(w, per, to - done) : to - done;
    if (fit == 0) {
      mgpu__log(MGPU_LOG_ERROR, "kernel '%s': CPU worker %d cannot allocate one item's %zu bytes of scratch",
                b->kernel.name ? b->kernel.name : "(unnamed)", w->id, per);
      mgpu__batch_fail(b, MGPU_ENOMEM);
      to = done + 1;
      rc = -1;
      break;
    }
    to = done + fit;
    double piece = 0;
    rc = run_items(w, c, done, to, &piece);
    busy += piece;
    if (rc != 0) break;
    note_call(calls, &ncalls, to - done, piece);
    made++;
    size_t piece_n = to - done;
    done = to;
    if (!(rate > 0)) continue; /* one call: the loop ends */
    predicted = (double)made * call_s + (double)done / rate;
    double late = busy - excused - MGPU_HANDBACK_FACTOR * predicted;
    if (slow_n) {
      /* As slow again: the items are dear. On time: the overrun was a stall. */
      over = piece > MGPU_HANDBACK_FACTOR * (call_s + (double)piece_n / rate) + MGPU_HANDBACK_SLACK_S;
      if (!over) excused += slow_s - call_s - (double)slow_n / rate;
      slow_n = 0;
    } else if (late > MGPU_HANDBACK_SURE_S) {
      over = true;
    } else if (late > MGPU_HANDBACK_SLACK_S) {
      slow_n = piece_n;
      slow_s = piece;
    }
    over = over && !atomic_load(&b->failed);
  }
  if (rt->trace_on) {
    mgpu__tev_t ev = {.t0 = t0, .t1 = t0 + busy, .kind = MGPU_TEV_CHUNK, .stream = -1, .name = b->kernel.name,
                      .batch = b->id, .first = c->first, .count = rc ? to : done};
    mgpu__trace_add(rt, w, &ev);
  }
  atomic_store_explicit(&w->run_batch, NULL, memory_order_release);
  w->run_end = mgpu__now();
  double cost = over || item_s > 0 ? mgpu__cpu_items_cost(b, w->id, busy, done, made * call_s) : 0;
  if (item_s > 0 && rc == 0 && !over && done > 0)
    atomic_store_explicit(&b->ranges[w->id].item_s, cost, memory_order_relaxed);
  c->calls = calls;
  c->ncalls = ncalls;
  if (rc != 0) mgpu__complete_failed(rt, w, c, done, to - done, busy, rc);
  else if (over) mgpu__handback(rt, w, c, done, busy, predicted, cost);
  else mgpu__complete(rt, w, c, busy, 0);
}

void mgpu__cpu_worker_loop(mgpu_runtime_t *rt, mgpu__worker_t *w) {
  mgpu__self_rt = rt;
  while (!atomic_load_explicit(&rt->stop, memory_order_relaxed)) {
    uint64_t gen = atomic_load(&rt->work_gen);
    /* Feeding a GPU comes first: its staging copy holds up a device. */
    if (mgpu__copy_wanted(rt)) mgpu__copy_help(rt, w);
    mgpu__claim_t c = {0};
    if (!mgpu__claim(rt, w, SIZE_MAX, 0.5e-3, &c)) {
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
