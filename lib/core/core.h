/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * core.h: the runtime's shared objects (runtime, batch, range, worker,
 * constant, device task) and a batch's path: submission, activation, the
 * first split, claims and steals, completion, events, handles, the trace.
 */
#ifndef MGPU_CORE_H
#define MGPU_CORE_H

#include "device/device.h"
#include "policy/policy.h"

/* ------------------------------------------------------------- trace.c */
typedef enum {
  MGPU_TEV_CHUNK = 0, /* a CPU chunk */
  MGPU_TEV_H2D,       /* GPU stream: copies in */
  MGPU_TEV_KERNEL,    /* GPU stream: the kernel */
  MGPU_TEV_D2H,       /* GPU stream: copies out */
  MGPU_TEV_ISSUE,     /* GPU host thread: staging and enqueueing a chunk */
  MGPU_TEV_STEAL,     /* instant: this worker stole `count` items from `other` */
  MGPU_TEV_RETRY,     /* instant: a failed chunk given back */
  MGPU_TEV_ALLOC,     /* GPU host thread: growing a slot's device buffer */
  MGPU_TEV_PIN,       /* GPU host thread: allocating a slot's pinned staging buffer */
  MGPU_TEV_UNSTAGE,   /* GPU host thread: copying a chunk's results out of staging */
  MGPU_TEV_BATCH,     /* a batch, from its activation to its completion (rt->btrace) */
  MGPU_TEV_HANDBACK   /* instant: a CPU worker handed back `count` items it had not started */
} mgpu__tev_kind_t;

typedef struct {
  double t0, t1;      /* host clock (mgpu__now) */
  mgpu__tev_kind_t kind;
  int stream;         /* GPU stream slot, -1 for host-thread events */
  int other;
  const char *name;   /* kernel name (static for the run) */
  uint64_t batch;
  size_t first, count, bytes;
} mgpu__tev_t;

/* ------------------------------------------------------------ runtime.c */
struct mgpu__devcall;
struct mgpu__task;
typedef struct mgpu__batch mgpu__batch_t;
typedef struct mgpu__worker mgpu__worker_t;
typedef struct mgpu__gpu mgpu__gpu_t;

struct mgpu_const {
  mgpu_runtime_t *rt;
  void *host;
  size_t bytes;
  _Atomic int refs;        /* the user's (until destroy) + one per batch using it */
  pthread_mutex_t lock;    /* guards dev[] */
  void *dev[MGPU_MAX_DEVICES];     /* device copy per runtime GPU, NULL until first use */
  _Atomic uint64_t uploads;        /* device uploads made, for tests and stats */
  struct mgpu_const *next_live;    /* rt->consts list, under rt->lock */
};

/* room.c: what limits a GPU worker's chunk: a slot's share of the device's
 * memory, MGPU_MAX_BATCH_SIZE, and for pageable arrays the slot's staging
 * buffer, with the pinned-ness of the arrays of the last batch looked at.
 * Held in the GPU's state (gpu_worker.c); its host thread owns it, in its
 * own claims (claim.c) as in its chunks; others only read cap_items. */
typedef struct {
  const mgpu_dev_ops_t *ops;  /* the back end, for host_is_pinned */
  _Atomic size_t slot_bytes;  /* device bytes one slot may use; halved on OOM */
  _Atomic size_t cap_items;   /* last computed cap, for statistics */
  size_t max_batch;           /* MGPU_MAX_BATCH_SIZE (0: none) */
  bool gate_ok;               /* results can be held on the device (ops->gate) */
  /* Which arrays of one batch are pinned, found once per batch (a driver
   * query per array) for the chunk cap and every chunk's issue. */
  uint64_t pin_batch;         /* that batch's id + 1 (0: none yet) */
  bool pin_in[MGPU_MAX_ARGS], pin_out[MGPU_MAX_ARGS];
  size_t stage_per_item;      /* its pageable bytes per item (0: all pinned) */
} mgpu__room_t;

struct mgpu__worker {
  int id;
  mgpu_worker_kind_t kind;
  int gpu;                 /* runtime GPU number, -1 for CPU */
  _Atomic int retired;
  _Atomic uint64_t items, chunks, steals, retries; /* cumulative */
  _Atomic uint64_t busy_ns;
  _Atomic uint64_t staged;  /* bytes copied through GPU staging buffers */
  mgpu__batch_t *cur;      /* batch this worker is taking chunks from (own ref) */
  /* A CPU worker's chunk running now: its batch (NULL: none; only compared,
   * never followed) and since when (ns of mgpu__now), for thieves. */
  _Atomic(const mgpu__batch_t *) run_batch;
  _Atomic uint64_t run_since_ns;
  double run_end;          /* a CPU worker's: when its last chunk ended (its thread only) */
  mgpu__room_t *room;      /* a GPU worker's room for a chunk (NULL: no limit, CPU) */
  void *scratch;           /* CPU: host scratch buffer */
  size_t scratch_bytes;
  mgpu__tev_t *trace;      /* MGPU_TRACE events; written by this worker only */
  size_t ntrace, trace_cap;
  uint64_t trace_dropped;
  mgpu__batch_t **cand;    /* the batches a claim looks at (claim.c); this worker's thread only */
  int cand_cap;
  uint64_t requeue_seen;   /* rt->requeue_gen at this worker's last look at every batch (claim.c) */
} __attribute__((aligned(MGPU_CACHELINE)));

