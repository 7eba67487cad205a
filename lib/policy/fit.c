/*
 * fit.c: the chunk-time model of one worker on one kernel, as pure numbers.
 * A chunk of n items takes t(n) = a + c n seconds: a latency a (a launch,
 * its copies' set-up, a divergent item that holds the whole launch) and c
 * seconds per item, so its rate n / t(n) rises with n towards 1 / c. The
 * fit is a least-squares line through the timings of real chunks, each
 * weighted by its relative error (so that small chunks tell the latency and
 * large ones the rate) and decayed so that old chunks fade when the kernel's
 * cost changes. Where chunk times scatter about any line (items that differ
 * in cost by position, streams whose chunks overlap) the fit is the mean
 * rate alone. From the fit follow the size of the next chunk (never under
 * the knee measured by size classes: the size from which the rate stops
 * rising) and the rate at that size, by which other workers judge this one;
 * its saturating size (where latency is a tenth of a chunk's time) is shown
 * in debug logs (doc/tuning.md, "Completion times").
 */
#include "policy/policy.h"

#include <math.h>

/* Whether the sizes in the sums spread enough for a line to tell a from c:
 * their weighted variance at least MGPU_FIT_SPREAD of the mean square. */
static bool spread(const mgpu__fit_t *f) {
  return f->line.sum.w * f->line.sum.nn - f->line.sum.n * f->line.sum.n > MGPU_FIT_SPREAD * f->line.sum.w * f->line.sum.nn;
}

/* Refit a and c from the sums. Where the chunks in the sums are all of about
 * one size, one line through them cannot tell a from c: the time is given
 * to whichever term dominates at that size, and the other is kept. */
static void solve(mgpu__fit_t *f) {
  double d = f->line.sum.w * f->line.sum.nn - f->line.sum.n * f->line.sum.n;
  double n0 = f->line.sum.n / f->line.sum.w, t0 = f->line.sum.t / f->line.sum.w;
  /* The weighted least-squares line, where the sizes spread enough. */
  if (spread(f)) {
    double a = (f->line.sum.nn * f->line.sum.t - f->line.sum.n * f->line.sum.nt) / d, c = (f->line.sum.w * f->line.sum.nt - f->line.sum.n * f->line.sum.t) / d;
    if (a < 0) {
      a = 0;
      c = f->line.sum.nt / f->line.sum.nn;
    }
    /* Time that does not grow with the size over the sizes seen: the rate
     * rises at least a hundredfold past the largest. */
    double c_min = t0 / (f->knee.top.n * MGPU_FIT_FLAT);
    if (c < c_min) c = c_min;
    f->line.a = a;
    f->line.c = c;
  } else if (f->line.c > 0 && f->line.a > f->line.c * n0) {
    f->line.a = MGPU_MAX(0.0, t0 - f->line.c * n0);
  } else {
    f->line.a = MGPU_MIN(f->line.a, MGPU_FIT_LATENCY_MAX_SHARE * t0);
    f->line.c = (t0 - f->line.a) / n0;
  }
  /* The weighted squared residuals about the line, against those about 0. */
  double a = f->line.a, c = f->line.c;
  double rss = f->line.sum.tt - 2 * a * f->line.sum.t - 2 * c * f->line.sum.nt + a * a * f->line.sum.w + 2 * a * c * f->line.sum.n + c * c * f->line.sum.nn;
  if (rss > MGPU_FIT_SCATTER * MGPU_FIT_SCATTER * f->line.sum.tt) {
    f->line.a = 0;
    f->line.c = f->line.secs / f->line.items;
  }
}

/* The rate at the largest size seen against the size class below it: a
 * rate still rising with the size keeps the chunks growing. A sample of
 * `items` counts in the class of its largest launch, n (mgpu__fit_sample).
 * The rates are each sample's own, r = items / its span (from its own start
 * to its end): the device time it is credited with hides the part it ran
 * beside the chunk before it, and a chunk that grew out of a smaller one
 * would look faster by that part alone. A chunk claimed while they grew
 * that ends after they stopped opens the growth again only at
 * MGPU_FIT_REOPEN times the rate below it. `alone`: a chunk alone past the
 * largest size class, judged against the class below's rate among others
 * (q, items / its device time),
 * since the question there is whether one chunk beats smaller ones
 * overlapped. `lone`: the chunk ran with nothing else in flight. A rise from
 * a class of lone chunks does not measure the knee: a lone launch too small
 * to fill the device is slower than the same chunks in flight together. */
