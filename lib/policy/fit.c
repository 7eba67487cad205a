/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fit.c: the chunk-time model of one worker on one kernel, as pure numbers.
 * A chunk of n items takes t(n) = a + c n seconds (the line), fitted by least
 * squares to decayed, relatively weighted timings. The knee, found by size
 * classes, is the size from which the rate stops rising; the next chunk is
 * target_s of work, never under the knee nor the floor the batch trials keep.
 */
#include "policy/policy.h"

#include <math.h>

/* ------------------------------------------------------------- the line */

/* Whether the sizes in the sums spread enough for a line to tell a from c. */
static bool spread(const mgpu__fit_t *f) {
  const mgpu__fit_sums_t *s = &f->line.sum;
  return s->w * s->nn - s->n * s->n > MGPU_FIT_SPREAD * s->w * s->nn;
}

/* Refit a and c from the sums. Chunks all of about one size cannot tell a
 * from c: the time goes to whichever term dominates there, and the other
 * stays. Times that scatter about any line make the fit the mean rate. */
static void solve(mgpu__fit_t *f) {
  const mgpu__fit_sums_t *s = &f->line.sum;
  mgpu__fit_line_t *l = &f->line;
  double d = s->w * s->nn - s->n * s->n;
  double n0 = s->n / s->w, t0 = s->t / s->w;
  if (spread(f)) {
    double a = (s->nn * s->t - s->n * s->nt) / d, c = (s->w * s->nt - s->n * s->t) / d;
    if (a < 0) {
      a = 0;
      c = s->nt / s->nn;
    }
    /* A time flat over the sizes seen still rises past the largest. */
    double c_min = t0 / (f->knee.top.n * MGPU_FIT_FLAT);
    if (c < c_min) c = c_min;
    l->a = a;
    l->c = c;
  } else if (l->c > 0 && l->a > l->c * n0) {
    l->a = MGPU_MAX(0.0, t0 - l->c * n0);
  } else {
    l->a = MGPU_MIN(l->a, MGPU_FIT_LATENCY_MAX_SHARE * t0);
    l->c = (t0 - l->a) / n0;
  }
  double a = l->a, c = l->c;
  double rss = s->tt - 2 * a * s->t - 2 * c * s->nt + a * a * s->w + 2 * a * c * s->n + c * c * s->nn;
  if (rss > MGPU_FIT_SCATTER * MGPU_FIT_SCATTER * s->tt) {
    l->a = 0;
    l->c = l->secs / l->items;
  }
}

/* One call of n items in t seconds into the sums (decayed by the caller);
 * returns its time as the mean rate sums it. A call weighs 1 / t^2 (relative
 * error), t its predicted time once there is one, so its own noise does not
 * set its weight; a call far off the line counts at most MGPU_FIT_CLIP
 * times off, so one cache hit or OS stall moves the fit a bounded amount. */
static double line_add(mgpu__fit_t *f, double n, double t) {
  double tw = t, tp = t; /* the time as weighed, and as summed for the mean rate */
  if (f->line.samples >= MGPU_FIT_CLIP_AFTER) {
    double pred = mgpu__fit_time(f, n);
    t = MGPU_MAX(t, pred / MGPU_FIT_CLIP);
    tw = MGPU_MAX(t, pred);
    tp = MGPU_MIN(t, pred * MGPU_FIT_CLIP);
  }
  double w = 1.0 / (tw * tw);
  f->line.sum.w += w;
  f->line.sum.n += w * n;
  f->line.sum.nn += w * n * n;
  f->line.sum.t += w * t;
  f->line.sum.nt += w * n * t;
  f->line.sum.tt += w * t * t;
  return tp;
}

/* The line starts over. The size classes stay: a cost that fell shows as a
 * rate that rises past them, and the chunks grow again. */
static void restart_line(mgpu__fit_t *f) {
  f->line = (mgpu__fit_line_t){0};
  f->shift.run = 0;
  f->shift.took = f->shift.pred = f->shift.judged = 0;
}

/* ------------------------------------------------ the knee: size classes */