/* stage.c: a GPU's staging copy, cut into pieces that CPU workers help copy. */
typedef struct {
  pthread_mutex_t lock;    /* guards the fields; they change only between jobs */
  char *dst;
  const char *src;
  size_t bytes, piece, npieces, next;
  mgpu__batch_t *b;        /* the chunk's batch, for statistics */
  bool to_user;            /* copies results out of staging into a user array */
  _Atomic bool open;       /* pieces are left to take */
  _Atomic size_t done;     /* pieces copied */
} mgpu__copyjob_t;

/* task.c: a device task part posted to one GPU, and that GPU's queue of
 * them: any thread posts under lock; the GPU's host thread takes them in
 * posting order. The queue lives in the GPU's state (gpu_worker.c). */
typedef struct {
  struct mgpu__task *t;
  int phase;
} mgpu__post_t;
typedef struct {
  pthread_mutex_t lock;    /* guards q, head, n, cap */
  mgpu__post_t *q;
  int head, n, cap;
  _Atomic int count;       /* n, for the host thread's look without the lock */
} mgpu__postq_t;

struct mgpu_runtime {
  mgpu__config_t cfg;
  int usable_cores;
  char cores_how[256];
  mgpu__cpus_t cpus;           /* where its GPU host threads run, if not where mgpu_init's caller does */
  const mgpu_dev_ops_t *dev;   /* back end of the GPU workers, NULL when none */
  int ngpus;
  double prior_ratio;          /* device-to-core ratio before measurements */
  _Atomic double start_cost;   /* mgpu__start_cost */
  int gpu_index[MGPU_MAX_DEVICES]; /* driver device index of runtime GPU g */
  mgpu_device_info_t gpu_info[MGPU_MAX_DEVICES];
  mgpu__fault_plan_t faults;

  int ncpu;                    /* CPU workers */
  int nworkers;                /* ncpu + ngpus */
  mgpu__worker_t *workers;     /* [nworkers] */
  int *gpu_group;              /* [nworkers]: mgpu__gpu_groups, found at init */
  mgpu__gpu_t **gpus;          /* [ngpus] */
  mgpu__postq_t *postq[MGPU_MAX_DEVICES]; /* GPU g's task queue, in gpus[g] (task.c posts to it) */

  /* Scheduling state. rt->lock guards the active list, batch activation, the
   * model list, the constants list and the counters below. A worker never holds
   * rt->lock while holding a range lock. */
  pthread_mutex_t lock;
  /* Idle workers sleep on their own locks, not rt->lock: a GPU host thread
   * woken for a new batch must not queue for the lock behind every CPU worker
   * scanning for work. */
  pthread_mutex_t sleep_lock;  /* with work_cv */
  pthread_cond_t work_cv;      /* CPU workers sleep here when idle */
  pthread_mutex_t gpu_sleep_lock; /* with gpu_cv */
  pthread_cond_t gpu_cv;       /* GPU host threads sleep here when idle */
  _Atomic int gpu_sleepers;
  pthread_cond_t idle_cv;      /* finalize waits here for live batches */
  _Atomic uint64_t work_gen;   /* bumped whenever new work may be claimable */
  _Atomic int sleepers;
  mgpu__copyjob_t copyjobs[MGPU_MAX_DEVICES]; /* one per GPU (stage.c) */
  _Atomic int copy_open;       /* copy jobs with pieces left to take */
  _Atomic int copiers;         /* threads copying a piece now */
  mgpu__batch_t *active_head, *active_tail;
  _Atomic int n_active_cpu_only;
  _Atomic uint64_t requeue_gen; /* bumped whenever items go into a batch's requeue */
  int live_batches;            /* submitted, not completed */
  mgpu__batch_t *tasks_head;   /* device tasks submitted, not completed (mgpu__tasks_wait) */
  _Atomic int stop;
  int finalizing;
  mgpu__model_t *models;
  struct mgpu_const *consts;       /* live constants */
  struct mgpu_const *dead_consts;  /* destroyed, device copies not yet all freed */
  _Atomic int n_dead_consts;
  _Atomic uint64_t batches_done; /* the per-worker counters hold the rest */
  _Atomic uint64_t gpus_out_batches; /* of those, batches run with every GPU kept out */

