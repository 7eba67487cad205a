/*
 * mgpurt_int.h: the one internal header of libmgpurt. Prototypes are grouped by
 * the file that defines them. Internal non-static names start with mgpu__.
 */
#ifndef MGPURT_INT_H
#define MGPURT_INT_H

#define MGPU_BUILDING_LIBRARY 1
#include "config.h"
#include "mgpurt.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define MGPU_INTERNAL __attribute__((visibility("hidden")))
#define MGPU_CACHELINE 64
#define MGPU_UNUSED(x) ((void)(x))
#define MGPU_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MGPU_MAX(a, b) ((a) > (b) ? (a) : (b))

/* A broken invariant (a failed lock, a corrupt queue) is not recoverable. */
#define MGPU_PANIC(...) mgpu__panic(__FILE__, __LINE__, __VA_ARGS__)
/* pthread calls report their error as the return value, not in errno. */
#define MGPU_PTHREAD_CHECK(call)                                         \
  do {                                                                   \
    int mgpu_rc_ = (call);                                               \
    if (mgpu_rc_ != 0) MGPU_PANIC("%s failed: error %d", #call, mgpu_rc_); \
  } while (0)

/* Every lock of lib/ is taken and released through this pair, with its
 * level in the order table below (MGPU_LK_*). Builds configured with
 * --enable-debug check the order at run time (log.c) and abort on a
 * lock taken out of order; others make the bare checked calls. */
enum {
  MGPU_LK_DIST = 1, /* the ranks' lock (struct mgpu__dist, dist.h) */
  MGPU_LK_TASK,     /* rt->task_lock */
  MGPU_LK_POSTQ,    /* mgpu__postq_t.lock */
  MGPU_LK_COLL,     /* rt->coll_lock */
  MGPU_LK_RT,       /* rt->lock */
  MGPU_LK_BATCH,    /* mgpu__batch_t.lock */
  MGPU_LK_RANGE,    /* mgpu__range_t.lock */
  MGPU_LK_GPU,      /* gp->lock */
  MGPU_LK_HANG,     /* gp->hang_lock */
  MGPU_LK_CONST,    /* mgpu_const.lock */
  MGPU_LK_COPYJOB,  /* mgpu__copyjob_t.lock */
  MGPU_LK_ALLOC,    /* rt->alloc_lock */
  MGPU_LK_TASKMSG,  /* mgpu__task_t.lock */
  MGPU_LK_TIMELINE, /* gp->tl_lock */
  MGPU_LK_SLEEP,    /* rt->sleep_lock, rt->gpu_sleep_lock */
  MGPU_LK_THREADS,  /* rt->watchdog_lock, rt->team_lock */
  MGPU_LK_BACKEND,  /* device back ends' own locks */
  MGPU_LK_LEAF      /* handle.c's, trace.c's, gpu_worker.c's gone_lock, log.c's */
};
#ifdef MGPU_DEBUG_LOCKS
void mgpu__lock_enter(const void *m, int level, const char *what, const char *file, int line);
void mgpu__lock_leave(const void *m, const char *what, const char *file, int line);
#define MGPU_LOCK(m, level)                                   \
  do {                                                        \
    mgpu__lock_enter((m), (level), #m, __FILE__, __LINE__);   \
    MGPU_PTHREAD_CHECK(pthread_mutex_lock(m));                \
  } while (0)
#define MGPU_UNLOCK(m)                                        \
  do {                                                        \
    MGPU_PTHREAD_CHECK(pthread_mutex_unlock(m));              \
    mgpu__lock_leave((m), #m, __FILE__, __LINE__);            \
  } while (0)
#else
#define MGPU_LOCK(m, level) MGPU_PTHREAD_CHECK(pthread_mutex_lock(m))
#define MGPU_UNLOCK(m) MGPU_PTHREAD_CHECK(pthread_mutex_unlock(m))
#endif
/* Whether this build checks the lock order (--enable-debug). */
bool mgpu__lock_order_checked(void);

/* ------------------------------------------------------------- tunables */
/* The scheduler's constants, each with its reason in one line; the
 * measurements behind them are in doc/tuning.md ("Internal constants"). */
/* mgpu_init warns where the CPU workers asked for outnumber the usable cores
 * more than this many times. */
#define MGPU_THREADS_PER_CORE_WARN 4
/* Seconds of device work a GPU's chunk is sized to. */
#define MGPU_GPU_TARGET_S 2e-3
/* A thief far slower than its victim plans with a quarter of its speed. */
#define MGPU_SLOW_THIEF_MARGIN 4.0
/* "Far slower": under 1/8 of the fastest worker. */
#define MGPU_SLOW_SPLIT_RATIO 8.0
/* A worker that would finish fewer items than this in the batch's predicted
 * time gets no first share (where the others end no later without it). */
#define MGPU_MIN_SHARE_ITEMS 4.0
/* A CPU chunk runs in pieces, the first 1/MGPU_PIECE_FIRST of it, each next
 * bringing the items done to MGPU_PIECE_GROWTH times; one that has taken
 * over MGPU_HANDBACK_FACTOR times its predicted time plus MGPU_HANDBACK_SLACK_S
 * (s) after a piece hands back what it has not started (cpu_worker.c). */
#define MGPU_PIECE_FIRST 16
#define MGPU_PIECE_GROWTH 4
/* The calls of a CPU chunk that its fit learns from one by one; any past
 * these are learnt as one with the last. */
#define MGPU_PIECE_CALLS 8
/* A CPU worker's line that has seen one size only cannot tell a cost per
 * call from a cost per item: where target_s of work is under
 * MGPU_FIT_GROWTH items, one chunk in MGPU_FIT_CPU_TRY is that many, whose
 * pieces differ in size. */
#define MGPU_FIT_CPU_TRY 8
#define MGPU_HANDBACK_FACTOR 8.0
#define MGPU_HANDBACK_SLACK_S 2e-3
/* An overrun under this many seconds past the slack is confirmed by the
 * next piece, of as many items, before anything is handed back: a thread
 * the OS held up for a time slice (a few ms on a loaded machine) runs its
 * next piece on time, and handing its range to a slower worker would make
 * one stall cost the batch many times over. */
#define MGPU_HANDBACK_SURE_S 20e-3
/* CPU workers that have never run a kernel probe it, one item each, once the
 * GPUs have spent this long on it (s), their share of the batch included. */
#define MGPU_PROBE_MIN_S 10e-3
/* Weight of each new first-chunk start in mgpu__start_cost's decayed mean. */
#define MGPU_TEAM_START_WEIGHT 0.1
/* CPU workers sit out a kernel's batches where the GPUs alone are predicted
 * to end them less than 1% later. */
#define MGPU_CPU_NEGLIGIBLE 0.01
/* Under 20%, MGPU_RESERVE_THREADS=auto also tries them all out. */
#define MGPU_CPU_OUT_TRY 0.2
/* GPUs together under 30% of the machine's speed on a kernel: auto also
 * tries them out (a GPU's pageable copies can cost the CPU workers more host
 * memory bandwidth than its items are worth). Disjoint from the CPU workers'
 * fifth, so that at most four ways are offered at once. */
#define MGPU_GPU_OUT_TRY 0.3
/* GPUs of one kind measured within 20% of their median split as equals. */
#define MGPU_ALIKE_TOL 0.2
/* Across MPI ranks (dist_batch.c): a steal must save the owner at least
 * this many times what moving its bytes costs, predictions being uncertain. */
#define MGPU_RANK_STEAL_GAIN 4.0
/* A rank runs its share in parts of about this many seconds of its work,
 * claimed one at a time, so that what is not yet claimed can be stolen... */
#define MGPU_RANK_PART_S 0.05
/* ... and in at least this many parts, whatever its speed. */
#define MGPU_RANK_PARTS_MIN 8
/* Parts a rank keeps running at once: the next one is under way when the
 * last ends, so its workers do not wait between parts. */
#define MGPU_RANK_FLIGHT 2
/* The rate at which a rank is taken to move a stolen range's bytes before
 * it has moved any (bytes/s). */
#define MGPU_RANK_BW_PRIOR 1e9

/* Device buffers and each array in them are aligned to this many bytes. */
#define MGPU_ALIGN_DEV 256
/* Consecutive failed chunks after which a GPU is retired. */
#define MGPU_FAILURES_TO_RETIRE 3
/* Why a batch fails with MGPU_EDEVICE where no worker is left to it. */
#define MGPU_NO_WORKER_WHY "no worker is left that can run it"
/* A device given up: how long its chunks' ends must stay unchanged, and at
 * most how long they are read, to tell the chunks it ended (gpu_hang.c). */
#define MGPU_GIVEUP_SETTLE_S 0.01
#define MGPU_GIVEUP_WAIT_S 0.2
/* Task parts enqueued on a GPU's task stream at once. */
#define MGPU_TASKS_IN_FLIGHT 64
/* A slot's pinned staging, allocated once at this size, and the most
 * pageable bytes a chunk may stage: about a chunk's target time of copying,
 * so that buffers never grow (and pin again) as chunks grow. */
#define MGPU_STAGE_SLOT_BYTES ((size_t)32 << 20)
/* Share of a device's free memory (at open) that its slots divide; the rest
 * is for constants, the kernels' own needs and other users of the device. */
#define MGPU_SLOT_MEM_SHARE 0.85
/* Staging copies: smaller ones are made by the GPU thread alone; larger ones
 * are cut into at most MGPU_COPY_PIECES_MAX pieces of at least
 * MGPU_COPY_PIECE_MIN bytes that CPU workers help copy. */
#define MGPU_COPY_SPLIT_MIN ((size_t)2 << 20)
#define MGPU_COPY_PIECE_MIN ((size_t)1 << 20)
#define MGPU_COPY_PIECES_MAX 16
/* Sleeping CPU workers woken per copy job: beyond four copying threads more
 * add little, and each wake is a system call on the GPU thread's path. */
#define MGPU_COPY_WAKE_MAX 3
/* Threads copying pieces at once, GPU threads included: two per GPU, at
 * least four; more take memory bandwidth from the devices' own transfers. */
#define MGPU_COPY_THREADS_PER_GPU 2
#define MGPU_COPY_THREADS_MIN 4
/* Chunks whose copies are shared from their start once a device ran dry
 * waiting for its host thread; after them, copies start alone again to find
 * out whether the need still exists. */
#define MGPU_SHARE_AHEAD 8
/* Copies out of staging at least this long bypass the caches. */
#define MGPU_STREAM_MIN ((size_t)256 << 10)
/* An idle worker spins this long before it sleeps, so that a batch that
 * follows closely finds its workers awake. */
#define MGPU_IDLE_SPIN_S 50e-6
/* A thread waiting for an event spins this long before it sleeps, so that a
 * short batch's end is seen without a sleep and a wake-up. */
#define MGPU_WAIT_SPIN_S 50e-6
/* The watchdog checks the deadlines ten times per shortest deadline (a fixed
 * MGPU_TIMEOUT, or MGPU_TIMEOUT_FLOOR_S under auto), between these bounds:
 * once a second under auto, so that it costs nothing, and a hung device is
 * still noticed within a few percent of its deadline. (The deadlines are
 * public: mgpurt.h.) */
#define MGPU_WATCH_PERIOD_MIN_S 0.01
#define MGPU_WATCH_PERIOD_MAX_S 1.0
/* The chunk-time model (fit.c): each chunk's weight in the fit falls by this
 * factor per later chunk of the same worker. */
#define MGPU_MODEL_DECAY 0.8
/* A chunk's latency is at most this share of its time once it reaches the
 * saturating size (a tenth). */
#define MGPU_SAT_SHARE 0.9
/* Chunks grow fourfold per claim while the rate still rises with the size,
 * by more than 10% from one size class (sizes within 1.5x) to the next. */
#define MGPU_FIT_GROWTH 4.0
#define MGPU_FIT_RISE 1.1
#define MGPU_FIT_SIZE_CLASS 1.5
/* The step-below trial (fit.c, size_class) judges a smaller size by its
 * throughput among others: it skips the chunks claimed while a larger one
 * ran (with the default three streams, two), then sums the device time of
 * this many, and keeps the size where that rate is at least this share of
 * the knee's. */
#define MGPU_FIT_TRIAL_SKIP 2
#define MGPU_FIT_TRIAL_CHUNKS 3
#define MGPU_FIT_TRIAL_KEEP 0.97
/* A chunk claimed while the chunks grew, ending after they stopped, opens
 * the growth again only at this many times the rate of the size class below
 * it (fit.c, size_class: above the 4/3 that overlap can fake). */
#define MGPU_FIT_REOPEN 1.5
/* Chunks of sizes this spread (the weighted variance of the sizes over
 * their mean square) tell latency from rate; closer ones keep one of them. */
#define MGPU_FIT_SPREAD 0.02
/* Time flat in the size over the sizes seen: the rate is taken to rise at
 * least this much past the largest. */
#define MGPU_FIT_FLAT 100.0
/* Chunks whose times scatter about the line by more than this share (items
 * that differ in cost, streams whose chunks overlap) show no latency: the
 * fit is then the mean rate alone. */
#define MGPU_FIT_SCATTER 0.3
/* Where the sizes cannot tell them apart, latency keeps at most this share
 * of the time. */
#define MGPU_FIT_LATENCY_MAX_SHARE 0.9
/* After this many chunks, a timing counts at most MGPU_FIT_CLIP times faster
 * than the fit. */
#define MGPU_FIT_CLIP_AFTER 4
#define MGPU_FIT_CLIP 4.0
/* MGPU_FIT_SHIFT_RUN batches in a row whose chunks of a GPU each took over
 * MGPU_FIT_SHIFT times the fit's predicted time (or under it by that
 * factor): the kernel's cost has changed for good, and the line starts over. */
#define MGPU_FIT_SHIFT 4.0
#define MGPU_FIT_SHIFT_RUN 2
/* A chunk that started before the held one ended and is credited with
 * over this many times its rate ran beside it (mgpu__fit_beside): it
 * joins it. Chunks queued one after another run at about one rate. */
#define MGPU_FIT_BESIDE 10.0
/* Or credited with over this many times its rate, where it spent over
 * MGPU_FIT_BESIDE_SHARE of its own span before the held one's end and was
 * credited under the rest of the held one's time: how far apart launches
 * side by side end depends on when the host issued them, not on the
 * kernel, so their credited rates alone do not tell them. A chunk in a
 * pipeline (copy in, kernel, copy out) has at most two of its three stages
 * hidden by the others, so it is credited at most three times the rate of
 * one that ran alone: past that, with a margin, is no pipelining. */
#define MGPU_FIT_BESIDE_SPAN 4.0
#define MGPU_FIT_BESIDE_SHARE 0.5
/* A chunk that ran alone is learnt while fewer than this many (decayed) of
 * the worker's recent chunks ran among others. */
#define MGPU_FIT_PIPED_MIN 0.5
/* A GPU whose chunks grew into their cap with the rate still rising takes
 * chunks smaller than the cap only where the fit predicts at least this
 * share of the cap's rate. */
#define MGPU_FIT_CAP_LOSS 0.99
/* A GPU's fit is trusted over the prior once its chunks stop growing, or
 * after this many chunks of sizes that never grew (cut by its range or its
 * memory). */
#define MGPU_FIT_TRUST_AFTER 8
/* The floor trials of a GPU's chunks by whole batches (fit.c,
 * mgpu__fit_batch): after this many plain batches of the saturated fit, a
 * batch runs chunks MGPU_FIT_GROWTH times larger (where the last plain
 * batch ran at least MGPU_FIT_BATCH_CHUNKS of them, whose rates spread by
 * MGPU_FIT_BATCH_SPREAD or which the line predicts faster by MGPU_FIT_RISE
 * at the larger size) and is kept at
 * MGPU_FIT_RISE times the faster of the last two plain batches; a batch of a
 * kept floor runs it MGPU_FIT_GROWTH times lower and keeps that at
 * MGPU_FIT_TRIAL_KEEP. A trial not kept waits MGPU_FIT_BATCH_GAP batches
 * for the next, doubling up to MGPU_FIT_BATCH_GAP_MAX. */
#define MGPU_FIT_BATCH_PLAIN 2
#define MGPU_FIT_BATCH_CHUNKS 4
/* Trials up are for kernels whose chunks' rates within one plain batch span
 * this factor or more (items that differ in cost by position), or whose
 * latency the line shows is still over 12% of a chunk's time: elsewhere
 * single chunks judge the size (size_class), and a trial would only cost a
 * batch of chunks too large to overlap their copies. */
#define MGPU_FIT_BATCH_SPREAD 10.0
#define MGPU_FIT_BATCH_GAP 16
#define MGPU_FIT_BATCH_GAP_MAX 256
/* The slowest chunk rate seen drifts back up by this fraction per chunk. */
#define MGPU_SLOW_DRIFT 0.05
/* MGPU_RESERVE_THREADS=auto: batches timed for each way before the choice
 * (MGPU_RESERVE_TRIALS, in mgpurt.h, counts them over all ways);
 * how much faster a way with more workers out must be to be kept; every how
 * many batches another way is timed again. */
#define MGPU_RESERVE_RUNS_PER_WAY 2
#define MGPU_RESERVE_MARGIN 1.01
#define MGPU_RESERVE_REFRESH 16
/* Each refresh that finds the same way fastest as the last one doubles the
 * gap to the next, up to this many batches: a stable kernel stops paying
 * for slower ways, and a change of the fastest way restarts the gap at
 * MGPU_RESERVE_REFRESH. */
#define MGPU_RESERVE_REFRESH_MAX 256
/* A way's speed is the best of its last this many timed batches: with
 * fewer, the kept way's own noisy times flip the choice to a slower way
 * again and again (doc/tuning.md, "Internal constants"). */
#define MGPU_RESERVE_KEEP 8
/* Cost profiles (mgpu__prof_cuts): the spread of bin costs, and the
 * smoothness against half the step, that tell items differing in cost by
 * position from noise; and how many bins either side a bin's cost reaches
 * (mgpu__cost_init). */
#define MGPU_PROF_SPREAD 6.0
#define MGPU_PROF_SMOOTH 4.0
#define MGPU_COST_REACH 2

/* --------------------------------------------------------- concurrency */
/*
 * Who may touch what. Threads: the caller's threads (the API), the CPU
 * workers (one OpenMP team, cpu_worker.c), one host thread per GPU
 * (gpu_worker.c), and the watchdog (watchdog.c). Each field of the shared
 * structures below says who owns it: a named lock, one thread ("worker w
 * only", "its host thread"), or atomic and who writes it. Fields set before
 * the threads start (mgpu_init) and read-only afterwards say so or nothing.
 *
 * Locks, in the order they may be taken (an outer one first; no thread takes
 * one while it holds one further down the table):
 *
 *   order  lock                      guards                                  held for
 *   0      the ranks' lock (dist.h)  MPI calls and the batch across ranks    a whole call of the caller's
 *                                    of one runtime                          thread (takes any below)
 *   1      rt->task_lock             the order of task phases on all GPUs    posting one phase (takes 2)
 *   2      mgpu__postq_t.lock        one GPU's queue of posted task parts    a push or a take
 *   3      rt->coll_lock             rt->comms, rt->comms_ready              creating the communicators (NCCL)
 *   4      rt->lock                  active list, activation and completion  short host work; never a
 *                                    of batches, models, constants lists,    driver call
 *                                    live_batches, the batch trace
 *   5      mgpu__batch_t.lock        done, status, dependents, requeue       a few stores
 *   6      mgpu__range_t.lock        one worker's range of one batch         a few stores; never a driver
 *                                                                            call; never two at once
 *   7      gp->lock                  a GPU thread's start-up and exit state  a handshake (takes 8)
 *   8      gp->hang_lock             deadlines and giving up (gpu_hang.c)    a few stores
 *   9      mgpu_const.lock           dev[] of one constant                   one store
 *   10     mgpu__copyjob_t.lock      one GPU's staging copy job              taking a piece
 *   11     rt->alloc_lock            host_allocs, arrays, dev_allocs         list updates
 *   12     mgpu__task_t.lock         why                                     one message
 *   13     gp->tl_lock               a GPU's timeline ring                   a few stores
 *   14     rt->sleep_lock,           sleeping CPU workers, GPU threads       condition waits
 *          rt->gpu_sleep_lock
 *   15     rt->watchdog_lock,        the watchdog's and the CPU team's       condition waits
 *          rt->team_lock             start and stop
 *   16     back-end locks            device_emul.c's queues and memory       one device call
 *   17     handle.c's lock,          live handles; gone devices; the log     innermost
 *          gpu_worker.c's gone_lock,
 *          log.c's log_lock
 *
 * rt->lock and a range lock are never held together; were both needed,
 * rt->lock would come first. A function that expects a lock held says so on
 * its prototype ("Under rt->lock"). A batch's status changes only under its
 * lock, and the first failure wins (mgpu__batch_fail). No driver call runs
 * under rt->lock or a range lock.
 */

/* ---------------------------------------------------------------- log.c */
enum { MGPU_LOG_NONE = 0, MGPU_LOG_ERROR, MGPU_LOG_WARN, MGPU_LOG_INFO, MGPU_LOG_DEBUG };
void mgpu__log_set_level(int level);
int mgpu__log_level(void);
void mgpu__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record `fmt` as this thread's last error (mgpu_last_error), log it at INFO
 * level, return st: for errors returned to the caller. What the caller cannot
 * otherwise see (a GPU retired, a batch failed on a worker, memory left at
 * finalize) is logged with mgpu__log at WARN or ERROR instead. */
mgpu_status_t mgpu__fail(mgpu_status_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record without logging (for errors a caller is expected to handle). */
mgpu_status_t mgpu__fail_quiet(mgpu_status_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mgpu__clear_error(void);
void mgpu__panic(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
double mgpu__now(void); /* seconds, CLOCK_MONOTONIC */
void mgpu__nap(double s); /* sleep s seconds (at most once: a signal may cut it short) */
/* Range locks (claim.c) this thread holds: thieves wait on them, so nothing
 * slow (a driver call) runs under one; the emulated device panics if it does. */
extern _Thread_local int mgpu__range_locks_held;
/* The runtime whose worker this thread is (NULL: none), and the GPU whose
 * host thread it is (-1: none): a call from inside a kernel that would wait
 * for the calling thread itself is refused (mgpu__task_submit, finalize). */
extern _Thread_local const mgpu_runtime_t *mgpu__self_rt;
/* MGPU_ESTATE, naming fn, when the calling thread is a worker of rt: a call
 * that waits for batches of rt (mgpu_run, mgpu_parallel_for,
 * mgpu_event_wait) would wait for the items that worker holds (handle.c). */
mgpu_status_t mgpu__refuse_in_worker(const mgpu_runtime_t *rt, const char *fn);
/* MGPU_ESTATE, naming fn, when rt is live and the calling process is not the
 * one that started it (a child of fork, whose copy of rt has no workers);
 * also part of mgpu__refuse_in_worker and mgpu__check_rt (handle.c). */
mgpu_status_t mgpu__refuse_forked(const mgpu_runtime_t *rt, const char *fn);
extern _Thread_local int mgpu__self_gpu;

/* ---------------------------------------------------------------- abi.c */
/*
 * The structs that callers allocate start with their size (the caller's
 * sizeof; mgpurt.h, "Structs and versions"). Size 0 stands for the layout of
 * the first extensible version, whose sizes are below. A later version
 * appends its fields at or after the previous version's size (its sizeof,
 * tail padding included), so that a caller's size alone tells which fields
 * it has, and never raises the struct's alignment, on which the version-1
 * sizes and the check of a caller's size depend. Each struct's owner copies
 * what the caller has over a full struct
 * of defaults (config.c, batch.c, event.c, runtime.c, array.c, trace.c) and
 * writes outputs back within the caller's size.
 */
#define MGPU__ROUND_UP(n, a) (((n) + (a) - 1) / (a) * (a))
/* The size of a layout that ends with field `last`, as the compiler pads it. */
#define MGPU__SIZE_TO(type, last) \
  MGPU__ROUND_UP(offsetof(type, last) + sizeof(((type *)0)->last), _Alignof(type))
#define MGPU__CONFIG_SIZE_V1 MGPU__SIZE_TO(mgpu_config_t, timeout)
#define MGPU__SETTING_SIZE_V1 MGPU__SIZE_TO(mgpu_setting_t, doc)
#define MGPU__DEVICE_INFO_SIZE_V1 MGPU__SIZE_TO(mgpu_device_info_t, batch_cap)
#define MGPU__KERNEL_SIZE_V1 MGPU__SIZE_TO(mgpu_kernel_t, scratch_per_item)
#define MGPU__BATCH_SIZE_V1 MGPU__SIZE_TO(mgpu_batch_t, arg_size)
#define MGPU__WORKER_STATS_SIZE_V1 MGPU__SIZE_TO(mgpu_worker_stats_t, staged_bytes)
#define MGPU__STATS_SIZE_V1 MGPU__SIZE_TO(mgpu_stats_t, reserve_workers)
#define MGPU__RANK_STATS_SIZE_V1 sizeof(mgpu_rank_stats_t)
/* Version 2's fields start past version 1's size, tail padding included. */
_Static_assert(offsetof(mgpu_config_t, mpi) >= MGPU__CONFIG_SIZE_V1, "mgpu_config_t version 2 overlaps version 1");
_Static_assert(offsetof(mgpu_stats_t, rank) >= MGPU__STATS_SIZE_V1, "mgpu_stats_t version 2 overlaps version 1");
_Static_assert(offsetof(mgpu_batch_t, footprint) >= MGPU__BATCH_SIZE_V1, "mgpu_batch_t version 2 overlaps version 1");
_Static_assert(offsetof(mgpu_stats_t, gpus_out_batches) >= MGPU__SIZE_TO(mgpu_stats_t, nranks),
               "mgpu_stats_t version 3 overlaps version 2");
#define MGPU__TRACE_EVENT_SIZE_V1 MGPU__SIZE_TO(mgpu_trace_event_t, t1)
#define MGPU__ARRAY_PART_SIZE_V1 MGPU__SIZE_TO(mgpu_array_part_t, data)
#define MGPU__ARRAY_BATCH_SIZE_V1 MGPU__SIZE_TO(mgpu_array_batch_t, arg_size)
/* The bytes of a caller's struct to read and write: its size (`what` names
 * it in messages, e.g. "batch->size"; `type` is the struct's type name), v1
 * for 0. MGPU_EINVAL, naming the struct and both sizes, for a size past
 * `known` (the library's sizeof: a caller built against a newer header), one
 * that does not even hold its size field, or one that is not a multiple of
 * `align` (the struct's _Alignof: no sizeof of it is, and such a size would
 * end inside a field); has_size says whether the struct starts with a size
 * field (an array's elements do not). */
mgpu_status_t mgpu__abi_size(const char *fn, const char *what, const char *type, size_t size, size_t v1,
                             size_t known, size_t align, bool has_size, size_t *bytes_p);
/* Copy min(bytes, known) bytes of the caller's struct `from` over `to`,
 * which holds the defaults (and is `known` bytes long). */
void mgpu__abi_in(void *to, size_t known, const void *from, size_t bytes);
/* Copy a full struct `from` (known bytes) into the caller's, within bytes. */
void mgpu__abi_out(void *to, size_t bytes, const void *from, size_t known);

/* -------------------------------------------------------------- parse.c */
/* Strict parsers, shared with mgpu-run's option parsing through the tests:
 * 0 on success, -1 on anything but a whole value in range. */
/* s without the blanks around it, copied into buf (cut to len - 1 characters). */
const char *mgpu__parse_trim(const char *s, char *buf, size_t len);
size_t mgpu__edit_distance(const char *a, const char *b);
int mgpu__parse_ll(const char *s, long long lo, long long hi, long long *out);
int mgpu__parse_double(const char *s, double lo, double hi, double *out);
bool mgpu__parse_keyword(const char *s, const char *word);
int mgpu__parse_bytes(const char *s, long long lo, long long hi, long long *out);
int mgpu__parse_int_list(const char *s, int lo, int hi, int *out, int max, int *n_p, char *why, size_t whylen);
/* Shares of a split: each finite and in 0..1e12, not all 0. */
int mgpu__check_ratios(const double *r, int n, char *why, size_t whylen);
int mgpu__parse_ratios(const char *s, double *out, int max, int *n_p, char *why, size_t whylen);
/* Whether every % of a trace path starts one of MGPU_TRACE's substitutions
 * (%r, %p, %h, %%); why says which does not. */
bool mgpu__trace_pattern_ok(const char *pat, char *why, size_t len);

/* ------------------------------------------------------------- config.c */
enum { MGPU_SRC_DEFAULT = 0, MGPU_SRC_ENV, MGPU_SRC_ARG, MGPU_SRC_DERIVED };

/* Identifiers of the settings; order is the order --info prints them in. */
enum {
  MGPU_SET_NUM_THREADS = 0,
  MGPU_SET_NUM_GPUS,
  MGPU_SET_DEVICES,
  MGPU_SET_RATIO,
  MGPU_SET_MAX_BATCH,
  MGPU_SET_STREAMS,
  MGPU_SET_SCHED,
  MGPU_SET_STATS,
  MGPU_SET_TRACE,
  MGPU_SET_DEBUG,
  MGPU_SET_EMULATE_GPUS,
  MGPU_SET_EMULATE_SPEED,
  MGPU_SET_EMULATE_MEM,
  MGPU_SET_EMULATE_LATENCY,
  MGPU_SET_EMULATE_WIDTH,
  MGPU_SET_EMULATE_OVERLAP,
  MGPU_SET_FAULT_INJECT,
  MGPU_SET_TENSOR_SPLIT,
  MGPU_SET_RESERVE_THREADS,
  MGPU_SET_TIMEOUT,
  MGPU_SET_MPI,
  MGPU_SET_COUNT
};

/* The settings for tests only (emulated devices, injected faults): read from
 * their MGPU_* variables like the others, but kept out of the public
 * mgpu_config_t so that no program comes to depend on them. The Check suites
 * set them through mgpu__init_test. Unset: -1, or 0 for emulate_mem and NULL
 * for fault_inject (mgpu__testcfg_init). An emulated device's kernel of n
 * items takes emulate_latency + ceil(n / width) * width / speed seconds with
 * a width, latency + n / speed without (speed 0: the latency alone); with
 * emulate_overlap, launches of different streams run side by side and share
 * only their n / speed. */
typedef struct {
  int emulate_gpus;         /* MGPU_EMULATE_GPUS: emulated devices, 0..64 */
  double emulate_speed;     /* MGPU_EMULATE_SPEED: items/s of an emulated device, 0 = unlimited */
  long long emulate_mem;    /* MGPU_EMULATE_MEM: bytes of an emulated device */
  double emulate_latency;   /* MGPU_EMULATE_LATENCY: seconds a launch takes on top of its items, 0..10 */
  long long emulate_width;  /* MGPU_EMULATE_WIDTH: items run at once, 0..2^40, 0 = no limit */
  int emulate_overlap;      /* MGPU_EMULATE_OVERLAP: launches on different streams run side by side, 0 or 1 */
  const char *fault_inject; /* MGPU_FAULT_INJECT: the fault plan (fault.c) */
} mgpu__testcfg_t;

typedef struct {
  mgpu_config_t v;             /* resolved values; every field set */
  mgpu__testcfg_t test;        /* resolved test-only values; every field set */
  int source[MGPU_SET_COUNT];  /* MGPU_SRC_* */
  char text[MGPU_SET_COUNT][160]; /* effective value as text, for --info */
  char trace_path[1024];
  char fault_spec[512];
  int thread_limit;            /* omp_get_thread_limit() at parse: the most CPU workers */
  char thread_limit_text[32];  /* OMP_THREAD_LIMIT as mgpu_info_setting shows it */
} mgpu__config_t;

/* Fill *t with "unset" in every field. */
void mgpu__testcfg_init(mgpu__testcfg_t *t);
/* Syntax and range of every setting: the fields of arg and of test (either
 * may be NULL: all unset), then the environment. */
mgpu_status_t mgpu__config_parse(const mgpu_config_t *arg, const mgpu__testcfg_t *test, mgpu__config_t *out);
/* Seconds a GPU chunk or collective may take under the MGPU_TIMEOUT setting
 * `timeout` (mgpu_config_t.timeout, resolved), given its predicted seconds
 * (<= 0: no prediction); 0 = no deadline. */
double mgpu__deadline_s(double timeout, double predicted_s);
/* Checks that need the machine (device indices) and fills derived defaults. */
mgpu_status_t mgpu__config_resolve(mgpu__config_t *c, int usable_cores, int visible_gpus);
/* Default MGPU_RESERVE_THREADS with gpus GPUs, when MGPU_NUM_THREADS is
 * derived or not: MGPU_RESERVE_AUTO or 0. */
int mgpu__default_reserve(int gpus, bool threads_derived);
/* Auto's ways with threads CPU workers: the count kept out by a quarter (0:
 * auto has no reserve to try), and by half (0: no way between a quarter and
 * all). */
int mgpu__auto_reserve(int threads);
int mgpu__auto_reserve_half(int threads);
/* Warn about MGPU_* variables that are not known, naming the nearest known one. */
void mgpu__config_warn_unknown(char **envp);
const char *mgpu__config_name(int id);
const char *mgpu__config_doc(int id);
const char *mgpu__config_source_name(int src);

/* ----------------------------------------------------------- topology.c */
/* CPUs for the runtime's GPU host threads where they differ from the mask
 * of mgpu_init's caller (set NULL: they inherit it). */
typedef struct {
  void *set; /* a cpu_set_t of `size` bytes (CPU_ALLOC) */
  size_t size;
} mgpu__cpus_t;
/* Usable CPU cores: the runtime's CPUs (mgpu__runtime_cpus), capped by the
 * cgroup CPU quota (v2 or v1). cgroup_root is normally "/sys/fs/cgroup";
 * proc_cgroup normally "/proc/self/cgroup". *wide_p (may be NULL) receives
 * the runtime's CPUs; free it with mgpu__cpus_free. */
int mgpu__usable_cores(const char *cgroup_root, const char *proc_cgroup, mgpu__cpus_t *wide_p, char *how,
                       size_t howlen);
/* CPU limit of the cgroup hierarchy (smallest quota/period on the path), or -1. */
double mgpu__cgroup_cpu_limit(const char *cgroup_root, const char *proc_cgroup);
/* How many CPUs the runtime's threads may run on: the calling thread's mask,
 * or all of OpenMP's places where OpenMP bound the calling thread to one of
 * them; then *wide holds those CPUs and *bound_p the calling thread's count. */
int mgpu__runtime_cpus(mgpu__cpus_t *wide, int *bound_p);
int mgpu__affinity_cores(void);
void mgpu__cpus_free(mgpu__cpus_t *c);
/* Moves the calling thread onto c's CPUs (none: it keeps its mask). */
void mgpu__cpus_apply(const mgpu__cpus_t *c);

/* ------------------------------------------------------ device interface */
/*
 * A device back end. All calls taking `ctx` are made from the device's own host
 * thread (the GPU worker), which called open() first. Return 0 on success or a
 * negative MGPU_E* code; mem_alloc returns MGPU_ENOMEM when the device is out of
 * memory. A stream runs its operations in order; operations on different streams
 * may overlap.
 */
typedef struct mgpu_dev_ops {
  const char *name;
  int emulated;
  int (*count)(void);                                 /* visible devices; 0 on any failure */
  int (*props)(int dev, mgpu_device_info_t *out);     /* any thread */
  int (*can_peer)(int a, int b);                      /* any thread */
  int (*open)(int dev, const mgpu__config_t *cfg, void **ctx);
  void (*close)(void *ctx);
  int (*mem_alloc)(void *ctx, size_t bytes, void **p);
  void (*mem_free)(void *ctx, void *p);
  /* Stream-ordered device memory for a buffer that only stream s uses: neither
   * call waits for work on other streams, as mem_alloc and mem_free may (CUDA's
   * cudaMalloc and cudaFree wait for the whole device). The memory is free once
   * s reaches the free; mem_trim then gives it back to the device, for other
   * allocations. */
  int (*mem_alloc_on)(void *ctx, size_t bytes, void *s, void **p);
  void (*mem_free_on)(void *ctx, void *p, void *s);
  void (*mem_trim)(void *ctx);
  int (*mem_info)(void *ctx, size_t *free_b, size_t *total_b);
  int (*host_alloc)(size_t bytes, void **p);          /* pinned host memory, any thread */
  void (*host_free)(void *p);
  int (*host_is_pinned)(const void *p, size_t bytes); /* 1 if copies can skip staging */
  int (*stream_create)(void *ctx, void **s);
  void (*stream_destroy)(void *ctx, void *s);
  int (*copy_h2d)(void *ctx, void *dst, const void *src, size_t bytes, void *s);
  int (*copy_d2h)(void *ctx, void *dst, const void *src, size_t bytes, void *s);
  /* Enqueue k->gpu (emulated: k->cpu) on stream s for chunk c (device pointers). */
  int (*launch)(void *ctx, const mgpu_kernel_t *k, const mgpu_chunk_t *c, void *s);
  int (*stream_sync)(void *ctx, void *s);             /* wait; returns the stream's error */
  int (*stream_query)(void *ctx, void *s);            /* 0 done, 1 busy, <0 error */
  /* Device-to-core ratio guessed from the device's properties, for the first split. */
  double (*speed_estimate)(void *ctx);
  /* Timing events: record on a stream; once the stream is synchronised,
   * event_time gives the device's time of the event in seconds since open(). */
  int (*event_create)(void *ctx, void **ev);
  void (*event_destroy)(void *ctx, void *ev);
  int (*event_record)(void *ctx, void *ev, void *s);
  int (*event_time)(void *ctx, void *ev, double *t);
  int (*event_query)(void *ctx, void *ev);            /* 0 reached, 1 not yet, <0 the stream's error */
  int (*copy_d2d)(void *ctx, void *dst, const void *src, size_t bytes, void *s); /* within the device */
  /* The device's gate, put on a stream before a chunk's results leave the
   * device: open, the stream passes it at once; once gate_close (any thread)
   * has shut it, the stream stops there for good, so a device given up as
   * hung never writes into the caller's arrays. NULL where unsupported. */
  int (*gate)(void *ctx, void *s);
  void (*gate_close)(void *ctx);
  /* The device is given up (from any thread, never waiting): nothing is
   * called on it again, close included. NULL where nothing is to be done. */
  void (*abandon)(void *ctx);
  /* Tests only (MGPU_FAULT_INJECT hang:G:K): the stream stops here, on an
   * emulated device until mgpu__emul_release_hangs(), on a real one for good. */
  int (*hang)(void *ctx, void *s);
} mgpu_dev_ops_t;

/* Let every stream stopped by an injected hang go on (tests only). */
void mgpu__emul_release_hangs(void);

/* device_emul.c */
extern const mgpu_dev_ops_t mgpu__dev_emul;

/* device_cuda.c (or device_nocuda.c) */
extern const mgpu_dev_ops_t *const mgpu__dev_cuda; /* NULL when built without CUDA */

/* -------------------------------------------------------------- fault.c */
/* Test-only fault plan, parsed from MGPU_FAULT_INJECT:
 *   launch:D:K   the K-th chunk (0-based) launched on GPU D fails
 *   launch:D:all every chunk launched on GPU D fails (the device gets retired)
 *   alloc:D:K    the K-th device allocation on GPU D fails as out of memory
 *   const:D:K    the K-th constant upload on GPU D fails
 *   props:D:0    reading GPU D's properties at mgpu_init fails
 *   stall:D:K    GPU D's host thread pauses MGPU_FAULT_STALL_S just after
 *                its K-th chunk completes, as when the OS takes its core
 * Items are separated by commas. D is the runtime's GPU number (0..), not the
 * driver's device index. */
#define MGPU_FAULT_MAX 32
/* hang: the K-th kernel launch of a GPU never ends; hangcoll: its K-th
 * device-task part (an allocation, copy or collective). */
typedef enum {
  MGPU_FAULT_LAUNCH,
  MGPU_FAULT_ALLOC,
  MGPU_FAULT_CONST,
  MGPU_FAULT_PROPS,
  MGPU_FAULT_HANG,
  MGPU_FAULT_HANGCOLL,
  MGPU_FAULT_STALL
} mgpu_fault_kind_t;
#define MGPU_FAULT_STALL_S 0.05
typedef struct {
  int n;
  struct { mgpu_fault_kind_t kind; int gpu; long long k; /* -1 = all */ } f[MGPU_FAULT_MAX];
} mgpu__fault_plan_t;
int mgpu__fault_parse(const char *spec, mgpu__fault_plan_t *plan, char *why, size_t whylen);
/* -1 with a message when an entry names a GPU at or past ngpus. */
int mgpu__fault_check_gpus(const mgpu__fault_plan_t *plan, int ngpus, char *why, size_t whylen);
bool mgpu__fault_hit(const mgpu__fault_plan_t *plan, mgpu_fault_kind_t kind, int gpu, long long k);

/* -------------------------------------------------------------- model.c */
/*
 * Per-kernel model: each worker's chunk-time fit (fit.c), updated online from
 * finished chunks and kept for the runtime's life, with what it publishes to
 * the other workers; the cost profile; the reserve trials.
 */
/* MGPU_RESERVE_THREADS=auto's ways, fewer workers out first: every CPU
 * worker in, a quarter out, half out, all out; then every GPU out. */
#define MGPU_RESERVE_LEVELS 5
#define MGPU_RESERVE_GPUS_OUT 4
/* One worker's chunk-time model of one kernel (fit.c). Owned by that
 * worker's thread: it claims and completes its own chunks. */
typedef struct {
  double sw, sn, snn, st, snt, stt; /* decayed weighted sums of 1, n, n^2, t, n t, t^2 */
  double items, secs;          /* decayed plain sums of items and seconds: the mean rate */
  double a, c;                 /* the fit: t(n) = a + c n seconds */
  uint64_t samples;            /* chunks learnt from */
  double nmax, rmax, qmax;     /* the largest size class learnt from, its rate by spans, and by device time */
  double nprev, rprev, qprev;  /* the size class before it (0: none yet) */
  bool rising;                 /* the rate rose from nprev to nmax */
  bool rose;                   /* a size below nprev ran slower among others: nprev is a measured knee */
  bool max_lone, prev_lone;    /* the class's rates are of chunks that ran alone only */
  double trial_of;             /* the knee that the step-below trial's sums try to lower (0: none) */
  double trial_items, trial_secs; /* the trial's chunks among others past the first ones: items, device time */
  int trial_n;                 /* the trial's chunks among others so far */
  size_t probe, claimed;       /* the first chunk claimed, and the largest */
  size_t grown;                /* the largest claim when the growth last stopped (SIZE_MAX: growing) */
  size_t planned;              /* the size the last claim asked for, before the end of its range */
  double piped;                /* decayed count of chunks that ran while another was in flight */
  int off_run;                 /* batches in a row far over (> 0) or under (< 0) the prediction */
  double bt_took, bt_pred;     /* the batch's device time in judged chunks, and the line's prediction for them */
  double bt_judged, bt_last_judged; /* its items in judged chunks, and the last batch's where it was off */
  /* The floor trials by whole batches (mgpu__fit_batch). */
  double floor;                /* the chunks' floor the trials kept (0: none) */
  uint64_t bt_batch;           /* the batch being summed: its id + 1 (0: none) */
  int bt_dir;                  /* that batch: 0 plain, 1 a trial up, -1 down, 2 not judged (the fit grew) */
  double bt_items, bt_secs;    /* its items and device time so far */
  size_t bt_claims, bt_first;  /* its claims, and the size of its first */
  double bt_lo, bt_hi;         /* its slowest and fastest chunk rates (items/s) */
  size_t bt_last_claims;       /* claims in the last plain batch */
  size_t bt_last_first;        /* the size of its first */
  double bt_last_spread;       /* its fastest chunk rate over its slowest */
  size_t bt_n;                 /* the batch size the rates are for */
  double bt_rate[2];           /* items/s of the last two plain batches */
  int bt_runs;                 /* plain batches timed since the rates were reset */
  uint64_t bt_count, bt_at, bt_gap; /* batches seen; the batch of the next trial; the gap after a trial not kept */
  bool bt_down_next;           /* the next trial goes down (where there is a floor) */
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
  /* Cost profile, under rt->lock: a GPU's seconds per item in each of
   * MGPU_PROF_BINS equal parts of the index space of batches of prof_n items
   * (0: not learnt), averaged over batches; learnt and used only where every
   * GPU is of one kind (mgpu__prof_learn, mgpu__prof_cuts). */
  double *prof;
  size_t prof_n;
  /* MGPU_RESERVE_THREADS=auto, under rt->lock: batch throughput (items/s) of
   * this kernel's last MGPU_RESERVE_KEEP timed batches with all CPU workers
   * in [0], with a quarter of them out [1], with half [2], with all of them
   * out [3] and with every GPU out [4]. */
  double reserve_rate[MGPU_RESERVE_LEVELS][MGPU_RESERVE_KEEP];
  int reserve_runs[MGPU_RESERVE_LEVELS]; /* batches timed for each (under 2 x MGPU_RESERVE_KEEP); the next goes in slot runs % MGPU_RESERVE_KEEP */
  uint64_t reserve_batches;     /* GPU batches started under auto */
  uint64_t refresh_at;          /* the batch of the next refresh (0: MGPU_RESERVE_REFRESH) */
  uint64_t refresh_gap;         /* batches from it to the one after (0: no refresh yet; MGPU_RESERVE_REFRESH) */
  uint64_t refreshes;           /* refreshes so far: the rotation of the other ways */
  int refresh_best;             /* the fastest way at the last refresh (where refresh_gap > 0) */
  size_t reserve_n;             /* batch size the rates are for */
  struct mgpu__model *next;
} mgpu__model_t;

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
   * scanning for work (doc/tuning.md, "Internal constants"). */
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
};

/* mgpu_init of one process (api.c's mgpu_init starts here), with the
 * test-only settings of *test (NULL: the environment's alone); the Check
 * suites, which link the library's objects, call it for a runtime that is
 * never distributed. Hidden: not part of the library's exports. */
mgpu_status_t mgpu__init_test(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, mgpu_runtime_t **rt_p);
/* mgpu__init_test for MPI rank `rank` of a runtime across ranks (the rank
 * names its trace file, MGPU_TRACE's %r). */
mgpu_status_t mgpu__init_rank(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, int rank, mgpu_runtime_t **rt_p);
/* mgpu_finalize_checked of one process: rt's handle given back, then its
 * batches waited for, its workers stopped and its memory freed. */
mgpu_status_t mgpu__node_finalize(mgpu_runtime_t *rt);

/* -------------------------------------------------------------- claim.c */
#define MGPU_PROF_BINS 128 /* see mgpu__prof_lo */
/* A batch's cost by position (mgpu__cost_init, below). */
typedef struct {
  size_t n;
  double per[MGPU_PROF_BINS];     /* seconds per item in bin j */
  double cum[MGPU_PROF_BINS + 1]; /* seconds of the items before bin j */
} mgpu__cost_t;

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

/* One call of a kernel's CPU function: its items and seconds. */
typedef struct {
  double items, secs;
} mgpu__call_t;

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

/* --------------------------------------------------------------- split.c */
/* A worker's seconds for s items: latency + s / speed; with a peak (> speed,
 * the items/s its chunks' items add past their latency), speed being its
 * rate at the size of its chunks, latency included, the slower of
 * latency + s / peak (the items within one chunk) and s / speed (chunks one
 * after another, each with its latency): counting the latency on top of a
 * rate that holds it already would count it twice. */
double mgpu__share_time(double speed, double latency, double peak, double s);
/* Shares of `items` for n workers that finish them together: worker i
 * takes mgpu__share_time(speed[i], latency[i], peak[i], share[i]) seconds
 * (latency and peak may be NULL: none), and one whose latency alone passes
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
/* What a thief sees of one victim's range: speeds (items/s), latencies (s),
 * peaks (items/s past the latency, 0: none; see mgpu__share_time) and items
 * pending of thief and owner, items left in the range, the slowest rate the
 * thief has seen on the kernel and the longest one item took a worker of its
 * kind (0: not known). */
typedef struct {
  double vt, at, pkt, pt, vo, ao, pko, po, left;
  double slowest, worst_item_s;
} mgpu__steal_view_t;
/* Items the thief takes from the back of the range (0: the tail rule). */
size_t mgpu__steal_share(const mgpu__steal_view_t *v);
/* What a rank that steals from another rank sees: rates (items/s) and
 * latencies (s) of thief and owner, the items each has running and the items
 * left in the owner's range; the bytes of an item's inputs and outputs
 * together, the rate (bytes/s) at which the thief moves them and the seconds
 * a steal costs besides its bytes (round trips, a batch's start). */
typedef struct {
  double vt, at, pt, vo, ao, po, left;
  double bytes_per_item, bw, fixed_s;
  /* The other ranks whose ranges are empty, thieves too before long: their
   * rates and items running (nothers of each; NULL for none). */
  int nothers;
  const double *ov, *op;
} mgpu__rank_steal_view_t;
/* Items a rank takes from the back of another rank's range (0: none): the
 * share at which the owner, the thief and the other idle ranks (taking
 * theirs next) all finish together, the thieves' times including moving the
 * inputs and outputs; none where that saves the owner less than
 * MGPU_RANK_STEAL_GAIN times the time the transfer costs, or where the
 * steal's fixed cost would be over 1 / MGPU_RANK_STEAL_GAIN of its work. */
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
  bool isolated; /* the device had nothing else in flight as it started */
  uint64_t tag;  /* its first chunk's batch: id + 1 (0: none, a CPU worker's) */
  const mgpu__call_t *calls; /* a CPU chunk's kernel calls (its pieces), which the line learns from */
  int ncalls;                /* how many (0: the chunk was one call) */
} mgpu__sample_t;
/* A GPU's sample: an isolated one's time holds the fill of the pipeline
 * (copies in, the kernel, copies out one after the other), which a chunk
 * among others in flight does not pay, and it is learnt only where the
 * worker's chunks run alone; elsewhere it only judges whether the chunks
 * still grow, where it is past the largest size learnt. The size classes
 * that judge the growth are of single launches: chunks that ran side by
 * side, or ended out of order, are as fast together as their launches' size
 * makes them, and judged as one launch of their total they would tell of a
 * size never launched. */
void mgpu__fit_sample(mgpu__fit_t *f, const mgpu__sample_t *s);
/* A GPU is about to claim from batch `tag` (its id + 1) of n items: where
 * that is a new batch, the batch before it is judged. A floor trial compares
 * whole batches, which hold the same items in the same places: items that
 * differ in cost by position (a divergent kernel's rows) make the rates of
 * single chunks of different sizes incomparable, and a launch too small to
 * keep the device busy beside the others' slowest items cannot be told
 * from a cheap part of the batch (doc/tuning.md, "Completion times").
 * Returns the direction of the trial it judged (1 up, -1 down; 0: none),
 * with that batch's items/s and the plain batches' it was held to. */
int mgpu__fit_batch(mgpu__fit_t *f, uint64_t tag, size_t n, double *rate, double *base);
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
/* Items of the worker's next chunk, before the end of its range: the probe
 * (prior_rate items/s for target_s) before any claim; where it `grows` (a
 * GPU), growing from the largest claim while the fit is not known, then
 * target_s of work and never under the measured knee nor the floor of its
 * batch trials (mgpu__fit_batch); else target_s at its mean rate. At most
 * max_items, at least 1. */
size_t mgpu__fit_chunk(const mgpu__fit_t *f, double prior_rate, double target_s, size_t max_items, bool grows);
/* A claim of n items was made from the size mgpu__fit_chunk gave. */
void mgpu__fit_claimed(mgpu__fit_t *f, size_t n);

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

/* --------------------------------------------------------------- stage.c */
/* Whether a GPU's device has run out of work (stage.c asks while copying). */
typedef bool (*mgpu__starved_fn)(void *arg);
/* GPU worker w copies bytes from src to dst for a chunk of batch b: into its
 * staging buffer, or (to_user) out of it into the user's array. A large
 * copy is shared with CPU workers when starved(arg) says its device waits: as
 * it starts, or with up to two GPUs from the moment it does (asked after every
 * piece). starved NULL: w copies it all alone. */
void mgpu__copy(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__batch_t *b, void *dst, const void *src, size_t bytes,
                bool to_user, mgpu__starved_fn starved, void *arg);
/* A GPU's count of chunks whose staging copies are shared from their start,
 * after issuing one more: the full count when its device ran dry (`dry`: it
 * had chunks in flight and all had ended), one less otherwise; always 0 with
 * more than two GPUs, whose copies are shared only when the device waits as
 * they start. */
int mgpu__share_ahead(const mgpu_runtime_t *rt, int left, bool dry);
/* CPU worker w copies pieces of open copy jobs while it can take any. */
void mgpu__copy_help(mgpu_runtime_t *rt, mgpu__worker_t *w);
void mgpu__copyjobs_init(mgpu_runtime_t *rt);
void mgpu__copyjobs_destroy(mgpu_runtime_t *rt);

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

/* --------------------------------------------------------------- stats.c */
/* mgpu_runtime_stats without the handle check, for finalize: the figures
 * into *s (full), the workers' into r's array. */
void mgpu__runtime_stats(const mgpu_runtime_t *rt, mgpu_stats_t *s, const mgpu__stats_ref_t *r);

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
/* MGPU_RESERVE_THREADS=auto: which way a batch of n items runs, of those in
 * the bit mask `offered` (bit l for level l; 0 and 1 always): every CPU
 * worker in (0), a quarter out (1), half out (2), all out (3); and whether
 * its time is to be learnt (*record). mgpu__reserve_learn takes
 * the items/s of a recorded batch. Under rt->lock. */
int mgpu__reserve_pick(mgpu__model_t *m, size_t n, unsigned offered, bool *record);
void mgpu__reserve_learn(mgpu__model_t *m, int level, double items_per_s);
/* A way's speed as the choice sees it: the best of its kept times (0: none). */
double mgpu__reserve_score(const mgpu__model_t *m, int level);
/* Item cost by position. Items of some kernels differ in cost by where they
 * lie (the rows of a Mandelbrot image), and a GPU's whole range of a short
 * batch goes in flight in a few launches, so a split of alike GPUs by items
 * per second, learnt on whichever items each did last, stays wrong
 * (doc/tuning.md, "Internal constants").
 * Bins: MGPU_PROF_BINS equal parts of [0, n); bin j starts at
 * mgpu__prof_lo(n, j). */
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

/* A batch's cost by position, from the profile its GPUs were split by
 * (mgpu__prof_cuts): seconds per item in each bin, and in all before it. The
 * batch's GPUs then also size their chunks and steal from one another by it:
 * by items, a chunk of a costly stretch takes many times its planned time,
 * and a thief takes far more than its share (doc/tuning.md, "Internal constants").
 * Each bin costs the most of the profile's bins within MGPU_COST_REACH of it:
 * a chunk across a rise in cost spreads its time evenly over its items, so
 * on the slopes of a peak the profile learns some bins below their cost,
 * and a chunk sized by them would take many times its planned time. */
void mgpu__cost_init(mgpu__cost_t *c, const double *prof, size_t n);
/* The cost of items [0, x); x >= n: of all. */
double mgpu__cost_at(const mgpu__cost_t *c, size_t x);
/* The least x with mgpu__cost_at(c, x) >= cost, within 1e-12 of the total
 * cost (0 for cost <= 0, n past the total). */
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

/* ------------------------------------------------------------ cpu_worker.c */
void mgpu__cpu_worker_loop(mgpu_runtime_t *rt, mgpu__worker_t *w);
mgpu_status_t mgpu__team_start(mgpu_runtime_t *rt);
void mgpu__team_join(mgpu_runtime_t *rt);

/* ------------------------------------------------------------ gpu_worker.c */
mgpu_status_t mgpu__gpu_start(mgpu_runtime_t *rt, int g);
/* Wait until GPU g's thread has ended or its device was given up as hung
 * (after rt->stop). */
void mgpu__gpu_wait(mgpu_runtime_t *rt, int g);
/* Then, once the watchdog has stopped: join the thread and free its state,
 * or, for a device given up, leave both alone (rt->gpu_gone[g]). */
void mgpu__gpu_join(mgpu_runtime_t *rt, int g);
/* The watchdog's look at GPU g at host time now: gives the device up when the
 * chunk its thread waits for passed its deadline; fails work posted to a
 * device given up. */
void mgpu__gpu_watch(mgpu_runtime_t *rt, int g, double now);

/* ------------------------------------------------------------ watchdog.c */
mgpu_status_t mgpu__watchdog_start(mgpu_runtime_t *rt);
void mgpu__watchdog_stop(mgpu_runtime_t *rt);
size_t mgpu__gpu_cap(mgpu_runtime_t *rt, int g);
double mgpu__gpu_estimate(mgpu_runtime_t *rt, int g); /* device-to-core ratio guess */
/* Device start/end times (s) of GPU g's last chunks, oldest first; returns the count. */
#define MGPU_TIMELINE 256
int mgpu__gpu_timeline(mgpu_runtime_t *rt, int g, double *start, double *end, int max);

/* GPU worker thread only: device copy of constant c (uploaded on first use). */
int mgpu__gpu_const(const struct mgpu__devcall *dc, mgpu_const_t *c, const void **out);

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
 * A device task: work that must run on given GPUs (collectives, split arrays,
 * device memory), with an event like a batch's. It runs in phases: phase p
 * calls part(t, dc, p) on every GPU of gpu[] from that GPU's host thread, which
 * enqueues work on the task stream; when every GPU's stream has run it,
 * between(t, p) runs on the host (in the thread that saw the phase end) and
 * phase p + 1 starts. Tasks posted to one GPU run in posting order.
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

/* ------------------------------------------------------------ array.c */
/* mgpu_array_create of an array of n elements of this process that are
 * elements base.. of an array across MPI ranks (base 0: the whole array). */
mgpu_status_t mgpu__array_create(mgpu_runtime_t *rt, size_t n, size_t base, size_t elem_size, int nshares,
                                 const double *shares, mgpu_array_t **a_p);
/* mgpu_array_sum of this process's elements. */
mgpu_status_t mgpu__array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum);
/* The runtime of an array (NULL for NULL). */
mgpu_runtime_t *mgpu__array_rt(const mgpu_array_t *a);
void mgpu__arrays_free_all(mgpu_runtime_t *rt); /* at finalize, arrays the user left */
/* At finalize: device memory from mgpu_device_alloc the user left, with a warning. */
void mgpu__device_allocs_free_all(mgpu_runtime_t *rt);
/* Bytes of emulated device memory still allocated when a device closed (tests). */
extern _Atomic size_t mgpu__emul_left_bytes;
/* Allocations of emulated device memory and of host memory through the
 * emulated back end (mgpu_host_alloc, staging), and their frees (tests). */
extern _Atomic uint64_t mgpu__emul_allocs, mgpu__emul_frees;

/* ----------------------------------------------------------- devmem.c */
/* Note allocation p of bytes on GPU gpu (mgpu_device_alloc); -1: out of
 * host memory. */
int mgpu__devmem_record(mgpu_runtime_t *rt, int gpu, void *p, size_t bytes);
/* Take p off the record; false where GPU gpu has no such allocation. */
bool mgpu__devmem_forget(mgpu_runtime_t *rt, int gpu, void *p);
/* `bytes` bytes at dev, which fn reads or writes on GPU gpu as its argument
 * `name` ("dst", "recv[1]"): where dev lies in an allocation of
 * mgpu_device_alloc, it must be that GPU's and the bytes must end within it
 * (MGPU_EINVAL naming the call, the argument, the allocation's size and the
 * bytes of it asked for; what, if not NULL, says what the bytes hold).
 * Memory of no such allocation (an array's part, the caller's own) is left
 * to the device to refuse. */
mgpu_status_t mgpu__devmem_check(mgpu_runtime_t *rt, const char *fn, const char *name, int gpu, const void *dev,
                                 size_t bytes, const char *what);

/* ------------------------------------------------------------- coll.c */
enum { MGPU__COLL_ALLREDUCE = 0, MGPU__COLL_BROADCAST, MGPU__COLL_ALLGATHER, MGPU__COLL_REDUCE_SCATTER };
/* A collective of the given kind over this process's GPUs (mgpurt.h gives
 * each's rule); async names the _async form in messages and needs done_p,
 * else it waits. */
mgpu_status_t mgpu__node_collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv,
                                    size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps,
                                    mgpu_event_t *const *deps, mgpu_event_t **done_p, bool async);
/* The buffers of a collective on this process's GPUs (count > 0): send[g]
 * where GPU g reads it, and recv[g], are not NULL, and each lies within its
 * allocation of mgpu_device_alloc where it is in one (mgpu__devmem_check),
 * for the bytes mgpurt.h's rule of the kind reads or writes there. GPUs and
 * root are numbered over all ranks (rt->coll_gpu_total, coll_gpu_base). */
mgpu_status_t mgpu__coll_check_buffers(mgpu_runtime_t *rt, const char *fn, int kind, const void *const *send,
                                       void *const *recv, size_t count, mgpu_dtype_t dt, int root);
void mgpu__coll_destroy(mgpu_runtime_t *rt); /* at finalize, after the workers stopped */
/* The NCCL communicators of this process's GPUs, made across the ranks by
 * dist_coll.c: the collectives use them from now on. */
void mgpu__coll_adopt(mgpu_runtime_t *rt, void *const *comms);
/* Whether the communicators exist and were not aborted. */
bool mgpu__coll_ready(mgpu_runtime_t *rt);
/* r[i] = r[i] op x[i] for n elements of type dt (the host path's combine). */
void mgpu__coll_combine(void *r, const void *x, size_t n, mgpu_dtype_t dt, mgpu_redop_t op);
bool mgpu__coll_uses_nccl(const mgpu_runtime_t *rt);
/* GPU g's thread aborts its own NCCL communicator (rt->comms_abort). */
void mgpu__coll_abort(mgpu_runtime_t *rt, int g);

/* ------------------------------------------------------- coll_nccl.c */
/* NCCL, when the build has it (mgpu__nccl is NULL otherwise). */
typedef struct {
  const char *(*version)(void);
  /* Communicators over devices devs[0..n) of this process; why gets NCCL's message. */
  int (*init)(int n, const int *devs, void **comms, char *why, size_t whylen);
  void (*destroy)(int n, void **comms);
  /* kind: 0 allreduce, 1 broadcast, 2 allgather, 3 reduce_scatter. */
  int (*run)(void *comm, int kind, const void *send, void *recv, size_t count, mgpu_dtype_t dt, mgpu_redop_t op,
             int root, void *stream, char *why, size_t whylen);
  void (*abort)(void *comm); /* ncclCommAbort: ends its operations in flight and frees it */
  /* Across processes: bytes of a unique id, a new one (by one process),
   * and the communicators of this process's devices devs[0..n), ranks
   * first..first+n-1 of nranks, from the id every process got. */
  size_t id_bytes;
  int (*unique_id)(void *id, char *why, size_t whylen);
  int (*init_ranks)(int n, const int *devs, int nranks, int first, const void *id, void **comms, char *why,
                    size_t whylen);
} mgpu__nccl_t;
extern const mgpu__nccl_t *const mgpu__nccl;

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

/* ------------------------------------------ gpu_worker.c and its parts */
/* A GPU worker's state. gpu_worker.c runs its host thread; gpu_mem.c holds
 * its memory, gpu_chunk.c its chunks, gpu_task.c its device task parts and
 * gpu_hang.c its deadlines. Everything but the fields marked otherwise is its
 * host thread's own. */
/* A task part in flight on a GPU's task stream. */
typedef struct {
  mgpu__task_t *t;
  int phase;
  void *ev0, *ev1; /* device times of the part */
  double t0;       /* host time it was enqueued */
  bool late;       /* it passed its first deadline */
} mgpu__tflight_t;

typedef struct {
  void *stream;
  void *dbuf;
  size_t dbuf_bytes;
  void *hbuf; /* pinned staging for pageable user arrays */
  size_t hbuf_bytes;
  bool busy;
  void *ev_start, *ev_end; /* device timestamps of the chunk */
  void *ev_h2d, *ev_kern;  /* with MGPU_TRACE: copies in done, kernel done */
  size_t h2d_bytes, d2h_bytes;
  mgpu__claim_t claim;
  double t_issue;
  size_t stage_bytes; /* of its arrays, staged through hbuf */
  int nstaged;
  struct { void *user; const void *staged; size_t bytes; } staged_out[MGPU_MAX_ARGS];
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  const void *consts[MGPU_MAX_CONSTS];
  /* The chunk's copy of the batch's argument: a device that runs it late
   * (hung, then given up) reads this, not the batch's, which is gone. */
  void *arg;
  size_t arg_cap;
  mgpu_chunk_t chunk;
} mgpu__slot_t;

struct mgpu__gpu {
  mgpu_runtime_t *rt;
  int g;
  mgpu__worker_t *w;
  const mgpu_dev_ops_t *ops;
  void *ctx;
  pthread_t thread;
  bool started;
  int nslots;
  mgpu__slot_t *slots;
  int oldest;                 /* FIFO of busy slots: oldest .. oldest+inflight-1 */
  int inflight;
  mgpu__room_t room;          /* what limits its chunks (room.c) */
  long long launches, allocs, const_uploads, completions;
  int failures;               /* consecutive failed chunks */
  bool oom_drain;             /* out of memory for one item: claim nothing until no chunk is in flight */
  double last_done;           /* host time of the last completion (fallback) */
  int share_ahead;            /* chunks whose copies are shared from their start (mgpu__share_ahead) */
  long long host_paced;       /* retirements that found their chunk ended and shared the next copies (gpu_chunk.c) */
  double last_end_dev;        /* device time when the last chunk ended */
  /* The chunk-time sample not yet taught to the model (gpu_chunk.c): a chunk
   * whose device time ended inside time already given to an earlier chunk
   * (the streams ran them out of order) joins that one's sample. */
  mgpu__model_t *held_model;  /* NULL: none held */
  uint64_t held_tag;          /* its first chunk's batch: id + 1 */
  double held_items, held_s, held_span;
  double held_launch;         /* its largest chunk's items */
  bool held_alone;            /* its chunk started with nothing else in flight */
  double epoch_host;          /* host clock at the device's time 0 (open) */
  bool timed;                 /* the back end has timing events */
  /* Device start and end times of the last chunks (ring), for tests and reports. */
  pthread_mutex_t tl_lock;
  double tl_start[MGPU_TIMELINE], tl_end[MGPU_TIMELINE];
  uint64_t tl_n;
  double estimate;
  /* Device tasks: posted by any thread (task.c, under tq.lock), run by this one. */
  mgpu__postq_t tq;
  void *task_stream;
  mgpu__tflight_t tf[MGPU_TASKS_IN_FLIGHT];
  int tf_head, tf_n;
  void *evpool[2 * MGPU_TASKS_IN_FLIGHT];
  int nevpool;
  /* start-up handshake */
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int ready;                  /* 0 starting, 1 ok, -1 failed */
  mgpu_status_t open_status;
  bool exited;                /* under lock: the thread has returned */
  /* Deadlines: under hang_lock. */
  pthread_mutex_t hang_lock;
  double wait_until;          /* host time by which the awaited chunk must end; 0: not waiting */
  /* What it waits for, for the message, formatted only at the deadline: a
   * chunk (wait_kernel set: its items and kernel) or a driver call. */
  const char *wait_kernel;
  size_t wait_first, wait_count;
  double wait_limit;
  char wait_what[160];
  mgpu__post_t issuing;             /* the task part being enqueued (t NULL: none): its call may block */
  bool given_up;              /* hung: what it held went back, nothing more is asked of it */
  double task_done;           /* host time the last task part ended */
  /* Decayed sums of the bytes and device seconds of the task parts that
   * move data (collectives): the predicted time of the next one, from which
   * its deadline follows. */
  double task_bytes_sum, task_secs_sum;
  bool comm_aborted;          /* its NCCL communicator was aborted (rt->comms_abort) */
  long long coll_parts;       /* task parts enqueued, for MGPU_FAULT_HANGCOLL */
};

/* What a device held when it was given up. */
typedef struct {
  mgpu__claim_t claims[32]; /* MGPU_STREAMS_PER_GPU is at most 32 */
  int slot[32];             /* each claim's slot */
  mgpu__tflight_t parts[MGPU_TASKS_IN_FLIGHT + 1];
  int nclaims, nparts;
} mgpu__held_t;

/* gpu_mem.c */
size_t mgpu__gpu_round_up(size_t n); /* to MGPU_ALIGN_DEV */
/* Device layout of a chunk of n items: inputs, outputs, scratch, each aligned. */
size_t mgpu__gpu_dev_bytes(const mgpu_kernel_t *k, size_t n);
void mgpu__gpu_drop_dbuf(mgpu__gpu_t *gp, mgpu__slot_t *s);
/* Grow a slot's device buffer to hold `need` bytes (never shrinks); its staging buffer likewise. */
int mgpu__gpu_ensure_dbuf(mgpu__gpu_t *gp, mgpu__slot_t *s, size_t need);
int mgpu__gpu_ensure_hbuf(mgpu__gpu_t *gp, mgpu__slot_t *s, size_t need);
/* Device copy of constant c for this GPU, uploaded on first use (through stream). */
int mgpu__gpu_const_on_device(mgpu__gpu_t *gp, mgpu_const_t *c, void *stream, const void **out);

/* gpu_chunk.c */
/* Put one claimed chunk in flight on slot s. Returns 0 or an MGPU_E* code. */
int mgpu__gpu_issue(mgpu__gpu_t *gp, mgpu__slot_t *s);
/* A chunk failed with rc (`when`: while starting or running): its claim goes back. */
void mgpu__gpu_on_failure(mgpu__gpu_t *gp, mgpu__slot_t *s, int rc, const char *when);
/* Wait for the oldest in-flight chunk and complete it; false when the device
 * was given up while the thread waited. */
bool mgpu__gpu_retire_oldest(mgpu__gpu_t *gp);

/* gpu_task.c */
/* Take the next posted part and enqueue it; false when the device was given up meanwhile. */
bool mgpu__gpu_task_issue(mgpu__gpu_t *gp);
/* Report the oldest part in flight if done: 1 if it was, 0 if not yet, -1 when the device was given up. */
int mgpu__gpu_task_poll(mgpu__gpu_t *gp);

/* gpu_hang.c */
/* Take a hung device's chunks and task parts in flight, under hang_lock. */
void mgpu__gpu_take_held(mgpu__gpu_t *gp, mgpu__held_t *h);
/* Hand back what a hung device held (taken by mgpu__gpu_take_held) and retire it. */
void mgpu__gpu_give_up(mgpu__gpu_t *gp, mgpu__held_t *h, const char *why);
/* Publish the deadline of the chunk in slot s before waiting for it. */
void mgpu__gpu_watch_begin(mgpu__gpu_t *gp, const mgpu__slot_t *s);
/* Before a driver call that may block on a hung device: its deadline. */
void mgpu__gpu_watch_call(mgpu__gpu_t *gp, const char *what);
/* After the wait or the call: false when the device was given up meanwhile. */
bool mgpu__gpu_watch_end(mgpu__gpu_t *gp);
bool mgpu__gpu_given_up(mgpu__gpu_t *gp);

/* ------------------------------------------ dist.c (dist_none.c without MPI) */
/* The runtime across MPI ranks (rt->dist; dist.h holds its state). Its files
 * sit above the rest of lib/ and run each rank's part of a batch as batches
 * of this process (mgpu__node_submit). In a build without MPI, dist_none.c
 * gives the same calls for a runtime that is never distributed. */
/* mgpu_init: this process's runtime (mgpu__init_test), then its part of the
 * runtime across ranks where MPI spans more than one. */
mgpu_status_t mgpu__dist_init(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, mgpu_runtime_t **rt_p);
/* mgpu_finalize_checked of a runtime across ranks (every rank calls it),
 * after mgpu__dist_close; then this process's runtime. */
mgpu_status_t mgpu__dist_finalize(mgpu_runtime_t *rt);
int mgpu__dist_rank(const mgpu_runtime_t *rt);
int mgpu__dist_size(const mgpu_runtime_t *rt);

/* dist_batch.c: a batch across ranks. Its event is its own object (a
 * handle of kind MGPU_H_DEVENT); the calls on it make the MPI calls that
 * drive it, from the caller's thread. mgpu__dist_submit is mgpu_submit's
 * work, its messages naming the public call fn (mgpu_submit or mgpu_run). */
mgpu_status_t mgpu__dist_submit(mgpu_runtime_t *rt, const char *fn, const mgpu_batch_t *batch, size_t ndeps,
                                mgpu_event_t *const *deps, mgpu_event_t **done_p);
mgpu_status_t mgpu__dist_plan(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t *first_p, size_t *count_p);
/* Run the batch across ranks still open to its end (before finalize). */
void mgpu__dist_close(mgpu_runtime_t *rt);
bool mgpu__dist_is_event(const mgpu_event_t *ev);
mgpu_status_t mgpu__dist_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats);
mgpu_status_t mgpu__dist_event_test(mgpu_event_t *ev);
mgpu_status_t mgpu__dist_event_cancel(mgpu_event_t *ev);
mgpu_status_t mgpu__dist_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p);
void mgpu__dist_event_release(mgpu_event_t *ev);

/* dist_array.c: arrays split across the ranks, then each rank's part
 * across its GPUs and host as on one process. */
mgpu_status_t mgpu__dist_array_create(mgpu_runtime_t *rt, size_t n, size_t elem_size, int nshares,
                                      const double *shares, mgpu_array_t **a_p);
mgpu_status_t mgpu__dist_array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum);

/* dist_coll.c: the collectives over every GPU of every rank. */
mgpu_status_t mgpu__dist_collective(mgpu_runtime_t *rt, int kind, const void *const *send, void *const *recv,
                                    size_t count, mgpu_dtype_t dt, mgpu_redop_t op, int root, size_t ndeps,
                                    mgpu_event_t *const *deps, mgpu_event_t **done_p, bool async);

#endif /* MGPURT_INT_H */
