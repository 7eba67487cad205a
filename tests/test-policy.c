/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-policy.c: the scheduling policy's pure functions, each test a rule
 * checked on given numbers: the line, the knee and the growth, the trials
 * and the floor, CPU chunks (fit.c); the split and stealing (split.c); cost
 * profiles and the reserve (model.c). One TCase each; no runtime, no clock.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>

/* A device whose chunk of n items takes a + c n seconds, exactly. */
static double dev_time(double a, double c, double n) { return a + c * n; }

/* A chunk whose span is its device time (solo, or one after another). */
static void sample(mgpu__fit_t *f, double n, double t, bool solo) {
  mgpu__fit_sample(f, &(mgpu__sample_t){.items = n, .secs = t, .solo = solo});
}

/* A sample `span` from its own start: overlapped, its device time is less. */
static void sample_span(mgpu__fit_t *f, double n, double t, double span, bool solo) {
  mgpu__fit_sample(f, &(mgpu__sample_t){.items = n, .secs = t, .span = span, .solo = solo});
}

/* The start of a growth: chunks of n1 and n2 claimed, n1 learnt solo in
 * t1, n3 claimed while n2 runs, then n2 learnt solo in t2. */
static void grow_solo(mgpu__fit_t *f, double n1, double t1, double n2, double t2, double n3) {
  mgpu__fit_claimed(f, (size_t)n1);
  mgpu__fit_claimed(f, (size_t)n2);
  sample(f, n1, t1, true);
  mgpu__fit_claimed(f, (size_t)n3);
  sample(f, n2, t2, true);
}


/* -------------------- the line: t(n) = a + c n, learnt from samples */

/* Chunks of growing sizes on an exact line: the fit finds the line, and
 * at the saturating size latency is 1 - MGPU_SAT_SHARE of the time. */
START_TEST(test_line_fits_exact_times) {
  mgpu__fit_t f = {0};
  const double a = 5e-3, c = 0.5e-6;
  for (double n = 1; n <= 1 << 20; n *= 4) mgpu__fit_add(&f, n, dev_time(a, c, n));
  ck_assert_double_eq_tol(f.line.a, a, a * 1e-6);
  ck_assert_double_eq_tol(f.line.c, c, c * 1e-6);
  double sat = mgpu__fit_sat(&f);
  ck_assert_double_eq_tol(a / dev_time(a, c, sat), 1 - MGPU_SAT_SHARE, 1e-4 * (1 - MGPU_SAT_SHARE));
  ck_assert_double_eq_tol(mgpu__fit_rate(&f, 1000), 1000 / (a + c * 1000), 1e-3);
  /* From 4^9 to 4^10 items, past the saturating size, the rate rose by
   * under MGPU_FIT_RISE: the chunks stop growing. */
  ck_assert(!f.knee.rising);
  ck_assert(mgpu__fit_known(&f));
}
END_TEST

/* The tail of a batch as a device sees it: after full chunks (80,000 items
 * in 2 ms), forty stolen pieces of 5 items each 0.1 ms. Their time is
 * latency, and the rate at the size the device claims stays where the full
 * chunks put it. */
START_TEST(test_line_keeps_rate_after_tail_pieces) {
  const double chunk = 80000, chunk_s = 2e-3, piece = 5, piece_s = 1e-4;
  mgpu__fit_t f = {0};
  for (int i = 0; i < 20; i++) mgpu__fit_add(&f, i % 2 ? chunk : chunk / 4, i % 2 ? chunk_s : chunk_s / 4);
  double full = mgpu__fit_rate(&f, chunk);
  ck_assert_double_eq_tol(full, chunk / chunk_s, chunk / chunk_s * 1e-3);
  for (int i = 0; i < 40; i++) mgpu__fit_add(&f, piece, piece_s);
  double after = mgpu__fit_rate(&f, 80000);
  printf("tail pieces: rate at 80,000 items %.4g before, %.4g after; latency %.3g s\n", full, after, f.line.a);
  ck_assert_double_ge(after, 0.9 * full);
  ck_assert_double_eq_tol(f.line.a, piece_s, 0.2 * piece_s); /* the pieces' time is latency */
}
END_TEST

/* The kernel's cost doubles (another input): the fit follows within a few
 * dozen chunks. */
START_TEST(test_line_follows_doubled_cost) {
  const double a = 1e-4, c = 1e-6;
  mgpu__fit_t f = {0};
  for (int i = 0; i < 30; i++) {
    double n = i % 3 == 0 ? 1000 : 4000;
    mgpu__fit_add(&f, n, dev_time(a, c, n));
  }
  ck_assert_double_eq_tol(f.line.c, c, 0.01 * c);
  int k = 0;
  for (; k < 60 && fabs(f.line.c - 2 * c) > 0.05 * 2 * c; k++) {
    double n = k % 3 == 0 ? 1000 : 4000;
    mgpu__fit_add(&f, n, dev_time(a, 2 * c, n));
  }
  printf("cost doubled: the fit followed in %d chunks\n", k);
  ck_assert_int_lt(k, 40);
}
END_TEST

/* One chunk a hundred times too slow (the OS took the core) moves the fit
 * by a bounded amount, and the fit returns. */
START_TEST(test_line_bounds_one_slow_chunk) {
  mgpu__fit_t f = {0};
  for (int i = 0; i < 20; i++) mgpu__fit_add(&f, i % 2 ? 4000 : 1000, dev_time(1e-4, 1e-6, i % 2 ? 4000 : 1000));
  double before = mgpu__fit_rate(&f, 4000);
  mgpu__fit_add(&f, 4000, 100 * dev_time(1e-4, 1e-6, 4000));
  double hit = mgpu__fit_rate(&f, 4000);
  ck_assert_double_ge(hit, before / MGPU_FIT_CLIP);
  for (int i = 0; i < 20; i++) mgpu__fit_add(&f, i % 2 ? 4000 : 1000, dev_time(1e-4, 1e-6, i % 2 ? 4000 : 1000));
  ck_assert_double_eq_tol(mgpu__fit_rate(&f, 4000), before, 0.02 * before);
}
END_TEST

/* One batch of a GPU's fit: a chunk of n items that takes t seconds. */
static void one_batch(mgpu__fit_t *f, uint64_t *tag, double n, double t) {
  double rate, base;
  mgpu__fit_batch(f, ++*tag, (size_t)n, &rate, &base);
  mgpu__fit_batch_time(f, *tag, n, t);
  mgpu__fit_add(f, n, t);
}

/* The cost grows a thousandfold for good: one batch that slow moves the fit
 * by a bounded amount (test_line_bounds_one_slow_chunk), a second in a row starts the line
 * over from it, and the fit is the new cost at once. So it does the other
 * way, a thousandfold cheaper. A batch whose chunks are far off both ways
 * (cheap rows, then dear ones) is not off as a whole. */
START_TEST(test_line_restarts_after_cost_shift) {
  mgpu__fit_t f = {0};
  uint64_t tag = 0;
  for (int i = 0; i < 20; i++) one_batch(&f, &tag, 4000, dev_time(1e-4, 1e-6, 4000));
  double before = mgpu__fit_time(&f, 4000);
  one_batch(&f, &tag, 4000, 1000 * before);
  ck_assert_double_lt(mgpu__fit_time(&f, 4000), MGPU_FIT_CLIP * before);
  one_batch(&f, &tag, 4000, 1000 * before);
  ck_assert_double_eq_tol(mgpu__fit_time(&f, 4000), 1000 * before, 1e-6 * before);
  ck_assert_uint_eq(f.line.samples, 1);
  /* A run broken by a batch on time does not count. */
  for (int i = 0; i < 10; i++) one_batch(&f, &tag, 4000, 1000 * before);
  one_batch(&f, &tag, 4000, before);
  one_batch(&f, &tag, 4000, 1000 * before);
  one_batch(&f, &tag, 4000, before);
  ck_assert_double_gt(mgpu__fit_time(&f, 4000), 100 * before);
  one_batch(&f, &tag, 4000, before);
  ck_assert_double_eq_tol(mgpu__fit_time(&f, 4000), before, 1e-6 * before);
  /* Cheap chunks then dear ones, batch after batch: no restart. */
  uint64_t samples = f.line.samples;
  for (int b = 0; b < 10; b++) {
    double rate, base;
    mgpu__fit_batch(&f, ++tag, 8000, &rate, &base);
    for (int k = 0; k < 2; k++) {
      double t = (k ? 1.9 : 0.1) * before;
      mgpu__fit_batch_time(&f, tag, 4000, t);
      mgpu__fit_add(&f, 4000, t);
    }
  }
  ck_assert_uint_eq(f.line.samples, samples + 20);
}
END_TEST

/* A worker whose chunks ran overlapped until its kernel's cost changed,
 * and whose batches are then one chunk each, solo: the line starts over
 * from such chunks too. A solo chunk is learnt only where the worker's
 * chunks run solo, but an empty line learns it: left empty, it predicts
 * nothing, the worker's rate is 0 and the prior rates it for good. */
START_TEST(test_line_restarts_from_solo_chunks) {
  mgpu__fit_t f = {0};
  uint64_t tag = 0;
  for (int i = 0; i < 20; i++) {
    double rate, base, t = dev_time(1e-4, 1e-6, 4000);
    mgpu__fit_batch(&f, ++tag, 4000, &rate, &base);
    mgpu__fit_batch_time(&f, tag, 4000, t);
    mgpu__fit_sample(&f, &(mgpu__sample_t){.items = 4000, .secs = t, .tag = tag});
  }
  double before = mgpu__fit_time(&f, 4000);
  for (int i = 0; i < 2; i++) {
    double rate, base, t = before / 1000;
    mgpu__fit_batch(&f, ++tag, 4000, &rate, &base);
    mgpu__fit_batch_time(&f, tag, 4000, t);
    mgpu__fit_sample(&f, &(mgpu__sample_t){.items = 4000, .secs = t, .solo = true, .tag = tag});
  }
  ck_assert_uint_eq(f.line.samples, 1);
  ck_assert_double_eq_tol(mgpu__fit_time(&f, 4000), before / 1000, 1e-6 * before);
  ck_assert_double_gt(mgpu__fit_rate(&f, 4000), 900 * 4000 / before);
}
END_TEST

/* A GPU's batches, each a chunk that runs solo (its time holds the fill
 * of the pipeline: 3 ms of copies before and after) and ten that run
 * overlapped (20 us of launch, 1 ns an item). The fill is not a chunk's latency:
 * learnt as one, it would make the chunks large enough to leave nothing to
 * overlap. Where every chunk runs solo (one chunk a batch), those are
 * learnt. */
START_TEST(test_line_skips_solo_pipeline_fill) {
  const double fill = 3e-3, launch = 20e-6, big = 2e6;
  mgpu__fit_t f = {0};
  for (int b = 0; b < 6; b++) {
    sample(&f, big, fill + dev_time(launch, 1e-9, big), true);
    for (int k = 0; k < 10; k++)
      sample(&f, k % 2 ? big : big / 4, dev_time(launch, 1e-9, k % 2 ? big : big / 4), false);
  }
  ck_assert_double_lt(f.line.a, fill / 30);          /* the launch's latency, not the fill */
  ck_assert_double_lt(mgpu__fit_sat(&f), big / 2); /* chunks small enough to overlap */
  const double solo_launch = 18e-3;
  mgpu__fit_t g = {0};
  for (int b = 0; b < 6; b++)
    sample(&g, b % 2 ? 8192 : 2048, dev_time(solo_launch, 0.25e-6, b % 2 ? 8192 : 2048), true);
  ck_assert_double_eq_tol(g.line.a, solo_launch, 1e-6);
}
END_TEST

/* Which chunk joins the held sample (mgpu__fit_beside). Launches of 50 ms
 * side by side on four streams: the 1, 4 and 16 items before held in 60.1
 * ms, the next 16 started 45 ms before their end and ended 4.7 ms after it
 * (an emulated run's timings): 9.7 times their rate by the time credited,
 * and beside them for nine tenths of its span, it joins them; learnt on its own,
 * it made the items look nearly free. A chunk queued behind others runs at
 * their rate for its own part, however long it waited; a tail chunk queued
 * behind a larger one, a larger chunk faster by its size but mostly in its
 * own time, and a larger launch as long as the one it queued behind, keep
 * samples of their own. */
START_TEST(test_sample_joins_launch_beside_it) {
  ck_assert(mgpu__fit_beside(21, 0.0601, 16, 0.00474, 0.050));
  ck_assert(mgpu__fit_beside(21, 0.0601, 16, 0.0033, 0.0033)); /* no timestamps: the rate alone */
  ck_assert(!mgpu__fit_beside(21, 0.0601, 16, 0.00474, 0.00474));
  ck_assert(!mgpu__fit_beside(16, 0.010, 16, 0.0098, 0.030));
  ck_assert(!mgpu__fit_beside(1024, 0.010, 8, 0.00009, 0.020));
  ck_assert(!mgpu__fit_beside(16, 0.010, 64, 0.012, 0.018));
  /* Launches of 20 ms one after another: the 4,096 items queued behind
   * 1,024 are four times their rate, and waited a launch. */
  ck_assert(!mgpu__fit_beside(1024, 0.0201, 4096, 0.0204, 0.0405));
  /* A batch's first chunk, solo, its copies and kernel 1 ms each one after
   * the other, and the next of its size queued behind it, credited its
   * kernel's 1 ms with its copies hidden: three times the rate. */
  ck_assert(!mgpu__fit_beside(4096, 0.003, 4096, 0.001, 0.0025));
}
END_TEST

/* ------------------------------------------ the knee and the growth */

/* Claims and completions one after the other (as a CPU worker or a GPU with
 * one stream makes them) on a device of given latency and rate, from a probe
 * of prior_rate * target_s items; returns the claims made until the chunk
 * size stops changing, and that size in *settled. */