  double t_init;
  pid_t pid;                   /* the process that started it: a fork's child has none of its threads */
  int trace_on;                /* MGPU_TRACE is set */
  FILE *trace_fp;
  char trace_file[1024];       /* MGPU_TRACE with its substitutions (mgpu__trace_expand) */
  dev_t trace_dev;             /* trace_fp's file, and the next live runtime that traces: trace.c's lock */
  ino_t trace_ino;
  mgpu_runtime_t *trace_next;
  mgpu__tev_t *btrace;         /* MGPU_TEV_BATCH events, under lock */
  size_t nbtrace, btrace_cap;
  uint64_t btrace_dropped;
  _Atomic uint64_t next_batch_id;
  pthread_mutex_t alloc_lock;  /* guards host_allocs */
  struct { void *p; bool pinned; } *host_allocs;
  int nhost_allocs, host_allocs_cap;

  pthread_mutex_t coll_lock;   /* guards comms */
  pthread_mutex_t task_lock;   /* a task's phase is posted to all its GPUs at once */
  struct mgpu_array *arrays;   /* live split arrays, under alloc_lock */
  struct { void *p; size_t bytes; int gpu; } *dev_allocs; /* mgpu_device_alloc's, under alloc_lock */
  int ndev_allocs, dev_allocs_cap;
  void *comms[MGPU_MAX_DEVICES]; /* NCCL communicators, created on first use */
  int comms_ready;
  _Atomic int comms_abort;     /* a collective passed its deadline: each GPU aborts its communicator */
  bool gpu_gone[MGPU_MAX_DEVICES]; /* given up as hung: its thread and memory are left alone */
  _Atomic int gpus_given_up;   /* devices given up so far: pinned host memory is then never freed (the
                                  driver may wait for the hung device to free it) */
  /* The deadline thread (watchdog.c), where deadlines exist. */
  pthread_t watchdog;
  bool watchdog_on, watchdog_stop; /* stop: under watchdog_lock */
  pthread_mutex_t watchdog_lock;
  pthread_cond_t watchdog_cv;
  /* The runtime across MPI ranks (dist.c), NULL for one process; set at
   * mgpu_init, read-only afterwards. The collectives span what it sets
   * here (before any collective): coll_ranks ranks (1: this process), GPUs
   * numbered 0..coll_gpu_total-1 of which this process's are coll_gpu_base
   * on (coll.c checks roots and sizes by them). */
  struct mgpu__dist *dist;
  int coll_ranks, coll_gpu_total, coll_gpu_base;
  pthread_t team_thread;       /* runs the OpenMP team of CPU workers */
  int team_started;
  pthread_mutex_t team_lock;
  pthread_cond_t team_cv;
  int team_ready, team_got, team_go, team_done;
  /* The model store (persist.c): each worker's class, set at mgpu_init and
   * read-only afterwards; when the models were last written (s, mgpu__now). */
  int nclasses;
  char classes[MGPU_MAX_DEVICES + 1][MGPU_STORE_CLASS_LEN];
  int *worker_class;           /* [nworkers]: an index into classes */
  _Atomic double store_saved;
  _Atomic int store_warned;    /* a failed write was logged: later ones are not */
  char gpu_why_none[256];      /* why the GPU probe at mgpu_init found no device ("": it found one, or none was asked) */
};


typedef struct {
  pthread_mutex_t lock;
  _Atomic size_t begin, end; /* unclaimed items owned by this worker */
  _Atomic size_t pending;    /* claimed by the owner, not yet finished */
  _Atomic uint64_t pending_ns; /* their cost in ns, in a batch with a cost (mgpu__cost_t) */
  /* A CPU worker's seconds per item seen on these items, where a CPU worker
   * handed them back (mgpu__handback) or they were stolen from such a range;
   * 0 otherwise. Set with begin and end, under the lock; then the owner, if
   * a CPU worker, stores the cost of each chunk it runs from it. */
  _Atomic double item_s;
  /* The GPU owning this range cannot allocate memory for one item of the
   * batch (mgpu__gpu_on_failure): it takes nothing more of it, and the
   * other workers take its range as a retired GPU's. */
  _Atomic bool no_room;
} __attribute__((aligned(MGPU_CACHELINE))) mgpu__range_t;

typedef struct {
  size_t first, count;
  int avoid;               /* worker that failed it or handed it back, -1 if none */
  double item_s;           /* handed back: the CPU worker's seconds per item on it; 0 otherwise */
} mgpu__span_t;

struct mgpu__batch {
  /* The event part: lives until the last reference goes. */
  _Atomic int refs;
  uint64_t id;             /* submission number, for traces */
  pthread_mutex_t lock;    /* guards done's change, status, dependents, requeue, waiters */
  pthread_cond_t done_cv;
  _Atomic int done;        /* set under lock; read without it by a waiter that spins */
  int waiters;             /* threads asleep on done_cv */
  _Atomic int status;
  size_t failed_first, failed_count;
  /* Device bytes of one item, where a GPU found no room for one (its error message). */
  _Atomic size_t no_room_bytes;
  _Atomic(const char *) fail_why; /* why no worker could run it (MGPU_NO_WORKER_WHY; NULL: not that) */
  double t_submit, t_start, t_end;
  mgpu__batch_t **dependents;
  int ndependents, dependents_cap;
  _Atomic int deps_pending;
  _Atomic int dep_failed;
  int nworkers;
  mgpu_worker_stats_t *wstats; /* per worker; each slot written only by its worker */