/* A sample as the size classes see it. */
typedef struct {
  mgpu__size_class_t c; /* the class it makes: its largest launch, its rates, whether solo */
  double items;         /* its items */
  bool by_dev;          /* a solo sample the line does not learn: held to the classes' dev_rate */
} class_sample_t;

/* A class's rate that a sample is held to. */
static double held_to(const mgpu__size_class_t *k, bool by_dev) { return by_dev ? k->dev_rate : k->span_rate; }

/* Whether the rate still rises from the class below to the top one, by more
 * than `rise`. A rise from a class of overlapped chunks measures the knee; a
 * solo launch too small to fill the device is slower than the same launches
 * overlapped, so a rise from solo chunks does not. */
static void judge_rise(mgpu__fit_t *f, double rise, bool by_dev) {
  mgpu__fit_knee_t *k = &f->knee;
  k->rising = k->below.n == 0 || k->top.span_rate > rise * held_to(&k->below, by_dev);
  if (k->rising) k->stopped_at = SIZE_MAX;
  else if (k->stopped_at == SIZE_MAX) k->stopped_at = f->claims.largest;
  if (k->rising && k->below.n > 0 && !k->below.solo) k->measured = true;
}

/* A sample past the top class becomes the top. Past the growth's end, one no
 * faster than the classes below only replaces the top: the knee is the
 * smallest size at full rate, and a claim cut by its range must not lift it.
 * A claim made while the chunks grew reopens the growth only at
 * MGPU_FIT_REOPEN, above what overlap with the chunk before it can fake. */
static void larger_class(mgpu__fit_t *f, const class_sample_t *s) {
  mgpu__fit_knee_t *k = &f->knee;
  bool known = mgpu__fit_known(f);
  double rise = known && s->c.n <= (double)k->stopped_at ? MGPU_FIT_REOPEN : MGPU_FIT_RISE;
  if (known && s->c.span_rate <= rise * MGPU_MAX(held_to(&k->below, s->by_dev), held_to(&k->top, s->by_dev))) {
    k->top = s->c;
    return;
  }
  k->below = k->top;
  k->top = s->c;
  judge_rise(f, rise, s->by_dev);
}

/* A sample of the top class moves its rates towards its own. */
static void same_class(mgpu__fit_t *f, const class_sample_t *s) {
  mgpu__size_class_t *top = &f->knee.top;
  top->span_rate = (1 - MGPU_FIT_CLASS_BLEND) * top->span_rate + MGPU_FIT_CLASS_BLEND * s->c.span_rate;
  top->dev_rate = (1 - MGPU_FIT_CLASS_BLEND) * top->dev_rate + MGPU_FIT_CLASS_BLEND * s->c.dev_rate;
  top->solo = top->solo && s->c.solo;
  judge_rise(f, MGPU_FIT_RISE, s->by_dev);
}

/* The step-below trial: where no size under the knee has run slower, its
 * overlapped chunks a step below are summed by device time (their spans
 * overlap), skipping the first ones, which partly hid behind a larger chunk.
 * At MGPU_FIT_TRIAL_KEEP of the knee's rate they become the knee, and the
 * step below them is tried next; slower, the knee is measured. */
static void step_below(mgpu__fit_t *f, const class_sample_t *s) {
  mgpu__fit_knee_t *k = &f->knee;
  mgpu__fit_step_trial_t *tr = &f->trials.step;
  double n = s->c.n;
  bool one_step = n * MGPU_FIT_SIZE_CLASS < k->below.n && n * MGPU_FIT_GROWTH * MGPU_FIT_SIZE_CLASS >= k->below.n;
  if (s->c.solo || !mgpu__fit_known(f) || k->measured || !one_step) return;
  if (tr->knee != k->below.n) {
    tr->knee = k->below.n;
    tr->chunks = 0;
    tr->items = tr->secs = 0;
  }
  if (++tr->chunks > MGPU_FIT_TRIAL_SKIP) {
    tr->items += s->items;
    tr->secs += s->items / s->c.dev_rate;
  }
  if (tr->chunks < MGPU_FIT_TRIAL_SKIP + MGPU_FIT_TRIAL_CHUNKS) return;
  double rate = tr->items / tr->secs;
  if (rate >= MGPU_FIT_TRIAL_KEEP * k->below.span_rate) {
    k->below.n = n;
    k->below.span_rate = s->c.span_rate;
    k->below.dev_rate = rate;
  } else {
    k->measured = true;
  }
  tr->knee = 0;
}

