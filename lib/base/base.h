/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * base.h: what every layer of lib/ stands on: the lock order, logging and
 * errors, the sizes of the callers' structs, strict parsers, settings,
 * the test fault plan and the machine's CPUs.
 */
#ifndef MGPU_BASE_H
#define MGPU_BASE_H

#define MGPU_BUILDING_LIBRARY 1
#include "config.h"
#include "mgpurt.h"
#include "store/store.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
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


#include "base/tunables.h"

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
extern _Thread_local int mgpu__self_gpu;

/* ---------------------------------------------------------------- abi.c */
/*
 * The structs that callers allocate start with their size, the caller's sizeof
 * (0: version 1's, below). A later version appends fields at or past the
 * previous version's size without raising the alignment, so that a caller's
 * size tells which fields it has. Each struct's owner copies the caller's over
 * a full struct of defaults and writes outputs back within the caller's size.
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
_Static_assert(offsetof(mgpu_config_t, model_dir) >= MGPU__SIZE_TO(mgpu_config_t, mpi_comm_size),
               "mgpu_config_t version 3 overlaps version 2");
_Static_assert(offsetof(mgpu_stats_t, rank) >= MGPU__STATS_SIZE_V1, "mgpu_stats_t version 2 overlaps version 1");
_Static_assert(offsetof(mgpu_batch_t, footprint) >= MGPU__BATCH_SIZE_V1, "mgpu_batch_t version 2 overlaps version 1");
_Static_assert(offsetof(mgpu_stats_t, gpus_out_batches) >= MGPU__SIZE_TO(mgpu_stats_t, nranks),
               "mgpu_stats_t version 3 overlaps version 2");
#define MGPU__TRACE_EVENT_SIZE_V1 MGPU__SIZE_TO(mgpu_trace_event_t, t1)
#define MGPU__ARRAY_PART_SIZE_V1 MGPU__SIZE_TO(mgpu_array_part_t, data)
#define MGPU__ARRAY_BATCH_SIZE_V1 MGPU__SIZE_TO(mgpu_array_batch_t, arg_size)
/* The bytes of a caller's struct to read and write: its size, v1 for 0.
 * MGPU_EINVAL, naming the struct (`what` as messages call it, `type` its type)
 * and both sizes, for a size past `known` (the library's sizeof), one short of
 * its own size field (has_size: the struct starts with one), or one that is
 * not a multiple of `align`, which would end inside a field. */
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
  MGPU_SET_MODEL_DIR,
  MGPU_SET_COUNT
};

/* The settings for tests only (emulated devices, injected faults): read from
 * their MGPU_* variables, but kept out of mgpu_config_t so that no program
 * depends on them; the Check suites set them through mgpu__init_test. Unset:
 * -1, or 0 for emulate_mem and NULL for fault_inject (mgpu__testcfg_init). An
 * emulated launch's time is device_emul.c's kernel_time. */
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
  char model_dir[1024];        /* the model store's directory; "" = off (v.model_dir NULL) */
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

/* -------------------------------------------------------------- fault.c */
/* Test-only fault plan, parsed from MGPU_FAULT_INJECT: entries KIND:D:K
 * separated by commas, D the runtime's GPU number (not the driver's device
 * index), K the 0-based count of that GPU's operations of the kind, or all. */
#define MGPU_FAULT_MAX 32
typedef enum {
  MGPU_FAULT_LAUNCH,   /* launch: the K-th chunk launched fails (all: the GPU is retired) */
  MGPU_FAULT_ALLOC,    /* alloc: the K-th device allocation fails as out of memory */
  MGPU_FAULT_CONST,    /* const: the K-th constant upload fails */
  MGPU_FAULT_PROPS,    /* props (K 0): reading the GPU's properties at mgpu_init fails */
  MGPU_FAULT_HANG,     /* hang: the K-th kernel launch never ends */
  MGPU_FAULT_HANGCOLL, /* hangcoll: the K-th device-task part (allocation, copy, collective) never ends */
  MGPU_FAULT_STALL     /* stall: the host thread pauses MGPU_FAULT_STALL_S after its K-th chunk, as if descheduled */
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

#endif /* MGPU_BASE_H */