  /* The work part: valid while the runtime runs it. */
  mgpu_runtime_t *rt;
  mgpu_batch_t desc;
  size_t base;             /* global index of its item 0: chunk->first is base + the item's index */
  mgpu_kernel_t kernel;    /* copy of the user's kernel */
  void *arg_copy;
  bool cpu_ok, gpu_ok;     /* which worker kinds may take items */
  bool steal_ok;           /* false in static mode */
  bool cpu_out;            /* CPU workers sit this batch out (mgpu__activate) */
  bool gpu_out;            /* GPUs sit it out: auto's way MGPU_RESERVE_GPUS_OUT */
  int nreserve;            /* the last CPU workers kept out while a GPU lives (MGPU_RESERVE_THREADS) */
  int reserve_level;       /* auto: the way it runs (mgpu__reserve_pick's level) */
  bool reserve_timed;      /* auto: its time teaches the model about that way */
  mgpu__model_t *model;
  /* Cost profile sums of this batch (mgpu__prof_add), a row of seconds and
   * items per bin for each GPU worker, written by that worker only; NULL where
   * no profile is kept. */
  double *prof_sums;
  mgpu__cost_t *cost;      /* set where its GPUs split it by cost (split_gpus_by_cost) */
  mgpu__range_t *ranges;   /* [nworkers] */
  _Atomic size_t remaining; /* items not yet completed */
  _Atomic size_t unclaimed; /* items in no claim: in a range or waiting to be requeued */
  _Atomic int failed;      /* a kernel failed or the batch was canceled: drain without computing */
  _Atomic size_t dropped;  /* items drained without computing */
  mgpu__span_t *requeue;   /* failed GPU chunks waiting to be recomputed, items CPU workers handed back */
  int nrequeue, requeue_cap;
  _Atomic int has_requeue;
  mgpu__batch_t *next, *prev; /* rt active list */
  mgpu__batch_t *tnext, *tprev; /* a device task's place in rt's list of live tasks */
  _Atomic bool active;     /* in the active list; written under rt->lock */
  struct mgpu__task *task; /* a device task's event (task.c), NULL for a batch */
};


typedef struct {
  mgpu__batch_t *b;        /* referenced: release with mgpu__batch_unref */
  size_t first, count;
  bool from_share;         /* from the worker's share of the first split: not stolen, not requeued */
  uint64_t cost_ns;        /* its cost, in a batch with a cost */
  const mgpu__call_t *calls; /* a CPU worker's calls of its items done, for its model (NULL: one call) */
  int ncalls;
} mgpu__claim_t;

/* Claim up to max_items for worker w from any batch it may work on; false if none. */
bool mgpu__claim(mgpu_runtime_t *rt, mgpu__worker_t *w, size_t max_items, double target_s, mgpu__claim_t *c);
/* Whether every item of b is claimed: no range has items left and nothing
 * waits to be recomputed (the batch's tail: what is left is in flight). */
bool mgpu__all_claimed(const mgpu__batch_t *b);
/* A range's lock, counted in mgpu__range_locks_held. */
void mgpu__range_lock(mgpu__range_t *r);
void mgpu__range_unlock(mgpu__range_t *r);

/* ----------------------------------------------------------- complete.c */
/* Report a finished claim (ok) or give it back for recomputation (failed GPU chunk). */
void mgpu__complete(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, double busy_s, int kernel_rc);
/* Close a claim of a failed batch without computing it. */
void mgpu__drop(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c);
/* Close claim c of CPU worker w, run in calls, whose call on its items
 * [done, done + bad) returned kernel_rc != 0 after busy_s seconds in all:
 * the items before it computed, it failed (the batch's failed range), the
 * items after it never run. */
void mgpu__complete_failed(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, size_t done, size_t bad,
                           double busy_s, int kernel_rc);
void mgpu__giveback(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c);
/* CPU worker w computed the first `done` items of claim c in busy_s seconds,
 * far past their predicted_s, at item_s seconds an item
 * (mgpu__cpu_items_cost): close them, and give the rest of the claim and of
 * w's own range back to the batch, carrying item_s, to be taken by whoever
 * is predicted to finish them first (claim.c, take_requeue). */
void mgpu__handback(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__claim_t *c, size_t done, double busy_s,
                    double predicted_s, double item_s);

/* ------------------------------------------------------------- retire.c */
/* Mark a GPU worker retired and wake the others to take its ranges. */
void mgpu__retire(mgpu_runtime_t *rt, mgpu__worker_t *w, const char *why);
/* Fail with st every active batch with items in no claim that no worker may
 * run any more, dropping those items; why ends the log's sentence. */