/* A sample counts in the class of its largest launch: past the top class,
 * within it, or under it (the step-below trial). */
static void size_class(mgpu__fit_t *f, const class_sample_t *s) {
  double top = f->knee.top.n;
  if (s->c.n > MGPU_FIT_SIZE_CLASS * top) larger_class(f, s);
  else if (s->c.n * MGPU_FIT_SIZE_CLASS >= top) same_class(f, s);
  else step_below(f, s);
}

/* Whether single chunks judge the size: not in a batch trial nor over a kept
 * floor, whose chunks are larger than the fit asks and only whole batches
 * judge. */
static bool classes(const mgpu__fit_t *f) {
  return (f->batch.trial == MGPU_TRIAL_NONE || f->batch.trial == MGPU_TRIAL_UNJUDGED) && f->floor == 0;
}

/* -------------------------------------------------------------- samples */

/* Learn a sample whose launch and span are set: into the line (a CPU
 * chunk's each call), the mean rate and the size classes. */
static void add(mgpu__fit_t *f, const mgpu__sample_t *s) {
  double n = s->items, t = s->secs;
  if (!(n > 0) || !(t > 0)) return;
  double k = MGPU_MODEL_DECAY, tp = 0;
  mgpu__fit_sums_t *sum = &f->line.sum;
  sum->w *= k, sum->n *= k, sum->nn *= k, sum->t *= k, sum->nt *= k, sum->tt *= k;
  if (s->ncalls > 0) {
    for (int i = 0; i < s->ncalls; i++)
      if (s->calls[i].items > 0 && s->calls[i].secs > 0) tp += line_add(f, s->calls[i].items, s->calls[i].secs);
  } else {
    tp = line_add(f, n, t);
  }
  if (!(tp > 0)) tp = t;
  f->line.items = f->line.items * k + n;
  f->line.secs = f->line.secs * k + tp;
  f->line.samples++;
  if (classes(f))
    size_class(f, &(class_sample_t){.c = {.n = s->launch, .span_rate = n / MGPU_MAX(s->span, t), .dev_rate = n / t,
                                          .solo = s->solo},
                                    .items = n});
  solve(f);
}

void mgpu__fit_add(mgpu__fit_t *f, double n, double t) {
  add(f, &(mgpu__sample_t){.items = n, .launch = n, .secs = t, .span = t});
}

void mgpu__fit_sample(mgpu__fit_t *f, const mgpu__sample_t *s) {
  mgpu__sample_t a = *s;
  double n = a.items, t = a.secs;
  a.span = a.span > 0 ? a.span : t;
  a.launch = a.launch > 0 ? MGPU_MIN(a.launch, n) : n;
  if (!(n > 0) || !(t > 0)) return;
  if (f->seeded) {
    /* The prior's first test: a line far off this worker's own chunk is
     * another kernel's or another machine's, and learning starts over. */
    f->seeded = false;
    double pred = mgpu__fit_time(f, n);
    if (t > MGPU_FIT_SHIFT * pred || t * MGPU_FIT_SHIFT < pred) *f = (mgpu__fit_t){0};
  }
  f->overlapped = f->overlapped * MGPU_MODEL_DECAY + (a.solo ? 0 : 1);
  /* A solo sample holds the pipeline's fill, which overlapped chunks hide:
   * the line learns it only where the worker's chunks run solo, or where it
   * is empty (else the prior would rate the worker for good). */
  if (a.solo && f->overlapped >= MGPU_FIT_OVERLAPPED_MIN && f->line.samples > 0) {
    /* It still judges the growth past the top class: a claim of a whole
     * range runs solo, and no faster than the smaller chunks overlapped, it
     * ends the growth. */
    if (!mgpu__fit_known(f) && a.launch > MGPU_FIT_SIZE_CLASS * f->knee.top.n && classes(f))
      size_class(f, &(class_sample_t){.c = {.n = a.launch, .span_rate = n / t, .dev_rate = n / t, .solo = true},
                                      .items = n, .by_dev = true});
    return;
  }
  add(f, &a);
}

