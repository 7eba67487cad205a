/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * policy.h: pure functions of numbers: the chunk-time line of each worker,
 * the split by predicted finish, the thief's share, the per-kernel model,
 * cost profiles and the reserve's ways. No locks and no runtime.
 */
#ifndef MGPU_POLICY_H
#define MGPU_POLICY_H

#include "base/base.h"

/* -------------------------------------------------------------- model.c */
/* Per-kernel model: each worker's chunk-time fit (fit.c), learnt online and
 * kept for the runtime's life, with what it publishes to the other workers;
 * the cost profile; the reserve trials. */
/* MGPU_RESERVE_THREADS=auto's ways (levels), fewer workers out first. */
enum {
  MGPU_RESERVE_ALL_IN,      /* every CPU worker in */
  MGPU_RESERVE_QUARTER_OUT, /* a quarter of them out */
  MGPU_RESERVE_HALF_OUT,    /* half of them out */
  MGPU_RESERVE_CPUS_OUT,    /* all of them out */
  MGPU_RESERVE_GPUS_OUT,    /* every GPU out */
  MGPU_RESERVE_LEVELS
};
/* The bit of a way in mgpu__reserve_pick's mask `offered`. */
#define MGPU_RESERVE_BIT(level) (1u << (level))
/* The line's sums of 1, n, n^2, t, n t, t^2 over timings of n items in t
 * seconds: decayed, each timing weighted. */
typedef struct {
  double w, n, nn, t, nt, tt;
} mgpu__fit_sums_t;
/* The line through a worker's chunk times: t(n) = a + c n seconds. */
typedef struct {
  mgpu__fit_sums_t sum;
  double items, secs; /* decayed plain sums of items and seconds: the mean rate */
  double a, c;        /* latency (s) and seconds per item */
  uint64_t samples;   /* chunks learnt from since the line (re)started */
} mgpu__fit_line_t;

/* A size class: chunk sizes within MGPU_FIT_SIZE_CLASS of one another. */
typedef struct {
  double n;         /* its size (items; 0: none yet) */
  double span_rate; /* items / span, from each chunk's own start */
  double dev_rate;  /* items / device time: the throughput among overlapped chunks */
  bool solo;        /* its rates are of solo chunks only */
} mgpu__size_class_t;

/* The knee: the size from which the rate stops rising, found by size classes. */
typedef struct {
  mgpu__size_class_t top;   /* the largest size class learnt from */
  mgpu__size_class_t below; /* the class before it: the knee once the rate stops rising */
  bool rising;              /* the rate rose from below to top: the chunks still grow */
  bool measured;            /* a size under below.n ran slower overlapped: below.n is a measured knee */
  size_t stopped_at;        /* the largest claim when the growth last stopped (SIZE_MAX: growing) */
} mgpu__fit_knee_t;

/* The worker's claims. */
typedef struct {
  size_t probe;   /* the first claim */
  size_t largest; /* the largest claim */
  size_t planned; /* the size the last claim asked for, before the end of its range */
} mgpu__fit_claims_t;

/* The step-below trial: overlapped chunks a class under the knee, whose
 * throughput decides whether the knee moves down to them. */
typedef struct {
  double knee;        /* the knee it tries to lower (0: none) */
  double items, secs; /* its chunks past the first ones: items and device time */
  int chunks;         /* its chunks so far */
} mgpu__fit_step_trial_t;

/* The batch trial a batch runs (mgpu__fit_batch). */
typedef enum {
  MGPU_TRIAL_NONE,     /* a plain batch, at the floor as it stands */
  MGPU_TRIAL_UP,       /* chunks a step above the floor */
  MGPU_TRIAL_DOWN,     /* chunks a step under the floor */
  MGPU_TRIAL_UNJUDGED, /* the fit still grows: the batch is not judged */
} mgpu__trial_t;

/* The batch being summed, for the batch trials and the shift. */
typedef struct {
  uint64_t tag;           /* its id + 1 (0: none) */
  mgpu__trial_t trial;    /* the trial it runs */
  double items, secs;     /* its items and device time so far */
  size_t claims, first;   /* its claims, and the size of its first */
  double rate_lo, rate_hi; /* its slowest and fastest chunk rates (items/s) */
} mgpu__fit_batch_sums_t;

/* The batch trials of the floor: whole batches of chunks a step above or
 * under it, held to the plain batches before them. */
