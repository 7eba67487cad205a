/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * data.h: data that lives on the devices: mgpu_device_alloc's record,
 * split arrays and the collectives.
 */
#ifndef MGPU_DATA_H
#define MGPU_DATA_H

#include "workers/workers.h"

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

/* ----------------------------------------------------------- devmem.c */
/* Note allocation p of bytes on GPU gpu (mgpu_device_alloc); -1: out of
 * host memory. */
int mgpu__devmem_record(mgpu_runtime_t *rt, int gpu, void *p, size_t bytes);
/* Take p off the record; false where GPU gpu has no such allocation. */
bool mgpu__devmem_forget(mgpu_runtime_t *rt, int gpu, void *p);
/* `bytes` bytes at dev, which fn reads or writes on GPU gpu as its argument
 * `name` ("dst", "recv[1]"; `what`, if not NULL, says what they hold): within
 * an allocation of mgpu_device_alloc they must be that GPU's and end within
 * it (else MGPU_EINVAL naming both). Memory of no such allocation (an array's
 * part, the caller's own) is left to the device to refuse. */
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

#endif /* MGPU_DATA_H */
