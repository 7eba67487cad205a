/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model.c: the per-kernel model: every worker's chunk-time fit (fit.c) and
 * what each publishes of it to the others (its speed and latency, which the
 * first split of each batch and every steal use); the cost of items by
 * position; the trials of MGPU_RESERVE_THREADS=auto. No locks: callers hold them.
 */
#include "policy/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool mgpu__model_same_kernel(const mgpu_kernel_t *a, const mgpu_kernel_t *b) {
  if (a->cpu != b->cpu || a->gpu != b->gpu || a->nin != b->nin || a->nout != b->nout) return false;
  if (a->scratch_per_item != b->scratch_per_item) return false;
  for (int i = 0; i < a->nin; i++)
    if (a->in_size[i] != b->in_size[i]) return false;
  for (int i = 0; i < a->nout; i++)
    if (a->out_size[i] != b->out_size[i]) return false;
  if ((a->name == NULL) != (b->name == NULL)) return false;
  return a->name == NULL || strcmp(a->name, b->name) == 0;
}

mgpu__model_t *mgpu__model_new(const mgpu_kernel_t *k, uint64_t footprint, int nworkers) {
  mgpu__model_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->key = *k;
  m->footprint = footprint;
  m->nworkers = nworkers;
  size_t n = (size_t)nworkers;
  m->fit = calloc(n, sizeof *m->fit);
  m->speed = calloc(n, sizeof *m->speed);
  m->latency = calloc(n, sizeof *m->latency);
  m->peak = calloc(n, sizeof *m->peak);
  m->known = calloc(n, sizeof *m->known);
  m->reach = calloc(n, sizeof *m->reach);
  m->samples = calloc(n, sizeof *m->samples);
  m->slow = calloc(n, sizeof *m->slow);
  m->mean_items = calloc(n, sizeof *m->mean_items);
  m->mean_secs = calloc(n, sizeof *m->mean_secs);
  m->spent = calloc(n, sizeof *m->spent);
  m->knee = calloc(n, sizeof *m->knee);
  m->prof = calloc(MGPU_PROF_BINS, sizeof *m->prof);
  if (!m->fit || !m->speed || !m->latency || !m->peak || !m->known || !m->reach || !m->samples || !m->slow ||
      !m->mean_items || !m->mean_secs || !m->spent || !m->knee || !m->prof) {
    mgpu__model_free(m);
    return NULL;
  }
  return m;
}

void mgpu__model_free(mgpu__model_t *m) {
  if (!m) return;
  free(m->fit);
  free((void *)m->speed);
  free((void *)m->latency);
  free((void *)m->peak);
  free((void *)m->known);
  free((void *)m->reach);
  free((void *)m->samples);
  free((void *)m->slow);
  free((void *)m->mean_items);
  free((void *)m->mean_secs);
  free((void *)m->spent);
  free((void *)m->knee);
  free(m->prof);
  free(m);
}

/* The rate worker w publishes: its fit's at the size it claims (before its
 * range cuts the claim short), or at the largest size learnt. */
static void publish(mgpu__model_t *m, int w) {
  const mgpu__fit_t *f = &m->fit[w];
  double n = f->claims.planned ? (double)f->claims.planned : f->knee.top.n;
  atomic_store_explicit(&m->speed[w], mgpu__fit_rate(f, MGPU_MAX(n, 1.0)), memory_order_relaxed);
  atomic_store_explicit(&m->latency[w], f->line.a, memory_order_relaxed);
  atomic_store_explicit(&m->peak[w], f->line.c > 0 ? 1 / f->line.c : 0, memory_order_relaxed);
  bool known = mgpu__fit_known(f) || f->line.samples >= MGPU_FIT_TRUST_AFTER;
  atomic_store_explicit(&m->known[w], known, memory_order_relaxed);
  atomic_store_explicit(&m->reach[w], f->knee.top.n, memory_order_relaxed);
  atomic_store_explicit(&m->knee[w], mgpu__fit_knee(f), memory_order_relaxed);
  atomic_store_explicit(&m->mean_items[w], f->line.items, memory_order_relaxed);
  atomic_store_explicit(&m->mean_secs[w], f->line.secs, memory_order_relaxed);
}