double mgpu__fit_time(const mgpu__fit_t *f, double n) { return f->line.a + f->line.c * n; }

double mgpu__fit_rate(const mgpu__fit_t *f, double n) {
  double t = mgpu__fit_time(f, n);
  return t > 0 ? n / t : 0;
}

double mgpu__fit_sat(const mgpu__fit_t *f) {
  if (!(f->line.c > 0)) return 0;
  return MGPU_SAT_SHARE / (1 - MGPU_SAT_SHARE) * f->line.a / f->line.c;
}

bool mgpu__fit_beside(double held_items, double held_s, double items, double busy, double span) {
  /* Far faster than the held chunks, or faster than a pipeline explains and
   * mostly in their time: a chunk queued behind them is credited its own
   * whole run, a larger one at least their time, a smaller one no more than
   * their rate. */
  double lhs = busy * held_items, rhs = items * held_s;
  if (lhs * MGPU_FIT_BESIDE < rhs) return true;
  double own = 1 - MGPU_FIT_BESIDE_SHARE;
  return lhs * MGPU_FIT_BESIDE_SPAN < rhs && busy < own * span && busy < own * held_s;
}

bool mgpu__fit_known(const mgpu__fit_t *f) { return f->knee.below.n > 0 && !f->knee.rising; }

/* --------------------------------------------------------------- chunks */

/* A CPU worker's chunk: target_s of work at its mean rate, never under the
 * line's saturating size, so that a cost per call (a plan, a table) does not
 * shrink the chunks to one item each; that size lifts a chunk at most two
 * growth steps past the largest class, so timing noise cannot make one chunk
 * hold a dear stretch out of every other worker's reach. */
static double cpu_chunk(const mgpu__fit_t *f, double target_s) {
  double sat = MGPU_MIN(mgpu__fit_sat(f), MGPU_FIT_GROWTH * MGPU_FIT_GROWTH * f->knee.top.n);
  double n = MGPU_MAX(target_s * f->line.items / f->line.secs, sat);
  /* A line of one size cannot tell a cost per call from a cost per item. */
  if (n < MGPU_FIT_GROWTH && !spread(f) && f->line.samples % MGPU_FIT_CPU_TRY == MGPU_FIT_CPU_TRY - 1)
    n = MGPU_FIT_GROWTH;
  return n;
}

/* What the two largest size classes' times prove: their difference bounds
 * an item's cost (never below the timing noise), so a chunk may grow by
 * MGPU_PROBE_BUDGET times the smaller one's time (or target_s, if more) of
 * such items. A time that did not grow with the size proves a far larger
 * chunk costs about the same. */
static double proven_size(const mgpu__fit_t *f, double target_s) {
  const mgpu__size_class_t *lo = &f->knee.below, *hi = &f->knee.top;
  if (!(lo->n > 0) || !(hi->n > lo->n) || !(lo->span_rate > 0) || !(hi->span_rate > 0)) return 0;
  double t0 = lo->n / lo->span_rate, t1 = hi->n / hi->span_rate;
  double cost = MGPU_MAX(t1 - t0, MGPU_PROBE_NOISE * t1) / (hi->n - lo->n);
  return MGPU_MIN(hi->n + MGPU_MAX(target_s, MGPU_PROBE_BUDGET * t0) / cost, MGPU_PROBE_JUMP * hi->n);
}

/* A growing GPU's chunk: a step larger than the largest claim, at most two
 * steps past the largest chunk completed, or what the classes' times prove. */