void mgpu__fail_orphans(mgpu_runtime_t *rt, mgpu_status_t st, const char *why);

/* ---------------------------------------------------------- lifecycle.c */
/* Register b (fields set, refs not) behind its dependencies; frees b on failure. */
mgpu_status_t mgpu__enqueue(mgpu_runtime_t *rt, mgpu__batch_t *b, size_t ndeps, mgpu_event_t *const *deps,
                            mgpu_event_t **done_p);
mgpu_status_t mgpu__check_deps(const mgpu_runtime_t *rt, const char *fn, size_t ndeps, mgpu_event_t *const *deps);
/* Its dependencies are met: split it into ranges (or start a task's first phase). */
void mgpu__activate(mgpu_runtime_t *rt, mgpu__batch_t *b);
/* Complete a batch or task: publish its status, release dependents. */
void mgpu__finish(mgpu_runtime_t *rt, mgpu__batch_t *b);
/* Stop batch b at its next chunk boundary (mgpu_event_cancel). */
void mgpu__cancel(mgpu_runtime_t *rt, mgpu__batch_t *b);
/* Fail batch b with st (not MGPU_OK), under b->lock: the first failure wins,
 * so a cancel or a kernel's error is never overwritten by a later cause.
 * True when st became its status. */
bool mgpu__batch_fail(mgpu__batch_t *b, int st);
/* Whether a kernel's error may become a batch's status st (under b->lock):
 * also after a cancel, whose drain would otherwise hide it, and which
 * reads as no failure where it dropped no item (mgpu__finish). */
static inline bool mgpu__status_open(int st) { return st == MGPU_OK || st == MGPU_ECANCELED; }
void mgpu__batch_ref(mgpu__batch_t *b);
void mgpu__batch_unref(mgpu__batch_t *b);

/* ---------------------------------------------------------------- plan.c */
/* The first split of batch b into shares of its items, one per worker (share
 * zeroed, [nworkers]); also chooses its reserve and, where its GPUs split by
 * cost, its cost (b->cost). False when no worker can take it. Under rt->lock. */
bool mgpu__plan_split(mgpu_runtime_t *rt, mgpu__batch_t *b, size_t *share);

/* --------------------------------------------------------------- speed.c */
/* Whether worker w may take items of b (its kind, retired, room for an
 * item, reserve, sit-out). */
bool mgpu__eligible(const mgpu_runtime_t *rt, const mgpu__batch_t *b, const mgpu__worker_t *w);
bool mgpu__any_live_gpu(const mgpu_runtime_t *rt);
/* Ratio of one GPU to one CPU worker before any measurement. */
double mgpu__prior_ratio(const mgpu_runtime_t *rt);
/* Items/s worker w is taken to run b's kernel at (0: retired): its fit's rate
 * at the size it claims; for a CPU worker, the team's rate (its items over
 * its seconds); before the fit is known, for a GPU, no less than the prior
 * (MGPU_DEVICE_TO_CORE_RATIO or the device's estimate, times a CPU worker's
 * speed). */
double mgpu__worker_speed(const mgpu__batch_t *b, int w);
/* Seconds of latency worker w's chunks of b's kernel have (the CPU team's
 * mean for a CPU worker; 0 before measurements). */
double mgpu__worker_latency(const mgpu__batch_t *b, int w);
/* The items/s a GPU's chunk of b's kernel adds past its latency (1 / c of
 * its fit), where its speed is its own fit's; else 0: its time for s items
 * is then taken as latency + s / speed (mgpu__share_time). */
double mgpu__worker_peak(const mgpu__batch_t *b, int w);
/* Seconds from a batch's start to a CPU worker's first chunk of it, where the
 * worker was idle as it started (waking the team): the runtime's decayed
 * mean, learnt from each such first chunk; 0 before the first. Any kernel's
 * batches teach it. The split adds it to the CPU workers' latency: a batch
 * the GPUs end in less gives them nothing to start on. */
double mgpu__start_cost(const mgpu_runtime_t *rt);
void mgpu__start_cost_learn(mgpu_runtime_t *rt, double s);
/* The runtime's model of kernel k for batches of this footprint, made on
 * first use. Under rt->lock. */
mgpu__model_t *mgpu__model_get(mgpu_runtime_t *rt, const mgpu_kernel_t *k, uint64_t footprint);
void mgpu__models_free(mgpu_runtime_t *rt);
/* The longest one item of b's kernel is known to take a CPU worker (0: not known). */
double mgpu__cpu_item_s(const mgpu__batch_t *b);
/* The seconds an item cost CPU worker wi where `done` items took `busy`
 * seconds, calls_s of them the calls' own cost (their count times the CPU
 * team's latency, mgpu__worker_latency). */