static void size_class(mgpu__fit_t *f, double n, double items, double r, double q, bool alone, bool solo) {
  double rise = MGPU_FIT_RISE;
  if (n > MGPU_FIT_SIZE_CLASS * f->knee.top.n) {
    bool known = mgpu__fit_known(f);
    if (known && n <= (double)f->knee.stopped_at) rise = MGPU_FIT_REOPEN;
    /* Past the growth's end, a larger class no faster than the classes
     * below leaves the smaller one the knee: the floor is the smallest size
     * at full rate, and a claim cut by its range, larger than the chunks
     * after it, would otherwise lift it a class. */
    if (known && r <= rise * (alone ? MGPU_MAX(f->knee.below.dev_rate, f->knee.top.dev_rate) : MGPU_MAX(f->knee.below.span_rate, f->knee.top.span_rate))) {
      f->knee.top.n = n;
      f->knee.top.span_rate = r;
      f->knee.top.dev_rate = q;
      f->knee.top.solo = solo;
      return;
    }
    f->knee.below.n = f->knee.top.n;
    f->knee.below.span_rate = f->knee.top.span_rate;
    f->knee.below.dev_rate = f->knee.top.dev_rate;
    f->knee.below.solo = f->knee.top.solo;
    f->knee.top.n = n;
    f->knee.top.span_rate = r;
    f->knee.top.dev_rate = q;
    f->knee.top.solo = solo;
  } else if (n * MGPU_FIT_SIZE_CLASS >= f->knee.top.n) {
    f->knee.top.span_rate = 0.5 * (f->knee.top.span_rate + r);
    f->knee.top.dev_rate = 0.5 * (f->knee.top.dev_rate + q);
    f->knee.top.solo = f->knee.top.solo && solo;
  } else {
    /* Chunks among others a step below the smallest class, where no size
     * below it has run slower (the first chunk was past the knee, or the
     * sizes below ran alone): at least MGPU_FIT_TRIAL_KEEP of the knee's
     * rate, they become that class, and the step below is tried next;
     * slower, the class above is the knee. They are judged by their
     * throughput together, items over device time summed from the end of
     * the chunk before each, since their own spans overlap one another; the
     * first ones, claimed while a larger chunk ran, are skipped, since part
     * of their time hid behind it. The knee's rate they are held to is by
     * spans, as its class was judged: a chunk that grew out of a smaller one
     * looks faster by device time by the part it ran beside it. */
    if (!solo && mgpu__fit_known(f) && !f->knee.measured && n * MGPU_FIT_SIZE_CLASS < f->knee.below.n &&
        n * MGPU_FIT_GROWTH * MGPU_FIT_SIZE_CLASS >= f->knee.below.n) {
      if (f->trials.step.knee != f->knee.below.n) {
        f->trials.step.knee = f->knee.below.n;
        f->trials.step.chunks = 0;
        f->trials.step.items = f->trials.step.secs = 0;
      }
      if (++f->trials.step.chunks > MGPU_FIT_TRIAL_SKIP) {
        f->trials.step.items += items;
        f->trials.step.secs += items / q;
      }
      if (f->trials.step.chunks >= MGPU_FIT_TRIAL_SKIP + MGPU_FIT_TRIAL_CHUNKS) {
        double rate = f->trials.step.items / f->trials.step.secs;
        if (rate >= MGPU_FIT_TRIAL_KEEP * f->knee.below.span_rate) {
          f->knee.below.n = n;
          f->knee.below.span_rate = r;
          f->knee.below.dev_rate = rate;
        } else {
          f->knee.measured = true;
        }
        f->trials.step.knee = 0;
      }
    }
    return;
  }
  f->knee.rising = f->knee.below.n == 0 || f->knee.top.span_rate > rise * (alone ? f->knee.below.dev_rate : f->knee.below.span_rate);
  if (f->knee.rising) f->knee.stopped_at = SIZE_MAX;
  else if (f->knee.stopped_at == SIZE_MAX) f->knee.stopped_at = f->claims.largest;
  if (f->knee.rising && f->knee.below.n > 0 && !f->knee.below.solo) f->knee.measured = true;
}