static double growing_chunk(const mgpu__fit_t *f, double target_s) {
  double done = f->line.samples ? f->knee.top.n : (double)f->claims.probe;
  double step = MGPU_MIN(MGPU_FIT_GROWTH * (double)f->claims.largest, MGPU_FIT_GROWTH * MGPU_FIT_GROWTH * done);
  return MGPU_MAX(step, proven_size(f, target_s));
}

/* A saturated GPU's chunk (or one at its cap): target_s of work, never under
 * the knee, or a step under an unmeasured knee (the step-below trial). The
 * line's own saturating size does not count: overlapped chunks' device times
 * scatter, and a line through them can show a latency no measured rate does. */
static double saturated_chunk(const mgpu__fit_t *f, double target_s, size_t max_items) {
  const mgpu__fit_knee_t *k = &f->knee;
  double n = MGPU_MAX(target_s / f->line.c, k->measured ? k->below.n : k->below.n / MGPU_FIT_GROWTH);
  /* At the cap with the rate still rising, a smaller size leaves more chunks
   * to overlap, where the line predicts it as fast. */
  if (!mgpu__fit_known(f) && n < (double)max_items &&
      mgpu__fit_rate(f, n) < MGPU_FIT_CAP_LOSS * mgpu__fit_rate(f, (double)max_items))
    n = (double)max_items;
  /* The floor the batch trials kept, or this batch's trial. */
  if (f->batch.trial == MGPU_TRIAL_UP)
    return f->batch.claims ? MGPU_MAX(n, (double)f->batch.first) : MGPU_FIT_GROWTH * MGPU_MAX(n, f->floor);
  return MGPU_MAX(n, f->batch.trial == MGPU_TRIAL_DOWN ? f->floor / MGPU_FIT_GROWTH : f->floor);
}

size_t mgpu__fit_chunk(const mgpu__fit_t *f, double prior_rate, double target_s, size_t max_items, bool grows) {
  double n;
  if (f->claims.largest == 0 || (!grows && f->line.samples == 0)) n = prior_rate * target_s; /* the probe */
  else if (!grows) n = cpu_chunk(f, target_s);
  else if (!mgpu__fit_known(f) && f->knee.top.n < (double)max_items) n = growing_chunk(f, target_s);
  else n = saturated_chunk(f, target_s, max_items);
  if (!(n >= 1)) n = 1;
  if (n > (double)max_items) n = (double)max_items;
  return (size_t)n;
}

void mgpu__fit_claimed(mgpu__fit_t *f, size_t n) {
  if (f->claims.largest == 0) f->claims.probe = n;
  if (n > f->claims.largest) f->claims.largest = n;
  if (f->batch.claims++ == 0) f->batch.first = n;
}

/* ------------------------------------------------ the batch trials, shift */

/* Whether the line predicts chunks a growth step larger than n at over
 * MGPU_FIT_RISE times the rate: a knee measured under queued spans can lie
 * below that, and a batch trial then judges the larger size. */
static bool line_rises(const mgpu__fit_t *f, double n) {
  return n >= 1 && f->line.samples >= MGPU_FIT_CLIP_AFTER &&
         mgpu__fit_rate(f, MGPU_FIT_GROWTH * n) > MGPU_FIT_RISE * mgpu__fit_rate(f, n);
}

/* The batch summed has ended: a plain one's rate is kept; a trial is held to
 * the best of the last plain batches. A trial kept moves the floor and
 * the next goes the same way; one not kept makes the next go the other way,
 * after a gap that doubles while none is kept. */
