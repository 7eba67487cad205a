/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgpurt.h: the public interface of libmgpurt, a runtime that runs one batch of
 * independent items on every CPU core and every GPU of a machine at once.
 *
 * Model in one paragraph: a *kernel* says how to compute a run of consecutive
 * items on a CPU (required) and on a GPU (optional). A *batch* is N items of one
 * kernel with its input and output arrays. mgpu_submit() hands a batch to the
 * runtime and returns an *event*; the runtime splits the items between its CPU
 * workers (a persistent OpenMP team) and one host thread per GPU, proportionally
 * to their measured speeds, and balances the tail by work stealing. Each worker
 * calls the kernel on *chunks*: runs of consecutive items. When the event
 * completes, every item has been computed exactly once and the outputs are in the
 * user's arrays.
 *
 * Thread safety: every function may be called from any thread at any time, except
 * that mgpu_finalize() must not race with other calls on the same runtime.
 * Stale handles: a runtime used after mgpu_finalize() gives MGPU_ESTATE; an event
 * used after mgpu_event_release() or a constant after mgpu_const_destroy() gives
 * MGPU_EINVAL; giving a handle back twice is logged and ignored (best effort: a
 * new handle at the same address makes a stale one look valid).
 * Errors: functions return an mgpu_status_t; mgpu_strerror() names it and
 * mgpu_last_error() gives the message of the last failure in the calling thread.
 * The library writes to stderr only what MGPU_DEBUG asks for.
 * Structs and versions: every struct that the caller allocates and the
 * library reads or fills starts with `size_t size`, the caller's sizeof of it,
 * set by its initializer (mgpu_config_init, MGPU_BATCH_INIT, ...). Size 0
 * stands for the layout of this first version, so a struct zeroed or filled
 * with designated initializers works as it is. A program built against an
 * older header (a smaller size) is read and written within its size, the
 * fields it lacks taking their defaults; a size larger than this library
 * knows is refused with MGPU_EINVAL, naming the struct and both sizes, and
 * so is one that is not a multiple of the struct's alignment (no sizeof is:
 * it would end inside a field). Element sizes (mgpu_stats_t.worker_size and
 * rank_size, mgpu_trace_events_size's elem_size) follow the same rules.
 */
#ifndef MGPURT_H
#define MGPURT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MGPU_BUILDING_LIBRARY) && defined(__GNUC__)
#define MGPU_API __attribute__((visibility("default")))
#else
#define MGPU_API
#endif

#define MGPU_VERSION_MAJOR 0
#define MGPU_VERSION_MINOR 1
#define MGPU_VERSION_PATCH 0
#define MGPU_VERSION_STRING "0.1.0"

/** Most inputs or outputs a kernel may have. */
#define MGPU_MAX_ARGS 8
/** Most items one batch may have (2^53): the scheduler's model counts items
 * in doubles, which hold every count up to this one exactly. */
#define MGPU_MAX_ITEMS ((size_t)1 << 53)
/** Most replicated constants one batch may use. */
#define MGPU_MAX_CONSTS 8
/** Most GPUs one runtime drives. */
#define MGPU_MAX_DEVICES 64

/* ------------------------------------------------------------------------- */
/* Status codes                                                               */
/* ------------------------------------------------------------------------- */

/* One list, expanded into the enum and into mgpu_strerror()'s table. */
#define MGPU_STATUS_MAP(X)                                                        \
  X(MGPU_OK, 0, "success")                                                        \
  X(MGPU_EINVAL, -1, "invalid argument or setting")                              \
  X(MGPU_ENOMEM, -2, "out of memory (host, or device where the call says so)")   \
  X(MGPU_ENODEV, -3, "no such device, or GPUs were required and none is usable") \
  X(MGPU_EKERNEL, -4, "a kernel returned an error")                              \
  X(MGPU_EDEP, -5, "a dependency failed")                                         \
  X(MGPU_EDEVICE, -6, "device error")                                             \
  X(MGPU_ENOTSUP, -7, "not supported by this build or machine")                  \
  X(MGPU_ESTATE, -8, "object in the wrong state for this call")                  \
  X(MGPU_ESYSTEM, -9, "operating-system call failed")                            \
  X(MGPU_ECANCELED, -10, "canceled")                                              \
  X(MGPU_EREMOTE, -11, "another rank failed, disagreed or stopped answering")

typedef enum {
#define MGPU_STATUS_ENUM_(name, value, text) name = value,
  MGPU_STATUS_MAP(MGPU_STATUS_ENUM_)
#undef MGPU_STATUS_ENUM_
} mgpu_status_t;

/** Short description of a status code; never NULL. */
MGPU_API const char *mgpu_strerror(mgpu_status_t status);
/** Name of a status code ("MGPU_EINVAL"); never NULL. */
MGPU_API const char *mgpu_status_name(mgpu_status_t status);
/**
 * Message of the last failed call made by this thread (names the argument or
 * setting and what is accepted), or "" if none. Valid until this thread's next
 * call into the library.
 */
MGPU_API const char *mgpu_last_error(void);
/** Version string of the library in use ("0.1.0"). */
MGPU_API const char *mgpu_version(void);

/* ------------------------------------------------------------------------- */
/* Configuration                                                              */
/* ------------------------------------------------------------------------- */

typedef enum {
  MGPU_SCHED_UNSET = 0,
  MGPU_SCHED_STEAL,  /**< split by predicted completion time, then balance by work stealing (default) */
  MGPU_SCHED_STATIC, /**< fixed split by the device-to-core ratio, no stealing */
  MGPU_SCHED_CPU,    /**< CPU workers only */
  MGPU_SCHED_GPU     /**< GPU workers only (kernels without a GPU version still run on CPUs) */
} mgpu_sched_t;

/**
 * Settings for mgpu_init(). Fill it with mgpu_config_init(), then set the fields
 * you want. Precedence: a field set here wins over the environment variable of
 * the same meaning; a field left unset takes the environment variable, and
 * failing that the default. Set ignore_env to 1 to ignore the environment.
 * Numeric fields use -1 (integers) or 0 (ratio, sizes) for "unset".
 */
typedef struct mgpu_config {
  size_t size;                /**< sizeof(mgpu_config_t), as mgpu_config_init sets it */
  int num_threads;            /**< MGPU_NUM_THREADS: CPU workers, 0..4096 */
  int num_gpus;               /**< MGPU_NUM_GPUS: GPUs to use, 0..MGPU_MAX_DEVICES */
  int ndevices;               /**< MGPU_DEVICES: entries in devices[], -1 = unset */
  int devices[MGPU_MAX_DEVICES];
  double device_to_core_ratio; /**< MGPU_DEVICE_TO_CORE_RATIO: > 0, 0 = unset (measured) */
  long long max_batch_size;   /**< MGPU_MAX_BATCH_SIZE: items per GPU launch, 0 = unset */
  int streams_per_gpu;        /**< MGPU_STREAMS_PER_GPU: 1..32 */
  mgpu_sched_t sched;         /**< MGPU_SCHED */
  int stats;                  /**< MGPU_STATS: 0/1, per-worker table at finalize */
  const char *trace;          /**< MGPU_TRACE: trace file path, NULL = unset; not one that
                                   another live runtime traces to (MGPU_EINVAL) */
  int debug;                  /**< MGPU_DEBUG: 0 none, 1 error, 2 warn, 3 info, 4 debug */
  /** MGPU_TENSOR_SPLIT: default shares of split arrays (mgpu_array_create), one per
   *  GPU, optionally one more for the host; each >= 0, not all 0. -1 = unset. */
  int ntensor_split;
  double tensor_split[MGPU_MAX_DEVICES + 1];
  int ignore_env;             /**< 0 or 1: 1 ignores the MGPU_* environment variables */
  /** MGPU_RESERVE_THREADS: CPU workers kept out of batches that GPUs also run
   *  (they run kernels without a GPU function, mgpu_parallel_for, and help with
   *  staging copies), 0..4096 and fewer than num_threads; MGPU_RESERVE_AUTO to
   *  learn per kernel how many to keep out; -1 = unset. */
  int reserve_threads;
  /** MGPU_TIMEOUT: seconds a GPU chunk or a collective may take before its
   *  GPU counts as hung (retired; its items go to the other workers) or its
   *  collective fails; 0 turns the deadlines off; MGPU_TIMEOUT_AUTO (the
   *  default) derives each deadline from the predicted time; -1 = unset.
   *  On a runtime that spans MPI ranks, also how long a rank waits for the
   *  others (mgpu_num_ranks). */
  double timeout;
  /* Version 2: the runtime across MPI ranks. */
  /** MGPU_MPI: 1 (auto, the default in a build with MPI): where the program
   *  has initialised MPI, the runtime spans the ranks of mpi_comm, or of
   *  MPI_COMM_WORLD where mpi_comm is NULL, when they are more than one; 0
   *  (off): this process alone, as in a build without MPI; -1 = unset. */
  int mpi;
  /** The caller's MPI_Comm (a pointer to it; the runtime duplicates the
   *  communicator at mgpu_init), set with MGPU_CONFIG_SET_COMM; NULL = unset
   *  (MPI_COMM_WORLD). */
  const void *mpi_comm;
  /** sizeof(MPI_Comm) in the caller's program (MGPU_CONFIG_SET_COMM sets
   *  it), checked against the library's MPI, which must be the same one. */
  size_t mpi_comm_size;
  /* Version 3: the model store. */
  /** MGPU_MODEL_DIR: the directory where what the runtime learns about each
   *  named kernel is kept between processes, read back as a prior at the
   *  kernel's first batch; "off" keeps nothing. NULL = unset: the default,
   *  $XDG_CACHE_HOME/mgpurt or else $HOME/.cache/mgpurt, and off where
   *  ignore_env is 1. */
  const char *model_dir;
} mgpu_config_t;

/** Set cfg's communicator to *comm_ptr (an MPI_Comm *), with its size. */
#define MGPU_CONFIG_SET_COMM(cfg, comm_ptr) \
  ((cfg)->mpi_comm = (const void *)(comm_ptr), (cfg)->mpi_comm_size = sizeof *(comm_ptr))

/** mgpu_config_t.timeout (MGPU_TIMEOUT=auto): a deadline of ten times the
 *  predicted time of the chunk, at least MGPU_TIMEOUT_FLOOR_S seconds, and
 *  MGPU_TIMEOUT_FIRST_S for work with no prediction yet (a kernel's first
 *  chunks on a GPU, a GPU's first collective). A collective's predicted time
 *  is its bytes at the rate of the GPU's earlier collectives. */
#define MGPU_TIMEOUT_AUTO (-2.0)
#define MGPU_TIMEOUT_FLOOR_S 30.0
#define MGPU_TIMEOUT_FIRST_S 300.0

/** mgpu_config_t.reserve_threads (MGPU_RESERVE_THREADS=auto): for each
 *  kernel, time its batches with every CPU worker in, with the last quarter
 *  and the last half kept out and, where the CPU workers add under a fifth
 *  of the kernel's throughput, with all of them kept out (where the GPUs add
 *  under 30% and the batch steals, with every GPU kept out instead), and
 *  keep the fastest (checked again from the 16th batch on, less often while
 *  the choice stands). */
#define MGPU_RESERVE_AUTO (-2)
/** Under MGPU_RESERVE_AUTO, a kernel's first batches that GPUs run are
 *  trials: one warm-up, then two timed each way by turns (5 batches with two
 *  ways, 7 with three, 9 with four, the most offered at once: all CPU
 *  workers out and every GPU out exclude each other). A benchmark that wants
 *  the steady state runs this many first. */
#define MGPU_RESERVE_TRIALS 9

/** Fill the `size` bytes at cfg with "unset" in every field and set
 * cfg->size = size; fields past what the library knows are zeroed (mgpu_init
 * then refuses the size). Call it through mgpu_config_init. */
MGPU_API void mgpu_config_init_size(mgpu_config_t *cfg, size_t size);
/** Fill *cfg with "unset" in every field, and its size as this program sees
 * it. NULL is a no-op. */
static inline void mgpu_config_init(mgpu_config_t *cfg) { mgpu_config_init_size(cfg, sizeof *cfg); }

/* ------------------------------------------------------------------------- */
/* Runtime                                                                    */
/* ------------------------------------------------------------------------- */

typedef struct mgpu_runtime mgpu_runtime_t;

/**
 * Start a runtime: parse the configuration (cfg may be NULL: environment and
 * defaults), find usable cores and GPUs, start the CPU workers and one host thread
 * per GPU. On success *rt_p is set; on failure it is left unchanged.
 * Errors: MGPU_EINVAL (bad argument or setting; the message names it),
 * MGPU_ENODEV (GPUs required by the configuration but not usable),
 * MGPU_ENOMEM, MGPU_ESYSTEM. Several runtimes may coexist in one process.
 */
MGPU_API mgpu_status_t mgpu_init(const mgpu_config_t *cfg, mgpu_runtime_t **rt_p);

/**
 * Stop a runtime. Batches still in flight are completed first (finalize waits for
 * them); then the workers stop and every resource is released. Events, constants
 * and host allocations of this runtime must not be used afterwards. NULL is a
 * no-op. Must not be called concurrently with other calls on rt.
 * The trace of MGPU_TRACE is written here: a failure to write it (a full disk)
 * is logged at the error level and is otherwise lost; use
 * mgpu_finalize_checked() to see it.
 */
MGPU_API void mgpu_finalize(mgpu_runtime_t *rt);

/**
 * mgpu_finalize(), returning what failed: MGPU_ESYSTEM when the MGPU_TRACE file
 * could not be written (mgpu_last_error() names the file and the reason),
 * MGPU_ESTATE for a runtime that is not live, else MGPU_OK. The runtime is
 * released in every case.
 */
MGPU_API mgpu_status_t mgpu_finalize_checked(mgpu_runtime_t *rt);

/** Workers of the runtime: CPU workers first, then one per GPU. On a
 * runtime that spans MPI ranks: this rank's. */
MGPU_API int mgpu_num_workers(const mgpu_runtime_t *rt);
MGPU_API int mgpu_num_cpu_workers(const mgpu_runtime_t *rt);
MGPU_API int mgpu_num_gpus(const mgpu_runtime_t *rt);
/** Why the GPU probe at mgpu_init found no device ("this libmgpurt is built
 *  without CUDA", or the driver's error, e.g. "cudaGetDeviceCount:
 *  cudaErrorInsufficientDriver: ..."), valid while rt lives; NULL where it
 *  found one, where the settings asked for no GPU (MGPU_NUM_GPUS=0), or
 *  where the devices are emulated. */
MGPU_API const char *mgpu_gpu_probe_error(const mgpu_runtime_t *rt);
/** MPI ranks the runtime spans (1: this process alone), and this process's
 * rank among them (0 alone). */
MGPU_API int mgpu_num_ranks(const mgpu_runtime_t *rt);
MGPU_API int mgpu_rank(const mgpu_runtime_t *rt);

/** What mgpu_info_setting() reports. */
typedef struct {
  size_t size;        /**< sizeof(mgpu_setting_t) (MGPU_SETTING_INIT), or 0 */
  const char *name;   /**< "MGPU_NUM_THREADS" */
  const char *value;  /**< effective value as text */
  const char *source; /**< "default", "environment", "argument" or "derived" */
  const char *doc;    /**< one line: meaning and accepted values */
} mgpu_setting_t;
#define MGPU_SETTING_INIT {.size = sizeof(mgpu_setting_t)}

/** Effective setting number i (0-based); MGPU_EINVAL past the last one. */
MGPU_API mgpu_status_t mgpu_info_setting(const mgpu_runtime_t *rt, int i, mgpu_setting_t *out);

/** Description of one GPU used by the runtime. */
typedef struct {
  size_t size;           /**< sizeof(mgpu_device_info_t) (MGPU_DEVICE_INFO_INIT), or 0 */
  int index;             /**< device index as the driver numbers it */
  char name[128];
  char pci_bus_id[32];
  int sm_count;
  int cc_major, cc_minor;
  int clock_khz;
  size_t total_mem, free_mem;
  int emulated;          /**< 1 for an emulated device (tests) */
  int retired;           /**< 1 when the runtime stopped using it after faults */
  size_t batch_cap;      /**< current items-per-launch cap */
} mgpu_device_info_t;
#define MGPU_DEVICE_INFO_INIT {.size = sizeof(mgpu_device_info_t)}

MGPU_API mgpu_status_t mgpu_device_info(const mgpu_runtime_t *rt, int gpu, mgpu_device_info_t *out);
/** 1 when GPU a can access GPU b's memory directly (peer access), else 0. */
MGPU_API int mgpu_device_peer(const mgpu_runtime_t *rt, int a, int b);
/** Usable CPU cores and a sentence on how they were found: the calling
 * thread's affinity mask at mgpu_init (all of OpenMP's places where OpenMP
 * bound it to one of them), capped by the cgroup CPU quota. */
MGPU_API int mgpu_usable_cores(const mgpu_runtime_t *rt, const char **how);

/* ------------------------------------------------------------------------- */
/* Kernels, chunks, batches                                                   */
/* ------------------------------------------------------------------------- */

/** What one call of a kernel sees: a run of consecutive items. */
typedef struct mgpu_chunk {
  const void *const *in;     /**< in[k]: item `first` of input k (host or device memory) */
  void *const *out;          /**< out[k]: item `first` of output k */
  const void *const *consts; /**< the batch's constants, in this worker's memory */
  const void *arg;           /**< the batch's argument blob (host memory) */
  void *scratch;             /**< kernel->scratch_per_item * count bytes, this worker's memory */
  size_t first;              /**< global index of the first item */
  size_t count;              /**< items in this chunk (>= 1) */
  void *stream;              /**< cudaStream_t for the GPU function, NULL on a CPU */
  int worker;                /**< index of the worker running it */
} mgpu_chunk_t;

/** A kernel function: returns 0 on success, non-zero on failure. */
typedef int (*mgpu_kernel_fn)(const mgpu_chunk_t *chunk);

/**
 * A kernel. `cpu` is required; `gpu` may be NULL (the kernel is unoffloadable and
 * runs on CPU workers only). The GPU function only enqueues work on chunk->stream;
 * it must not synchronise. Item k of input j is at byte offset k * in_size[j].
 * The struct must stay valid while batches that use it are in flight.
 */
typedef struct mgpu_kernel {
  size_t size;             /**< sizeof(mgpu_kernel_t) (MGPU_KERNEL_INIT), or 0 */
  const char *name;
  mgpu_kernel_fn cpu;
  mgpu_kernel_fn gpu;
  int nin, nout;
  size_t in_size[MGPU_MAX_ARGS];
  size_t out_size[MGPU_MAX_ARGS];
  size_t scratch_per_item; /**< bytes of scratch per item, on the worker's memory */
} mgpu_kernel_t;
#define MGPU_KERNEL_INIT {.size = sizeof(mgpu_kernel_t)}

typedef struct mgpu_const mgpu_const_t;

/** A batch: n items of one kernel. Arrays must stay valid until it completes. */
typedef struct mgpu_batch {
  size_t size;      /**< sizeof(mgpu_batch_t) (MGPU_BATCH_INIT), or 0 */
  const mgpu_kernel_t *kernel;
  size_t n;
  const void *in[MGPU_MAX_ARGS];
  void *out[MGPU_MAX_ARGS];
  int nconsts;
  mgpu_const_t *consts[MGPU_MAX_CONSTS];
  const void *arg;  /**< copied at submit: may be reused right after */
  size_t arg_size;
  /* Version 2. */
  /** Which model of its kernel the batch is split by and trains: batches of
   *  one kernel and one footprint share a model (0, the default, is the
   *  kernel's own). Where an item's cost depends on `arg` (a size, a level,
   *  an iteration count), give each cost its own footprint, so that batches
   *  of different costs in turn are each split by what they cost, as
   *  StarPU's footprints do; a footprint that differs from batch to batch
   *  learns nothing. */
  uint64_t footprint;
} mgpu_batch_t;
#define MGPU_BATCH_INIT {.size = sizeof(mgpu_batch_t)}

/** The two kinds of worker: the CPU team's, and a GPU's host thread. */
typedef enum { MGPU_WORKER_CPU = 0, MGPU_WORKER_GPU = 1 } mgpu_worker_kind_t;

/**
 * Whether the model store (MGPU_MODEL_DIR) holds a fresh model of kernel k,
 * for batches of this footprint, for every class of the runtime's workers of
 * this kind: 1 yes; 0 no, or the store is off, k has no name, or the runtime
 * has no worker of that kind. It reads k's file in the store.
 */
MGPU_API int mgpu_model_stored(const mgpu_runtime_t *rt, const mgpu_kernel_t *k, uint64_t footprint,
                               mgpu_worker_kind_t kind);

/* ------------------------------------------------------------------------- */
/* Statistics                                                                 */
/* ------------------------------------------------------------------------- */

/** One rank's figures of a batch run across MPI ranks: an element of
 * mgpu_stats_t.rank, whose size the array's owner gives in
 * mgpu_stats_t.rank_size (the elements carry none). Every rank gets every
 * rank's figures. */
typedef struct {
  int rank;
  mgpu_status_t status;   /**< that rank's own outcome (MGPU_EREMOTE: stopped by another's) */
  int ncpu, ngpus;        /**< its workers */
  size_t share_first;     /**< the items it owned at the start: [share_first, share_first + share_count) */
  size_t share_count;
  uint64_t items;         /**< items it computed: of its share and of others' */
  uint64_t steals_in;     /**< ranges it took from other ranks ... */
  uint64_t items_in;      /**< ... and their items */
  uint64_t steals_out;    /**< ranges other ranks took from it ... */
  uint64_t items_out;     /**< ... and their items */
  uint64_t bytes_moved;   /**< bytes it fetched and put back for the ranges it took */
  double busy_s;          /**< seconds its workers had items of the batch to run */
  double wall_s;          /**< seconds from the batch's start on it to its end there */
  double rate;            /**< items/s it was predicted to run at when the batch was split (0: not known) */
} mgpu_rank_stats_t;

/** One worker's figures: an element of mgpu_stats_t.worker, whose size the
 * array's owner gives in mgpu_stats_t.worker_size (the elements carry none). */
typedef struct {
  mgpu_worker_kind_t kind;
  int device;        /**< GPU index for a GPU worker, -1 for a CPU worker */
  uint64_t items;
  uint64_t chunks;
  uint64_t steals;   /**< successful steals made by this worker */
  uint64_t retries;  /**< failed chunks this worker gave back */
  double busy_s;     /**< seconds spent computing chunks */
  size_t batch_cap;  /**< GPU items-per-launch cap at the end (0 for CPUs) */
  /** Bytes copied between pageable user arrays and GPU staging buffers: by a
   *  GPU worker's host thread, or by a CPU worker helping a GPU with them. */
  uint64_t staged_bytes;
} mgpu_worker_stats_t;

/**
 * Statistics of one batch (mgpu_event_wait) or of the runtime's life
 * (mgpu_runtime_stats). Set `worker` to an array of `worker_cap` entries to get
 * per-worker figures (nworkers tells how many exist), or leave it NULL.
 * Start from MGPU_STATS_INIT (or zero it): `worker`, the counts and the sizes
 * are read; a negative worker_cap or rank_cap is MGPU_EINVAL.
 */
typedef struct {
  size_t size;            /**< sizeof(mgpu_stats_t) (MGPU_STATS_INIT), or 0 */
  mgpu_status_t status;
  double wall_s;          /**< batch: from start (dependencies met) to completion */
  uint64_t items;         /**< items a kernel computed (a failed batch: fewer than n) */
  uint64_t chunks;
  uint64_t steals;
  uint64_t retries;
  uint64_t batches;       /**< runtime stats: batches completed */
  size_t failed_first;    /**< MGPU_EKERNEL: first item of the failing chunk */
  size_t failed_count;    /**< MGPU_EKERNEL: its length */
  int nworkers;
  int worker_cap;         /**< entries of `worker`: 0 or more */
  mgpu_worker_stats_t *worker;
  /** sizeof(mgpu_worker_stats_t) (MGPU_STATS_INIT), or 0: the element size of `worker` */
  size_t worker_size;
  /** batch: CPU workers kept out of it because GPUs also run it (the last
   *  ones; MGPU_RESERVE_THREADS); runtime stats: 0 */
  int reserve_workers;
  /* Version 2: a batch run across MPI ranks (mgpu_num_ranks). The fields
   * above are then this rank's (its workers on the items it computed);
   * these give every rank's. Set `rank` to an array of `rank_cap` entries to
   * get them, or leave it NULL. */
  mgpu_rank_stats_t *rank;
  /** sizeof(mgpu_rank_stats_t) (MGPU_STATS_INIT), or 0: the element size of `rank` */
  size_t rank_size;
  int rank_cap;           /**< entries of `rank`: 0 or more */
  int nranks;             /**< ranks of the batch (0: a batch of one process) */
  /* Version 3. */
  /** batch: 1 where every GPU was kept out of it, since the kernel's timed
   *  batches found the CPU workers alone faster (MGPU_RESERVE_THREADS=auto);
   *  runtime stats: how many batches ran so */
  uint64_t gpus_out_batches;
} mgpu_stats_t;
#define MGPU_STATS_INIT                                                                  \
  {.size = sizeof(mgpu_stats_t), .worker_size = sizeof(mgpu_worker_stats_t),           \
   .rank_size = sizeof(mgpu_rank_stats_t)}

/* ------------------------------------------------------------------------- */
/* Submission and events                                                      */
/* ------------------------------------------------------------------------- */

typedef struct mgpu_event mgpu_event_t;

/**
 * Submit a batch asynchronously. It starts when every event in deps[0..ndeps)
 * has completed; if one of them failed, this batch fails with MGPU_EDEP without
 * running. On success *done_p is a new event owned by the caller (release it with
 * mgpu_event_release). The batch descriptor may be reused at once; the arrays it
 * names may not, until the event completes.
 * Errors: MGPU_EINVAL (NULL kernel or cpu function, NULL array with n > 0, n times
 * an item size overflowing size_t, n over MGPU_MAX_ITEMS, nin/nout outside
 * 0..MGPU_MAX_ARGS, a destroyed constant, a NULL dependency or an event of
 * another runtime: wait on such an event first), MGPU_ESTATE (runtime
 * finalizing), MGPU_ENOMEM.
 * On a runtime across MPI ranks (mgpu_num_ranks > 1) every rank submits the
 * batch, with the same kernel and n, and it runs once over all of them: each
 * rank's arrays hold all n items at their global index, of which it reads
 * and writes its share (mgpu_stats_t.rank, mgpu_batch_plan); the calls on
 * its event drive it (doc/api.md, "Across MPI ranks").
 */
MGPU_API mgpu_status_t mgpu_submit(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t ndeps,
                                   mgpu_event_t *const *deps, mgpu_event_t **done_p);

/**
 * Wait for an event; returns the batch's status and fills *stats if not NULL.
 * May be called several times and from several threads, but not from inside
 * a kernel of the event's runtime (MGPU_ESTATE, as mgpu_run and
 * mgpu_parallel_for there: the calling worker would wait for itself).
 */
MGPU_API mgpu_status_t mgpu_event_wait(mgpu_event_t *ev, mgpu_stats_t *stats);
/** MGPU_OK or the batch's failure when done, MGPU_ESTATE while not done. */
MGPU_API mgpu_status_t mgpu_event_test(mgpu_event_t *ev);
/** Drop the caller's reference. The batch runs on regardless. NULL is a no-op. */
MGPU_API void mgpu_event_release(mgpu_event_t *ev);

/**
 * Stop a batch at its next chunk boundary: items no worker has started are
 * not computed, chunks that are running finish (their results are written),
 * and the event completes with MGPU_ECANCELED; batches that depend on it fail
 * with MGPU_EDEP. Returns at once, from any thread; wait on the event to know
 * when no worker touches the arrays any more. A batch that has completed or
 * failed already keeps its status (the call does nothing and returns MGPU_OK).
 * A running chunk's kernel error after the cancel becomes the status
 * (MGPU_EKERNEL) in its place; a canceled batch whose dependency failed
 * completes with MGPU_ECANCELED, never MGPU_OK.
 * Errors: MGPU_EINVAL (NULL or released event), MGPU_ENOTSUP (the event of a
 * collective or copy: those run to their end).
 */
MGPU_API mgpu_status_t mgpu_event_cancel(mgpu_event_t *ev);

/** Submit, wait and release: the synchronous form. stats may be NULL.
 * Errors: mgpu_submit's (its messages name mgpu_run), or the batch's status. */
MGPU_API mgpu_status_t mgpu_run(mgpu_runtime_t *rt, const mgpu_batch_t *batch, mgpu_stats_t *stats);

/**
 * Which items of the next batch like `batch` (its kernel and n) this rank
 * will own, on a runtime that spans MPI ranks: [*first_p, *first_p +
 * *count_p). Collective: every rank calls it, with the same kernel and n. The
 * next mgpu_submit of that kernel and n on every rank uses this split, so a
 * rank may fill only the inputs of its share before submitting. On a runtime
 * of one process: 0 and n. The arrays of `batch` are not read.
 * Errors: as mgpu_submit's checks of the batch; MGPU_EINVAL also when the
 * ranks disagree on the kernel or n (every rank gets the message, naming
 * what differs); MGPU_EREMOTE (another rank failed or did not answer).
 */
MGPU_API mgpu_status_t mgpu_batch_plan(mgpu_runtime_t *rt, const mgpu_batch_t *batch, size_t *first_p,
                                       size_t *count_p);

/** Body of mgpu_parallel_for: process items [first, first + count). */
typedef int (*mgpu_loop_fn)(void *arg, size_t first, size_t count);

/**
 * Run fn over [0, n) on the runtime's CPU workers (no second thread team): the
 * helper for unoffloadable segments. Synchronous. A non-zero return from fn fails
 * it with MGPU_EKERNEL. With no CPU workers (MGPU_NUM_THREADS=0) it returns
 * MGPU_ENOTSUP; n over MGPU_MAX_ITEMS is MGPU_EINVAL.
 */
MGPU_API mgpu_status_t mgpu_parallel_for(mgpu_runtime_t *rt, size_t n, mgpu_loop_fn fn, void *arg);

/** Cumulative statistics since mgpu_init. */
MGPU_API mgpu_status_t mgpu_runtime_stats(const mgpu_runtime_t *rt, mgpu_stats_t *stats);

/** Print the per-worker table (as MGPU_STATS=1 does at finalize). */
MGPU_API void mgpu_stats_print(const mgpu_runtime_t *rt, const mgpu_stats_t *stats, FILE *fp);

/* ------------------------------------------------------------------------- */
/* Traces                                                                     */
/* ------------------------------------------------------------------------- */

/** One recorded event (MGPU_TRACE set, or mgpu_config_t.trace). */
typedef struct {
  int worker;          /**< worker index (CPU workers first, then GPUs); -1 for "batch" */
  int stream;          /**< GPU stream slot for h2d/kernel/d2h, -1 otherwise */
  const char *kind;    /**< "chunk", "h2d", "kernel", "d2h", "issue", "steal", "retry", "alloc", "pin",
                            "unstage" (a GPU host thread copying a chunk's results out of staging into the
                            user's arrays), "handback" (a CPU worker giving back items it had not started)
                            or "batch" (a whole batch, from when it could start to its completion; first 0,
                            count its items) */
  const char *kernel;  /**< the kernel's name (valid while the kernel struct is) */
  uint64_t batch;      /**< submission number of the batch, from 0 */
  size_t first, count; /**< items */
  size_t bytes;        /**< bytes copied (h2d, d2h, unstage) or allocated (alloc, pin) */
  double t0, t1;       /**< seconds from mgpu_init, one clock for CPUs and GPUs */
} mgpu_trace_event_t;

/**
 * Copy up to max recorded events into out (out may be NULL to count them) and
 * return how many were recorded in all; 0 when tracing is off. Call it while no
 * batch is in flight (between mgpu_event_wait and the next submit): the
 * workers append to their buffers as they run. Events are grouped by worker
 * (a GPU's device events follow its host events, as chunks retire), then the
 * "batch" events, in the order the batches completed.
 * The elements carry no size: mgpu_trace_events passes the program's
 * sizeof(mgpu_trace_event_t) to mgpu_trace_events_size, which writes each
 * within it (an elem_size larger than the library knows, or not a multiple
 * of the struct's alignment: 0 events, and mgpu_last_error says why).
 */
MGPU_API size_t mgpu_trace_events_size(const mgpu_runtime_t *rt, mgpu_trace_event_t *out, size_t max,
                                       size_t elem_size);
static inline size_t mgpu_trace_events(const mgpu_runtime_t *rt, mgpu_trace_event_t *out, size_t max) {
  return mgpu_trace_events_size(rt, out, max, sizeof *out);
}

/**
 * Progress of a batch: items completed so far and in all (across MPI ranks:
 * of this rank's share). Any thread, at any time while the event is held.
 * MGPU_EINVAL for a NULL or released event.
 */
MGPU_API mgpu_status_t mgpu_event_progress(mgpu_event_t *ev, size_t *done_p, size_t *total_p);

/* ------------------------------------------------------------------------- */
/* Constants and host memory                                                  */
/* ------------------------------------------------------------------------- */

/**
 * Make a replicated read-only constant from `bytes` bytes at host (copied now).
 * GPU workers upload it once, on first use, and keep it until destroyed.
 */
MGPU_API mgpu_status_t mgpu_const_create(mgpu_runtime_t *rt, const void *host, size_t bytes,
                                         mgpu_const_t **const_p);
/**
 * Destroy a constant. Batches already submitted with it keep it alive until they
 * complete; submitting a new batch with it afterwards is MGPU_EINVAL.
 */
MGPU_API void mgpu_const_destroy(mgpu_const_t *c);

/**
 * Host memory for batch arrays: page-locked (pinned) when the runtime has CUDA
 * GPUs, so copies skip the staging buffers; 64-byte aligned otherwise.
 * Returns NULL on failure (mgpu_last_error says why).
 */
MGPU_API void *mgpu_host_alloc(mgpu_runtime_t *rt, size_t bytes);
MGPU_API void mgpu_host_free(mgpu_runtime_t *rt, void *p);

/* ------------------------------------------------------------------------- */
/* Device memory, collectives and split arrays (multi-GPU data)               */
/* ------------------------------------------------------------------------- */

/*
 * These calls run on the GPUs' own host threads, on one extra stream per GPU,
 * in submission order per GPU; they never block the CPU workers. GPU numbers
 * are the runtime's (0 .. mgpu_num_gpus() - 1), not the driver's indices.
 */

/** Element types of collectives and reductions. */
typedef enum { MGPU_INT32 = 0, MGPU_INT64, MGPU_UINT64, MGPU_FLOAT32, MGPU_FLOAT64 } mgpu_dtype_t;
/** Reduction operators. */
typedef enum { MGPU_OP_SUM = 0, MGPU_OP_PROD, MGPU_OP_MIN, MGPU_OP_MAX } mgpu_redop_t;

/** Bytes of one element of type t; 0 for a value outside mgpu_dtype_t. */
MGPU_API size_t mgpu_dtype_size(mgpu_dtype_t t);
/** "f32", "f64", "i32", "i64", "u64"; "?" for a bad value. */
MGPU_API const char *mgpu_dtype_name(mgpu_dtype_t t);
/** "sum", "prod", "min", "max"; "?" for a bad value. */
MGPU_API const char *mgpu_redop_name(mgpu_redop_t op);

/** Allocate bytes of memory on GPU gpu (*p_p set on success). MGPU_ENOMEM: the device is full. */
MGPU_API mgpu_status_t mgpu_device_alloc(mgpu_runtime_t *rt, int gpu, size_t bytes, void **p_p);
/** Free memory from mgpu_device_alloc of this runtime and GPU (MGPU_EINVAL for
 * any other pointer, or one freed already). NULL is a no-op. mgpu_finalize
 * frees what is left, with a warning. */
MGPU_API mgpu_status_t mgpu_device_free(mgpu_runtime_t *rt, int gpu, void *p);
/** Synchronous copies between host memory and memory of GPU gpu. MGPU_EINVAL
 * where the device pointer lies in an allocation of mgpu_device_alloc on
 * another GPU, or the copy runs past that allocation's end. */
MGPU_API mgpu_status_t mgpu_memcpy_to_device(mgpu_runtime_t *rt, int gpu, void *dst, const void *src, size_t bytes);
MGPU_API mgpu_status_t mgpu_memcpy_from_device(mgpu_runtime_t *rt, int gpu, void *dst, const void *src, size_t bytes);

/**
 * Collectives over all the runtime's GPUs (NCCL when the build has it; see
 * mgpu_collectives_backend). send[g] and recv[g] are device pointers on GPU g,
 * for g in 0 .. mgpu_num_gpus() - 1; send[g] == recv[g] works in place.
 *  - allreduce: recv[g][i] = op over all GPUs h of send[h][i], for i < count.
 *  - broadcast: recv[g][i] = send[root][i] (only send[root] is read).
 *  - allgather: recv[g][h * count + i] = send[h][i] (recv holds ngpus * count).
 *  - reduce_scatter: recv[g][i] = op over h of send[h][g * count + i]
 *    (send holds ngpus * count).
 * The synchronous forms return when every GPU is done. The _async forms start
 * after deps like mgpu_submit and return an event (mgpu_event_wait, or a
 * dependency of later batches and collectives); the pointer arrays are copied,
 * the buffers must stay valid until the event completes. Collectives start in
 * the order their dependencies are met (calls without dependencies: in call
 * order), and every GPU sees them in that one order.
 * Errors: MGPU_EINVAL (bad type, op, root, NULL pointer; a buffer inside an
 * allocation of mgpu_device_alloc that is another GPU's, or that the call
 * would read or write past the end of: the message names the buffer, the
 * allocation's size and the bytes asked for, and nothing moves; or NCCL
 * refusing the arguments), MGPU_ENODEV (the runtime has no GPU), MGPU_EDEVICE
 * (NCCL or CUDA failed; the message has NCCL's words).
 */
MGPU_API mgpu_status_t mgpu_allreduce(mgpu_runtime_t *rt, const void *const *send, void *const *recv, size_t count,
                                      mgpu_dtype_t dt, mgpu_redop_t op);
MGPU_API mgpu_status_t mgpu_broadcast(mgpu_runtime_t *rt, const void *const *send, void *const *recv, size_t count,
                                      mgpu_dtype_t dt, int root);
MGPU_API mgpu_status_t mgpu_allgather(mgpu_runtime_t *rt, const void *const *send, void *const *recv, size_t count,
                                      mgpu_dtype_t dt);
MGPU_API mgpu_status_t mgpu_reduce_scatter(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                           size_t count, mgpu_dtype_t dt, mgpu_redop_t op);
MGPU_API mgpu_status_t mgpu_allreduce_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                            size_t count, mgpu_dtype_t dt, mgpu_redop_t op, size_t ndeps,
                                            mgpu_event_t *const *deps, mgpu_event_t **done_p);
