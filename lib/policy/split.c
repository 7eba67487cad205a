/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * split.c: how a batch's items are shared among workers so that all are
 * predicted to finish together, and how much a thief takes from a victim's
 * range (the tail rule): numbers in, numbers out, no locks and no runtime.
 */
#include "policy/policy.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  double lat, speed;
} lat_speed_t;

static int cmp_lat(const void *a, const void *b) {
  double x = ((const lat_speed_t *)a)->lat, y = ((const lat_speed_t *)b)->lat;
  return (x > y) - (x < y);
}

/* The common finish time T at which workers with these speeds and latencies
 * have done `items` together: the sum of (T - latency) * speed over the
 * workers whose latency is under T is items. Workers join in order of
 * latency while T passes the next one's. */
static double finish_time(const double *speed, const double *latency, int n, double items) {
  lat_speed_t *w = malloc(sizeof *w * (size_t)(n > 0 ? n : 1));
  if (!w) MGPU_PANIC("out of memory splitting a batch");
  int m = 0;
  for (int i = 0; i < n; i++)
    if (speed[i] > 0) w[m++] = (lat_speed_t){MGPU_MAX(0.0, latency[i]), speed[i]};
  qsort(w, (size_t)m, sizeof *w, cmp_lat);
  double rate = 0, lat = 0, t = 0;
  for (int k = 0; k < m; k++) {
    rate += w[k].speed;
    lat += w[k].lat * w[k].speed;
    t = (items + lat) / rate;
    if (k + 1 == m || t <= w[k + 1].lat) break;
  }
  free(w);
  return t;
}

/* A peak counts where it is above the speed: a speed lowered by the split's
 * own rules (pooled) keeps its plain line. */
static bool has_peak(double speed, double peak) { return peak > speed; }

double mgpu__share_time(double speed, double latency, double peak, double s) {
  if (has_peak(speed, peak)) return MGPU_MAX(latency + s / peak, s / speed);
  return latency + s / speed;
}

/* One side's seconds for `items` in all (mgpu__share_time). */
static double side_time(const mgpu__steal_side_t *p, double items) {
  return mgpu__share_time(p->speed, p->latency, p->peak, items);
}

/* The items a worker finishes by time T: the inverse of mgpu__share_time. */
static double items_by(double speed, double latency, double peak, double T) {
  double n = has_peak(speed, peak) ? MGPU_MIN((T - latency) * peak, T * speed) : (T - latency) * speed;
  return MGPU_MAX(0.0, n);
}

/* finish_time's T with peaks: the items done by T rise with T, continuous
 * and piecewise linear, so T is found by halving an interval that holds
 * it. At T = the largest latency + items / the summed speeds every worker
 * has done at least (T - its latency) * its speed: the sum passes items. */
static double finish_time_peak(const double *speed, const double *latency, const double *peak, int n, double items) {
  double total = 0, lat = 0;
  for (int i = 0; i < n; i++)
    if (speed[i] > 0) total += speed[i], lat = MGPU_MAX(lat, latency[i]);
  double lo = 0, hi = lat + items / total;
  for (int it = 0; it < MGPU_HALVE_STEPS && hi - lo > MGPU_FINISH_TOL * hi; it++) {
    double mid = 0.5 * (lo + hi), done = 0;
    for (int i = 0; i < n; i++)
      if (speed[i] > 0) done += items_by(speed[i], MGPU_MAX(0.0, latency[i]), peak[i], mid);
    if (done >= items) hi = mid;
    else lo = mid;
  }
  return hi;
}