double mgpu__cpu_items_cost(const mgpu__batch_t *b, int wi, double busy, size_t done, double calls_s);
/* group[i] for every worker: for a GPU, the index of the first GPU worker of
 * its kind (same model, multiprocessors and clock); -1 for a CPU worker. */
void mgpu__gpu_groups(const mgpu_runtime_t *rt, int *group);

/* ---------------------------------------------------------------- room.c */
size_t mgpu__room_bytes_per_item(const mgpu_kernel_t *k);
/* Items of kernel k a slot's device memory holds (at least 1); kept in cap_items. */
size_t mgpu__room_cap(mgpu__room_t *r, const mgpu_kernel_t *k);
/* Which arrays of batch b are pinned, and the bytes per item that its chunks
 * stage (found once per batch: a driver query per array, never under a lock). */
void mgpu__room_pin(mgpu__room_t *r, const mgpu__batch_t *b);
/* Most items of b in one chunk: what a slot's device memory holds and, for
 * pageable arrays, what its staging buffer holds (at least one item). */
size_t mgpu__room_limit(mgpu__room_t *r, const mgpu__batch_t *b);

/* ---------------------------------------------------------------- idle.c */
/* Idle: spin briefly on work_gen, then sleep until it changes or stop. */
void mgpu__idle_wait(mgpu_runtime_t *rt, uint64_t seen_gen, bool gpu_thread);
/* Wake only the GPU host threads (device tasks posted). */
void mgpu__wake_gpus(mgpu_runtime_t *rt);
/* The watchdog looks at once (work posted to a GPU given up fails now). */
void mgpu__wake_watchdog(mgpu_runtime_t *rt);
void mgpu__wake_all(mgpu_runtime_t *rt);
/* Wake up to n sleeping CPU workers to help with a copy job. */
void mgpu__wake_helpers(mgpu_runtime_t *rt, int n);
/* Whether a CPU worker could take a piece now (a job is open, few threads copy). */
bool mgpu__copy_wanted(mgpu_runtime_t *rt);
/* Threads copying staging pieces at once, GPU threads included. */
int mgpu__copy_threads_max(const mgpu_runtime_t *rt);

/* --------------------------------------------------------------- batch.c */
/* The caller's kernel (what: "batch->kernel->size", for messages) and batch,
 * copied in full (abi.c): k gets the kernel, d->kernel points at it. */
mgpu_status_t mgpu__kernel_in(const char *fn, const char *what, const mgpu_kernel_t *user, mgpu_kernel_t *k);
mgpu_status_t mgpu__batch_in(const char *fn, const mgpu_batch_t *user, mgpu_batch_t *d, mgpu_kernel_t *k);
/* mgpu_submit's checks of a batch copied in by mgpu__batch_in. Messages
 * name the public call fn that the caller made (mgpu_submit, mgpu_run,
 * mgpu_parallel_for, ...), and each field of the batch with the prefix pre
 * that the call's own words give it: "batch->" where the caller passed a
 * batch, "" where the call's arguments are the fields (mgpu_parallel_for's n). */
mgpu_status_t mgpu__batch_check(const mgpu_runtime_t *rt, const char *fn, const char *pre, const mgpu_batch_t *d);
/* mgpu_submit and mgpu_run on this process's workers, for the public call
 * fn (fn and pre as for mgpu__batch_check). A batch submitted with a base
 * shows its kernel chunk->first = base + the item's index in it (the ranks'
 * layer runs a part of a larger batch so); its arrays hold its own n items. */
mgpu_status_t mgpu__node_submit(mgpu_runtime_t *rt, const char *fn, const char *pre, const mgpu_batch_t *batch,
                                size_t base, size_t ndeps, mgpu_event_t *const *deps, mgpu_event_t **done_p);
mgpu_status_t mgpu__node_run(mgpu_runtime_t *rt, const char *fn, const char *pre, const mgpu_batch_t *batch,
                             mgpu_stats_t *stats);

/* --------------------------------------------------------------- event.c */
/* Wait until every device task on GPU gpu submitted before the call (also
 * those still waiting for their dependencies) has completed, whatever its
 * status: memory it may use can then be freed. */
void mgpu__tasks_wait(mgpu_runtime_t *rt, int gpu);
/* A caller's mgpu_stats_t as its layout says (abi.c): what it gave, in full
 * (`in`), and where its figures go. */