void mgpu__model_update(mgpu__model_t *m, int w, const mgpu__sample_t *s) {
  double items = s->items, seconds = s->secs;
  if (!(seconds > 0) || !(items > 0)) return;
  mgpu__fit_t *f = &m->fit[w];
  mgpu__fit_batch_time(f, s->tag, items, seconds);
  mgpu__fit_sample(f, s);
  atomic_fetch_add_explicit(&m->samples[w], 1, memory_order_relaxed);
  atomic_store_explicit(&m->spent[w], atomic_load_explicit(&m->spent[w], memory_order_relaxed) + seconds,
                        memory_order_relaxed);
  publish(m, w);
  mgpu__log(MGPU_LOG_DEBUG,
            "model of '%s', worker %d: %.0f items (largest chunk %.0f) in %.3g s%s; fit a %.3g s + %.3g s/item, "
            "saturating at %.3g items, %s (knee %.0f%s), next chunk %zu",
            m->key.name ? m->key.name : "", w, items, s->launch > 0 ? s->launch : items, seconds,
            s->solo ? " (solo)" : "", f->line.a, f->line.c, mgpu__fit_sat(f),
            mgpu__fit_known(f) ? "saturated" : "growing", f->knee.below.n, f->knee.measured ? ", measured" : "",
            f->claims.planned);
  /* The slowest rate seen, drifting back up slowly: items of one kernel can
   * differ in cost, and a slow thief plans with its worst case. */
  double rate = items / seconds, slow = atomic_load_explicit(&m->slow[w], memory_order_relaxed);
  slow = (slow == 0 || rate < slow) ? rate : slow + MGPU_SLOW_DRIFT * (rate - slow);
  atomic_store_explicit(&m->slow[w], slow, memory_order_relaxed);
}

size_t mgpu__model_chunk(mgpu__model_t *m, int w, double prior_rate, double target_s, size_t max_items, bool grows,
                         uint64_t tag, size_t batch_n) {
  mgpu__fit_t *f = &m->fit[w];
  double rate = 0, base = 0, floor = f->floor;
  uint64_t batch = f->batch.tag;
  mgpu__trial_t judged = grows && tag ? mgpu__fit_batch(f, tag, batch_n, &rate, &base) : MGPU_TRIAL_NONE;
  if (judged != MGPU_TRIAL_NONE)
    mgpu__log(MGPU_LOG_DEBUG, "model of '%s', worker %d: a batch of chunks %s the floor of %.0f items ran at %.4g "
              "items/s against %.4g: floor now %.0f", m->key.name ? m->key.name : "", w,
              judged == MGPU_TRIAL_UP ? "above" : "under", floor, rate, base, f->floor);
  if (f->batch.tag != batch && (f->batch.trial == MGPU_TRIAL_UP || f->batch.trial == MGPU_TRIAL_DOWN))
    mgpu__log(MGPU_LOG_DEBUG, "model of '%s', worker %d: this batch tries chunks %s the floor of %.0f items",
              m->key.name ? m->key.name : "", w, f->batch.trial == MGPU_TRIAL_UP ? "above" : "under", f->floor);
  size_t n = mgpu__fit_chunk(f, prior_rate, target_s, max_items, grows);
  mgpu__fit_claimed(f, n);
  if (n != f->claims.planned) {
    f->claims.planned = n;
    if (f->line.samples) publish(m, w);
  }
  return n;
}

size_t mgpu__prof_lo(size_t n, int j) {
  /* j * n / BINS without overflow; n for j == BINS, the end of the last bin */
  return n / MGPU_PROF_BINS * (size_t)j + n % MGPU_PROF_BINS * (size_t)j / MGPU_PROF_BINS;
}

static int prof_bin(size_t n, size_t i) {
  /* The bin of item i: the last j with lo(j) <= i. */
  int j = (int)((double)i / (double)n * MGPU_PROF_BINS);
  if (j >= MGPU_PROF_BINS) j = MGPU_PROF_BINS - 1;
  while (j > 0 && mgpu__prof_lo(n, j) > i) j--;
  while (j + 1 < MGPU_PROF_BINS && mgpu__prof_lo(n, j + 1) <= i) j++;
  return j;
}