MGPU_API mgpu_status_t mgpu_broadcast_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                            size_t count, mgpu_dtype_t dt, int root, size_t ndeps,
                                            mgpu_event_t *const *deps, mgpu_event_t **done_p);
MGPU_API mgpu_status_t mgpu_allgather_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                            size_t count, mgpu_dtype_t dt, size_t ndeps, mgpu_event_t *const *deps,
                                            mgpu_event_t **done_p);
MGPU_API mgpu_status_t mgpu_reduce_scatter_async(mgpu_runtime_t *rt, const void *const *send, void *const *recv,
                                                 size_t count, mgpu_dtype_t dt, mgpu_redop_t op, size_t ndeps,
                                                 mgpu_event_t *const *deps, mgpu_event_t **done_p);
/**
 * How collectives are carried out: "nccl X.Y.Z" (NCCL, created on first use),
 * or "host" (a build without NCCL, or emulated devices: each GPU's buffer is
 * copied to host memory, combined there and copied back: correct, not fast).
 */
MGPU_API const char *mgpu_collectives_backend(const mgpu_runtime_t *rt);

/** An array of n elements split in consecutive parts across the GPUs and the host. */
typedef struct mgpu_array mgpu_array_t;

/** One part of an array: elements [first, first + count), stored at data. */
typedef struct {
  size_t size;  /**< sizeof(mgpu_array_part_t) (MGPU_ARRAY_PART_INIT), or 0 */
  int gpu;      /**< runtime GPU number, or -1 for the host part */
  size_t first; /**< index of its first element in the array */
  size_t count; /**< elements in it (may be 0) */
  void *data;   /**< device pointer (GPU part) or host pointer; NULL when count is 0 */
} mgpu_array_part_t;
#define MGPU_ARRAY_PART_INIT {.size = sizeof(mgpu_array_part_t)}

