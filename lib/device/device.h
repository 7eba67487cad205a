/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.h: the device back ends (emulated, CUDA, none) behind one table
 * of operations, and NCCL behind another.
 */
#ifndef MGPU_DEVICE_H
#define MGPU_DEVICE_H

#include "base/base.h"

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
  /* Why count() gave 0: the driver's error, or that it reports no device
   * (NULL where unsupported). */
  const char *(*why_none)(void);
} mgpu_dev_ops_t;

/* Let every stream stopped by an injected hang go on (tests only). */
void mgpu__emul_release_hangs(void);

/* device_emul.c */
extern const mgpu_dev_ops_t mgpu__dev_emul;

/* device_cuda.c (or device_nocuda.c) */
extern const mgpu_dev_ops_t *const mgpu__dev_cuda; /* NULL when built without CUDA */

/* ------------------------------------------------------- coll_nccl.c */
/* NCCL, when the build has it (mgpu__nccl is NULL otherwise). */
enum { MGPU__NCCL_ALLREDUCE = 0, MGPU__NCCL_BROADCAST, MGPU__NCCL_ALLGATHER, MGPU__NCCL_REDUCE_SCATTER };
typedef struct {
  const char *(*version)(void);
  /* Communicators over devices devs[0..n) of this process; why gets NCCL's message. */
  int (*init)(int n, const int *devs, void **comms, char *why, size_t whylen);
  void (*destroy)(int n, void **comms);
  /* kind: MGPU__NCCL_*, whose values are data.h's MGPU__COLL_*. */
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

/* Bytes of emulated device memory still allocated when a device closed (tests). */
extern _Atomic size_t mgpu__emul_left_bytes;
/* Allocations of emulated device memory and of host memory through the
 * emulated back end (mgpu_host_alloc, staging), and their frees (tests). */
extern _Atomic uint64_t mgpu__emul_allocs, mgpu__emul_frees;

#endif /* MGPU_DEVICE_H */