void mgpu__prof_add(double *t, double *it, size_t n, size_t first, size_t count, double secs) {
  if (count == 0 || secs <= 0 || first >= n) return;
  if (count > n - first) count = n - first;
  size_t end = first + count;
  for (int j = prof_bin(n, first); j < MGPU_PROF_BINS && mgpu__prof_lo(n, j) < end; j++) {
    size_t lo = MGPU_MAX(mgpu__prof_lo(n, j), first), hi = MGPU_MIN(mgpu__prof_lo(n, j + 1), end);
    if (hi <= lo) continue;
    t[j] += secs * (double)(hi - lo) / (double)count;
    it[j] += (double)(hi - lo);
  }
}

void mgpu__prof_learn(mgpu__model_t *m, size_t n, const double *sums, int rows) {
  for (int j = 0; j < MGPU_PROF_BINS; j++) {
    double t = 0, it = 0;
    for (int r = 0; r < rows; r++) {
      t += sums[(size_t)r * 2 * MGPU_PROF_BINS + (size_t)j];
      it += sums[(size_t)r * 2 * MGPU_PROF_BINS + MGPU_PROF_BINS + (size_t)j];
    }
    if (it <= 0 || t <= 0) continue;
    /* Another batch size starts over, on the first bin a GPU worked on: a
     * batch no GPU worked on says nothing and leaves the profile as it is. */
    if (m->prof_n != n) {
      memset(m->prof, 0, MGPU_PROF_BINS * sizeof *m->prof);
      m->prof_n = n;
    }
    /* A chunk's share of its device's time is a rough measure of its own
     * (chunks in flight together are charged alike per item). */
    double est = t / it;
    m->prof[j] = m->prof[j] > 0 ? (1 - MGPU_PROF_BLEND) * m->prof[j] + MGPU_PROF_BLEND * est : est;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Whether bins j0.. of prof (all learnt) show items that differ in cost by
 * position, by the logarithms of their costs: the middle bins span a factor
 * of MGPU_PROF_SPREAD, and they vary MGPU_PROF_SMOOTH times more from their
 * mean than half the mean square step from bin to bin, since a cost that
 * changes with position changes smoothly and noise gives a ratio near 1. */
static bool prof_irregular(const double *prof, int j0) {
  double x[MGPU_PROF_BINS];
  int n = 0;
  double mean = 0, var = 0, step = 0;
  for (int j = j0; j < MGPU_PROF_BINS; j++) x[n] = log(prof[j]), mean += x[n++];
  if (n < MGPU_PROF_MIN_BINS) return false;
  mean /= n;
  for (int i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
  for (int i = 1; i < n; i++) step += (x[i] - x[i - 1]) * (x[i] - x[i - 1]);
  var /= n;
  step /= n - 1;
  bool smooth = var >= MGPU_PROF_SMOOTH * 0.5 * step;
  qsort(x, (size_t)n, sizeof *x, cmp_double);
  int lo = n / MGPU_PROF_TRIM, hi = n * (MGPU_PROF_TRIM - 1) / MGPU_PROF_TRIM;
  bool spread = x[hi] - x[lo] >= log(MGPU_PROF_SPREAD);
  mgpu__log(MGPU_LOG_DEBUG, "cost profile: bins %d..%d of %d span %.3gx, variance %.3g of half the step's %.3g", lo, hi,
            n, exp(x[hi] - x[lo]), var, 0.5 * step);
  return smooth && spread;
}

bool mgpu__prof_cuts(const double *prof, size_t n, size_t a, int k, size_t *cut) {
  if (k < 1 || a >= n) return false;
  int j0 = prof_bin(n, a);
  double total = 0;
  for (int j = j0; j < MGPU_PROF_BINS; j++) {
    if (prof[j] <= 0) return false;
    size_t b0 = MGPU_MAX(mgpu__prof_lo(n, j), a), b1 = mgpu__prof_lo(n, j + 1);
    if (b1 > b0) total += prof[j] * (double)(b1 - b0);
  }
  if (!prof_irregular(prof, j0)) return false;
  /* Walk the bins; part p ends where the cost so far reaches (p+1)/k of the
   * total, inside a bin in proportion to its items. */
  size_t at = a;
  double sofar = 0;
  int p = 0;
  for (int j = j0; j < MGPU_PROF_BINS && p < k - 1; j++) {
    size_t b0 = MGPU_MAX(mgpu__prof_lo(n, j), a), b1 = mgpu__prof_lo(n, j + 1);
    if (b1 <= b0) continue;
    double c = prof[j] * (double)(b1 - b0);
    while (p < k - 1 && sofar + c >= total * (p + 1) / k) {
      double want = total * (p + 1) / k - sofar;
      size_t x = b0 + (size_t)llround(want / prof[j]);
      if (x > b1) x = b1;
      if (x < at) x = at;
      cut[p++] = x - at;
      at = x;
    }
    sofar += c;
  }
  while (p < k - 1) cut[p++] = 0;
  cut[k - 1] = n - at;
  return true;
}

void mgpu__cost_init(mgpu__cost_t *c, const double *prof, size_t n) {
  c->n = n;
  c->cum[0] = 0;
  for (int j = 0; j < MGPU_PROF_BINS; j++) {
    c->per[j] = 0;
    for (int i = MGPU_MAX(0, j - MGPU_COST_REACH); i <= MGPU_MIN(MGPU_PROF_BINS - 1, j + MGPU_COST_REACH); i++)
      c->per[j] = MGPU_MAX(c->per[j], prof[i]);
    c->cum[j + 1] = c->cum[j] + c->per[j] * (double)(mgpu__prof_lo(n, j + 1) - mgpu__prof_lo(n, j));
  }
}

double mgpu__cost_at(const mgpu__cost_t *c, size_t x) {
  if (x >= c->n) return c->cum[MGPU_PROF_BINS];
  int j = prof_bin(c->n, x);
  return c->cum[j] + c->per[j] * (double)(x - mgpu__prof_lo(c->n, j));
}

size_t mgpu__cost_find(const mgpu__cost_t *c, double cost) {
  /* Within rounding of the total, a cost is reached: a sum of costs need not
   * equal the running cost at the item it ends at. */
  cost -= MGPU_COST_ROUNDING * c->cum[MGPU_PROF_BINS];
  if (cost <= 0) return 0;
  if (cost >= c->cum[MGPU_PROF_BINS]) return c->n;
  /* The bin where the running cost reaches `cost`, then the item within it. */
  int lo = 0, hi = MGPU_PROF_BINS - 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (c->cum[mid + 1] >= cost) hi = mid;
    else lo = mid + 1;
  }
  size_t b0 = mgpu__prof_lo(c->n, lo), b1 = mgpu__prof_lo(c->n, lo + 1);
  double k = c->per[lo] > 0 ? ceil((cost - c->cum[lo]) / c->per[lo]) : 0;
  size_t x = b0 + (k <= 0 ? 0 : (size_t)k);
  if (x > b1) x = b1;
  /* The division rounds: step back to the least such x, as cost_at reckons. */
  while (x > b0 && c->cum[lo] + c->per[lo] * (double)(x - 1 - b0) >= cost) x--;
  return x;
}

size_t mgpu__cost_chunk(const mgpu__cost_t *c, size_t first, size_t n) {
  if (first >= c->n || c->cum[MGPU_PROF_BINS] <= 0) return n;
  double avg = c->cum[MGPU_PROF_BINS] / (double)c->n;
  size_t x = mgpu__cost_find(c, mgpu__cost_at(c, first) + (double)n * avg);
  return x > first ? x - first : 1;
}

size_t mgpu__cost_items(const mgpu__cost_t *c, size_t first, size_t count) {
  double total = c->cum[MGPU_PROF_BINS];
  if (total <= 0) return count;
  double k = (mgpu__cost_at(c, first + count) - mgpu__cost_at(c, first)) / (total / (double)c->n);
  return k < 1 ? 1 : (size_t)llround(k);
}

size_t mgpu__cost_steal(const mgpu__cost_t *c, size_t begin, size_t end, double pt, double po) {
  if (end <= begin) return 0;
  double at_end = mgpu__cost_at(c, end), left = at_end - mgpu__cost_at(c, begin);
  double s = 0.5 * (po + left - pt);
  if (s <= 0) return 0;
  /* [x, end) costs at most s: all of the range where s exceeds it. */
  size_t x = MGPU_MIN(MGPU_MAX(mgpu__cost_find(c, at_end - s), begin), end);
  return end - x;
}

/* MGPU_RESERVE_THREADS=auto. A kernel's first GPU batch warms up (buffers,
 * the probes) and is not timed; the next are timed MGPU_RESERVE_RUNS_PER_WAY
 * per way, by turns; then the fastest is kept, and refresh batches time the
 * other ways in rotation, so that a change of load is followed. A batch size
 * far from the timed ones starts the trials over: throughput depends on it. */

/* A way's speed is the best of its last MGPU_RESERVE_KEEP timed batches:
 * single batches vary, nearly always slower, so the best is the steadier. */
double mgpu__reserve_score(const mgpu__model_t *m, int level) {
  double s = 0;
  for (int i = 0; i < MGPU_MIN(m->reserve_runs[level], MGPU_RESERVE_KEEP); i++)
    s = MGPU_MAX(s, m->reserve_rate[level][i]);
  return s;
}

/* The offered way timed least, while one is under MGPU_RESERVE_RUNS_PER_WAY
 * (-1: none), a quarter out first among equals. */
static int least_timed(const mgpu__model_t *m, unsigned offered) {
  static const int order[MGPU_RESERVE_LEVELS] = {MGPU_RESERVE_QUARTER_OUT, MGPU_RESERVE_ALL_IN, MGPU_RESERVE_HALF_OUT,
                                                 MGPU_RESERVE_CPUS_OUT, MGPU_RESERVE_GPUS_OUT};
  int least = -1;
  for (int i = 0; i < MGPU_RESERVE_LEVELS; i++) {
    int l = order[i];
    if ((offered >> l & 1u) && m->reserve_runs[l] < MGPU_RESERVE_RUNS_PER_WAY &&
        (least < 0 || m->reserve_runs[l] < m->reserve_runs[least]))
      least = l;
  }
  return least;
}

/* The fastest offered way. One with more workers out must beat the ways with
 * fewer by MGPU_RESERVE_MARGIN: with workers in, the cores also serve other
 * batches. */
static int fastest(const mgpu__model_t *m, unsigned offered) {
  int best = MGPU_RESERVE_ALL_IN;
  for (int l = MGPU_RESERVE_ALL_IN + 1; l < MGPU_RESERVE_LEVELS; l++)
    if ((offered >> l & 1u) && mgpu__reserve_score(m, l) > MGPU_RESERVE_MARGIN * mgpu__reserve_score(m, best)) best = l;
  return best;
}

/* Batch k is a refresh: it runs the next other way in rotation, fewer
 * workers out first. The gap to the next refresh grows while the same way
 * stays fastest, since a refresh runs a slower way, and starts again from
 * MGPU_RESERVE_REFRESH when the fastest changes. */
static int refresh(mgpu__model_t *m, unsigned offered, uint64_t k, int best) {
  int nother = 0, other[MGPU_RESERVE_LEVELS];
  m->refresh_gap = m->refresh_gap && m->refresh_best == best
                       ? MGPU_MIN(MGPU_RESERVE_REFRESH_GROWTH * m->refresh_gap, (uint64_t)MGPU_RESERVE_REFRESH_MAX)
                       : MGPU_RESERVE_REFRESH;
  m->refresh_best = best;
  m->refresh_at = k + m->refresh_gap;
  for (int l = 0; l < MGPU_RESERVE_LEVELS; l++)
    if ((offered >> l & 1u) && l != best) other[nother++] = l;
  return other[++m->refreshes % (uint64_t)nother];
}

int mgpu__reserve_pick(mgpu__model_t *m, size_t n, unsigned offered, bool *record) {
  const unsigned always = 1u << MGPU_RESERVE_ALL_IN | 1u << MGPU_RESERVE_QUARTER_OUT;
  offered = (offered | always) & ((1u << MGPU_RESERVE_LEVELS) - 1);
  uint64_t k = m->reserve_batches++;
  *record = true;
  /* A way the store kept runs from the first batch; the trials of the
   * others wait for the first refresh. */
  int prior = m->reserve_prior - 1;
  if (prior >= 0 && (offered >> prior & 1u) && k < MGPU_RESERVE_REFRESH) {
    if (k == 0) m->reserve_n = n;
    return prior;
  }
  if (k == 0) {
    *record = false;
    m->reserve_n = n;
    return MGPU_RESERVE_QUARTER_OUT;
  }
  if (n > MGPU_RESERVE_SIZES * m->reserve_n || MGPU_RESERVE_SIZES * n < m->reserve_n) {
    memset(m->reserve_rate, 0, sizeof m->reserve_rate);
    memset(m->reserve_runs, 0, sizeof m->reserve_runs);
    m->reserve_n = n;
    m->refresh_at = k + MGPU_RESERVE_REFRESH;
    m->refresh_gap = 0;
  }
  int least = least_timed(m, offered);
  if (least >= 0) return least;
  int best = fastest(m, offered);
  if (k < (m->refresh_at ? m->refresh_at : MGPU_RESERVE_REFRESH)) return best;
  return refresh(m, offered, k, best);
}

/* A new time replaces the oldest of the way's MGPU_RESERVE_KEEP. The kept
 * way is timed every batch, so its count steps back by MGPU_RESERVE_KEEP at
 * twice that (the slot order unchanged) rather than overflow in a long run. */
void mgpu__reserve_learn(mgpu__model_t *m, int level, double items_per_s) {
  if (level < 0 || level >= MGPU_RESERVE_LEVELS || !(items_per_s > 0)) return;
  m->reserve_rate[level][m->reserve_runs[level]++ % MGPU_RESERVE_KEEP] = items_per_s;
  if (m->reserve_runs[level] >= 2 * MGPU_RESERVE_KEEP) m->reserve_runs[level] -= MGPU_RESERVE_KEEP;
}

void mgpu__model_seed(mgpu__model_t *m, int w, double latency, double cost, double knee) {
  mgpu__fit_seed(&m->fit[w], latency, cost, knee);
  atomic_store_explicit(&m->samples[w], 0, memory_order_relaxed);
  publish(m, w);
}

bool mgpu__model_learnt(const mgpu__model_t *m, int w, double *latency, double *cost, double *knee, double *samples) {
  uint64_t n = atomic_load_explicit(&m->samples[w], memory_order_relaxed);
  double peak = atomic_load_explicit(&m->peak[w], memory_order_relaxed);
  if (n == 0 || !(peak > 0)) return false;
  *latency = atomic_load_explicit(&m->latency[w], memory_order_relaxed);
  *cost = 1 / peak;
  *knee = atomic_load_explicit(&m->knee[w], memory_order_relaxed);
  *samples = (double)n;
  return true;
}

uint64_t mgpu__model_news(const mgpu__model_t *m) {
  uint64_t n = m->reserve_batches;
  for (int w = 0; w < m->nworkers; w++) n += atomic_load_explicit(&m->samples[w], memory_order_relaxed);
  return n;
}

void mgpu__reserve_prefer(mgpu__model_t *m, int level) {
  if (level >= 0 && level < MGPU_RESERVE_LEVELS) m->reserve_prior = level + 1;
}

int mgpu__reserve_best(const mgpu__model_t *m) {
  unsigned timed = 0;
  for (int l = 0; l < MGPU_RESERVE_LEVELS; l++)
    if (mgpu__reserve_score(m, l) > 0) timed |= MGPU_RESERVE_BIT(l);
  return timed ? fastest(m, timed) : -1;
}