typedef struct {
  mgpu_stats_t in;        /* its fields, the missing ones 0 */
  mgpu_stats_t *user;     /* NULL: none given */
  size_t bytes;           /* bytes of *user to write */
  char *worker;           /* its worker array (NULL: none, or worker_cap <= 0) */
  size_t worker_bytes;    /* the array's element size */
  int worker_cap;
  char *rank;             /* its rank array (NULL: none, rank_cap <= 0, or a layout without one) */
  size_t rank_bytes;
  int rank_cap;
} mgpu__stats_ref_t;
/* Check a caller's stats (NULL: a ref that writes nothing); fn names the call. */
mgpu_status_t mgpu__stats_ref(const char *fn, const mgpu_stats_t *user, mgpu__stats_ref_t *r);
/* A ref over the library's own full array w of cap workers, for no caller's struct. */
void mgpu__stats_ref_own(mgpu__stats_ref_t *r, mgpu_worker_stats_t *w, int cap);
/* Write worker i's figures into the caller's array, within its element size. */
void mgpu__stats_put_worker(const mgpu__stats_ref_t *r, int i, const mgpu_worker_stats_t *w);
/* Read worker i's figures from the caller's array (0 past its element size). */
void mgpu__stats_get_worker(const mgpu__stats_ref_t *r, int i, mgpu_worker_stats_t *w);
/* Write rank i's figures into the caller's rank array, within its element size. */
void mgpu__stats_put_rank(const mgpu__stats_ref_t *r, int i, const mgpu_rank_stats_t *k);
/* Write the full figures s into the caller's struct within its size, keeping
 * the fields that the caller gives (size, worker, worker_cap, worker_size). */
void mgpu__stats_put(const mgpu__stats_ref_t *r, mgpu_stats_t *s);
/* mgpu_event_wait of an event the caller holds: the figures into *s (full;
 * NULL: none) and the workers' into r's array (r NULL: none). */
mgpu_status_t mgpu__event_wait(mgpu_event_t *ev, mgpu_stats_t *s, const mgpu__stats_ref_t *r);
/* The mgpu_event_* calls on the event of a batch or device task of this
 * process (api.c's start here). */
mgpu_status_t mgpu__node_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats);
mgpu_status_t mgpu__node_event_test(mgpu_event_t *ev);
mgpu_status_t mgpu__node_event_cancel(mgpu_event_t *ev);
mgpu_status_t mgpu__node_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p);
void mgpu__node_event_release(mgpu_event_t *ev);

/* ------------------------------------------------------------- task.c */
/* What a task's part gets: the GPU it runs on, from that GPU's host thread. */
typedef struct mgpu__devcall {
  mgpu_runtime_t *rt;
  int g;                     /* runtime GPU number */
  const mgpu_dev_ops_t *ops;
  void *ctx;
  void *stream;              /* the GPU's task stream */
} mgpu__devcall_t;

/*
 * A device task runs in phases: phase p calls part(t, dc, p) on every GPU of
 * gpu[] from that GPU's host thread, which enqueues work on its task stream;
 * once every GPU's stream has run it, between(t, p) runs in the thread that
 * saw the phase end, and phase p + 1 starts. Tasks posted to one GPU run in
 * posting order.
 */
typedef struct mgpu__task {
  mgpu__batch_t *b;          /* the event */
  int nphases;
  int ngpus;
  int gpu[MGPU_MAX_DEVICES]; /* runtime GPU numbers taking part */
  int (*part)(struct mgpu__task *t, const mgpu__devcall_t *dc, int phase); /* 0 or MGPU_E* */
  int (*between)(struct mgpu__task *t, int phase);                         /* may be NULL */
  void (*free_arg)(void *arg);                                             /* may be NULL */
  void *arg;
  int phase;
  _Atomic int left;          /* GPUs yet to finish this phase */
  _Atomic int status;        /* first failure */
  pthread_mutex_t lock;      /* guards why */
  char why[256];             /* message of the first failure */
  double dev_s[MGPU_MAX_DEVICES]; /* device seconds of each GPU's parts; slot g by GPU g only */
  size_t items[MGPU_MAX_DEVICES]; /* items each GPU handled, for statistics */
  bool part_failed[MGPU_MAX_DEVICES]; /* a part of GPU g failed; slot g by GPU g only */
  size_t bytes;              /* bytes each GPU's part moves (collectives), 0: not known */
} mgpu__task_t;