static int settle(double a, double c, double prior_rate, double target_s, size_t max_items, size_t *settled,
                  size_t *sizes, int nsizes) {
  mgpu__fit_t f = {0};
  size_t last = 0;
  for (int k = 0; k < 40; k++) {
    size_t n = mgpu__fit_chunk(&f, prior_rate, target_s, max_items, true);
    mgpu__fit_claimed(&f, n);
    if (k < nsizes) sizes[k] = n;
    if (n == last) {
      *settled = n;
      return k;
    }
    mgpu__fit_add(&f, (double)n, dev_time(a, c, (double)n));
    last = n;
  }
  *settled = last;
  return 40;
}

/* A latency-bound device (a launch 18 ms whatever its size up to tens of
 * thousands of items, 4e6 items/s beyond), whose prior asks for under one
 * item: the probe is one item, the next chunk a step larger, and once two
 * sizes show the same time each chunk leaps MGPU_PROBE_JUMP times the last
 * (fourfold steps took eleven claims to the cap), up to the memory cap. */
START_TEST(test_growth_leaps_when_latency_bound) {
  const double a = 18e-3, c = 0.25e-6, prior = 100, target_s = 2e-3;
  const size_t cap = 1 << 20;
  size_t sizes[16], settled;
  int claims = settle(a, c, prior, target_s, cap, &settled, sizes, 16);
  printf("latency-bound: %d claims, settled at %zu:", claims, settled);
  for (int k = 0; k < MGPU_MIN(claims, 16); k++) printf(" %zu", sizes[k]);
  printf("\n");
  ck_assert_uint_eq(sizes[0], (size_t)MGPU_MAX(1.0, prior * target_s)); /* the probe, at least one item */
  ck_assert_uint_eq(sizes[1], (size_t)MGPU_FIT_GROWTH * sizes[0]);
  for (int k = 2; k < claims - 1 && sizes[k - 1] < cap; k++)
    ck_assert_uint_eq(sizes[k], MGPU_MIN((size_t)MGPU_PROBE_JUMP * sizes[k - 1], cap)); /* the leaps */
  ck_assert_uint_eq(settled, cap);
  ck_assert_int_le(claims, 8);
}
END_TEST

/* A cheap kernel (20 us of latency, 1 ns an item): after the growth the
 * chunks are target_s of work, the saturating size (180,000) being smaller. */
START_TEST(test_growth_settles_at_target_when_cheap) {
  const double c = 1e-9, prior = 2e8, target_s = 2e-3;
  size_t sizes[16], settled;
  int claims = settle(20e-6, c, prior, target_s, SIZE_MAX, &settled, sizes, 16);
  printf("cheap: %d claims, settled at %zu\n", claims, settled);
  ck_assert_uint_eq(sizes[0], (size_t)(prior * target_s)); /* the probe */
  ck_assert_double_eq_tol((double)settled, target_s / c, 1e-3 * target_s / c);
  ck_assert_int_le(claims, 5);
}
END_TEST

/* Chunks that never grow (each the whole of a short batch): the fit keeps
 * growing the claims from the largest so far, capped by the range's end in
 * the claim, never shrinking them to target_s of the rate they show. */
START_TEST(test_growth_never_shrinks_below_claims) {
  mgpu__fit_t f = {0};
  size_t n = mgpu__fit_chunk(&f, 100, 2e-3, SIZE_MAX, true);
  mgpu__fit_claimed(&f, n);
  mgpu__fit_add(&f, 8192, dev_time(18e-3, 0.25e-6, 8192)); /* the whole batch, cut to 8192 */
  mgpu__fit_claimed(&f, 8192);
  for (int b = 0; b < 20; b++) {
    size_t next = mgpu__fit_chunk(&f, 100, 2e-3, SIZE_MAX, true);
    ck_assert_uint_ge(next, 8192);
    mgpu__fit_claimed(&f, MGPU_MIN(next, (size_t)8192));
    mgpu__fit_add(&f, 8192, dev_time(18e-3, 0.25e-6, 8192));
  }
}
END_TEST

/* Chunks that grew into their cap (a staging buffer) with the rate still
 * rising between the last two size classes: they cannot grow further. Where
 * the fit predicts the same rate at target_s of work (no latency: the rise
 * was noise or the pipeline's fill), the chunks are that size, which leaves
 * more of them to overlap; where it predicts a slower rate (18 ms of
 * latency), they stay at the cap. Below the cap, growth goes on. */
START_TEST(test_growth_at_cap_keeps_cap_unless_as_fast) {
  const double cap = 2097152;
  mgpu__fit_t f = {.line = {.a = 0, .c = 2.5e-9, .samples = 8},
                   .knee = {.top.n = cap, .below.n = cap / 4, .rising = true, .measured = true},
                   .claims = {.largest = (size_t)cap, .probe = 1000}};
  ck_assert(!mgpu__fit_known(&f));
  ck_assert_uint_eq(mgpu__fit_chunk(&f, 1e6, 2e-3, (size_t)cap, true), (size_t)(2e-3 / f.line.c)); /* target_s */
  f.knee.below.n = cap / 2;
  ck_assert_uint_eq(mgpu__fit_chunk(&f, 1e6, 2e-3, (size_t)cap, true), (size_t)(cap / 2));
  ck_assert_uint_eq(mgpu__fit_chunk(&f, 1e6, 2e-3, 2 * (size_t)cap, true), 2 * (size_t)cap);
  f.line.a = 18e-3;
  ck_assert_uint_eq(mgpu__fit_chunk(&f, 1e6, 2e-3, (size_t)cap, true), (size_t)cap);
}
END_TEST

/* GPU-only batches of 2^20 items on a device whose rate rises up to a
 * quarter of a batch (1 ms of latency, 22 ns an item, and 2.4 ns an item of
 * copies that only a solo chunk pays), with the next claim made while a
 * chunk is in flight, as two streams make them: the first claim of a batch
 * runs solo, the others overlapped. Once the growth's step passes the
 * batch, a claim takes the whole range and runs solo; its rate, no faster
 * than the smaller chunks', ends the growth, and the batches after it are
 * several chunks that overlap. On a latency-bound device (18 ms a launch)
 * the whole batch as one solo chunk is faster, and the batches stay one chunk. */
static void batch_chunks(double a, double c, double fill, size_t n, int batches, int *chunks) {
  mgpu__fit_t f = {0};
  for (int b = 0; b < batches; b++) {
    size_t left = n, pend = 0;
    bool pend_solo = false;
    chunks[b] = 0;
    while (left > 0 || pend > 0) {
      size_t k = 0;
      if (left > 0) {
        k = MGPU_MIN(mgpu__fit_chunk(&f, 2788, 2e-3, SIZE_MAX, true), left);
        mgpu__fit_claimed(&f, k);
        left -= k;
        chunks[b]++;
      }
      if (pend > 0)
        sample(&f, (double)pend, dev_time(a, c, (double)pend) + (pend_solo ? fill * (double)pend : 0), pend_solo);
      pend_solo = k > 0 && chunks[b] == 1;
      pend = k;
    }
  }
}

START_TEST(test_growth_ends_on_solo_whole_batch) {
  int cheap[6], latency[6];
  batch_chunks(1e-3, 22e-9, 2.4e-9, 786432, 6, cheap);
  batch_chunks(18e-3, 0.25e-6, 2.4e-9, 8192, 6, latency);
  printf("whole batch solo, chunks a batch: cheap");
  for (int b = 0; b < 6; b++) printf(" %d", cheap[b]);
  printf("; latency-bound");
  for (int b = 0; b < 6; b++) printf(" %d", latency[b]);
  printf("\n");
  /* The first batch grows from the probe, the second is the whole batch
   * solo; from the third on, several chunks (one a batch without the
   * solo chunk's rate, until the memory of overlapped chunks fades). */
  for (int b = 2; b < 6; b++) {
    ck_assert_int_ge(cheap[b], 2);
    ck_assert_int_eq(latency[b], 1);
  }
}
END_TEST

/* The growth stops on two chunks that ran solo (pinned sha256 on one H200:
 * 1,198,040 items at 4.4e8 items/s, 4,792,160 at 4.7e8), while a chunk
 * claimed in the growth, 19,168,640 items, is in flight. That one started
 * while the one before it ran, so part of its time hid behind it: 5.4e8.
 * It does not open the growth again (which took the whole batch as one
 * chunk from the next batch on, at the one-launch ceiling); it becomes the
 * largest size class, and the chunks stay several per batch: no smaller
 * than a step below the class from which the rate stopped rising (no size
 * below that one ran slower by more than 10%, so the knee may lie lower,
 * and chunks a step below try it). A chunk of that
 * kind whose rate rises past what overlap can fake (a latency-bound kernel
 * stopped early by noise) does open it again. */
START_TEST(test_growth_not_reopened_by_stale_claim) {
  const size_t range = 33554432;
  mgpu__fit_t f = {0};
  grow_solo(&f, 1198040, 0.00274, 4792160, 0.0101, 19168640);
  ck_assert(mgpu__fit_known(&f));
  sample(&f, 19168640, 0.0353, false);
  sample(&f, 8158975, 0.00471, false);
  ck_assert(mgpu__fit_known(&f));
  size_t n = mgpu__fit_chunk(&f, 1e6, 2e-3, range, true);
  ck_assert_uint_ge(n, 4792160 / (size_t)MGPU_FIT_GROWTH);
  ck_assert_uint_le(n, range / 4);

  /* 18 ms of latency: 20,480 items and 81,920 at rates within 10% (noise
   * in the second), then 327,680 claimed in the growth at twice the rate. */
  mgpu__fit_t g = {0};
  grow_solo(&g, 20480, 18e-3 + 20480 * 1e-7, 81920, 4 * (18e-3 + 20480 * 1e-7), 327680);
  ck_assert(mgpu__fit_known(&g));
  sample(&g, 327680, 18e-3 + 327680 * 1e-7, false);
  ck_assert(!mgpu__fit_known(&g));
  ck_assert_uint_gt(mgpu__fit_chunk(&g, 1e6, 2e-3, 1u << 24, true), 327680);
}
END_TEST

/* Chunks judged by their own spans (pinned sha256 on one H200): 1,231,378
 * items solo at 3.7e8 items/s, 4,925,512 solo at 4.7e8, then 19,702,048
 * claimed while that one ran, credited 36.2 ms from its end (5.4e8) but
 * 43 ms from its own start (4.6e8), and the tail overlapped. By its
 * device time the rate still rose, the growth went on to the whole batch,
 * and that became the floor, two chunks a batch; by its span the growth
 * stops, and the chunks stay several a batch. */
START_TEST(test_growth_judged_by_spans) {
  const size_t range = 33554432;
  for (int spans = 0; spans < 2; spans++) {
    mgpu__fit_t f = {0};
    grow_solo(&f, 1231378, 0.00333, 4925512, 0.0104, 19702048);
    ck_assert(!mgpu__fit_known(&f));
    sample_span(&f, 19702048, 0.0362, spans ? 0.043 : 0.0362, false);
    sample_span(&f, 7396297, 0.00427, spans ? 0.0104 : 0.00427, false);
    size_t n = mgpu__fit_chunk(&f, 1e6, 2e-3, range, true);
    if (spans) {
      ck_assert(mgpu__fit_known(&f));
      ck_assert_uint_le(n, range / 4);
    } else {
      ck_assert_uint_eq(n, range);
    }
  }
}
END_TEST

/* Chunks that ended out of order on a latency-bound device (the emulated
 * one of test-sched's test_latency_bound_gpu_only, 6 ms a launch of up to
 * 4,096 items, when its stream threads ran launches out of order; three in
 * flight, the batch 16,384 items). The GPU's host thread retires its chunks
 * in launch order and joins those that ended within the held one's time
 * (gpu_chunk.c): the third launch of 4,096 ran before the second, so the
 * second's time held both, and the two joined into "8,192 items in 14.4 ms
 * of device time, 21.4 ms by span". Judged as one launch of 8,192 that is no
 * faster than the solo 4,096 before it, and the growth stopped at 4,096 (the
 * next batch in four launches); judged as what it is, launches of 4,096,
 * it leaves the size that a launch of 8,192 or more would run at untried, and
 * the chunks grow. The claims and samples are the run's, in its order. */
START_TEST(test_growth_judges_joined_launches_by_largest) {
  for (int by_launch = 0; by_launch < 2; by_launch++) {
    mgpu__fit_t f = {0};
    /* One step of the run: a claim (0: none) or a sample (items, largest
     * chunk, device time, span, solo). */
    static const struct { size_t claim; double items, launch, t, span; bool solo; } run[] = {
        {.claim = 1}, {.claim = 4}, {.claim = 16},
        {0, 1, 1, 0.006196, 0.006196, true}, {.claim = 16},
        {0, 4, 4, 0.006151, 0.01233, false}, {.claim = 16},
        {0, 16, 16, 0.006148, 0.01847, false}, {.claim = 64},
        {0, 16, 16, 0.006152, 0.01832, false}, {.claim = 256},
        {0, 16, 16, 0.006177, 0.01838, false}, {.claim = 256},
        {0, 64, 64, 0.006162, 0.01843, false}, {.claim = 1024},
        {0, 256, 256, 0.006119, 0.01835, false}, {.claim = 4096}, {.claim = 4096}, {.claim = 4096},
        {0, 1536, 1024, 0.0185, 0.03066, false}, {.claim = 2187},
        {0, 4096, 4096, 0.007198, 0.00718, true},
        {0, 8192, 4096, 0.01439, 0.02144, false},
        {0, 2187, 2187, 0.007179, 0.02141, false},
    };
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
      if (run[i].claim) {
        mgpu__fit_claimed(&f, run[i].claim);
        continue;
      }
      mgpu__sample_t smp = {.items = run[i].items, .launch = by_launch ? run[i].launch : 0, .secs = run[i].t,
                            .span = run[i].span, .solo = run[i].solo};
      mgpu__fit_sample(&f, &smp);
    }
    size_t n = mgpu__fit_chunk(&f, 1e3, 2e-3, 16384, true), largest = 0;
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) largest = MGPU_MAX(largest, (size_t)run[i].launch);
    printf("joined launches judged as %s: %s, next chunk %zu\n", by_launch ? "their largest" : "one of their total",
           mgpu__fit_known(&f) ? "saturated" : "growing", n);
    if (by_launch) {
      ck_assert(!mgpu__fit_known(&f));
      ck_assert_uint_gt(n, largest);
    } else {
      ck_assert(mgpu__fit_known(&f));
      ck_assert_uint_eq(n, largest);
    }
  }
}
END_TEST