/* Whether single chunks still judge the size: not within a floor trial nor
 * under a floor one kept, whose chunks are larger than the fit asks for and
 * whose sizes only whole batches judge. */
static bool classes(const mgpu__fit_t *f) {
  return (f->batch.trial == MGPU_TRIAL_NONE || f->batch.trial == MGPU_TRIAL_UNJUDGED) && f->floor == 0;
}

/* One call of n items that took t seconds into the line's sums (decayed
 * by the caller); returns its time as the mean rate sums it. Relative error:
 * a call weighs by 1 / t^2, with t its predicted time once there is a
 * prediction, so that its own noise does not set its weight; one far faster
 * than the line (a result found in a warm cache) counts at most
 * MGPU_FIT_CLIP times faster, and a slow one (held up by the OS) weighs no
 * more than one on time and adds at most MGPU_FIT_CLIP times its prediction
 * to the mean. */
static double line_add(mgpu__fit_t *f, double n, double t) {
  double tw = t, tp = t; /* the time as weighed, and as summed for the mean rate (clipped both ways) */
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

/* Learn a sample of n items, launches of at most `launch`, that took t
 * seconds of the worker, `span` from its first chunk's own start; a CPU
 * chunk's line learns each of its calls. */
static void add(mgpu__fit_t *f, double n, double launch, double t, double span, bool solo, const mgpu__call_t *calls,
                int ncalls) {
  if (!(n > 0) || !(t > 0)) return;
  double k = MGPU_MODEL_DECAY, tp = 0;
  f->line.sum.w *= k, f->line.sum.n *= k, f->line.sum.nn *= k, f->line.sum.t *= k, f->line.sum.nt *= k, f->line.sum.tt *= k;
  if (ncalls > 0) {
    for (int i = 0; i < ncalls; i++)
      if (calls[i].items > 0 && calls[i].secs > 0) tp += line_add(f, calls[i].items, calls[i].secs);
  } else {
    tp = line_add(f, n, t);
  }
  if (!(tp > 0)) tp = t;
  f->line.items = f->line.items * k + n;
  f->line.secs = f->line.secs * k + tp;
  f->line.samples++;
  if (classes(f)) size_class(f, launch, n, n / MGPU_MAX(span, t), n / t, false, solo);
  solve(f);
}

void mgpu__fit_add(mgpu__fit_t *f, double n, double t) { add(f, n, n, t, t, false, NULL, 0); }

void mgpu__fit_sample(mgpu__fit_t *f, const mgpu__sample_t *s) {
  double n = s->items, t = s->secs, span = s->span > 0 ? s->span : t;
  double launch = s->launch > 0 ? MGPU_MIN(s->launch, n) : n;
  if (!(n > 0) || !(t > 0)) return;
  f->overlapped = f->overlapped * MGPU_MODEL_DECAY + (s->solo ? 0 : 1);
  /* An empty line (none yet, or one started over) learns any sample: it
   * predicts nothing, and the worker would be rated by the prior for good
   * where every chunk of its batches runs alone. */
  if (s->solo && f->overlapped >= MGPU_FIT_OVERLAPPED_MIN && f->line.samples > 0) {
    /* Not learnt into the line, but a chunk alone past the largest size
     * class still judges the growth: a claim that takes a whole batch's
     * range runs alone, and a size learnt only from chunks among others
     * would never be reached, so the chunks would grow for good, one a
     * batch with nothing to overlap its copies. Its rate, fill included,
     * against the smaller chunks' rate among others: no faster, and the
     * growth ends. */
    if (!mgpu__fit_known(f) && launch > MGPU_FIT_SIZE_CLASS * f->knee.top.n && classes(f))
      size_class(f, launch, n, n / t, n / t, true, true);
    return;
  }
  add(f, n, launch, t, span, s->solo, s->calls, s->ncalls);
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
  /* Far faster than the held chunks; or faster than a pipeline explains,
   * mostly in their time, and credited less than a share of theirs. A chunk
   * queued behind them waits while they run but is credited its own whole
   * run: a larger one at least their time, a smaller one no more than their
   * rate. */
  double lhs = busy * held_items, rhs = items * held_s;
  if (lhs * MGPU_FIT_BESIDE < rhs) return true;
  double own = 1 - MGPU_FIT_BESIDE_SHARE;
  return lhs * MGPU_FIT_BESIDE_SPAN < rhs && busy < own * span && busy < own * held_s;
}

bool mgpu__fit_known(const mgpu__fit_t *f) { return f->knee.below.n > 0 && !f->knee.rising; }

size_t mgpu__fit_chunk(const mgpu__fit_t *f, double prior_rate, double target_s, size_t max_items, bool grows) {
  double n;
  if (f->claims.largest == 0 || (!grows && f->line.samples == 0)) {
    /* The probe: the prior's guess of target_s of work. */
    n = prior_rate * target_s;
  } else if (!grows) {
    /* A CPU worker: target_s of work at its mean rate, and never under the
     * line's saturating size, where the kernel has a cost per call (a plan,
     * a table, an allocation) that the line tells from its items' cost: the
     * mean rate holds that cost, so chunks sized by it alone shrink until
     * each is that cost and one item. Items that differ in cost by position
     * scatter the times about any line, and solve() gives them no latency.
     * A line of one size only is given a second (MGPU_FIT_CPU_TRY). The
     * saturating size lifts a chunk at most two steps past the largest one
     * learnt from, as a GPU's chunks grow: the timing noise of a few small
     * chunks can show a cost per call that is not there, and a chunk of
     * thousands of items at the mean rate would run past a dear stretch in
     * one call, out of every other worker's reach. */
    double sat = MGPU_MIN(mgpu__fit_sat(f), MGPU_FIT_GROWTH * MGPU_FIT_GROWTH * f->knee.top.n);
    n = MGPU_MAX(target_s * f->line.items / f->line.secs, sat);
    if (n < MGPU_FIT_GROWTH && !spread(f) && f->line.samples % MGPU_FIT_CPU_TRY == MGPU_FIT_CPU_TRY - 1)
      n = MGPU_FIT_GROWTH;
  } else if (!mgpu__fit_known(f) && f->knee.top.n < (double)max_items) {
    /* Growing: each claim a step larger than the largest so far, at most two
     * steps past the largest chunk that has completed. Once a chunk of the
     * cap (memory, staging, MGPU_MAX_BATCH_SIZE) has completed, the chunks
     * cannot grow further, and the fit sizes them as below. */
    double done = f->line.samples ? f->knee.top.n : (double)f->claims.probe;
    n = MGPU_MIN(MGPU_FIT_GROWTH * (double)f->claims.largest, MGPU_FIT_GROWTH * MGPU_FIT_GROWTH * done);
  } else {
    /* Saturated (or at the cap): target_s of work, and never less than the
     * measured saturating size, the class from which the rate stopped rising
     * (or the class below the cap). Where no size below it ran slower, the
     * knee lies lower, and chunks a step below try it. The fit's own n_sat
     * does not count: the device times of overlapping chunks scatter, a line
     * through them can show a latency that no measured rate does, and an
     * n_sat past the batch made every batch one chunk alone, the pipeline's
     * fill unhidden (doc/tuning.md, "Completion times"). */
    n = MGPU_MAX(target_s / f->line.c, f->knee.measured ? f->knee.below.n : f->knee.below.n / MGPU_FIT_GROWTH);
    /* At the cap with the rate still rising: the smaller size only where the
     * fit predicts it as fast, since it leaves more chunks to overlap. */
    if (!mgpu__fit_known(f) && n < (double)max_items &&
        mgpu__fit_rate(f, n) < MGPU_FIT_CAP_LOSS * mgpu__fit_rate(f, (double)max_items))
      n = (double)max_items;
    /* The floor of whole batches (mgpu__fit_batch), or this batch's trial. */
    if (f->batch.trial == MGPU_TRIAL_UP) n = f->batch.claims ? MGPU_MAX(n, (double)f->batch.first) : MGPU_FIT_GROWTH * MGPU_MAX(n, f->floor);
    else n = MGPU_MAX(n, f->batch.trial == MGPU_TRIAL_DOWN ? f->floor / MGPU_FIT_GROWTH : f->floor);
  }
  if (!(n >= 1)) n = 1;
  if (n > (double)max_items) n = (double)max_items;
  return (size_t)n;
}

void mgpu__fit_claimed(mgpu__fit_t *f, size_t n) {
  if (f->claims.largest == 0) f->claims.probe = n;
  if (n > f->claims.largest) f->claims.largest = n;
  if (f->batch.claims++ == 0) f->batch.first = n;
}

/* Whether the line predicts chunks MGPU_FIT_GROWTH times larger than n at
 * over MGPU_FIT_RISE times the rate: a latency still over 12% of a
 * chunk's time. The measured knee can lie under that where chunks queued
 * behind others on the device, which lengthens their spans: a trial by whole
 * batches then judges the larger size. */
static bool line_rises(const mgpu__fit_t *f, double n) {
  return n >= 1 && f->line.samples >= MGPU_FIT_CLIP_AFTER &&
         mgpu__fit_rate(f, MGPU_FIT_GROWTH * n) > MGPU_FIT_RISE * mgpu__fit_rate(f, n);
}

/* The batch being summed has ended: a plain one's rate is kept; a trial is
 * kept or not against the faster of the last two plain batches (noise that
 * favours the floor as it stands). A trial kept is followed, after two plain
 * batches at its floor (a trial's own chunks may have run larger than its
 * first, which sets the floor), by the next step the same way; one not kept
 * by a step the other way, MGPU_FIT_BATCH_GAP batches on, doubling while
 * none is kept. */
static mgpu__trial_t judge_batch(mgpu__fit_t *f, double *rate, double *base) {
  if (!f->batch.tag || f->batch.trial == MGPU_TRIAL_UNJUDGED || !(f->batch.secs > 0)) return MGPU_TRIAL_NONE;
  double r = f->batch.items / f->batch.secs;
  if (f->batch.trial == MGPU_TRIAL_NONE) {
    f->trials.batch.plain_rate[f->trials.batch.plain_runs++ % 2] = r;
    f->trials.batch.last_claims = f->batch.claims;
    f->trials.batch.last_first = f->batch.first;
    f->trials.batch.last_spread = f->batch.rate_lo > 0 ? f->batch.rate_hi / f->batch.rate_lo : 0;
    return MGPU_TRIAL_NONE;
  }
  *rate = r;
  *base = f->trials.batch.plain_runs > 1 ? MGPU_MAX(f->trials.batch.plain_rate[0], f->trials.batch.plain_rate[1]) : f->trials.batch.plain_rate[0];
  bool up = f->batch.trial == MGPU_TRIAL_UP;
  bool kept = up ? r > MGPU_FIT_RISE * *base : r >= MGPU_FIT_TRIAL_KEEP * *base;
  if (kept) {
    /* Down, a floor under the chunks the fit asks for is no floor. */
    double lower = f->floor / MGPU_FIT_GROWTH;
    f->floor = up ? (double)f->batch.first : (lower < (double)f->batch.first ? 0 : lower);
    f->trials.batch.plain_runs = 0;
    f->trials.batch.gap = 0;
    f->trials.batch.next_at = 0;
  } else {
    f->trials.batch.gap = f->trials.batch.gap ? MGPU_MIN(2 * f->trials.batch.gap, (uint64_t)MGPU_FIT_BATCH_GAP_MAX) : MGPU_FIT_BATCH_GAP;
    f->trials.batch.next_at = f->trials.batch.seen + f->trials.batch.gap;
  }
  f->trials.batch.down_next = up != kept;
  return f->batch.trial;
}

/* Which way a batch's chunks took far off the line's prediction for them:
 * over MGPU_FIT_SHIFT times it (1), under (-1), or neither (0). */
static int off_way(double took, double pred) {
  if (!(pred > 0) || !(took > 0)) return 0;
  return took > MGPU_FIT_SHIFT * pred ? 1 : took * MGPU_FIT_SHIFT < pred ? -1 : 0;
}

/* The line starts over (the size classes stay: a cost that fell shows as a
 * rate that rises past them, and the chunks grow again). */
static void restart_line(mgpu__fit_t *f) {
  f->line.sum.w = f->line.sum.n = f->line.sum.nn = f->line.sum.t = f->line.sum.nt = f->line.sum.tt = f->line.items = f->line.secs = 0;
  f->line.a = f->line.c = 0;
  f->line.samples = 0;
  f->shift.run = 0;
  f->shift.took = f->shift.pred = f->shift.judged = 0;
}

mgpu__trial_t mgpu__fit_batch(mgpu__fit_t *f, uint64_t tag, size_t n, double *rate, double *base) {
  if (tag == f->batch.tag) return MGPU_TRIAL_NONE;
  mgpu__trial_t judged = judge_batch(f, rate, base);
  /* A batch counts where at least half of its items ran in chunks judged. */
  int way = 2 * f->shift.judged >= f->batch.items ? off_way(f->shift.took, f->shift.pred) : 0;
  f->shift.run = way == 0 ? 0 : (f->shift.run * way > 0 ? f->shift.run : 0) + way;
  f->shift.last_judged = way ? f->shift.judged : 0;
  f->shift.took = f->shift.pred = f->shift.judged = 0;
  f->batch.tag = tag;
  f->batch.items = f->batch.secs = 0;
  f->batch.rate_lo = f->batch.rate_hi = 0;
  f->batch.claims = f->batch.first = 0;
  f->trials.batch.seen++;
  /* Batches of another size do not compare: the trials start over. */
  if (n > 2 * f->trials.batch.batch_n || 2 * n < f->trials.batch.batch_n) {
    f->trials.batch.batch_n = n;
    f->trials.batch.plain_runs = 0;
    f->trials.batch.gap = 0;
    f->trials.batch.next_at = 0;
  }
  f->batch.trial = mgpu__fit_known(f) ? MGPU_TRIAL_NONE : MGPU_TRIAL_UNJUDGED;
  if (f->batch.trial != MGPU_TRIAL_NONE || f->trials.batch.plain_runs < MGPU_FIT_BATCH_PLAIN || f->trials.batch.seen < f->trials.batch.next_at) return judged;
  bool can_up = f->trials.batch.last_claims >= MGPU_FIT_BATCH_CHUNKS &&
                (f->trials.batch.last_spread >= MGPU_FIT_BATCH_SPREAD || line_rises(f, (double)f->trials.batch.last_first));
  if (f->floor > 0 && (f->trials.batch.down_next || !can_up)) f->batch.trial = MGPU_TRIAL_DOWN;
  else if (can_up) f->batch.trial = MGPU_TRIAL_UP;
  return judged;
}

void mgpu__fit_batch_time(mgpu__fit_t *f, uint64_t tag, double n, double t) {
  if (tag == 0 || tag != f->batch.tag || !(n > 0) || !(t > 0)) return;
  f->batch.items += n;
  f->batch.secs += t;
  /* A kernel whose cost changed for good (another argument, other data):
   * the batch before this one and this one so far each took MGPU_FIT_SHIFT
   * times off the line's prediction, the same way. Chunks are judged by
   * whole batches, since items that differ in cost by position take a
   * batch's chunks far off the line both ways; one batch is an OS stall or
   * a warm cache, which add()'s weighting holds to little, but it would take
   * tens of batches to learn a new cost, giving out shares by the old one
   * meanwhile. This batch is judged once it has run half as many items in
   * judged chunks as the one before: its first chunks alone may be the cheap
   * rows of an image (and thieves may have taken some of its items). Chunks
   * past the sizes learnt are not judged: the line only extrapolates to them,
   * and the growth judges them. */
  if (f->line.samples >= MGPU_FIT_CLIP_AFTER && n <= MGPU_FIT_SIZE_CLASS * f->knee.top.n) {
    f->shift.pred += mgpu__fit_time(f, n);
    f->shift.took += t;
    f->shift.judged += n;
    int way = off_way(f->shift.took, f->shift.pred);
    if (way != 0 && f->shift.run * way >= MGPU_FIT_SHIFT_RUN - 1 && 2 * f->shift.judged >= f->shift.last_judged)
      restart_line(f);
  }
  /* The spread of rates is of chunks of about the batch's size: a piece cut
   * by the end of a range runs at its latency's rate whatever its items. */
  if (n < 0.5 * (double)f->batch.first) return;
  double r = n / t;
  if (f->batch.rate_lo == 0 || r < f->batch.rate_lo) f->batch.rate_lo = r;
  if (r > f->batch.rate_hi) f->batch.rate_hi = r;
}