typedef struct {
  size_t batch_n;          /* the batch size the rates are for */
  double plain_rate[MGPU_FIT_BATCH_BASE]; /* items/s of the last plain batches */
  int plain_runs;          /* plain batches timed since the rates were reset */
  size_t last_claims;      /* claims in the last plain batch */
  size_t last_first;       /* the size of its first */
  double last_spread;      /* its fastest chunk rate over its slowest */
  uint64_t seen;           /* batches seen */
  uint64_t next_at;        /* the batch of the next trial */
  uint64_t gap;            /* the gap after a trial not kept (0: none) */
  bool down_next;          /* the next trial goes down (where there is a floor) */
} mgpu__fit_batch_trials_t;

/* The watch for a kernel whose cost changed for good: batches far off the
 * line's prediction, the same way, restart the line. */
typedef struct {
  double took, pred;   /* the batch's device time in judged chunks, and the line's prediction for them */
  double judged;       /* its items in judged chunks */
  double last_judged;  /* the last batch's, where it was off (0: it was not) */
  int run;             /* batches in a row far over (> 0) or under (< 0) the prediction */
} mgpu__fit_shift_t;

/* One worker's chunk-time model of one kernel (fit.c). Owned by that
 * worker's thread: it claims and completes its own chunks. */
typedef struct {
  mgpu__fit_line_t line;
  mgpu__fit_knee_t knee;
  mgpu__fit_claims_t claims;
  struct {
    mgpu__fit_step_trial_t step;    /* the step-below trial */
    mgpu__fit_batch_trials_t batch; /* the batch trials */
  } trials;
  double floor;                  /* the chunks' floor the batch trials kept (0: none) */
  mgpu__fit_batch_sums_t batch;  /* the batch being summed */
  mgpu__fit_shift_t shift;
  double overlapped;             /* decayed count of overlapped chunks */
  bool seeded;                   /* started from the store; its first own chunk judges the prior */
} mgpu__fit_t;

typedef struct mgpu__model {
  mgpu_kernel_t key;        /* copy of the kernel it describes */
  uint64_t footprint;       /* and the batches' footprint (mgpu_batch_t.footprint) */
  int nworkers;
  mgpu__fit_t *fit;         /* slot w: worker w only */
  /* Published by worker w after each of its chunks, read by everyone: the
   * rate (items/s) its fit predicts at the size it claims (0: not measured
   * yet), its latency (s), and whether the fit is trusted over the prior
   * (mgpu__fit_known, or MGPU_FIT_TRUST_AFTER chunks learnt). */
  _Atomic double *speed;
  _Atomic double *latency;
  _Atomic double *peak;     /* items/s its chunks' items add past their latency: 1 / c (0: none) */
  _Atomic int *known;
  _Atomic double *reach;    /* the largest chunk size learnt (items) */
  _Atomic uint64_t *samples;
  _Atomic double *slow;     /* slowest recent chunk rate per worker (items/s) */
  _Atomic double *mean_items, *mean_secs; /* the decayed sums of its mean rate (mgpu__fit_t items, secs) */
  _Atomic double *spent;    /* seconds of the chunks it has learnt from, all told */
  _Atomic double *knee;     /* the chunks' floor its fit keeps (mgpu__fit_knee; 0: none) */
  /* Cost profile, under rt->lock: a GPU's seconds per item in each of
   * MGPU_PROF_BINS equal parts of the index space of batches of prof_n items
   * (0: not learnt), averaged over batches; learnt and used only where every
   * GPU is of one kind (mgpu__prof_learn, mgpu__prof_cuts). */
  double *prof;
  size_t prof_n;
  /* MGPU_RESERVE_THREADS=auto, under rt->lock: batch throughput (items/s) of
   * this kernel's last MGPU_RESERVE_KEEP timed batches of each way. */
  double reserve_rate[MGPU_RESERVE_LEVELS][MGPU_RESERVE_KEEP];
  /* Batches timed for each way (under 2 x MGPU_RESERVE_KEEP); the next goes
   * in slot runs % MGPU_RESERVE_KEEP. */
  int reserve_runs[MGPU_RESERVE_LEVELS];
  uint64_t reserve_batches;     /* GPU batches started under auto */
  uint64_t refresh_at;          /* the batch of the next refresh (0: MGPU_RESERVE_REFRESH) */
  uint64_t refresh_gap;         /* batches from it to the one after (0: no refresh yet; MGPU_RESERVE_REFRESH) */
  uint64_t refreshes;           /* refreshes so far: the rotation of the other ways */
  int refresh_best;             /* the fastest way at the last refresh (where refresh_gap > 0) */
  size_t reserve_n;             /* batch size the rates are for */
  int reserve_prior;            /* the way the store kept, + 1 (0: none) */
  uint64_t stored_news;         /* mgpu__model_news when last given to the store (under rt->lock) */
  struct mgpu__model *next;
} mgpu__model_t;