/* Past the growth's end, a claim made during it and cut by its range (as
 * the rest of a batch, 10,661,950 items on one H200's pinned sha256) is a
 * larger class than any before, no faster. It does not lift the floor: the
 * chunks stay at the class from which the rate stopped rising (here
 * 1,310,720 items, 200 us + 1.2 ns an item), not the class above it, which
 * ran a batch as 5 to 7 chunks where 20 were 7% faster. */
START_TEST(test_knee_not_lifted_by_cut_claim) {
  const double a = 200e-6, c = 1.2e-9;
  mgpu__fit_t f = {0};
  for (double n = 81920; n <= 5242880; n *= 4) {
    mgpu__fit_claimed(&f, (size_t)n);
    if (n == 5242880) mgpu__fit_claimed(&f, 4 * (size_t)n);
    sample(&f, n, dev_time(a, c, n), false);
  }
  ck_assert(mgpu__fit_known(&f));
  size_t before = mgpu__fit_chunk(&f, 1e6, 2e-3, SIZE_MAX, true);
  sample(&f, 10661950, dev_time(a, c, 10661950), false);
  ck_assert(mgpu__fit_known(&f));
  size_t after = mgpu__fit_chunk(&f, 1e6, 2e-3, SIZE_MAX, true);
  printf("knee stays: chunks of %zu before the cut claim, %zu after\n", before, after);
  ck_assert_uint_eq(after, before);
  ck_assert_uint_lt(after, 5242880 / 2);
}
END_TEST

/* Chunks of nearly one size whose device times scatter, as overlapping
 * streams make them (pinned sha256 on one H200, from steal's trials: the
 * first batch's chunks, then chunks of 7.9 to 8.4 million items in 8.4 to
 * 10 ms): a line through them shows 4.3 ms of latency, and its saturating
 * size, 65 million items, is past the batch. Sized by it, every batch was
 * one solo chunk, the pipeline's fill unhidden (4.9e8 items/s, against 7.4e8
 * in chunks), and a solo chunk is not learnt while the chunks overlap, so
 * nothing corrected it for nine batches. The chunks stay below the batch. */
START_TEST(test_knee_ignores_scattered_latency) {
  const size_t range = 33554432;
  mgpu__fit_t f = {0};
  mgpu__fit_claimed(&f, 8386731);
  sample(&f, 8386731, 0.0177, true);
  mgpu__fit_claimed(&f, 33546924);
  sample_span(&f, 24826709, 0.0453, 0.050, false);
  sample(&f, 19880547, 0.0417, true);
  sample(&f, 13399961, 0.00929, false);
  sample(&f, 8386731, 0.0178, true);
  sample(&f, 8386731, 0.0100, false);
  sample(&f, 8386731, 0.0100, false);
  sample(&f, 7873540, 0.00841, false);
  printf("scattered latency: fit %.3g s + %.3g s/item, n_sat %.3g, known %d nprev %.0f\n",
         f.line.a, f.line.c, mgpu__fit_sat(&f), mgpu__fit_known(&f), f.knee.below.n);
  ck_assert_double_gt(mgpu__fit_sat(&f), (double)range);
  size_t n = mgpu__fit_chunk(&f, 1e6, 2e-3, range, true);
  ck_assert_uint_le(n, range / 2);
}
END_TEST

/* ----------------------------------------- the trials and the floor */

/* A first chunk past the knee (steal's first split gives a GPU a large
 * probe; pinned sha256 on one H200: 8,246,107 items solo in 17.5 ms, then
 * the rest of its range, 24,916,701 items, overlapped in 45.9 ms of device
 * time and 50 ms from its own start): no
 * size below the probe has run, so the rate "stopped rising" at the probe
 * without a knee measured. Chunks a step below it try a smaller size; on a
 * device with no latency (1.1 ns an item) each step runs as fast, and the
 * chunks come down to target_s of work, where GPU-only batches found them
 * (1.7e6 items, 8.0e8 items/s against 7.4e8 with chunks of the probe). A
 * latency-bound device (18 ms a launch, 0.25 us an item) probed past its
 * saturating size (648,000 items) runs the step below slower, and its
 * chunks go back to the probe's size once the trial's chunks have run, and
 * stay there. */
static size_t settle_below(mgpu__fit_t *f, double a, double c, int chunks) {
  size_t n = 0;
  for (int k = 0; k < chunks; k++) {
    n = mgpu__fit_chunk(f, 1e6, 2e-3, SIZE_MAX, true);
    mgpu__fit_claimed(f, n);
    sample(f, (double)n, dev_time(a, c, (double)n), false);
  }
  return mgpu__fit_chunk(f, 1e6, 2e-3, SIZE_MAX, true);
}

START_TEST(test_step_below_from_probe_past_knee) {
  const size_t probe = 8246107, step_below = probe / (size_t)MGPU_FIT_GROWTH;
  mgpu__fit_t f = {0};
  mgpu__fit_claimed(&f, probe);
  sample(&f, (double)probe, 0.0175, true);
  mgpu__fit_claimed(&f, 32984428);
  sample_span(&f, 24916701, 0.0459, 0.050, false);
  ck_assert(mgpu__fit_known(&f));
  ck_assert_uint_eq(mgpu__fit_chunk(&f, 1e6, 2e-3, SIZE_MAX, true), step_below);
  size_t n = settle_below(&f, 0, 1.1e-9, 12);
  printf("probe past the knee: chunks settle at %zu (target_s of work: %.0f)\n", n, 2e-3 / f.line.c);
  ck_assert_double_eq_tol((double)n, 2e-3 / f.line.c, 1.0);
  ck_assert_uint_lt(n, step_below); /* past the first step below */

  mgpu__fit_t g = {0};
  const double a = 18e-3, c = 0.25e-6, knee = 1e6;
  mgpu__fit_claimed(&g, (size_t)knee);
  sample(&g, knee, dev_time(a, c, knee), true);
  mgpu__fit_claimed(&g, (size_t)(MGPU_FIT_GROWTH * knee));
  sample(&g, MGPU_FIT_GROWTH * knee, dev_time(a, c, MGPU_FIT_GROWTH * knee), false);
  ck_assert(mgpu__fit_known(&g));
  const int trial = MGPU_FIT_TRIAL_SKIP + MGPU_FIT_TRIAL_CHUNKS;
  ck_assert_uint_eq(settle_below(&g, a, c, trial - 1), (size_t)(knee / MGPU_FIT_GROWTH));
  ck_assert_uint_eq(settle_below(&g, a, c, 1), (size_t)knee);
  ck_assert_uint_eq(settle_below(&g, a, c, 8), (size_t)knee);
}
END_TEST

/* Steal's first split on mulmod --intensity 10000 (one H200): its GPU's
 * first chunks, 67,033, 268,132 and 659,317 items, ran solo, and a solo
 * launch of 67,033 does not fill the device (0.4 ms of fill: 3.5e7 items/s
 * against 4.2e7 for 268,132). In flight on three streams, chunks of either
 * size run at 4.45e7, their spans three times their device time. The rise
 * between solo chunks does not make 268,132 the knee (which left steal's
 * batches of 10^6 items at 4 chunks, each batch's solo first chunk a
 * quarter of it): chunks a step below run overlapped at the same
 * throughput, and the chunks settle at target_s of work. On a device that
 * runs one chunk at a time (the emulated one), the launch latency is paid
 * overlapped too: the step below runs slower, and the knee stays. */
static const double rise_sizes[3] = {67033, 268132, 659317}, rise_rate = 4.45e7, rise_batch = 1e6;

static size_t solo_rise(double fill, double lat, double overlap, int batches, int *last_chunks,
                        mgpu__fit_knee_t *knee) {
  const double *g = rise_sizes, rate = rise_rate;
  mgpu__fit_t f = {0};
  grow_solo(&f, g[0], fill + g[0] / rate, g[1], fill + g[1] / rate, g[2]);
  sample(&f, g[2], fill + g[2] / rate, true);
  ck_assert(mgpu__fit_known(&f));
  for (int b = 0; b < batches; b++) {
    size_t left = (size_t)rise_batch;
    *last_chunks = 0;
    for (bool first = true; left > 0; first = false) {
      size_t n = MGPU_MIN(mgpu__fit_chunk(&f, 1e6, 2e-3, SIZE_MAX, true), left);
      mgpu__fit_claimed(&f, n);
      left -= n;
      ++*last_chunks;
      double t = (first ? fill : lat) + (double)n / rate;
      sample_span(&f, (double)n, t, first ? t : overlap * t, first);
    }
  }
  *knee = f.knee;
  return mgpu__fit_chunk(&f, 1e6, 2e-3, SIZE_MAX, true);
}

START_TEST(test_step_below_after_solo_rise) {
  const double target = 2e-3 * rise_rate; /* target_s of work */
  int chunks, serial_chunks;
  mgpu__fit_knee_t knee, serial_knee;
  size_t n = solo_rise(0.4e-3, 0, 3, 4, &chunks, &knee);
  size_t serial = solo_rise(1e-3, 1e-3, 1, 4, &serial_chunks, &serial_knee);
  printf("solo rise: chunks of %zu (%d a batch) in flight together, %zu (%d a batch) one at a time\n",
         n, chunks, serial, serial_chunks);
  ck_assert_double_eq_tol((double)n, target, 0.05 * target);
  ck_assert_int_ge(chunks, (int)(rise_batch / target) - 1);
  /* One at a time, the knee is the class the rate stopped rising from. */
  ck_assert_double_eq(serial_knee.below.n, rise_sizes[1]);
  ck_assert_uint_eq(serial, (size_t)serial_knee.below.n);
}
END_TEST

/* A device that runs one launch at a time, a s a launch and c an item:
 * its growth from 1 item to 4096, with chunks of queued_from and more queued
 * behind others (spans twice their times), so they look no faster than the
 * step below; then
 * batches of 8000 items, whose time comes back in *first and *last and whose
 * trials of the floor in *trials. The chunks after the growth come back in
 * *stuck, those it ends on as the return value. */
static const double queued_from = 256;

static size_t queued_batches(mgpu__fit_t *f, double a, double c, int batches, size_t *stuck, double *first,
                             double *last, int *trials) {
  mgpu__fit_claimed(f, 1);
  sample(f, 1, dev_time(a, c, 1), true);
  static const double growth[] = {4, 16, 16, 16, 64, 256, 256, 256, 1024, 4096};
  for (size_t i = 0; i < sizeof growth / sizeof growth[0]; i++) {
    double n = growth[i], t = dev_time(a, c, n);
    mgpu__fit_claimed(f, (size_t)n);
    sample_span(f, n, t, n >= queued_from ? 2 * t : t, false);
  }
  ck_assert(mgpu__fit_known(f));
  *stuck = mgpu__fit_chunk(f, 1e3, 2e-3, SIZE_MAX, true);
  uint64_t tag = 0;
  size_t n = 0;
  *trials = 0;
  for (int b = 0; b < batches; b++) {
    double rate, base, secs = 0;
    mgpu__fit_batch(f, ++tag, 8000, &rate, &base);
    *trials += f->batch.trial == MGPU_TRIAL_UP || f->batch.trial == MGPU_TRIAL_DOWN;
    for (size_t left = 8000; left > 0; left -= n) {
      n = MGPU_MIN(mgpu__fit_chunk(f, 1e3, 2e-3, SIZE_MAX, true), left);
      mgpu__fit_claimed(f, n);
      double t = dev_time(a, c, (double)n);
      mgpu__fit_batch_time(f, tag, (double)n, t);
      sample(f, (double)n, t, false);
      secs += t;
    }
    if (b == 0) *first = secs;
    *last = secs;
  }
  return mgpu__fit_chunk(f, 1e3, 2e-3, SIZE_MAX, true);
}

START_TEST(test_trial_up_lifts_queued_knee) {
  const double a = 0.4e-3, c = 22.2e-6;
  size_t stuck;
  double first, last;
  int trials;
  mgpu__fit_t f = {0};
  size_t n = queued_batches(&f, a, c, 24, &stuck, &first, &last, &trials);
  printf("queued knee: chunks of %zu at first (%.4f s a batch), %zu after 24 batches (%.4f s, %d trials); "
         "one launch %.4f s\n", stuck, first, n, last, trials, dev_time(a, c, 8000));
  ck_assert(f.knee.measured);
  ck_assert_double_eq(f.knee.below.n, queued_from / MGPU_FIT_GROWTH); /* the step under the queued sizes */
  ck_assert_uint_eq(stuck, (size_t)(2e-3 / c));                      /* target_s of work, over that knee */
  ck_assert_uint_ge(n, 4 * stuck);
  ck_assert_double_lt(last, 0.9 * first);
}
END_TEST

/* The same queued spans with a latency of 20 us, 1% of a chunk of target_s
 * of work: the line predicts no rise worth a trial, so none starts and the
 * chunks stay where the growth left them. A trial costs a batch of chunks
 * too large to overlap. */
START_TEST(test_no_trial_without_latency) {
  size_t stuck;
  double first, last;
  int trials;
  mgpu__fit_t f = {0};
  size_t n = queued_batches(&f, 20e-6, 22.2e-6, 24, &stuck, &first, &last, &trials);
  ck_assert_int_eq(trials, 0);
  ck_assert_uint_eq(n, stuck);
}
END_TEST

/* A divergent kernel's batch on a GPU, simulated: items in the first and
 * the last `cheap` cost lo seconds of the device's full throughput, the
 * others hi, and a
 * launch of n items keeps the device busy only where n reaches `fill` (its
 * slowest items hold it while the rest of the device idles), so it takes its
 * items' cost times max(1, sqrt(fill / n)); with fill 0 chunk sizes do not
 * matter. Each batch of n items runs its chunks from the front as the fit
 * sizes them; returns the batch's time, its chunks in *chunks, and the trial
 * judged at its first claim in *judged. */