static mgpu__trial_t judge_batch(mgpu__fit_t *f, double *rate, double *base) {
  mgpu__fit_batch_trials_t *bt = &f->trials.batch;
  if (!f->batch.tag || f->batch.trial == MGPU_TRIAL_UNJUDGED || !(f->batch.secs > 0)) return MGPU_TRIAL_NONE;
  double r = f->batch.items / f->batch.secs;
  if (f->batch.trial == MGPU_TRIAL_NONE) {
    bt->plain_rate[bt->plain_runs++ % MGPU_FIT_BATCH_BASE] = r;
    bt->last_claims = f->batch.claims;
    bt->last_first = f->batch.first;
    bt->last_spread = f->batch.rate_lo > 0 ? f->batch.rate_hi / f->batch.rate_lo : 0;
    return MGPU_TRIAL_NONE;
  }
  *rate = r;
  *base = bt->plain_rate[0];
  for (int i = 1; i < MGPU_MIN(bt->plain_runs, MGPU_FIT_BATCH_BASE); i++) *base = MGPU_MAX(*base, bt->plain_rate[i]);
  bool up = f->batch.trial == MGPU_TRIAL_UP;
  bool kept = up ? r > MGPU_FIT_RISE * *base : r >= MGPU_FIT_TRIAL_KEEP * *base;
  if (kept) {
    /* Down, a floor under the chunks the fit asks for is no floor. */
    double lower = f->floor / MGPU_FIT_GROWTH;
    f->floor = up ? (double)f->batch.first : (lower < (double)f->batch.first ? 0 : lower);
    bt->plain_runs = 0;
    bt->gap = 0;
    bt->next_at = 0;
  } else {
    bt->gap = bt->gap ? MGPU_MIN(MGPU_FIT_BATCH_GAP_GROWTH * bt->gap, (uint64_t)MGPU_FIT_BATCH_GAP_MAX)
                      : MGPU_FIT_BATCH_GAP;
    bt->next_at = bt->seen + bt->gap;
  }
  bt->down_next = up != kept;
  return f->batch.trial;
}

/* Which way a batch's chunks ran far off the line's prediction for them. */
typedef enum { SHIFT_UNDER = -1, SHIFT_NONE = 0, SHIFT_OVER = 1 } shift_way_t;

static shift_way_t off_way(double took, double pred) {
  if (!(pred > 0) || !(took > 0)) return SHIFT_NONE;
  return took > MGPU_FIT_SHIFT * pred ? SHIFT_OVER : took * MGPU_FIT_SHIFT < pred ? SHIFT_UNDER : SHIFT_NONE;
}

/* The batch summed has ended: it extends or breaks the run of batches off
 * the line the same way, where enough of its items were judged. */
static void end_shift_batch(mgpu__fit_t *f) {
  mgpu__fit_shift_t *sh = &f->shift;
  shift_way_t way = sh->judged >= MGPU_FIT_SHIFT_JUDGED * f->batch.items ? off_way(sh->took, sh->pred) : SHIFT_NONE;
  sh->run = way == SHIFT_NONE ? 0 : (sh->run * (int)way > 0 ? sh->run : 0) + (int)way;
  sh->last_judged = way != SHIFT_NONE ? sh->judged : 0;
  sh->took = sh->pred = sh->judged = 0;
}

/* The trial a new batch runs: none until the fit is known and enough plain
 * batches are timed; up where single chunks cannot judge the size (rates
 * that spread within a batch, or a line still rising); down where there is
 * a floor and the last trial was kept down or not kept up. */
static mgpu__trial_t next_trial(const mgpu__fit_t *f) {
  const mgpu__fit_batch_trials_t *bt = &f->trials.batch;
  if (!mgpu__fit_known(f)) return MGPU_TRIAL_UNJUDGED;
  if (bt->plain_runs < MGPU_FIT_BATCH_PLAIN || bt->seen < bt->next_at) return MGPU_TRIAL_NONE;
  bool can_up = bt->last_claims >= MGPU_FIT_BATCH_CHUNKS &&
                (bt->last_spread >= MGPU_FIT_BATCH_SPREAD || line_rises(f, (double)bt->last_first));
  if (f->floor > 0 && (bt->down_next || !can_up)) return MGPU_TRIAL_DOWN;
  return can_up ? MGPU_TRIAL_UP : MGPU_TRIAL_NONE;
}