/* -------------------------------------------------------------- claim.c */
/* A batch's cost by position (mgpu__cost_init, below). */
typedef struct {
  size_t n;
  double per[MGPU_PROF_BINS];     /* seconds per item in bin j */
  double cum[MGPU_PROF_BINS + 1]; /* seconds of the items before bin j */
} mgpu__cost_t;

/* One call of a kernel's CPU function: its items and seconds. */
typedef struct {
  double items, secs;
} mgpu__call_t;

/* --------------------------------------------------------------- split.c */
/* A worker's seconds for s items: latency + s / speed. With a peak (> speed:
 * the items/s its chunks' items add past their latency), speed is its rate
 * at its chunks' size, latency included, and the time is the slower of
 * latency + s / peak (within one chunk) and s / speed (chunk after chunk),
 * so that the latency is counted once. */
double mgpu__share_time(double speed, double latency, double peak, double s);
/* Shares of `items` for n workers that finish them together: worker i
 * takes mgpu__share_time(speed[i], latency[i], peak[i], share[i]) seconds
 * (latency and peak may be NULL: none), and one whose latency by itself passes
 * that time gets nothing. */
void mgpu__split(const double *speed, const double *latency, const double *peak, int n, size_t items, size_t *share);
/* Workers of one group (group[i]: the index of the group's first member;
 * -1: none) whose speeds lie within tol of the group's median take the mean
 * of those speeds; the others keep theirs. */
void mgpu__pool_alike(double *speed, const int *group, int n, double tol);
/* Whether a batch of `items` split by `speed` (n workers) ends within the
 * chunks each GPU claims before its first one completes (streams + 1 chunks
 * of MGPU_GPU_TARGET_S): its whole range is then in flight at once and
 * nothing of it is left to steal. */
bool mgpu__ranges_in_flight(const double *speed, int n, size_t items, int streams);
/* One side of a steal within a process, thief or owner. */
typedef struct {
  double speed;   /* items/s at the size of its chunks */
  double latency; /* s before its next chunk starts */
  double peak;    /* items/s its chunks' items add past their latency (0: none; see mgpu__share_time) */
  double pending; /* items it has in flight */
} mgpu__steal_side_t;
/* What a thief sees of one victim's range. */
typedef struct {
  mgpu__steal_side_t thief, owner;
  double left;         /* items left in the owner's range */
  double slowest;      /* the slowest rate the thief has seen on the kernel (0: not known) */
  double worst_item_s; /* the longest one item took a worker of the thief's kind (0: not known) */
} mgpu__steal_view_t;
/* Items the thief takes from the back of the range (0: the tail rule). */
size_t mgpu__steal_share(const mgpu__steal_view_t *v);
/* One side of a steal between ranks, thief or owner. */
typedef struct {
  double speed;   /* items/s */
  double latency; /* s */
  double running; /* items it has running */
} mgpu__rank_side_t;
/* What a rank that steals from another rank sees. */
typedef struct {
  mgpu__rank_side_t thief, owner;
  double left;           /* items left in the owner's range */
  double bytes_per_item; /* of an item's inputs and outputs together */
  double bw;             /* bytes/s at which the thief moves them */
  double fixed_s;        /* what a steal costs besides its bytes (round trips, a batch's start) */
  /* The other ranks whose ranges are empty, thieves too before long: their
   * rates and items running (nothers of each; NULL for none). */
  int nothers;
  const double *others_speed, *others_running;
} mgpu__rank_steal_view_t;
/* Items a rank takes from the back of another rank's range (0: none): the
 * share at which owner, thief and the other idle ranks all finish together,
 * moving the bytes included; none where that saves the owner under
 * MGPU_RANK_STEAL_GAIN times the transfer's time, or where the fixed cost
 * is over 1 / MGPU_RANK_STEAL_GAIN of the steal's work. */
size_t mgpu__rank_steal_share(const mgpu__rank_steal_view_t *v);

/* ----------------------------------------------------------------- fit.c */
/* Learn a chunk of n items that took t seconds. */
void mgpu__fit_add(mgpu__fit_t *f, double n, double t);
/* A timing a worker learns from: one chunk, or a GPU's chunks that ran
 * beside one another, taken together (gpu_chunk.c). */