typedef struct {
  mgpu__fit_t f;
  size_t n, cheap;
  double lo, hi, fill;
  uint64_t batch;
} div_dev_t;

static double div_batch(div_dev_t *d, int *chunks, mgpu__trial_t *judged) {
  double total = 0, rate, base;
  *chunks = 0;
  for (size_t pos = 0; pos < d->n;) {
    mgpu__trial_t j = mgpu__fit_batch(&d->f, d->batch + 1, d->n, &rate, &base);
    if (pos == 0) *judged = j;
    size_t k = mgpu__fit_chunk(&d->f, 1e4, 2e-3, SIZE_MAX, true);
    mgpu__fit_claimed(&d->f, k);
    k = MGPU_MIN(k, d->n - pos);
    size_t lo = (pos < d->cheap ? MGPU_MIN(d->cheap, pos + k) - pos : 0) +
                (pos + k > d->n - d->cheap ? pos + k - MGPU_MAX(pos, d->n - d->cheap) : 0);
    double t = ((double)lo * d->lo + (double)(k - lo) * d->hi) * (d->fill > (double)k ? sqrt(d->fill / (double)k) : 1);
    mgpu__fit_batch_time(&d->f, d->batch + 1, (double)k, t);
    sample_span(&d->f, (double)k, t, t, false);
    total += t;
    pos += k;
    ++*chunks;
  }
  d->batch++;
  return total;
}

/* Rows of an image whose first and last quarters are nearly free and the
 * middle dear, as mandelbrot's are: the first batch's chunks grow from cheap
 * rows into dear ones, whose rate falls a thousandfold, so single chunks
 * name a knee of a few rows, and 2 ms of work at the mean rate is a fraction
 * of the 128 rows that keep the device busy. Whole batches of larger chunks run faster, and
 * the floor trials keep them: from the eighth batch on, every batch but a
 * few trials runs within 10% of one launch of the whole batch (without
 * them, at 1.27 times its time, batch after batch). */
START_TEST(test_floor_kept_on_divergent_rows) {
  div_dev_t d = {.n = 512, .cheap = 128, .lo = 1e-7, .hi = 1e-4, .fill = 128};
  double whole = 256 * d.lo + 256 * d.hi;
  int chunks, kept = 0, trials = 0;
  mgpu__trial_t judged;
  for (int b = 0; b < 48; b++) {
    double t = div_batch(&d, &chunks, &judged);
    kept += judged == MGPU_TRIAL_UP && d.f.floor > 0;
    if (b < 10 || d.f.batch.trial != MGPU_TRIAL_NONE)
      printf("divergent rows, batch %d: %.4f s (one launch %.4f s) in %d chunks, trial judged %d, this batch's %d, "
             "floor %.0f\n", b, t, whole, chunks, judged, d.f.batch.trial, d.f.floor);
    if (b < 7) continue;
    if (d.f.batch.trial != MGPU_TRIAL_NONE) trials++;
    else ck_assert_msg(t <= 1.1 * whole, "batch %d: %.4f s against one launch's %.4f s", b, t, whole);
  }
  ck_assert_int_ge(kept, 1);
  ck_assert_double_ge(d.f.floor, d.fill); /* launches that keep the device busy */
  /* Down, from the fifth trial on, 16 then 32 batches apart. */
  ck_assert_int_le(trials, 3);
}
END_TEST

/* Where the size does not matter, a trial up runs a batch of larger chunks
 * that is no faster and is not kept; the trials back off, 16, 32, 64, ...
 * batches apart up to MGPU_FIT_BATCH_GAP_MAX. A batch of another size
 * starts them over: two plain batches, then a trial. Where items are alike
 * (their chunks' rates within a batch spread by less than
 * MGPU_FIT_BATCH_SPREAD), there is no trial at all. */
START_TEST(test_trials_back_off_when_not_kept) {
  div_dev_t flat = {.n = 400000, .lo = 1e-7, .hi = 1e-7};
  int chunks;
  mgpu__trial_t judged;
  for (int b = 0; b < 40; b++) {
    div_batch(&flat, &chunks, &judged);
    ck_assert_int_eq(flat.f.batch.trial == MGPU_TRIAL_UP || flat.f.batch.trial == MGPU_TRIAL_DOWN, 0);
  }
  div_dev_t d = {.n = 400000, .cheap = 100000, .lo = 1e-9, .hi = 1e-7};
  const int batches = 1100;
  uint64_t trials[12];
  int nt = 0;
  for (int b = 0; b < batches && nt < 12; b++) {
    div_batch(&d, &chunks, &judged);
    if (judged != MGPU_TRIAL_NONE) {
      ck_assert_int_eq(judged, MGPU_TRIAL_UP);
      trials[nt++] = d.f.trials.batch.seen - 1; /* the trial is the batch before this one */
    }
    ck_assert_double_eq(d.f.floor, 0);
  }
  /* The first trial comes within the first gap, and each next one at the
   * gap that doubles up to the cap, as long as the run lasts (the last batch
   * judged is the one before the run's last). */
  ck_assert_uint_lt(trials[0], MGPU_FIT_BATCH_GAP);
  int expect = 1;
  for (uint64_t at = trials[0], gap = MGPU_FIT_BATCH_GAP; at + gap <= (uint64_t)batches - 1; expect++) {
    at += gap;
    gap = MGPU_MIN(MGPU_FIT_BATCH_GAP_GROWTH * gap, (uint64_t)MGPU_FIT_BATCH_GAP_MAX);
  }
  ck_assert_int_eq(nt, expect);
  uint64_t gap = MGPU_FIT_BATCH_GAP;
  for (int i = 1; i < nt; i++) {
    ck_assert_uint_eq(trials[i] - trials[i - 1], gap);
    gap = MGPU_MIN(MGPU_FIT_BATCH_GAP_GROWTH * gap, (uint64_t)MGPU_FIT_BATCH_GAP_MAX);
  }
  /* Four times the size: the rates start over. */
  d.n *= 4;
  uint64_t from = d.f.trials.batch.seen;
  for (int b = 0; b < 4 && d.f.batch.trial != MGPU_TRIAL_UP; b++) div_batch(&d, &chunks, &judged);
  ck_assert_int_eq(d.f.batch.trial, MGPU_TRIAL_UP);
  ck_assert_uint_eq(d.f.trials.batch.seen - from, MGPU_FIT_BATCH_PLAIN + 1);
}
END_TEST

/* A floor that no longer pays (the kernel changed, and chunk sizes stopped
 * mattering) comes down: a batch of chunks a step under it runs as fast,
 * the step is kept, and the next one, until there is no floor. */
START_TEST(test_floor_comes_down_when_it_stops_paying) {
  div_dev_t d = {.n = 512, .cheap = 128, .lo = 1e-7, .hi = 1e-4, .fill = 128};
  int chunks, b;
  mgpu__trial_t judged;
  for (b = 0; b < 16; b++) div_batch(&d, &chunks, &judged);
  double high = d.f.floor;
  ck_assert_double_ge(high, d.fill);
  d.fill = 0;
  int downs = 0;
  for (b = 0; b < 600 && d.f.floor > 0; b++) {
    div_batch(&d, &chunks, &judged);
    downs += judged == MGPU_TRIAL_DOWN;
  }
  printf("floor %.0f down to %.0f in %d batches, %d trials down\n", high, d.f.floor, b, downs);
  ck_assert_double_eq(d.f.floor, 0);
  ck_assert_int_ge(downs, 1);
}
END_TEST

/* ------------------------------------------------------- CPU chunks */

/* A CPU worker's chunks are target_s of work at its mean rate, whatever its
 * chunks' times suggest of a latency: there it is items that differ in cost
 * (here the chunks of a dear stretch, 40 times the others), and chunks grown
 * to amortize it would leave the team less to balance. */
START_TEST(test_cpu_chunks_target_mean_rate) {
  const double prior = 1e4, target_s = 0.5e-3;
  const size_t probe = (size_t)(prior * target_s);
  mgpu__fit_t f = {0};
  ck_assert_uint_eq(mgpu__fit_chunk(&f, prior, target_s, SIZE_MAX, false), probe);
  mgpu__fit_claimed(&f, probe);
  for (int i = 0; i < 40; i++) mgpu__fit_add(&f, (double)probe, (i % 8 == 7 ? 40 : 1) * 1e-4 * (double)probe);
  size_t n = mgpu__fit_chunk(&f, prior, target_s, SIZE_MAX, false);
  ck_assert_uint_eq(n, MGPU_MAX((size_t)1, (size_t)(target_s * f.line.items / f.line.secs)));
  ck_assert_uint_le(n, probe);
  /* A GPU's fit of the same chunks would grow them. */
  ck_assert_uint_gt(mgpu__fit_chunk(&f, prior, target_s, SIZE_MAX, true), probe);
}
END_TEST

/* A CPU kernel with a fixed cost per call (1 ms of set-up: a plan, a table,
 * a scratch allocation) and 1e6 items/s after it. Chunks of target_s of work
 * at the mean rate, which holds that cost, shrink to one item, the worker
 * then doing 1e3 items/s; chunks of at least the saturating size (the cost a
 * tenth of a chunk's time) keep 9e5. */
START_TEST(test_cpu_chunks_amortize_cost_per_call) {
  mgpu__fit_t f = {0};
  const double a = 1e-3, c = 1e-6;
  size_t n = 0;
  for (int i = 0; i < 20; i++) {
    n = mgpu__fit_chunk(&f, 1e4, 0.5e-3, SIZE_MAX, false);
    mgpu__fit_claimed(&f, n);
    mgpu__fit_add(&f, (double)n, a + c * (double)n);
  }
  double rate = (double)n / (a + c * (double)n);
  printf("CPU chunks with a 1 ms fixed cost: %zu items, %.3g items/s; fit %.3g s + %.3g s/item\n",
         n, rate, f.line.a, f.line.c);
  ck_assert_double_ge(rate, 0.85 / c);
  /* Under a cap (a range's end), the cap. */
  ck_assert_uint_eq(mgpu__fit_chunk(&f, 1e4, 0.5e-3, 100, false), 100);
}
END_TEST

/* The same kernel from a prior of one item/s: every chunk is one item, one
 * call, and a line through one size cannot tell the call's cost from the
 * item's. One chunk in MGPU_FIT_CPU_TRY is MGPU_FIT_GROWTH items, whose
 * pieces (1 and 3 items) tell them apart; then the chunks are of the
 * saturating size. */
START_TEST(test_cpu_one_size_tries_larger_chunk) {
  mgpu__fit_t f = {0};
  const double a = 1e-3, c = 1e-6;
  for (int i = 0; i < MGPU_FIT_CPU_TRY; i++) {
    size_t n = mgpu__fit_chunk(&f, 1.0, 0.5e-3, SIZE_MAX, false);
    ck_assert_uint_eq(n, i == MGPU_FIT_CPU_TRY - 1 ? (size_t)MGPU_FIT_GROWTH : 1);
    mgpu__fit_claimed(&f, n);
    if (n == 1) {
      mgpu__fit_add(&f, 1, a + c);
    } else {
      const mgpu__call_t calls[2] = {{1, a + c}, {3, a + 3 * c}};
      mgpu__fit_sample(&f, &(mgpu__sample_t){.items = 4, .secs = 2 * a + 4 * c, .calls = calls, .ncalls = 2});
    }
  }
  /* The line finds the cost per call, and the chunks grow to its saturating
   * size at most MGPU_FIT_GROWTH^2 times the largest chunk at a step: 64,
   * 1024, then 9000 items. */
  size_t n = 0;
  for (int i = 0; i < 3; i++) {
    n = mgpu__fit_chunk(&f, 1.0, 0.5e-3, SIZE_MAX, false);
    printf("CPU chunks of one item, then a try of four: fit %.3g s + %.3g s/item, next %zu\n", f.line.a, f.line.c, n);
    mgpu__fit_claimed(&f, n);
    mgpu__fit_add(&f, (double)n, a + c * (double)n);
  }
  const double sat = MGPU_SAT_SHARE / (1 - MGPU_SAT_SHARE) * a / c; /* latency 1 - MGPU_SAT_SHARE of the time */
  ck_assert_double_eq_tol(mgpu__fit_sat(&f), sat, 1);
  ck_assert_uint_ge(n, (size_t)sat - 1);
}
END_TEST

/* The same CPU worker's chunks of three sizes, 5, 2 and 8 items, their items
 * dear (40 times) by position, one chunk in eight: the times scatter about
 * any line, and the chunks stay target_s of work at the mean rate. */
START_TEST(test_cpu_scattered_times_keep_mean_rate) {
  mgpu__fit_t f = {0};
  static const double sizes[3] = {5, 2, 8};
  for (int i = 0; i < 40; i++) {
    double k = sizes[i % 3];
    mgpu__fit_claimed(&f, (size_t)k);
    mgpu__fit_add(&f, k, (i % 8 == 7 ? 40 : 1) * 1e-4 * k);
  }
  size_t n = mgpu__fit_chunk(&f, 1e4, 0.5e-3, SIZE_MAX, false);
  printf("CPU chunks of three sizes, dear by position: fit %.3g s + %.3g s/item, next %zu\n", f.line.a, f.line.c, n);
  ck_assert_uint_eq(n, MGPU_MAX((size_t)1, (size_t)(0.5e-3 * f.line.items / f.line.secs)));
}
END_TEST

/* A CPU worker's first chunks on items of one cost (0.1 ms), timed with the
 * noise of a loaded machine (as measured under AddressSanitizer beside a
 * busy core): calls of 1 item in 0.12 to 0.21 ms, and one of 2 items in
 * 0.137 ms. A line through them shows a cost per call that is noise, and
 * its saturating size is thousands of items: one chunk of them would run
 * as one piece past any dear stretch ahead, which no other worker could
 * then take. A chunk that the line lifts past target_s of work grows at
 * most MGPU_FIT_GROWTH^2 times the largest chunk learnt from, and its time
 * corrects the line. */
