/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dist_mpi.h: the state of a runtime across MPI ranks and of a batch across
 * them, shared by the files of dist/ (dist.c, dist_part.c, dist_batch.c,
 * dist_coll.c, dist_array.c), with the functions they call in one another.
 * It stands apart from dist.h because its fields have MPI's types, and mpi.h
 * exists only in builds with MPI; what the layer above calls is in dist.h.
 */
#ifndef MGPU_DIST_MPI_H
#define MGPU_DIST_MPI_H

#include "dist/dist.h"

#include <mpi.h>

/* Words of a rank's control window (uint64_t). W_BEGIN..W_RATE, its range and
 * what thieves judge it by, change only in an exclusive lock epoch at that
 * rank (MPI_Get, MPI_Put); the words from W_DONE on only by atomics in shared
 * epochs, since MPI leaves both ways on one word undefined. None by
 * MPI_Compare_and_swap, which Open MPI 4.1's shared memory breaks (ompi 7967). */
enum {
  W_BEGIN = 0,  /* unclaimed items of the rank's share: [begin, end) */
  W_END,
  W_FLIGHT,     /* items it has claimed and not finished */
  W_SEQ,        /* the batch the words above are for (1, 2, ...; 0: none yet) */
  W_RATE,       /* its rate on the batch's kernel, items/s, as a double's bits */
  W_RANGE_WORDS,
  W_DONE = W_RANGE_WORDS, /* items of its share that thieves computed and put back, this batch */
  W_STEALS_OUT, /* ranges thieves took from it, this batch */
  W_ITEMS_OUT,  /* and their items (a thief adds to these three at once) */
  W_ABORT,      /* the latest batch another rank stopped (failed, canceled) */
  W_WORDS
};

/* A rank's record in an exchange (mgpu__dist_exchange) is this many bytes,
 * whatever the call, so that ranks in different calls still exchange and
 * each sees which call the others made. */
#define MGPU_DIST_REC 1024
/* What a record starts with: the call, how many exchanges came before, and
 * the public function that the rank's program called, for messages (mgpu_run
 * and mgpu_submit make the same call). */
typedef struct {
  uint32_t op;
  uint32_t rank;
  uint64_t call;
  char fn[24];
} mgpu__dist_hdr_t;
#define MGPU_DIST_PAYLOAD (MGPU_DIST_REC - sizeof(mgpu__dist_hdr_t))

/* The calls that exchange records, each named in messages. */
enum {
  MGPU_DOP_INIT = 1,
  MGPU_DOP_FINALIZE,
  MGPU_DOP_SUBMIT,
  MGPU_DOP_PLAN,
  MGPU_DOP_END,       /* a batch's end, in mgpu_event_wait or the call after it */
  MGPU_DOP_ARRAY,     /* mgpu_array_create */
  MGPU_DOP_ARRAY_SUM, /* mgpu_array_sum */
  MGPU_DOP_COLL       /* + MGPU__COLL_* */
};

/* The ranks' model of one kernel: this rank's time per part of a batch (all
 * its workers on a run of consecutive items), fit.c's line through them. */
typedef struct mgpu__dmodel {
  mgpu_kernel_t key;
  uint64_t footprint; /* mgpu_batch_t.footprint */
  mgpu__fit_t fit;
  struct mgpu__dmodel *next;
} mgpu__dmodel_t;

struct mgpu__dbatch;

