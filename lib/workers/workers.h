/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * workers.h: the threads that run chunks: the CPU team, one host thread per
 * GPU with its memory, chunks, task parts and deadlines, staging copies,
 * and the watchdog.
 */
#ifndef MGPU_WORKERS_H
#define MGPU_WORKERS_H

#include "core/core.h"

/* --------------------------------------------------------------- stage.c */
/* Whether a GPU's device has run out of work (stage.c asks while copying). */
typedef bool (*mgpu__starved_fn)(void *arg);
/* GPU worker w copies bytes from src to dst for a chunk of batch b: into its
 * staging buffer, or (to_user) out of it into the user's array. A large copy
 * is shared with CPU workers when starved(arg) says its device waits: as it
 * starts, or with up to MGPU_SHARE_EARLY_GPUS GPUs from the moment it does
 * (asked after every piece). starved NULL: w copies it all alone. */
void mgpu__copy(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__batch_t *b, void *dst, const void *src, size_t bytes,
                bool to_user, mgpu__starved_fn starved, void *arg);
/* A GPU's count of chunks whose staging copies are shared from their start,
 * after issuing one more: the full count when its device ran dry (`dry`: it
 * had chunks in flight and all had ended), one less otherwise; always 0 with
 * more than MGPU_SHARE_EARLY_GPUS GPUs. */
int mgpu__share_ahead(const mgpu_runtime_t *rt, int left, bool dry);
/* CPU worker w copies pieces of open copy jobs while it can take any. */
void mgpu__copy_help(mgpu_runtime_t *rt, mgpu__worker_t *w);
void mgpu__copyjobs_init(mgpu_runtime_t *rt);
void mgpu__copyjobs_destroy(mgpu_runtime_t *rt);

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
  bool held_solo;             /* its chunk ran solo: started with nothing else in flight */
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

#endif /* MGPU_WORKERS_H */