START_TEST(test_cpu_noisy_probes_grow_bounded) {
  mgpu__fit_t f = {0};
  static const mgpu__call_t calls[4][2] = {
      {{1, 0.2133e-3}}, {{1, 0.1545e-3}, {1, 0.1743e-3}}, {{1, 0.1242e-3}, {1, 0.1420e-3}},
      {{1, 0.1428e-3}, {2, 0.1371e-3}}};
  static const int ncalls[4] = {1, 2, 2, 2};
  double largest = 0;
  for (int i = 0; i < 4; i++) {
    double items = 0, secs = 0;
    for (int j = 0; j < ncalls[i]; j++) items += calls[i][j].items, secs += calls[i][j].secs;
    largest = MGPU_MAX(largest, items);
    mgpu__fit_claimed(&f, (size_t)items);
    mgpu__fit_sample(&f, &(mgpu__sample_t){.items = items, .secs = secs, .calls = calls[i], .ncalls = ncalls[i]});
  }
  size_t n = mgpu__fit_chunk(&f, 1e4, 0.5e-3, SIZE_MAX, false);
  printf("CPU chunks after noisy probes: fit %.3g s + %.3g s/item, saturating size %.0f, next %zu\n",
         f.line.a, f.line.c, mgpu__fit_sat(&f), n);
  ck_assert_uint_le(n, (size_t)(MGPU_FIT_GROWTH * MGPU_FIT_GROWTH * largest));
  /* Its time, at the items' cost, leaves the line no cost per call worth a
   * larger chunk. */
  mgpu__fit_claimed(&f, n);
  mgpu__fit_add(&f, (double)n, 1e-4 * (double)n);
  ck_assert_uint_le(mgpu__fit_chunk(&f, 1e4, 0.5e-3, SIZE_MAX, false), n);
}
END_TEST

/* The CPU team's start: one start far over the mean (a worker descheduled)
 * moves it by a bounded amount; a start that stays longer is learnt. */
START_TEST(test_cpu_team_start_bounds_one_stall) {
  static mgpu_runtime_t rt;
  for (int i = 0; i < 40; i++) mgpu__start_cost_learn(&rt, 80e-6);
  ck_assert_double_eq_tol(mgpu__start_cost(&rt), 80e-6, 1e-9);
  mgpu__start_cost_learn(&rt, 10e-3);
  ck_assert_double_le(mgpu__start_cost(&rt), 80e-6 * (1 + MGPU_TEAM_START_WEIGHT * (MGPU_FIT_CLIP - 1)) + 1e-12);
  for (int i = 0; i < 60; i++) mgpu__start_cost_learn(&rt, 200e-6);
  ck_assert_double_eq_tol(mgpu__start_cost(&rt), 200e-6, 2e-6);
}
END_TEST

/* -------------------------------------------------------- the split */

/* Worker i's share of `items` by speed alone, before the leftover items. */
static size_t by_speed(const double *sp, int n, size_t items, int i) {
  double total = 0;
  for (int j = 0; j < n; j++) total += sp[j] > 0 ? sp[j] : 0;
  return (size_t)floor((double)items * (sp[i] / total));
}

/* Shares in proportion to speed; each leftover item goes to the worker that
 * would finish it first, the first of equals. */
START_TEST(test_split_by_speed_leftover_to_first_finisher) {
  size_t share[4];
  double sp[4] = {1, 1, 3, 3};
  mgpu__split(sp, NULL, NULL, 4, 1001, share);
  ck_assert_uint_eq(share[0] + share[1] + share[2] + share[3], 1001);
  ck_assert_uint_eq(share[2], by_speed(sp, 4, 1001, 2) + 1); /* the leftover item: the first fast worker */
  double one[3] = {1, 0, 2};
  mgpu__split(one, NULL, NULL, 3, 10, share);
  ck_assert_uint_eq(share[1], 0);
  ck_assert_uint_eq(share[0] + share[2], 10);
  /* 1:5000, 2000 items: the slow workers get nothing, not the remainder. */
  double tail[3] = {1, 1, 5000};
  mgpu__split(tail, NULL, NULL, 3, 2000, share);
  ck_assert_uint_eq(share[0], 0);
  ck_assert_uint_eq(share[1], 0);
  ck_assert_uint_eq(share[2], 2000);
  /* Many equal workers: remainder spread one each. */
  double eq[7] = {1, 1, 1, 1, 1, 1, 1};
  size_t s7[7];
  mgpu__split(eq, NULL, NULL, 7, 20, s7);
  for (int i = 0; i < 7; i++) ck_assert(s7[i] == by_speed(eq, 7, 20, i) || s7[i] == by_speed(eq, 7, 20, i) + 1);
  /* Counts near SIZE_MAX: the shares add up exactly, with no wrap (the test's
   * timeout catches a remainder loop of 2^64 steps). */
  size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 3 * 2, (size_t)1 << 63};
  double sp3[3] = {1, 3, 7};
  for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
    mgpu__split(sp3, NULL, NULL, 3, huge[h], share);
    ck_assert_uint_ge(share[2], share[1]);
    ck_assert_uint_ge(share[1], share[0]);
    ck_assert_uint_eq(share[0] + share[1], huge[h] - share[2]);
    mgpu__split(sp, NULL, NULL, 4, huge[h], share);
    ck_assert_uint_eq(share[0] + share[1] + share[2], huge[h] - share[3]);
  }
}
END_TEST

/* Latency counts against a worker's share: a GPU of 1e6 items/s whose
 * launch takes 18 ms, beside a CPU worker of 1000 items/s. Ten items: the
 * CPU worker finishes them in 10 ms, before the GPU could start, so the GPU
 * gets none. 100,000 items: both finish at T with 1000 T + 1e6 (T - 0.018)
 * = 100,000. */
START_TEST(test_split_counts_latency) {
  const double speed[2] = {1000, 1e6}, latency[2] = {0, 18e-3};
  size_t share[2];
  mgpu__split(speed, latency, NULL, 2, 10, share);
  ck_assert_uint_eq(share[0], 10); /* all of them */
  ck_assert_uint_eq(share[1], 0);
  mgpu__split(speed, latency, NULL, 2, 100000, share);
  double T = (100000 + 1e6 * 18e-3) / (1000 + 1e6);
  ck_assert_uint_eq(share[0] + share[1], 100000);
  ck_assert(share[0] >= (size_t)floor(1000 * T) && share[0] <= (size_t)floor(1000 * T) + 1);
  /* Zero latencies split as speeds alone do. */
  const double none[2] = {0, 0};
  size_t by_speed[2];
  mgpu__split(speed, none, NULL, 2, 100000, share);
  mgpu__split(speed, NULL, NULL, 2, 100000, by_speed);
  ck_assert_uint_eq(share[0], by_speed[0]);
  ck_assert_uint_eq(share[1], by_speed[1]);
  /* Three workers, the middle latency between the others' finish times. */
  const double s3[3] = {100, 100, 100}, l3[3] = {0, 0.5, 2};
  size_t sh3[3];
  mgpu__split(s3, l3, NULL, 3, 200, sh3);
  const double T3 = (200 + s3[1] * l3[1]) / (s3[0] + s3[1]); /* s0 T + s1 (T - l1) = 200, T < l2 */
  ck_assert_uint_eq(sh3[0], (size_t)floor(s3[0] * (T3 - l3[0])));
  ck_assert_uint_eq(sh3[1], (size_t)floor(s3[1] * (T3 - l3[1])));
  ck_assert_uint_eq(sh3[2], 0);
}
END_TEST

/* A latency-bound GPU beside one CPU worker (a 20 ms launch, 1e7 items/s
 * past it, chunks of 20,000 items: 9.1e5 items/s at that size, the latency
 * held in it) and a CPU worker at 1e5 items/s. Within one chunk the GPU's
 * time is 20 ms + s / 1e7, and a split that added the latency to the rate
 * that holds it already counted it twice: it predicted 37.8 ms for 20,000
 * items and gave the CPU worker 3,784 of them, 38 ms of its work beside a
 * GPU that ends in 22 ms. With the peak both end at 21.8 ms. Past one chunk
 * each chunk pays its latency, and the rate alone tells the time. */
START_TEST(test_split_counts_latency_once_with_peak) {
  const double a = 20e-3, peak_rate = 1e7, p = 20000, gpu = p / (a + p / peak_rate);
  const double speed[2] = {1e5, gpu}, latency[2] = {0, a}, peak[2] = {0, peak_rate};
  size_t share[2];
  mgpu__split(speed, latency, NULL, 2, 20000, share);
  printf("latency-bound GPU beside a CPU worker: the CPU worker's share %zu counting the latency twice\n", share[0]);
  const double T_twice = (20000 + gpu * a) / (1e5 + gpu); /* a + s / gpu for the GPU */
  ck_assert_uint_ge(share[0], (size_t)floor(1e5 * T_twice) - 1);
  mgpu__split(speed, latency, peak, 2, 20000, share);
  double T = (20000 + peak_rate * a) / (1e5 + peak_rate);
  printf("latency-bound GPU beside a CPU worker: the CPU worker's share %zu with the GPU's peak (T %.4f s)\n", share[0],
         T);
  ck_assert_uint_eq(share[0] + share[1], 20000);
  ck_assert(share[0] >= (size_t)floor(1e5 * T) - 1 && share[0] <= (size_t)floor(1e5 * T) + 1);
  ck_assert_double_eq_tol(mgpu__share_time(gpu, a, peak_rate, (double)share[1]), T, 1e-4);
  /* Past one chunk: the rate at the chunks' size, each chunk's latency in it. */
  ck_assert_double_eq_tol(mgpu__share_time(gpu, a, peak_rate, 5 * p), 5 * p / gpu, 1e-12);
  /* No peak, or one under the speed (a speed the split lowered): the plain line. */
  ck_assert_double_eq_tol(mgpu__share_time(gpu, a, 0, p), a + p / gpu, 1e-12);
  ck_assert_double_eq_tol(mgpu__share_time(gpu, a, gpu / 2, p), a + p / gpu, 1e-12);
}
END_TEST

/* GPUs of one kind measured within the tolerance of their median split as
 * equals; an outlier, other groups and CPU workers keep their speeds. */
START_TEST(test_split_pools_alike_gpus) {
  /* Workers: 2 CPUs (no group), 4 GPUs of group 2 (one at half speed, one
   * retired), 2 GPUs of group 6. */
  int group[8] = {-1, -1, 2, 2, 2, 2, 6, 6};
  const double given[8] = {10, 30, 1.00e6, 1.06e6, 0.5e6, 0, 2e6, 2.2e6};
  double sp[8];
  memcpy(sp, given, sizeof sp);
  mgpu__pool_alike(sp, group, 8, 0.2);
  ck_assert(sp[0] == given[0] && sp[1] == given[1]);
  /* Group 2's median is 1.00e6: 1.00e6 and 1.06e6 lie within 20% of it and
   * take their mean; 0.5e6 is half of it and keeps its own. */
  const double mean2 = (given[2] + given[3]) / 2, mean6 = (given[6] + given[7]) / 2;
  ck_assert(fabs(sp[2] - mean2) < 1 && fabs(sp[3] - mean2) < 1);
  ck_assert(sp[4] == given[4] && sp[5] == 0);
  ck_assert(fabs(sp[6] - mean6) < 1 && fabs(sp[7] - mean6) < 1);
  /* Alone in its group, or nobody within the tolerance: unchanged. */
  int two[2] = {0, 1};
  double apart[2] = {1e6, 1.1e6};
  mgpu__pool_alike(apart, two, 2, 0.2);
  ck_assert(apart[0] == 1e6 && apart[1] == 1.1e6);
  int one[2] = {0, 0};
  double far[2] = {1e6, 3e6};
  mgpu__pool_alike(far, one, 2, 0.2);
  ck_assert(far[0] == 1e6 && far[1] == 3e6);
  /* Four GPUs measured 249k-274k items/s (4 x H200, mulmod 10000): one speed. */
  int four[4] = {0, 0, 0, 0};
  double h200[4] = {2.60e5, 2.70e5, 2.74e5, 2.49e5};
  const double mean4 = (h200[0] + h200[1] + h200[2] + h200[3]) / 4;
  mgpu__pool_alike(h200, four, 4, 0.2);
  for (int i = 0; i < 4; i++) ck_assert(fabs(h200[i] - mean4) < 1e-3);
}
END_TEST

/* Which batches are short enough that each GPU's range goes in flight at
 * once (their GPUs split as equals). */
START_TEST(test_split_short_batch_all_in_flight) {
  /* 4 x H200 mulmod 10000: 4 GPUs at 4e7 items/s, 1 048 576 items: 6.6 ms,
   * under (3 + 1) chunks of 2 ms. */
  double h200[5] = {6e5, 4e7, 4e7, 4e7, 4e7};
  ck_assert(mgpu__ranges_in_flight(h200, 5, 1048576, 3));
  /* With one stream a GPU, 4 ms: not. */
  ck_assert(!mgpu__ranges_in_flight(h200, 5, 1048576, 1));
  /* mulmod 10: 67 108 864 items at 2e9 items/s in all, 34 ms: not. */
  double mm10[2] = {5e8, 1.5e9};
  ck_assert(!mgpu__ranges_in_flight(mm10, 2, 67108864, 3));
  /* Nothing measured or able: not. */
  double none[2] = {0, 0};
  ck_assert(!mgpu__ranges_in_flight(none, 2, 100, 3));
}
END_TEST

/* --------------------------------------------------------- stealing */

/* Whether s is equal finish: the largest whole share at which the thief,
 * with the speeds of v, ends no later than the owner (all of the range,
 * where it ends first even so). */
static bool equal_finish(const mgpu__steal_view_t *v, size_t s) {
  const mgpu__steal_side_t *t = &v->thief, *o = &v->owner;
  double x = (double)s;
  double thief = mgpu__share_time(t->speed, t->latency, t->peak, t->pending + x);
  double owner = mgpu__share_time(o->speed, o->latency, o->peak, o->pending + v->left - x);
  if (thief > owner * (1 + 1e-12)) return false;
  if (x >= v->left) return true;
  return mgpu__share_time(t->speed, t->latency, t->peak, t->pending + x + 1) >
         mgpu__share_time(o->speed, o->latency, o->peak, o->pending + v->left - x - 1);
}