/**
 * Create an array of n elements of elem_size bytes, split by shares: shares[g]
 * for GPU g, and with nshares = ngpus + 1 a last share for the host (memory
 * that the CPU workers process). Part g gets the elements from
 * round(n * (s_0 + ... + s_{g-1}) / S) to round(n * (s_0 + ... + s_g) / S), S the
 * sum, so every element is in exactly one part whatever n and the shares.
 * shares NULL (nshares 0): MGPU_TENSOR_SPLIT, or failing that equal shares of
 * the GPUs (all on the host when there is no GPU). Contents are undefined until
 * written. Errors: MGPU_EINVAL (elem_size 0, n * elem_size overflowing, a
 * negative or non-finite share, all shares 0, nshares not ngpus or ngpus + 1),
 * MGPU_ENOMEM (host or device memory).
 */
MGPU_API mgpu_status_t mgpu_array_create(mgpu_runtime_t *rt, size_t n, size_t elem_size, int nshares,
                                         const double *shares, mgpu_array_t **a_p);
/** Free an array and its device memory. NULL is a no-op. */
MGPU_API void mgpu_array_destroy(mgpu_array_t *a);
/** Parts of an array: mgpu_num_gpus() + 1 (the host part last). */
MGPU_API int mgpu_array_nparts(const mgpu_array_t *a);
/** Part i (0 .. nparts - 1) of an array. */
MGPU_API mgpu_status_t mgpu_array_part(const mgpu_array_t *a, int i, mgpu_array_part_t *out);
/** Copy n * elem_size bytes from host into the array's parts (synchronous). */
MGPU_API mgpu_status_t mgpu_array_scatter(mgpu_array_t *a, const void *host);
/** Copy the array's parts into n * elem_size bytes at host (synchronous). */
MGPU_API mgpu_status_t mgpu_array_gather(const mgpu_array_t *a, void *host);
/**
 * dst = src, part by part where the data lives (device-to-device copies on the
 * GPUs). Both arrays must have the same n, element size and split. stats, if
 * not NULL, gets per-worker figures: a GPU worker's busy_s is its device time.
 */