void mgpu__split(const double *speed, const double *latency, const double *peak, int n, size_t items, size_t *share) {
  double total = 0;
  for (int i = 0; i < n; i++) total += speed[i] > 0 ? speed[i] : 0;
  for (int i = 0; i < n; i++) share[i] = 0;
  if (total <= 0 || items == 0) return;
  if (!latency) peak = NULL;
  double T = !latency ? 0
             : peak   ? finish_time_peak(speed, latency, peak, n, (double)items)
                      : finish_time(speed, latency, n, (double)items);
  /* Each share is capped by what is left, so the total never passes items
   * nor wraps, however large items is (a double rounds SIZE_MAX up to 2^64). */
  size_t given = 0;
  for (int i = 0; i < n; i++) {
    if (speed[i] <= 0) continue;
    double exact = !latency ? floor((double)items * (speed[i] / total))
                            : floor(items_by(speed[i], MGPU_MAX(0.0, latency[i]), peak ? peak[i] : 0, T));
    size_t left = items - given;
    share[i] = exact >= (double)left ? left : (size_t)exact;
    given += share[i];
  }
  /* Each leftover item goes to the worker that would finish it first, so no
   * worker receives the whole remainder and a slow worker gets none it would
   * finish after everyone else (the tail rule, applied to the split). */
  while (given < items) {
    int best = -1;
    double best_t = 0;
    for (int i = 0; i < n; i++) {
      if (speed[i] <= 0) continue;
      double t = mgpu__share_time(speed[i], latency ? latency[i] : 0, peak ? peak[i] : 0, (double)(share[i] + 1));
      if (best < 0 || t < best_t) best = i, best_t = t;
    }
    share[best]++;
    given++;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void mgpu__pool_alike(double *speed, const int *group, int n, double tol) {
  double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
  if (!v) MGPU_PANIC("out of memory splitting a batch");
  for (int g = 0; g < n; g++) {
    if (group[g] != g) continue; /* each group once, at its first member */
    int k = 0;
    for (int i = 0; i < n; i++)
      if (group[i] == g && speed[i] > 0) v[k++] = speed[i];
    if (k < 2) continue;
    /* Around the median, so that one really slower GPU does not move the
     * centre away from the others. */
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    double mid = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2, pool = 0;
    int np = 0;
    for (int i = 0; i < n; i++)
      if (group[i] == g && speed[i] > 0 && fabs(speed[i] - mid) <= tol * mid) pool += speed[i], np++;
    if (np < 2) continue;
    for (int i = 0; i < n; i++)
      if (group[i] == g && speed[i] > 0 && fabs(speed[i] - mid) <= tol * mid) speed[i] = pool / np;
  }
  free(v);
}

bool mgpu__ranges_in_flight(const double *speed, int n, size_t items, int streams) {
  double total = 0;
  for (int i = 0; i < n; i++) total += speed[i];
  return total > 0 && (double)items / total < (streams + 1) * MGPU_GPU_TARGET_S;
}

/* A thief far slower than the owner plans with its worst case, the slower
 * of a quarter of its speed and the slowest rate it has seen on the kernel:
 * one dear item on it would outlast the owner. It takes nothing where the
 * owner has less left than the longest item a worker of its kind has taken,
 * which the item it would take may be (false). */
static bool slow_thief(const mgpu__steal_view_t *v, mgpu__steal_side_t *t) {
  const mgpu__steal_side_t *o = &v->owner;
  if (v->worst_item_s > 0 && (o->pending + v->left) / o->speed < v->worst_item_s) return false;
  t->speed /= MGPU_SLOW_THIEF_MARGIN;
  if (v->slowest > 0 && v->slowest < t->speed) t->speed = v->slowest;
  t->peak = 0; /* the worst case is a plain rate */
  return true;
}

size_t mgpu__steal_share(const mgpu__steal_view_t *v) {
  const mgpu__steal_side_t *o = &v->owner;
  if (o->speed <= 0) return (size_t)v->left; /* a retired owner: take it all */
  /* Equal finish: thief and owner end together, each taking mgpu__share_time
   * for what it has, its latency for the chunk it still has to start. */
  mgpu__steal_side_t t = v->thief;
  if (t.speed * MGPU_SLOW_SPLIT_RATIO < o->speed && !slow_thief(v, &t)) return 0;
  double s;
  if (!has_peak(t.speed, t.peak) && !has_peak(o->speed, o->peak)) {
    /* latency + (pending + s) / speed is the same for both */
    s = (t.speed * (o->pending + v->left) - o->speed * t.pending + t.speed * o->speed * (o->latency - t.latency)) /
        (o->speed + t.speed);
  } else {
    /* The thief's time rises with s and the owner's falls, both continuous:
     * halve [0, left] for where they cross. */
    double lo = 0, hi = v->left;
    if (side_time(&t, t.pending) >= side_time(o, o->pending + v->left)) return 0;
    if (side_time(&t, t.pending + v->left) <= side_time(o, o->pending)) hi = lo = v->left;
    for (int it = 0; it < MGPU_HALVE_STEPS && hi - lo > MGPU_STEAL_TOL * MGPU_MAX(1.0, hi); it++) {
      double mid = 0.5 * (lo + hi);
      if (side_time(&t, t.pending + mid) <= side_time(o, o->pending + v->left - mid)) lo = mid;
      else hi = mid;
    }
    s = lo + MGPU_ITEM_ROUNDING; /* halving ends below a crossing at a whole item */
  }
  if (s > v->left) s = v->left;
  return s >= 1 ? (size_t)floor(s) : 0;
}

size_t mgpu__rank_steal_share(const mgpu__rank_steal_view_t *v) {
  const mgpu__rank_side_t *t = &v->thief, *o = &v->owner;
  if (!(t->speed > 0) || !(o->speed > 0) || !(v->left >= 1)) return 0;
  double per_byte = v->bw > 0 ? v->bytes_per_item / v->bw : 0;
  /* All finish at T. Each thief starts once its items running and the fixed
   * cost are done, then runs at c = 1 / (1 / speed + per_byte) items/s; the
   * range's items are all done by T:
   *   owner speed (T - owner latency) - owner running
   *     + sum over thieves of c (T - start) = left. */
  double ct = 1 / (1 / t->speed + per_byte), start = t->latency + t->running / t->speed + v->fixed_s;
  double rate = o->speed + ct, work = v->left + o->running + o->speed * o->latency + ct * start;
  for (int j = 0; j < v->nothers; j++) {
    if (!(v->others_speed[j] > 0)) continue;
    double cj = 1 / (1 / v->others_speed[j] + per_byte);
    rate += cj;
    work += cj * (v->fixed_s + v->others_running[j] / v->others_speed[j]);
  }
  double s = (work / rate - start) * ct;
  if (s > v->left) s = v->left;
  /* Rounding must not lose an item that equal finish gives exactly. */
  s = floor(s + MGPU_ITEM_ROUNDING);
  if (!(s >= 1)) return 0;
  /* The owner's finish moves earlier by s / vo; the transfer is what the
   * thief pays for it, and the fixed part a share of its work. */
  double move = v->fixed_s + s * per_byte;
  if (s / o->speed < MGPU_RANK_STEAL_GAIN * move) return 0;
  if (s / t->speed < MGPU_RANK_STEAL_GAIN * v->fixed_s) return 0;
  return (size_t)s;
}