/* The same view with the thief at another speed. */
static mgpu__steal_view_t thief_at(mgpu__steal_view_t v, double speed) {
  v.thief.speed = speed;
  return v;
}

/* How much a thief takes from a victim's range. */
START_TEST(test_steal_equal_finish_slow_thief_worst_case) {
  /* Equal speeds, nothing pending: half each. */
  mgpu__steal_view_t eq = {.thief = {.speed = 100}, .owner = {.speed = 100}, .left = 1000};
  ck_assert_uint_eq(mgpu__steal_share(&eq), (size_t)(eq.left / 2));
  /* A retired owner (speed 0) gives up the whole range. */
  mgpu__steal_view_t gone = {.thief = {.speed = 100}, .owner = {.speed = 0}, .left = 77};
  ck_assert_uint_eq(mgpu__steal_share(&gone), (size_t)gone.left);
  /* A CPU core (1e3 items/s) against a GPU (1e6 items/s) with 0.1 s of work
   * left: it plans with a quarter of its speed, so it takes what it finishes
   * in well under the GPU's time. */
  mgpu__steal_view_t far = {.thief = {.speed = 1e3}, .owner = {.speed = 1e6}, .left = 1e5};
  size_t far_take = mgpu__steal_share(&far);
  mgpu__steal_view_t quarter = thief_at(far, far.thief.speed / MGPU_SLOW_THIEF_MARGIN);
  ck_assert(equal_finish(&quarter, far_take));
  /* The slowest rate it has seen itself (an item of 50 ms) lowers that. */
  far.slowest = 20;
  mgpu__steal_view_t slowest = thief_at(far, far.slowest);
  ck_assert(equal_finish(&slowest, mgpu__steal_share(&far)));
  /* Another core of its kind once took 0.2 s over one item, more than the
   * owner has left: it takes nothing, though its own history says it could. */
  far.slowest = 0;
  far.worst_item_s = 0.2;
  ck_assert_uint_eq(mgpu__steal_share(&far), 0);
  /* With more left than that, the amount is as before: the worst item only
   * gates, it does not shrink the share of evenly costly work. */
  far.left = 1e6;
  mgpu__steal_view_t ungated = {.thief = {.speed = 1e3}, .owner = {.speed = 1e6}, .left = 1e6};
  ck_assert_uint_eq(mgpu__steal_share(&far), mgpu__steal_share(&ungated));
  /* Workers of similar speed are not gated by the worst item. */
  mgpu__steal_view_t near = {.thief = {.speed = 100}, .owner = {.speed = 200}, .left = 30, .worst_item_s = 10};
  ck_assert(equal_finish(&near, mgpu__steal_share(&near)));
}
END_TEST

/* A thief's latency counts against what it takes; an owner's latency (the
 * launch its range still needs) for. */
START_TEST(test_steal_counts_latency_and_peak) {
  /* A GPU thief whose launch takes 18 ms, a CPU owner with 5 ms left. */
  mgpu__steal_view_t gpu_thief = {.thief = {.speed = 1e6, .latency = 18e-3}, .owner = {.speed = 1e4}, .left = 50};
  ck_assert_uint_eq(mgpu__steal_share(&gpu_thief), 0);
  /* With 100 ms left it takes what levels both finish times. */
  gpu_thief.left = 1000;
  size_t got = mgpu__steal_share(&gpu_thief);
  double s = (1e6 * 1000 + 1e6 * 1e4 * (0 - 18e-3)) / (1e4 + 1e6);
  ck_assert_uint_eq(got, (size_t)floor(s));
  /* A CPU thief takes more of a GPU owner with 18 ms latency than of one
   * without. */
  mgpu__steal_view_t from_gpu = {.thief = {.speed = 1e4}, .owner = {.speed = 1e5}, .left = 1e4};
  size_t plain = mgpu__steal_share(&from_gpu);
  from_gpu.owner.latency = 18e-3;
  ck_assert_uint_gt(mgpu__steal_share(&from_gpu), plain);
  /* A GPU owner with a peak: its speed at its chunk size (2e5 items/s, a
   * launch of 4,096 items in 20.4 ms) holds the 20 ms latency, and its time
   * for N items is max(20 ms + N / 1e7, N / 2e5). With 12,288 items to go,
   * the CPU thief at 1e5 items/s levels both at 4,096 (adding the latency
   * on top of the chunk rate gave 5,429). */
  mgpu__steal_view_t peaked = {.thief = {.speed = 1e5},
                               .owner = {.speed = 2e5, .latency = 20e-3, .peak = 1e7, .pending = 4096},
                               .left = 8192};
  ck_assert(equal_finish(&peaked, mgpu__steal_share(&peaked)));
  /* With only part of one launch left, the owner still needs its 20 ms: the
   * thief takes every item it finishes by then, here all of them. */
  mgpu__steal_view_t one_launch = {.thief = {.speed = 1e5}, .owner = {.speed = 2e5, .latency = 20e-3, .peak = 1e7},
                                   .left = 2000};
  ck_assert_uint_eq(mgpu__steal_share(&one_launch), (size_t)one_launch.left);
  one_launch.left = 4000; /* s / 1e5 = 20 ms + (4,000 - s) / 1e7: s = 2,019.8 */
  ck_assert(equal_finish(&one_launch, mgpu__steal_share(&one_launch)));
  /* A GPU thief's peak counts likewise: at 5 ms a launch, 1e6 items/s past
   * it and 1e5 at its chunk size, against a CPU owner at 1e4 items/s with
   * 1,000 left: max(5 ms + s / 1e6, s / 1e5) = (1,000 - s) / 1e4 at s = 909,
   * where s / 1e5 binds (5 ms + s / 1e5 gave 863). */
  mgpu__steal_view_t gpu_peak = {.thief = {.speed = 1e5, .latency = 5e-3, .peak = 1e6}, .owner = {.speed = 1e4},
                                 .left = 1000};
  ck_assert(equal_finish(&gpu_peak, mgpu__steal_share(&gpu_peak)));
}
END_TEST

/* A share in whole items, where rounding must not lose one. */
static size_t whole(double s) { return (size_t)floor(s + MGPU_ITEM_ROUNDING); }

/* How much a rank takes from another rank's range. */
START_TEST(test_rank_steal_equal_finish_minus_transfer) {
  /* Equal ranks, free transfers: half each. */
  mgpu__rank_steal_view_t eq = {.thief = {.speed = 1000}, .owner = {.speed = 1000}, .left = 1000};
  ck_assert_uint_eq(mgpu__rank_steal_share(&eq), whole(eq.left / 2));
  /* The owner has 400 items running: the thief takes half of those and the
   * 1000 left, so both end together. */
  eq.owner.running = 400;
  ck_assert_uint_eq(mgpu__rank_steal_share(&eq), whole((eq.owner.running + eq.left) / 2));
  /* A thief four times the owner's speed takes four fifths. */
  mgpu__rank_steal_view_t fast = {.thief = {.speed = 4000}, .owner = {.speed = 1000}, .left = 1000};
  ck_assert_uint_eq(mgpu__rank_steal_share(&fast), whole(fast.left * 4 / 5));
  /* Moving an item's 1 KB at 10 MB/s costs 0.1 ms, a tenth of computing it:
   * equal finish at (left - s) / vo = s (1 / vt + bytes / bw). */
  mgpu__rank_steal_view_t slow_net = {.thief = {.speed = 1000}, .owner = {.speed = 1000}, .left = 1000,
                                      .bytes_per_item = 1000, .bw = 1e7};
  const double per_item = 1 / slow_net.thief.speed + slow_net.bytes_per_item / slow_net.bw;
  ck_assert_uint_eq(mgpu__rank_steal_share(&slow_net), whole(slow_net.left / (1 + slow_net.owner.speed * per_item)));
  /* At 1 MB/s the transfer costs as much as the work (s = 333): it would
   * save the owner 0.333 s for 0.333 s of transfer, under
   * MGPU_RANK_STEAL_GAIN times the cost, so it takes none. */
  slow_net.bw = 1e6;
  ck_assert_uint_eq(mgpu__rank_steal_share(&slow_net), 0);
  /* A fixed cost of 0.05 s: the share shrinks to (1 - 0.05) / 2 s of work. */
  mgpu__rank_steal_view_t fixed = {.thief = {.speed = 1000}, .owner = {.speed = 1000}, .left = 1000, .fixed_s = 0.05};
  ck_assert_uint_eq(mgpu__rank_steal_share(&fixed), whole((fixed.left - fixed.owner.speed * fixed.fixed_s) / 2));
  /* With a few items left, a fixed cost over a quarter of the steal's work
   * takes nothing: the tail stays with its owner. */
  mgpu__rank_steal_view_t tail = {.thief = {.speed = 1000}, .owner = {.speed = 1000}, .left = 40, .fixed_s = 0.01};
  ck_assert_uint_eq(mgpu__rank_steal_share(&tail), 0);
  /* A thief that ends later than the owner even with nothing taken. */
  mgpu__rank_steal_view_t busy = {.thief = {.speed = 1000, .running = 500}, .owner = {.speed = 1000}, .left = 100};
  ck_assert_uint_eq(mgpu__rank_steal_share(&busy), 0);
  /* Two more idle ranks of the thief's speed will take their part next:
   * four equal ranks share the 1000 items, a quarter each. */
  double ov[2] = {1000, 1000}, op[2] = {0, 0};
  mgpu__rank_steal_view_t team = {.thief = {.speed = 1000}, .owner = {.speed = 1000}, .left = 1000, .nothers = 2,
                                  .others_speed = ov, .others_running = op};
  ck_assert_uint_eq(mgpu__rank_steal_share(&team), whole(team.left / 4));
  /* One of them still has 500 items running: it starts 0.5 s later, and the
   * four share those and the 1000 left. */
  op[1] = 500;
  ck_assert_uint_eq(mgpu__rank_steal_share(&team), whole((team.left + op[1]) / 4));
  /* Unknown speeds, nothing left: none. */
  mgpu__rank_steal_view_t none = {.thief = {.speed = 0}, .owner = {.speed = 1000}, .left = 100};
  ck_assert_uint_eq(mgpu__rank_steal_share(&none), 0);
  none.thief.speed = 1000, none.left = 0;
  ck_assert_uint_eq(mgpu__rank_steal_share(&none), 0);
}
END_TEST

/* ---------------------------------------------------- cost profiles */

/* A profile of n = 4096 items whose cost is c(j) in bin j. */
static void prof_fill(double *prof, int peak) {
  for (int j = 0; j < MGPU_PROF_BINS; j++) {
    double x = (j + 0.5 - MGPU_PROF_BINS / 2.0) / (0.15 * MGPU_PROF_BINS);
    prof[j] = 1e-6 * (1 + (peak - 1) * exp(-x * x));
  }
}

START_TEST(test_profile_bins_cover_batch) {
  /* Bins cover [0, n) in order, for small n, n not a multiple of the bin
   * count, and n near the top of size_t (no overflow). */
  const size_t ns[] = {1, 5, 127, 128, 4096, 1000003, SIZE_MAX - 3};
  for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
    size_t n = ns[k];
    ck_assert_uint_eq(mgpu__prof_lo(n, 0), 0);
    for (int j = 1; j < MGPU_PROF_BINS; j++) ck_assert(mgpu__prof_lo(n, j) >= mgpu__prof_lo(n, j - 1));
    ck_assert(mgpu__prof_lo(n, MGPU_PROF_BINS - 1) < n);
    ck_assert_uint_eq(mgpu__prof_lo(n, MGPU_PROF_BINS), n); /* the end of the last bin */
    if (n >= MGPU_PROF_BINS) ck_assert(mgpu__prof_lo(n, 1) > 0);
  }
  ck_assert_uint_eq(mgpu__prof_lo(SIZE_MAX - 3, MGPU_PROF_BINS / 2), (SIZE_MAX - 3) / 2);
  /* A chunk's seconds and items land in the bins it covers, in proportion:
   * items first..first+count-1 cover the end of bin 0, bins 1 to 3 and the
   * start of bin 4. */
  const size_t n = 4096, w = n / MGPU_PROF_BINS, first = 30, count = 100;
  const double secs = 1.0;
  double t[MGPU_PROF_BINS] = {0}, it[MGPU_PROF_BINS] = {0};
  mgpu__prof_add(t, it, n, first, count, secs);
  double st = 0, si = 0;
  for (int j = 0; j < MGPU_PROF_BINS; j++) st += t[j], si += it[j];
  ck_assert_double_eq_tol(st, secs, 1e-12);
  ck_assert_double_eq_tol(si, (double)count, 1e-12);
  ck_assert_double_eq_tol(it[0], (double)(w - first), 1e-12);
  ck_assert_double_eq_tol(it[1], (double)w, 1e-12);
  ck_assert_double_eq_tol(it[4], (double)(first + count - 4 * w), 1e-12);
  ck_assert_double_eq_tol(t[1], secs * (double)w / (double)count, 1e-12);
  ck_assert_double_eq(it[5], 0);
  const size_t last = n - 6;
  mgpu__prof_add(t, it, n, last, 50, secs); /* clipped at n */
  ck_assert_double_eq_tol(it[MGPU_PROF_BINS - 1], (double)(n - last), 1e-12);
}
END_TEST