/* New task (zeroed, status OK) for the given GPUs; NULL when out of memory. */
mgpu__task_t *mgpu__task_new(int ngpus, const int *gpu);
/* Record a failure of a task (first one wins), with a message. */
void mgpu__task_fail(mgpu__task_t *t, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* batch.c: submit a task (ownership passes to the runtime, also on failure). done_p NULL:
 * wait for it and return its status. */
mgpu_status_t mgpu__task_submit(mgpu_runtime_t *rt, mgpu__task_t *t, const char *name, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p);
/* Post t's current phase to each of its GPUs, in one order on all of them. */
void mgpu__task_post(mgpu_runtime_t *rt, mgpu__task_t *t);
/* Take the oldest part posted to a GPU (its host thread only); false if none. */
bool mgpu__post_take(mgpu__postq_t *q, mgpu__post_t *p);
/* The message of a failed task, for mgpu_event_wait. */
const char *mgpu__task_why(mgpu__task_t *t);
/* lifecycle.c: a task's dependencies are met; its first phase is posted. */
void mgpu__task_start(mgpu_runtime_t *rt, mgpu__batch_t *b);
/* lifecycle.c: GPU g's part of phase `phase` ended with rc (its host thread). */
void mgpu__task_part_done(mgpu_runtime_t *rt, mgpu__task_t *t, int g, int phase, int rc, double dev_s);
void mgpu__task_free(mgpu__task_t *t);

/* ------------------------------------------------------------ trace.c */
/* MGPU_TRACE's substitutions, so that each MPI rank or process of a job has a
 * file of its own: %r the rank, %p the process id, %h the host name, %% a %
 * (mgpu__trace_pattern_ok checks a path for them). */
/* pat with its substitutions for MPI rank `rank` into out; false where that
 * is len characters or more. */
bool mgpu__trace_expand(const char *pat, int rank, char *out, size_t len);
/* rt's trace in messages, "MGPU_TRACE='PATTERN' ('FILE')", into buf. */
const char *mgpu__trace_name(const mgpu_runtime_t *rt, char *buf, size_t len);
/* Open the trace file of rt->cfg.v.trace for this process, MPI rank `rank`. */
mgpu_status_t mgpu__trace_open(mgpu_runtime_t *rt, int rank);
void mgpu__trace_add(mgpu_runtime_t *rt, mgpu__worker_t *w, const mgpu__tev_t *ev);
void mgpu__trace_batch(mgpu_runtime_t *rt, const mgpu__batch_t *b); /* under rt->lock */
mgpu_status_t mgpu__trace_close(mgpu_runtime_t *rt); /* after the workers stopped */
void mgpu__trace_discard(mgpu_runtime_t *rt);        /* mgpu_init failed after mgpu__trace_open */
void mgpu__trace_free(mgpu__worker_t *w);

/* ------------------------------------------------------------ handle.c */
/* MGPU_H_DEVENT: the event of a batch across MPI ranks (dist_batch.c). */
typedef enum { MGPU_H_RUNTIME = 1, MGPU_H_EVENT = 2, MGPU_H_CONST = 3, MGPU_H_DEVENT = 4, MGPU_H_ARRAY = 5 } mgpu__handle_kind_t;
int mgpu__handle_add(mgpu__handle_kind_t kind, const void *p);   /* 0, or -1 out of memory */
bool mgpu__handle_live(mgpu__handle_kind_t kind, const void *p);
bool mgpu__handle_del(mgpu__handle_kind_t kind, const void *p);  /* false if it was not live */
/* MGPU_OK, or MGPU_EINVAL (NULL) / MGPU_ESTATE (not live) naming fn. */
mgpu_status_t mgpu__check_rt(const mgpu_runtime_t *rt, const char *fn);

/* ------------------------------------------------------------ const.c */
void mgpu__const_ref(struct mgpu_const *c);
void mgpu__const_unref(struct mgpu_const *c);
void mgpu__consts_free_all(mgpu_runtime_t *rt);
/* GPU worker g frees its copies of dead constants (called from its thread). */
void mgpu__consts_reap(mgpu_runtime_t *rt, int g, void (*free_fn)(void *ctx, void *p), void *ctx);


/* persist.c: the model store. */
/* Each worker's class (at mgpu_init, once the devices are known). */
void mgpu__persist_init(mgpu_runtime_t *rt);
/* Seed the fits of a new model of a named kernel from the store, warning
 * once where its file cannot be used. Under rt->lock. */
void mgpu__persist_load(mgpu_runtime_t *rt, mgpu__model_t *m);
/* Write what the workers learnt of every named kernel (takes rt->lock to
 * read the models, writes without it). */
void mgpu__persist_save(mgpu_runtime_t *rt);
/* mgpu__persist_save where MGPU_STORE_PERIOD_S passed since the last one,
 * from a caller's thread (in a submit or after mgpu_run's wait); nothing on a
 * worker's thread. */
void mgpu__persist_tick(mgpu_runtime_t *rt);

/* comm.c */
/* Whether the collectives go through NCCL (real devices only). */
bool mgpu__coll_uses_nccl(const mgpu_runtime_t *rt);
/* GPU g's thread aborts its own NCCL communicator (rt->comms_abort). */
void mgpu__coll_abort(mgpu_runtime_t *rt, int g);

/* handle.c */
/* MGPU_ESTATE, naming fn, when the calling thread is a worker of rt: a call
 * that waits for batches of rt (mgpu_run, mgpu_parallel_for,
 * mgpu_event_wait) would wait for the items that worker holds (handle.c). */
mgpu_status_t mgpu__refuse_in_worker(const mgpu_runtime_t *rt, const char *fn);
/* MGPU_ESTATE, naming fn, when rt is live and the calling process is not the
 * one that started it (a child of fork, whose copy of rt has no workers);
 * also part of mgpu__refuse_in_worker and mgpu__check_rt (handle.c). */
mgpu_status_t mgpu__refuse_forked(const mgpu_runtime_t *rt, const char *fn);

#endif /* MGPU_CORE_H */