struct mgpu__dist {
  MPI_Comm comm;             /* the caller's, duplicated */
  int rank, size;
  int level;                 /* MPI's thread level */
  MPI_Win ctl;               /* W_WORDS words at each rank */
  uint64_t *ctl_mem;
  MPI_Win data;              /* dynamic: the arrays of the batch running, attached at each rank */
  double timeout;            /* MGPU_TIMEOUT, resolved */
  uint64_t calls;            /* exchanges made */
  /* A rank failed or did not answer, or an MPI call failed: nothing more
   * is exchanged (a collective call could wait for ever), and finalize
   * frees only this process's memory. */
  bool broken;
  char broken_why[256];
  /* Serialises this runtime's MPI calls and batches across ranks. Held by
   * the caller's thread over a whole call: outermost (MGPU_LK_DIST). */
  pthread_mutex_t lock;
  int *ncpu, *ngpus;         /* every rank's workers [size] */
  int gpu_total, gpu_base;   /* GPUs of all ranks; this rank's first in their numbering */
  double bw;                 /* bytes/s of this rank's transfers of a stolen range (decayed mean) */
  double xlat;               /* seconds a steal costs besides its bytes: the round trips and a batch's start */
  mgpu__dmodel_t *models;
  /* The batch of the ranks that runs now, or ran last and is not yet
   * closed by its end exchange; one at a time. */
  struct mgpu__dbatch *cur;
  /* mgpu_batch_plan's split, for the next batch of its kernel and n. */
  bool planned;
  mgpu_kernel_t plan_key;
  uint64_t plan_footprint;
  size_t plan_n;
  size_t *plan_share;        /* [size] */
  double *plan_rate;         /* [size] */
};

/* dist.c */
/* Memory that MPI may still write (the buffers of a request that passed its
 * deadline): kept, reachable, for the process's life. NULL is ignored. */