START_TEST(test_profile_cuts_only_smooth_spread_cost) {
  const size_t n = 4096, w = n / MGPU_PROF_BINS, untouched = 7;
  double prof[MGPU_PROF_BINS];
  size_t cut[4] = {untouched, untouched, untouched, untouched};
  /* Alike items, or noise: no cut (the speeds split them). */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = 1e-6;
  ck_assert(!mgpu__prof_cuts(prof, n, 0, 2, cut));
  uint64_t rs = 7;
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = 1e-6 * (1 + (double)(mgpu_test_rand(&rs) % 1000) / 1000);
  ck_assert(!mgpu__prof_cuts(prof, n, 0, 2, cut));
  /* A few dear bins, as the odd slow chunk leaves: no cut either. */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = j % 40 == 3 ? 2e-5 : 1e-6;
  ck_assert(!mgpu__prof_cuts(prof, n, 0, 2, cut));
  ck_assert_uint_eq(cut[0], untouched);
  /* Smooth but mild (2x): no cut. */
  prof_fill(prof, 2);
  ck_assert(!mgpu__prof_cuts(prof, n, 0, 2, cut));
  /* A 30x peak in the middle: two parts meet in the middle, and four parts
   * have equal cost, each within one item's cost. */
  prof_fill(prof, 30);
  ck_assert(mgpu__prof_cuts(prof, n, 0, 2, cut));
  ck_assert_uint_eq(cut[0] + cut[1], n);
  ck_assert_uint_le(cut[0] > n / 2 ? cut[0] - n / 2 : n / 2 - cut[0], 1);
  ck_assert(mgpu__prof_cuts(prof, n, 100, 4, cut));
  size_t at = 100;
  double total = 0, part[4];
  for (int p = 0; p < 4; p++) {
    part[p] = 0;
    for (size_t i = at; i < at + cut[p]; i++) part[p] += prof[i / w];
    total += part[p];
    at += cut[p];
  }
  ck_assert_uint_eq(at, n);
  double dearest = 0; /* an item's cost at most */
  for (int j = 0; j < MGPU_PROF_BINS; j++) dearest = MGPU_MAX(dearest, prof[j]);
  for (int p = 0; p < 4; p++) ck_assert_double_eq_tol(part[p], total / 4, dearest);
  /* The outer parts, over cheap items, have more of them. */
  ck_assert_uint_gt(cut[0], 2 * cut[1]);
  /* A bin not learnt: no cut. */
  prof[100] = 0;
  ck_assert(!mgpu__prof_cuts(prof, n, 0, 2, cut));
  /* ...unless it lies before the part to cut. */
  prof_fill(prof, 30);
  prof[2] = 0;
  ck_assert(mgpu__prof_cuts(prof, n, 3 * w, 2, cut));
  ck_assert(!mgpu__prof_cuts(prof, n, 3 * w - 1, 2, cut));
}
END_TEST

START_TEST(test_profile_learns_per_item_cost) {
  mgpu__model_t m = {0};
  double prof[MGPU_PROF_BINS] = {0};
  m.prof = prof;
  double sums[2 * 2 * MGPU_PROF_BINS] = {0};
  /* Two GPUs' rows: the first did bins 0..63 at c1 an item, the second
   * bins 32..127 at c2 an item. */
  const size_t n = 4096;
  const double c1 = 1e-6, c2 = 3e-6, c3 = 5e-6, B = MGPU_PROF_BLEND;
  mgpu__prof_add(sums, sums + MGPU_PROF_BINS, n, 0, n / 2, (double)(n / 2) * c1);
  mgpu__prof_add(sums + 2 * MGPU_PROF_BINS, sums + 3 * MGPU_PROF_BINS, n, n / 4, 3 * n / 4, (double)(3 * n / 4) * c2);
  mgpu__prof_learn(&m, n, sums, 2);
  ck_assert_uint_eq(m.prof_n, n);
  ck_assert_double_eq_tol(prof[0], c1, 1e-15);
  ck_assert_double_eq_tol(prof[40], (c1 + c2) / 2, 1e-15); /* both: the mean per item */
  ck_assert_double_eq_tol(prof[100], c2, 1e-15);
  /* The next batch moves each bin MGPU_PROF_BLEND of the way to what it measured. */
  memset(sums, 0, sizeof sums);
  mgpu__prof_add(sums, sums + MGPU_PROF_BINS, n, 0, n, (double)n * c3);
  mgpu__prof_learn(&m, n, sums, 2);
  ck_assert_double_eq_tol(prof[0], (1 - B) * c1 + B * c3, 1e-15);
  ck_assert_double_eq_tol(prof[100], (1 - B) * c2 + B * c3, 1e-15);
  /* A batch no GPU worked on (all zero sums) changes nothing, even of
   * another size. */
  memset(sums, 0, sizeof sums);
  mgpu__prof_learn(&m, 1000, sums, 2);
  ck_assert_uint_eq(m.prof_n, n);
  ck_assert_double_eq_tol(prof[0], (1 - B) * c1 + B * c3, 1e-15);
  /* Another batch size starts over: a bin's cost is its seconds per item. */
  memset(sums, 0, sizeof sums);
  mgpu__prof_add(sums, sums + MGPU_PROF_BINS, 1000, 0, 10, 1e-3);
  mgpu__prof_learn(&m, 1000, sums, 2);
  ck_assert_uint_eq(m.prof_n, 1000);
  ck_assert_double_eq_tol(prof[0], 1e-3 / 10, 1e-15);
  ck_assert_double_eq(prof[100], 0);
}
END_TEST

/* A batch's cost by position: its running cost and inverse, chunks of equal
 * cost and the share a GPU steals by cost, and the window that keeps a bin
 * learnt too cheap from sizing chunks. */
START_TEST(test_cost_chunks_and_steals_by_cost) {
  static mgpu__cost_t c;
  double prof[MGPU_PROF_BINS];
  const size_t n = 1280; /* bins of 10 items */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = 1e-6;
  mgpu__cost_init(&c, prof, n);
  for (size_t x = 0; x <= n; x++) {
    ck_assert_double_eq_tol(mgpu__cost_at(&c, x), 1e-6 * (double)x, 1e-15);
    ck_assert_uint_eq(mgpu__cost_find(&c, mgpu__cost_at(&c, x)), x);
  }
  ck_assert_uint_eq(mgpu__cost_chunk(&c, 100, 37), 37); /* flat: items are items */
  /* Even: both end together, the thief with what it has in flight and its
   * take, the owner with the rest of its range and what it has in flight. */
  const double thief_s = 100e-6, owner_s = 100e-6, range_s = (800 - 500) * 1e-6;
  ck_assert_uint_eq(mgpu__cost_steal(&c, 500, 800, thief_s, owner_s),
                    (size_t)llround((owner_s + range_s - thief_s) / 2 / 1e-6));
  ck_assert_uint_eq(mgpu__cost_steal(&c, 500, 800, owner_s + range_s, owner_s), 0); /* the tail rule */
  /* Cheap first half, ten times dearer second half: the window of
   * MGPU_COST_REACH bins each way makes the last cheap bins dear too. */
  for (int j = 0; j < MGPU_PROF_BINS; j++) prof[j] = j < 64 ? 1e-6 : 1e-5;
  mgpu__cost_init(&c, prof, n);
  ck_assert_double_eq_tol(c.per[64 - MGPU_COST_REACH - 1], 1e-6, 1e-18);
  ck_assert_double_eq_tol(c.per[64 - MGPU_COST_REACH], 1e-5, 1e-18);
  size_t edge = 10 * (64 - MGPU_COST_REACH);
  double avg = mgpu__cost_at(&c, n) / (double)n;
  /* A chunk of 100 average items from 0: the fewest cheap items that cost 100 * avg. */
  ck_assert_uint_eq(mgpu__cost_chunk(&c, 0, 100), (size_t)ceil(100 * avg / 1e-6 - 1e-9));
  /* From the edge on, a tenth as many items as cheap ones. */
  ck_assert_uint_eq(mgpu__cost_chunk(&c, edge, 100), (size_t)ceil(100 * avg / 1e-5 - 1e-9));
  ck_assert_uint_eq(mgpu__cost_chunk(&c, n - 1, 100), 1); /* at least one */
  /* Stealing from [0, n) with nothing in flight: half the cost, from the back. */
  size_t take = mgpu__cost_steal(&c, 0, n, 0, 0);
  double half = mgpu__cost_at(&c, n) / 2;
  ck_assert_double_le(mgpu__cost_at(&c, n) - mgpu__cost_at(&c, n - take), half + 1e-12);
  ck_assert_double_gt(mgpu__cost_at(&c, n) - mgpu__cost_at(&c, n - take - 1), half);
  /* Never past the range, whatever the rounding: tiny and huge costs, shares
   * of an item or less (a steal past the owner's end computed items twice). */
  uint64_t rng = 7;
  for (int trial = 0; trial < 20000; trial++) {
    size_t m = 128 + mgpu_test_rand(&rng) % 100000;
    for (int j = 0; j < MGPU_PROF_BINS; j++)
      prof[j] = (mgpu_test_rand(&rng) % 4 == 0 ? 1e-12 : 1e-6) * (1 + (double)(mgpu_test_rand(&rng) % 1000));
    mgpu__cost_init(&c, prof, m);
    size_t b0 = mgpu_test_rand(&rng) % m, b1 = b0 + 1 + mgpu_test_rand(&rng) % (m - b0);
    double left = mgpu__cost_at(&c, b1) - mgpu__cost_at(&c, b0);
    double po = left * (double)(mgpu_test_rand(&rng) % 3);
    double pt = po + left * (1 - 1e-12 * (double)(mgpu_test_rand(&rng) % 8));
    size_t tk = mgpu__cost_steal(&c, b0, b1, pt, po);
    if (tk > b1 - b0) ck_abort_msg("took %zu of [%zu, %zu) of %zu", tk, b0, b1, m);
    size_t ch = mgpu__cost_chunk(&c, b0, 1 + mgpu_test_rand(&rng) % 1000);
    ck_assert_uint_ge(ch, 1);
    ck_assert_uint_le(ch, m - b0 > 0 ? MGPU_MAX(m - b0, (size_t)1) : 1);
    size_t x = mgpu_test_rand(&rng) % (m + 1);
    ck_assert_uint_le(mgpu__cost_find(&c, mgpu__cost_at(&c, x)), x);
  }
}
END_TEST

/* ------------------------------------------------------ the reserve */

/* The reserve's ways, short, and the sets of them offered. */
enum {
  IN = MGPU_RESERVE_ALL_IN,
  QUARTER = MGPU_RESERVE_QUARTER_OUT,
  HALF = MGPU_RESERVE_HALF_OUT,
  CPUS = MGPU_RESERVE_CPUS_OUT
};
#define WAY(l) (1u << (l))
static const unsigned two_ways = WAY(IN) | WAY(QUARTER), with_cpus_out = WAY(IN) | WAY(QUARTER) | WAY(CPUS),
                      with_half = WAY(IN) | WAY(QUARTER) | WAY(HALF),
                      cpu_ways = WAY(IN) | WAY(QUARTER) | WAY(HALF) | WAY(CPUS);

/* MGPU_RESERVE_THREADS=auto, the choice alone: warm-up with the reserve out
 * (not timed), two timed batches each way by turns, then the faster by the
 * best of each way's last MGPU_RESERVE_KEEP, with the other timed again every
 * MGPU_RESERVE_REFRESH-th batch; a batch size more than twice off starts
 * again. Offered none and a quarter only (two_ways). */
START_TEST(test_reserve_two_ways_trials_then_fastest) {
  mgpu__model_t m;
  memset(&m, 0, sizeof m);
  bool rec;
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), QUARTER);
  ck_assert(!rec);
  const int trial[4] = {QUARTER, IN, QUARTER, IN};
  const double rate[4] = {100, 120, 130, 90}; /* reserve best 130, none best 120 */
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), trial[i]);
    ck_assert(rec);
    mgpu__reserve_learn(&m, trial[i], rate[i]);
  }
  for (int k = 1 + 4; k < MGPU_RESERVE_REFRESH; k++)
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1500, two_ways, &rec), QUARTER);
  /* The refresh times no reserve again: 140 beats the reserve's best. */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), IN);
  mgpu__reserve_learn(&m, IN, 140);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), IN);
  /* Within 1% the reserve does not win: every worker stays in. */
  mgpu__reserve_learn(&m, QUARTER, 141); /* the reserve's best is 141 */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), IN);
  mgpu__reserve_learn(&m, QUARTER, 142);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), QUARTER);
  /* Each way keeps its last MGPU_RESERVE_KEEP times: the reserve's fall to
   * 100 shows once its 141 and 142 are gone. */
  for (int i = 0; i < MGPU_RESERVE_KEEP - 1; i++) {
    mgpu__reserve_learn(&m, QUARTER, 100);
    ck_assert(mgpu__reserve_score(&m, QUARTER) == 142);
  }
  mgpu__reserve_learn(&m, QUARTER, 100);
  ck_assert(mgpu__reserve_score(&m, QUARTER) == 100);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), IN);
  /* However long a way is timed, its count stays bounded (no overflow) and
   * its oldest time is still the one replaced. */
  for (int i = 0; i < 1000; i++) {
    mgpu__reserve_learn(&m, IN, i == 1000 - MGPU_RESERVE_KEEP + 1 ? 150 : 140);
    ck_assert_int_lt(m.reserve_runs[IN], 2 * MGPU_RESERVE_KEEP);
    if (i >= MGPU_RESERVE_KEEP) ck_assert_int_ge(m.reserve_runs[IN], MGPU_RESERVE_KEEP);
  }
  ck_assert(mgpu__reserve_score(&m, IN) == 150); /* the last but KEEP - 2 */
  mgpu__reserve_learn(&m, IN, 140);
  ck_assert(mgpu__reserve_score(&m, IN) == 150); /* the oldest kept */
  mgpu__reserve_learn(&m, IN, 140);
  ck_assert(mgpu__reserve_score(&m, IN) == 140); /* gone */
  /* Five times larger: both ways are tried again. */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 5000, two_ways, &rec), QUARTER);
  ck_assert(rec);
  ck_assert_int_eq(m.reserve_runs[IN] + m.reserve_runs[QUARTER], 0);
  mgpu__reserve_learn(&m, QUARTER, 10);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 5000, two_ways, &rec), IN);
  mgpu__reserve_learn(&m, IN, 0); /* no time: not learnt */
  ck_assert_int_eq(m.reserve_runs[IN], 0);
  mgpu__reserve_learn(&m, MGPU_RESERVE_LEVELS, 10); /* no such way */
  ck_assert_int_eq(m.reserve_runs[IN] + m.reserve_runs[QUARTER] + m.reserve_runs[HALF] + m.reserve_runs[CPUS], 1);
  /* None and a quarter are always offered. */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 5000, 0x0, &rec), IN);
}
END_TEST

/* More ways: none, a quarter and all out (with_cpus_out), or all four (cpu_ways): warm-up,
 * then two trials each by turns, the fastest kept, and the refresh batches
 * take the others in turn, fewer workers out first. */