typedef struct {
  double items;  /* its items (of average cost, under a cost profile) */
  double launch; /* its largest chunk, the size it tells the growth about (0: items) */
  double secs;   /* the worker's time: a GPU's device time, from when the chunk before it ended */
  double span;   /* from its first chunk's own start (0: secs) */
  bool solo;     /* solo: the device had nothing else in flight as it started */
  uint64_t tag;  /* its first chunk's batch: id + 1 (0: none, a CPU worker's) */
  const mgpu__call_t *calls; /* a CPU chunk's kernel calls (its pieces), which the line learns from */
  int ncalls;                /* how many (0: the chunk was one call) */
} mgpu__sample_t;
/* Learn a sample. A solo GPU sample's time holds the pipeline's fill, which
 * overlapped chunks hide: it is learnt only where the worker's chunks run
 * solo, and elsewhere only judges the growth. A sample counts in the size
 * class of its largest launch: launches joined into one sample run as fast
 * as their own size makes them. */
void mgpu__fit_sample(mgpu__fit_t *f, const mgpu__sample_t *s);
/* A GPU is about to claim from batch `tag` (its id + 1) of n items: a new
 * batch ends the one before, which is judged. Batch trials compare whole
 * batches, which hold the same items in the same places, where items that
 * differ in cost by position make single chunks incomparable. Returns the
 * trial judged (MGPU_TRIAL_NONE: none), its items/s and the base it met. */
mgpu__trial_t mgpu__fit_batch(mgpu__fit_t *f, uint64_t tag, size_t n, double *rate, double *base);
/* Device time of a chunk of the batch `tag` (for mgpu__fit_batch's sums). */
void mgpu__fit_batch_time(mgpu__fit_t *f, uint64_t tag, double n, double t);
/* Predicted seconds of a chunk of n items, and its rate (items/s). */
double mgpu__fit_time(const mgpu__fit_t *f, double n);
double mgpu__fit_rate(const mgpu__fit_t *f, double n);
/* The fit's saturating size, where latency is MGPU_SAT_SHARE's complement of
 * the time (debug logs; the chunks' floor is the measured knee). */
double mgpu__fit_sat(const mgpu__fit_t *f);
/* Two size classes seen and the rate no longer rising: chunks stop growing. */
bool mgpu__fit_known(const mgpu__fit_t *f);
/* Whether a chunk of `items` that started before the held sample's chunks
 * (held_items in held_s seconds) ended ran beside them: credited `busy`
 * seconds (from their end to its own), `span` from its own start (busy
 * where the device gives no timestamps). */
bool mgpu__fit_beside(double held_items, double held_s, double items, double busy, double span);
/* Items of the worker's next chunk, before the end of its range (1 to
 * max_items): the probe (prior_rate items/s for target_s) before any claim;
 * where it `grows` (a GPU), growing while the fit is not known, then
 * target_s of work, never under the knee nor the batch trials' floor; else
 * target_s at its mean rate. */
size_t mgpu__fit_chunk(const mgpu__fit_t *f, double prior_rate, double target_s, size_t max_items, bool grows);
/* A claim of n items was made from the size mgpu__fit_chunk gave. */
void mgpu__fit_claimed(mgpu__fit_t *f, size_t n);
/* The floor the fit keeps under a GPU's chunks: the measured knee, or the
 * floor of the batch trials (0: none yet). */
double mgpu__fit_knee(const mgpu__fit_t *f);
/* Start f from a stored line t(n) = latency + cost n and knee, as if it had
 * learnt them (the store's prior): chunks start at the knee. Its first own
 * chunk that takes over MGPU_FIT_SHIFT times the line's time, or under it by
 * that factor, wipes the prior, and the fit learns from scratch. */
void mgpu__fit_seed(mgpu__fit_t *f, double latency, double cost, double knee);

/* --------------------------------------------------------------- model.c */
/* A model for workers of nworkers slots (kernel k, batches of this
 * footprint); NULL when out of memory. */
mgpu__model_t *mgpu__model_new(const mgpu_kernel_t *k, uint64_t footprint, int nworkers);
void mgpu__model_free(mgpu__model_t *m);
/* Whether kernel a and b are one kernel: same functions, shapes and name (a
 * kernel struct rebuilt per call keeps its history). */
bool mgpu__model_same_kernel(const mgpu_kernel_t *a, const mgpu_kernel_t *b);
/* Learn from a sample of worker w (its own thread); publishes the worker's
 * speed, latency and whether its fit is known. */
void mgpu__model_update(mgpu__model_t *m, int w, const mgpu__sample_t *s);
/* Worker w (its own thread) is about to claim for kernel m from the batch
 * `tag` (its id + 1) of batch_n items: the items of its next chunk before
 * the end of its range (mgpu__fit_chunk), remembered for the speed it
 * publishes. */