void mgpu__dist_leave(void *p);
/* Fail as MGPU_EREMOTE and mark d broken, with a message naming fn. */
mgpu_status_t mgpu__dist_break(struct mgpu__dist *d, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An MPI call's result: MGPU_OK, or d broken with MPI's message. */
mgpu_status_t mgpu__dist_mpi(struct mgpu__dist *d, const char *fn, const char *call, int rc);
/* Wait for a nonblocking MPI request for at most deadline_s seconds (0: no
 * deadline); MGPU_EREMOTE (d broken) where it passes or MPI fails. `what`
 * names the step waited for in the message, unless it is fn itself. */
mgpu_status_t mgpu__dist_wait(struct mgpu__dist *d, const char *fn, MPI_Request *req, double deadline_s,
                              const char *what);
/* Every rank's record of call op: mine (bytes <= MGPU_DIST_PAYLOAD) in, all
 * ranks' payloads out (all: size * MGPU_DIST_PAYLOAD bytes, rank r's at r *
 * MGPU_DIST_PAYLOAD). MGPU_EINVAL, naming both calls, where a rank made
 * another call; MGPU_EREMOTE where the exchange fails or passes deadline_s. */
mgpu_status_t mgpu__dist_exchange(struct mgpu__dist *d, const char *fn, int op, const void *mine, size_t bytes,
                                  void *all, double deadline_s);
/* The name of call op, for messages. */
const char *mgpu__dist_op_name(int op);
/* This rank's record header for call op, made in the public function fn. */
mgpu__dist_hdr_t mgpu__dist_hdr(const struct mgpu__dist *d, int op, const char *fn);
/* What the rank of record header h called, for messages: the public
 * function its program called where the record names one. */
const char *mgpu__dist_call_name(const mgpu__dist_hdr_t *h);
/* Seconds to wait for the other ranks at a call (MGPU_TIMEOUT's deadline
 * for a call whose own time is predicted_s; <= 0: not known). */
double mgpu__dist_deadline(const struct mgpu__dist *d, double predicted_s);
/* fn may make MPI calls from this thread (MPI's thread level). */
mgpu_status_t mgpu__dist_thread_ok(struct mgpu__dist *d, const char *fn);
/* The model of kernel k for batches of this footprint, made on first use
 * (NULL: out of memory). */
mgpu__dmodel_t *mgpu__dist_model(struct mgpu__dist *d, const mgpu_kernel_t *k, uint64_t footprint);
/* FNV-1a of n bytes: what a rank compares of others' data without sending it. */
uint64_t mgpu__dist_hash(const void *p, size_t n);
#define MGPU_FNV_OFFSET 14695981039346656037ull /* FNV-1a's 64-bit offset basis */
#define MGPU_FNV_PRIME 1099511628211ull         /* and its prime */

/* A batch across ranks (dist_batch.c submits it, dist_part.c runs it). Its
 * fields are the caller's thread's, under the ranks' lock, but cancel and
 * progress, which any thread may touch. */
enum {
  MGPU_DB_RUNNING = 0, /* parts run, ranges are taken */
  MGPU_DB_ENDING,      /* this rank's part is over: the ranks exchange their records */
  MGPU_DB_DONE         /* every rank's record is in: the outcome is known */
};

/* A part of the batch running on this rank's workers. */
typedef struct {
  mgpu_event_t *ev;          /* NULL: a free slot */
  size_t first, count;
  int victim;                /* the owner it was stolen from; -1: this rank's own */
  void *buf[2 * MGPU_MAX_ARGS]; /* a stolen part's inputs, then its outputs */
  double t0;                 /* when its workers could start it */
} mgpu__dpart_t;

typedef struct mgpu__dbatch {
  mgpu_runtime_t *rt;
  struct mgpu__dist *d;
  uint64_t seq;
  const char *fn;            /* the public call that submitted it, for messages of its parts */
  int state;
  mgpu_batch_t desc;         /* this rank's arrays (item 0 of each), a copy of the argument */
  mgpu_kernel_t kernel;
  void *arg_copy;
  mgpu__dmodel_t *model;
  size_t n;
  int size, rank;
  size_t *first, *count;     /* every rank's share [size] */
  double *rate, *lat;        /* and its predicted rate and latency */
  uint64_t *addr;            /* every rank's item-0 addresses [size][2 * MGPU_MAX_ARGS] */
  void *att[2 * MGPU_MAX_ARGS]; /* regions of the data window this rank attached */
  int natt;
  size_t bytes_per_item;
  mgpu__dpart_t part[MGPU_RANK_FLIGHT];
  int nflight;
  size_t own_flight;         /* items of its own parts running */
  bool own_empty;            /* its range has nothing left to claim */
  bool none_to_steal;        /* the last look found every range published and empty */
  size_t own_done;           /* items of its share it computed itself */
  uint64_t done_remote;      /* items of its share thieves computed (W_DONE, as last read) */
  double last_change;        /* when it last saw the batch move */
  double deadline;           /* seconds it waits without seeing the batch move */
  double t_start, t_end, busy_s, busy_from, last_end;
  /* Its outcome: failed is set at the first failure it sees. */
  bool failed;
  int status;
  int origin;
  char why[640];
  size_t failed_first, failed_count;
  _Atomic int cancel;
  _Atomic size_t progress;   /* items of its share done, for mgpu_event_progress */
  /* Its figures. */
  mgpu_worker_stats_t *wstats; /* [rt->nworkers] */
  mgpu_worker_stats_t *pws;    /* one part's [rt->nworkers] */
  uint64_t items, steals_in, items_in, bytes_moved;
  /* The end: every rank's record, then the batch's figures. */
  MPI_Request end_req;
  char *end_send, *end_recv;
  bool end_pending;          /* end_req runs: MPI owns the buffers until it completes */
  mgpu_status_t final;
  char final_why[768];
  mgpu_rank_stats_t *ranks;    /* [size] */
  bool released;
  uint64_t scan_sig;         /* what its last look at the other ranges saw, to tell that they moved */
} mgpu__dbatch_t;

/* dist_part.c, under the ranks' lock */
/* Run the batch for at most block_s seconds (<= 0: one look; INFINITY: to its end). */
void mgpu__dist_drive(mgpu__dbatch_t *db, double block_s);
/* The batch fails on this rank (the first failure wins): its parts stop at
 * their next chunk, and where the failure began here (origin) the other
 * ranks are told to stop. */
void mgpu__dist_fail(mgpu__dbatch_t *db, int st, bool origin, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* This rank's range for the batch, published in its control window. */
mgpu_status_t mgpu__dist_publish(mgpu__dbatch_t *db);
/* A rank's rate (items/s) and latency (s) on a kernel from its model; rate 0
 * where it has learnt nothing yet. */
void mgpu__dist_rate(const mgpu__dmodel_t *m, double *rate, double *lat);

/* dist_batch.c, under the ranks' lock */
/* Run the batch across ranks that is still open to its end. */
void mgpu__dist_close_open(struct mgpu__dist *d);
/* Wait for dependencies (events of this process's batches and tasks, or of
 * batches across ranks): *failed_p when one failed. */
mgpu_status_t mgpu__dist_deps(mgpu_runtime_t *rt, const char *fn, size_t ndeps, mgpu_event_t *const *deps,
                              bool *failed_p);

#endif