START_TEST(test_reserve_more_ways_by_turns) {
  mgpu__model_t m;
  memset(&m, 0, sizeof m);
  bool rec;
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), QUARTER);
  ck_assert(!rec);
  const int trial[6] = {QUARTER, IN, CPUS, QUARTER, IN, CPUS};
  const double rate[6] = {100, 110, 150, 105, 120, 140}; /* best: all out, 150 */
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), trial[i]);
    ck_assert(rec);
    mgpu__reserve_learn(&m, trial[i], rate[i]);
  }
  for (int k = 1 + 6; k < MGPU_RESERVE_REFRESH; k++)
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), CPUS);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), QUARTER); /* refresh 1: the first other way */
  for (int k = MGPU_RESERVE_REFRESH + 1; k < 2 * MGPU_RESERVE_REFRESH; k++)
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), CPUS);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), IN); /* refresh 2: the second */
  /* Offered only two ways now, it keeps the better of those (none, 120). */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), IN);
  /* Within 1% of a way with fewer workers out, more out does not win. */
  memset(&m, 0, sizeof m);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), QUARTER);
  const double close[6] = {100, 100, 100.5, 100, 100, 100.5};
  for (int i = 0; i < 6; i++) mgpu__reserve_learn(&m, mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), close[i]);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_cpus_out, &rec), IN);
  /* A way offered late (all out) is timed twice before the choice. */
  memset(&m, 0, sizeof m);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, with_half, &rec), QUARTER);
  for (int i = 0; i < 6; i++) mgpu__reserve_learn(&m, mgpu__reserve_pick(&m, 1000, with_half, &rec), 100 + i);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), CPUS);
  mgpu__reserve_learn(&m, CPUS, 50);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), CPUS);
  mgpu__reserve_learn(&m, CPUS, 60);
  /* none 104, a quarter 103, half 105 (not 1% over 104), all 60 */
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), IN);
  /* All four: trials QUARTER, IN, HALF, CPUS by turns; half out the fastest
   * is kept, and the refresh batches take the others in turn. */
  memset(&m, 0, sizeof m);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), QUARTER);
  const int trial4[8] = {QUARTER, IN, HALF, CPUS, QUARTER, IN, HALF, CPUS};
  const double rate4[8] = {100, 90, 130, 110, 105, 95, 125, 100};
  for (int i = 0; i < 8; i++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), trial4[i]);
    mgpu__reserve_learn(&m, trial4[i], rate4[i]);
  }
  ck_assert_int_eq(1 + 8, MGPU_RESERVE_TRIALS);
  for (int k = MGPU_RESERVE_TRIALS; k < MGPU_RESERVE_REFRESH; k++)
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), HALF);
  /* k = 16, 32, 64, 128 (the choice stays, so the gap doubles): the others
   * {IN, QUARTER, CPUS} by turns from the second. */
  const int refresh[4] = {QUARTER, CPUS, IN, QUARTER};
  for (int r = 0; r < 4; r++) {
    ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), refresh[r]);
    for (int k = 1; k < MGPU_RESERVE_REFRESH << r; k++)
      ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, cpu_ways, &rec), HALF);
  }
}
END_TEST

/* The refresh backs off while the choice stands: the gap between refresh
 * batches doubles from MGPU_RESERVE_REFRESH to MGPU_RESERVE_REFRESH_MAX each
 * time a refresh finds the same way fastest as the last one, and starts
 * again from MGPU_RESERVE_REFRESH once the fastest way changes, or the batch
 * size starts the trials again. */
static uint64_t next_refresh(mgpu__model_t *m, int keep, double keep_rate, double other_rate) {
  bool rec;
  for (;;) {
    uint64_t k = m->reserve_batches;
    int way = mgpu__reserve_pick(m, 1000, two_ways, &rec);
    mgpu__reserve_learn(m, way, way == keep ? keep_rate : other_rate);
    if (way != keep) return k;
  }
}

START_TEST(test_reserve_refresh_gap_doubles) {
  mgpu__model_t m;
  memset(&m, 0, sizeof m);
  bool rec;
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), QUARTER);
  for (int i = 0; i < 4; i++) {
    int way = mgpu__reserve_pick(&m, 1000, two_ways, &rec);
    mgpu__reserve_learn(&m, way, way == QUARTER ? 130 : 100);
  }
  /* A quarter out stays fastest: the first refresh MGPU_RESERVE_REFRESH
   * batches in, then gaps that grow to MGPU_RESERVE_REFRESH_MAX. */
  uint64_t at = MGPU_RESERVE_REFRESH, gap = MGPU_RESERVE_REFRESH;
  for (int r = 0; r < 11; r++) {
    ck_assert_uint_eq(next_refresh(&m, QUARTER, 130, 100), at);
    at += gap;
    gap = MGPU_MIN(MGPU_RESERVE_REFRESH_GROWTH * gap, (uint64_t)MGPU_RESERVE_REFRESH_MAX);
  }
  ck_assert_uint_eq(gap, MGPU_RESERVE_REFRESH_MAX); /* the refreshes above reached the cap */
  /* The next refresh finds none out faster: the choice changes. The refresh
   * after it, set by the choice before, comes a full gap on; the gaps then
   * start again from MGPU_RESERVE_REFRESH. */
  ck_assert_uint_eq(next_refresh(&m, QUARTER, 130, 200), at);
  ck_assert_int_eq(mgpu__reserve_pick(&m, 1000, two_ways, &rec), IN);
  at += gap;
  ck_assert_uint_eq(next_refresh(&m, IN, 200, 100), at);
  at += MGPU_RESERVE_REFRESH;
  ck_assert_uint_eq(next_refresh(&m, IN, 200, 100), at);
  at += MGPU_RESERVE_REFRESH_GROWTH * MGPU_RESERVE_REFRESH;
  ck_assert_uint_eq(next_refresh(&m, IN, 200, 100), at);
  /* A batch 5 times larger: trials (two ways, two each), then the first
   * refresh MGPU_RESERVE_REFRESH batches after the size changed. */
  uint64_t k0 = m.reserve_batches;
  for (int i = 0; i < 4; i++) {
    int way = mgpu__reserve_pick(&m, 5000, two_ways, &rec);
    mgpu__reserve_learn(&m, way, way == QUARTER ? 130 : 100);
  }
  uint64_t k;
  do {
    k = m.reserve_batches;
  } while (mgpu__reserve_pick(&m, 5000, two_ways, &rec) == QUARTER);
  ck_assert_uint_eq(k, k0 + MGPU_RESERVE_REFRESH);
}
END_TEST

/* Over 2000 kernels of `batches` batches each, the batches from batch
 * `from` on that run another way than the fastest (the trials, the
 * refreshes, the choice when wrong), in batches of the fastest way, per
 * kernel. Way l's speed is truth[l] up to batch `change` and after[l] from
 * there, each batch slowed by a random factor 1 + 0.08 x with x exponential
 * (mean 1), as single batches are: nearly always slower, now and then much
 * slower. */
static double reserve_lost(const double *truth, const double *after, int change, int from, int batches) {
  const unsigned offered = with_half | WAY(MGPU_RESERVE_GPUS_OUT); /* every GPU out too */
  const int kernels = 2000;
  uint64_t rs = 11;
  double lost = 0;
  for (int j = 0; j < kernels; j++) {
    mgpu__model_t m;
    memset(&m, 0, sizeof m);
    bool rec;
    for (int k = 0; k < batches; k++) {
      const double *t = k < change ? truth : after;
      double fastest = 0;
      for (int l = 0; l < MGPU_RESERVE_LEVELS; l++) fastest = MGPU_MAX(fastest, t[l]);
      int way = mgpu__reserve_pick(&m, 1000, offered, &rec);
      ck_assert(offered >> way & 1u);
      double u = (double)(mgpu_test_rand(&rs) % 1000000 + 1) / 1000001;
      if (k >= from) lost += fastest / t[way] - 1;
      if (rec) mgpu__reserve_learn(&m, way, t[way] / (1 + 0.08 * -log(u)));
    }
  }
  return lost / kernels;
}

/* The choice on noisy times: every GPU out 8% faster than every CPU worker
 * in, a quarter and half out slower. Over 100 batches the other ways must
 * cost under 2.5 batches: where each way's speed is the best of its last
 * two, the kept way's own noisy times flip the choice to a slower one again
 * and again, and they cost 3.4. Where every GPU out falls to 10% behind at
 * batch 100, the choice must follow at a cost under 2 batches of the next
 * 100 (2.2 with two kept, 2.1 with sixteen, which keep a wrong way longer). */
START_TEST(test_reserve_noisy_times_lose_few_batches) {
  const double truth[MGPU_RESERVE_LEVELS] = {1.0, 0.97, 0.93, 0, 1.08};
  const double after[MGPU_RESERVE_LEVELS] = {1.0, 0.97, 0.93, 0, 0.9};
  double steady = reserve_lost(truth, truth, 100, 1, 100), follow = reserve_lost(truth, after, 100, 100, 200);
  printf("reserve choice on noisy times: %.3f batches lost in 100, %.3f in the 100 after a change\n", steady, follow);
  fflush(stdout);
  ck_assert_msg(steady < 2.5, "%.3f batches lost in 100", steady);
  ck_assert_msg(follow < 2.0, "%.3f batches lost in the 100 after a change", follow);
}
END_TEST

int main(void) {
  Suite *s = suite_create("policy");
  TCase *tc_line = tcase_create("line");
  tcase_add_test(tc_line, test_line_fits_exact_times);
  tcase_add_test(tc_line, test_line_keeps_rate_after_tail_pieces);
  tcase_add_test(tc_line, test_line_follows_doubled_cost);
  tcase_add_test(tc_line, test_line_bounds_one_slow_chunk);
  tcase_add_test(tc_line, test_line_restarts_after_cost_shift);
  tcase_add_test(tc_line, test_line_restarts_from_solo_chunks);
  tcase_add_test(tc_line, test_line_skips_solo_pipeline_fill);
  tcase_add_test(tc_line, test_sample_joins_launch_beside_it);
  suite_add_tcase(s, tc_line);
  TCase *tc_growth = tcase_create("growth");
  tcase_add_test(tc_growth, test_growth_leaps_when_latency_bound);
  tcase_add_test(tc_growth, test_growth_settles_at_target_when_cheap);
  tcase_add_test(tc_growth, test_growth_never_shrinks_below_claims);
  tcase_add_test(tc_growth, test_growth_at_cap_keeps_cap_unless_as_fast);
  tcase_add_test(tc_growth, test_growth_ends_on_solo_whole_batch);
  tcase_add_test(tc_growth, test_growth_not_reopened_by_stale_claim);
  tcase_add_test(tc_growth, test_growth_judged_by_spans);
  tcase_add_test(tc_growth, test_growth_judges_joined_launches_by_largest);
  tcase_add_test(tc_growth, test_knee_not_lifted_by_cut_claim);
  tcase_add_test(tc_growth, test_knee_ignores_scattered_latency);
  suite_add_tcase(s, tc_growth);
  TCase *tc_trials = tcase_create("trials");
  tcase_add_test(tc_trials, test_step_below_from_probe_past_knee);
  tcase_add_test(tc_trials, test_step_below_after_solo_rise);
  tcase_add_test(tc_trials, test_trial_up_lifts_queued_knee);
  tcase_add_test(tc_trials, test_no_trial_without_latency);
  tcase_add_test(tc_trials, test_floor_kept_on_divergent_rows);
  tcase_add_test(tc_trials, test_trials_back_off_when_not_kept);
  tcase_add_test(tc_trials, test_floor_comes_down_when_it_stops_paying);
  suite_add_tcase(s, tc_trials);
  TCase *tc_cpu = tcase_create("cpu");
  tcase_add_test(tc_cpu, test_cpu_chunks_target_mean_rate);
  tcase_add_test(tc_cpu, test_cpu_chunks_amortize_cost_per_call);
  tcase_add_test(tc_cpu, test_cpu_one_size_tries_larger_chunk);
  tcase_add_test(tc_cpu, test_cpu_scattered_times_keep_mean_rate);
  tcase_add_test(tc_cpu, test_cpu_noisy_probes_grow_bounded);
  tcase_add_test(tc_cpu, test_cpu_team_start_bounds_one_stall);
  suite_add_tcase(s, tc_cpu);
  TCase *tc_split = tcase_create("split");
  tcase_add_test(tc_split, test_split_by_speed_leftover_to_first_finisher);
  tcase_add_test(tc_split, test_split_counts_latency);
  tcase_add_test(tc_split, test_split_counts_latency_once_with_peak);
  tcase_add_test(tc_split, test_split_pools_alike_gpus);
  tcase_add_test(tc_split, test_split_short_batch_all_in_flight);
  suite_add_tcase(s, tc_split);
  TCase *tc_steal = tcase_create("steal");
  tcase_add_test(tc_steal, test_steal_equal_finish_slow_thief_worst_case);
  tcase_add_test(tc_steal, test_steal_counts_latency_and_peak);
  tcase_add_test(tc_steal, test_rank_steal_equal_finish_minus_transfer);
  suite_add_tcase(s, tc_steal);
  TCase *tc_profile = tcase_create("profile");
  tcase_add_test(tc_profile, test_profile_bins_cover_batch);
  tcase_add_test(tc_profile, test_profile_cuts_only_smooth_spread_cost);
  tcase_add_test(tc_profile, test_profile_learns_per_item_cost);
  tcase_add_test(tc_profile, test_cost_chunks_and_steals_by_cost);
  suite_add_tcase(s, tc_profile);
  TCase *tc_reserve = tcase_create("reserve");
  tcase_add_test(tc_reserve, test_reserve_two_ways_trials_then_fastest);
  tcase_add_test(tc_reserve, test_reserve_more_ways_by_turns);
  tcase_add_test(tc_reserve, test_reserve_refresh_gap_doubles);
  tcase_add_test(tc_reserve, test_reserve_noisy_times_lose_few_batches);
  suite_add_tcase(s, tc_reserve);
  return mgpu_test_main(s);
}