size_t mgpu__model_chunk(mgpu__model_t *m, int w, double prior_rate, double target_s, size_t max_items, bool grows,
                         uint64_t tag, size_t batch_n);
/* MGPU_RESERVE_THREADS=auto: which way (MGPU_RESERVE_*) a batch of n items
 * runs, of those in the bit mask `offered` (bit l for way l; ALL_IN and
 * QUARTER_OUT always), and whether its time is to be learnt (*record).
 * mgpu__reserve_learn takes the items/s of a recorded batch. Under rt->lock. */
int mgpu__reserve_pick(mgpu__model_t *m, size_t n, unsigned offered, bool *record);
void mgpu__reserve_learn(mgpu__model_t *m, int level, double items_per_s);
/* The store's prior: worker w's fit from a stored line (mgpu__fit_seed),
 * published; what w learnt, as published (false: nothing yet); the reserve's
 * way kept (runs from the first batch), and the fastest way timed (-1: none). */
void mgpu__model_seed(mgpu__model_t *m, int w, double latency, double cost, double knee);
bool mgpu__model_learnt(const mgpu__model_t *m, int w, double *latency, double *cost, double *knee, double *samples);
void mgpu__reserve_prefer(mgpu__model_t *m, int level);
int mgpu__reserve_best(const mgpu__model_t *m);
/* A count that grows whenever the model learns (chunks of every worker,
 * batches timed for the reserve): the store rewrites only a model that moved. */
uint64_t mgpu__model_news(const mgpu__model_t *m);
/* A way's speed as the choice sees it: the best of its kept times (0: none). */
double mgpu__reserve_score(const mgpu__model_t *m, int level);
/* Item cost by position: where items differ in cost by where they lie, a
 * split of alike GPUs by items per second, learnt on whichever items each did
 * last, stays wrong. Bins: MGPU_PROF_BINS equal parts of [0, n); bin j starts
 * at mgpu__prof_lo(n, j). */
size_t mgpu__prof_lo(size_t n, int j);
/* Add a chunk's `secs` of device time over its items [first, first+count) to
 * per-bin sums of seconds t[] and items it[]. */
void mgpu__prof_add(double *t, double *it, size_t n, size_t first, size_t count, double secs);
/* Fold one batch of n items into m->prof: rows sums (t, it pairs of
 * MGPU_PROF_BINS each, one row per GPU). Under rt->lock. */
void mgpu__prof_learn(mgpu__model_t *m, size_t n, const double *sums, int rows);
/* Cut [a, n) into k consecutive parts of equal cost by prof (learnt for n):
 * counts in cut[0..k-1]. False, and cut untouched, where some bin of [a, n)
 * is not learnt or its bins do not show items that differ in cost by
 * position (then speeds split them as well): see prof_irregular. */
bool mgpu__prof_cuts(const double *prof, size_t n, size_t a, int k, size_t *cut);

/* A batch's cost by position, from the profile its GPUs were split by: the
 * GPUs size chunks and steal by it, since by items a costly stretch's chunk
 * overruns and a thief takes too much. A bin costs the most of the bins
 * within MGPU_COST_REACH: a chunk across a rise in cost spreads its time over
 * its items, so the profile learns the slopes of a peak too cheap. */
void mgpu__cost_init(mgpu__cost_t *c, const double *prof, size_t n);
/* The cost of items [0, x); x >= n: of all. */
double mgpu__cost_at(const mgpu__cost_t *c, size_t x);
/* The least x with mgpu__cost_at(c, x) >= cost, within MGPU_COST_ROUNDING of
 * the total cost (0 for cost <= 0, n past the total). */
size_t mgpu__cost_find(const mgpu__cost_t *c, double cost);
/* Items from `first` that cost what n items cost on average (at least 1). */
size_t mgpu__cost_chunk(const mgpu__cost_t *c, size_t first, size_t n);
/* How many items of average cost [first, first+count) is worth (at least 1). */
size_t mgpu__cost_items(const mgpu__cost_t *c, size_t first, size_t count);
/* Items a GPU thief with cost pt in flight takes from the back of an alike
 * GPU's range [begin, end) with po in flight, so that both end together: the
 * cost s = (po + cost(begin, end) - pt) / 2, without the item that would
 * take it past s. 0 when s <= 0 (the tail rule). */
size_t mgpu__cost_steal(const mgpu__cost_t *c, size_t begin, size_t end, double pt, double po);

#endif /* MGPU_POLICY_H */