mgpu__trial_t mgpu__fit_batch(mgpu__fit_t *f, uint64_t tag, size_t n, double *rate, double *base) {
  if (tag == f->batch.tag) return MGPU_TRIAL_NONE;
  mgpu__trial_t judged = judge_batch(f, rate, base);
  end_shift_batch(f);
  f->batch = (mgpu__fit_batch_sums_t){.tag = tag};
  mgpu__fit_batch_trials_t *bt = &f->trials.batch;
  bt->seen++;
  /* Batches of another size do not compare: the trials start over. */
  if (n > MGPU_FIT_BATCH_SIZES * bt->batch_n || MGPU_FIT_BATCH_SIZES * n < bt->batch_n) {
    bt->batch_n = n;
    bt->plain_runs = 0;
    bt->gap = 0;
    bt->next_at = 0;
  }
  f->batch.trial = next_trial(f);
  return judged;
}

void mgpu__fit_batch_time(mgpu__fit_t *f, uint64_t tag, double n, double t) {
  if (tag == 0 || tag != f->batch.tag || !(n > 0) || !(t > 0)) return;
  f->batch.items += n;
  f->batch.secs += t;
  /* The kernel's cost changed for good where MGPU_FIT_SHIFT_RUN batches in a
   * row run off the line the same way; whole batches judge, since items that
   * differ in cost by position take single chunks off both ways. This one
   * counts once it has judged a share of the items of the one before. Chunks past
   * the classes learnt are not judged: the line only extrapolates there. */
  mgpu__fit_shift_t *sh = &f->shift;
  if (f->line.samples >= MGPU_FIT_CLIP_AFTER && n <= MGPU_FIT_SIZE_CLASS * f->knee.top.n) {
    sh->pred += mgpu__fit_time(f, n);
    sh->took += t;
    sh->judged += n;
    shift_way_t way = off_way(sh->took, sh->pred);
    if (way != SHIFT_NONE && sh->run * (int)way >= MGPU_FIT_SHIFT_RUN - 1 &&
        sh->judged >= MGPU_FIT_SHIFT_JUDGED * sh->last_judged)
      restart_line(f);
  }
  /* The spread of rates is of chunks of about the batch's size: a piece cut
   * by a range's end runs at its latency's rate whatever its items. */
  if (n < MGPU_FIT_SPREAD_MIN_SHARE * (double)f->batch.first) return;
  double r = n / t;
  if (f->batch.rate_lo == 0 || r < f->batch.rate_lo) f->batch.rate_lo = r;
  if (r > f->batch.rate_hi) f->batch.rate_hi = r;
}

double mgpu__fit_knee(const mgpu__fit_t *f) {
  const mgpu__fit_knee_t *k = &f->knee;
  double knee = k->below.n > 0 ? (k->measured ? k->below.n : k->below.n / MGPU_FIT_GROWTH) : 0;
  return MGPU_MAX(knee, f->floor);
}

void mgpu__fit_seed(mgpu__fit_t *f, double latency, double cost, double knee) {
  *f = (mgpu__fit_t){0};
  if (!(latency >= 0) || !(cost > 0)) return;
  /* Two chunks on the line, at the knee and a step below it, weigh as two
   * of the worker's own: after a few of its chunks the prior has decayed. */
  double hi = MGPU_MAX(knee, MGPU_FIT_GROWTH), lo = hi / MGPU_FIT_GROWTH;
  double tlo = latency + cost * lo, thi = latency + cost * hi;
  line_add(f, lo, tlo);
  line_add(f, hi, thi);
  f->line.items = lo + hi;
  f->line.secs = tlo + thi;
  f->line.samples = 2;
  f->line.a = latency;
  f->line.c = cost;
  /* The knee as measured: the rate stopped rising past it. */
  f->knee.below = (mgpu__size_class_t){.n = hi, .span_rate = hi / thi, .dev_rate = hi / thi};
  double top = MGPU_FIT_GROWTH * hi;
  f->knee.top = (mgpu__size_class_t){.n = top, .span_rate = mgpu__fit_rate(f, top), .dev_rate = mgpu__fit_rate(f, top)};
  f->knee.measured = true;
  f->knee.rising = false;
  f->knee.stopped_at = (size_t)hi;
  f->claims.probe = f->claims.largest = (size_t)hi;
  f->seeded = true;
}