MGPU_API mgpu_status_t mgpu_array_copy(mgpu_array_t *dst, const mgpu_array_t *src, mgpu_stats_t *stats);

/** A kernel run over split arrays: see mgpu_array_run. */
typedef struct {
  size_t size;  /**< sizeof(mgpu_array_batch_t) (MGPU_ARRAY_BATCH_INIT), or 0 */
  const mgpu_kernel_t *kernel;
  const mgpu_array_t *in[MGPU_MAX_ARGS];
  mgpu_array_t *out[MGPU_MAX_ARGS];
  int nconsts;
  mgpu_const_t *consts[MGPU_MAX_CONSTS];
  const void *arg;
  size_t arg_size;
} mgpu_array_batch_t;
#define MGPU_ARRAY_BATCH_INIT {.size = sizeof(mgpu_array_batch_t)}

/**
 * Run a kernel where the data lives: items are the arrays' elements; each GPU
 * runs the kernel's GPU function once on its part (device memory, no copies),
 * and the CPU workers run its CPU function on the host part. No stealing: the
 * split decides who computes what. Every array must have n elements of the
 * kernel's item size (in_size / out_size) and the same split. chunk->first is
 * the global index of the chunk's first element. Synchronous; stats as in
 * mgpu_array_copy. Errors: MGPU_EINVAL (mismatched arrays), MGPU_ENOTSUP (a GPU
 * part is not empty and the kernel has no GPU function, emulated devices
 * included), MGPU_EKERNEL,
 * MGPU_EDEVICE. A failed GPU part is not recomputed elsewhere: its data lives
 * on that GPU.
 */
MGPU_API mgpu_status_t mgpu_array_run(mgpu_runtime_t *rt, const mgpu_array_batch_t *batch, mgpu_stats_t *stats);

/**
 * Sum of an array of MGPU_FLOAT32 or MGPU_FLOAT64 elements, in double: each
 * part is summed where it lives (pairwise on the host, a fixed-shape tree on a
 * GPU), the GPUs' partial sums are combined by an all-reduce and the host's
 * added. The result depends only on the data and the split, not on timing; its
 * error is within about n * 2^-53 * sum |x_i| (pairwise: log2 n instead of n in
 * practice).
 */
MGPU_API mgpu_status_t mgpu_array_sum(mgpu_array_t *a, mgpu_dtype_t dt, double *sum);

#ifdef __cplusplus
}
#endif
#endif /* MGPURT_H */
