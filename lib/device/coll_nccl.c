/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_nccl.c: the NCCL calls behind the collectives (coll.c). One
 * communicator per GPU of the runtime, by ncclCommInitAll, or across MPI ranks
 * by ncclCommInitRank from the id the ranks share (dist_coll.c); each GPU's
 * host thread calls its own, on its task stream.
 */
#include "device/device.h"

#include <cuda_runtime_api.h>
/* nccl.h declares a few functions without prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <stdio.h>
#include <string.h>

static const char *nccl_version(void) {
  static char buf[32];
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "?";
  /* Since NCCL 2.9 the code is major * 10000 + minor * 100 + patch. */
  if (v >= 10000)
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
  else
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
  return buf;
}

/* NCCL's errors of the arguments are MGPU_EINVAL, the rest MGPU_EDEVICE. */
static int status_of(ncclResult_t r) {
  return r == ncclInvalidArgument || r == ncclInvalidUsage ? MGPU_EINVAL : MGPU_EDEVICE;
}

static void say(char *why, size_t whylen, ncclResult_t r, ncclComm_t comm) {
  const char *last = ncclGetLastError(comm);
  snprintf(why, whylen, "%s%s%s", ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
}

/* The end of a communicator's creation: the caller's device back, CUDA's
 * sticky error cleared, and the communicators handed out only on success. */
static int init_done(ncclResult_t r, int saved, ncclComm_t *c, int n, void **comms, char *why, size_t whylen) {
  if (saved >= 0) (void)cudaSetDevice(saved);
  (void)cudaGetLastError();
  if (r != ncclSuccess) {
    say(why, whylen, r, NULL);
    return status_of(r);
  }
  for (int i = 0; i < n; i++) comms[i] = c[i];
  return 0;
}

static int nccl_init(int n, const int *devs, void **comms, char *why, size_t whylen) {
  ncclComm_t c[MGPU_MAX_DEVICES];
  int saved = -1;
  (void)cudaGetDevice(&saved);
  ncclResult_t r = ncclCommInitAll(c, n, devs);
  return init_done(r, saved, c, n, comms, why, whylen);
}

static void nccl_destroy(int n, void **comms) {
  for (int i = 0; i < n; i++) {
    if (!comms[i]) continue;
    ncclResult_t r = ncclCommDestroy((ncclComm_t)comms[i]);
    if (r != ncclSuccess) mgpu__log(MGPU_LOG_WARN, "NCCL: ncclCommDestroy of GPU %d: %s", i, ncclGetErrorString(r));
    comms[i] = NULL;
  }
}

static ncclDataType_t type_of(mgpu_dtype_t dt) {
  switch (dt) {
  case MGPU_INT32: return ncclInt32;
  case MGPU_INT64: return ncclInt64;
  case MGPU_UINT64: return ncclUint64;
  case MGPU_FLOAT32: return ncclFloat32;
  case MGPU_FLOAT64: break;
  }
  return ncclFloat64;
}

static ncclRedOp_t op_of(mgpu_redop_t op) {
  switch (op) {
  case MGPU_OP_SUM: return ncclSum;
  case MGPU_OP_PROD: return ncclProd;
  case MGPU_OP_MIN: return ncclMin;
  case MGPU_OP_MAX: break;
  }
  return ncclMax;
}

static int nccl_run(void *vcomm, int kind, const void *send, void *recv, size_t count, mgpu_dtype_t dt,
                    mgpu_redop_t op, int root, void *stream, char *why, size_t whylen) {
  ncclComm_t comm = vcomm;
  cudaStream_t s = (cudaStream_t)stream;
  ncclResult_t r;
  switch (kind) {
  case MGPU__NCCL_ALLREDUCE: r = ncclAllReduce(send, recv, count, type_of(dt), op_of(op), comm, s); break;
  case MGPU__NCCL_BROADCAST: r = ncclBroadcast(send, recv, count, type_of(dt), root, comm, s); break;
  case MGPU__NCCL_ALLGATHER: r = ncclAllGather(send, recv, count, type_of(dt), comm, s); break;
  default: r = ncclReduceScatter(send, recv, count, type_of(dt), op_of(op), comm, s); break;
  }
  if (r == ncclSuccess) return 0;
  say(why, whylen, r, comm);
  (void)cudaGetLastError();
  return status_of(r);
}

static void nccl_abort(void *comm) {
  ncclResult_t r = ncclCommAbort((ncclComm_t)comm);
  if (r != ncclSuccess) mgpu__log(MGPU_LOG_WARN, "NCCL: ncclCommAbort: %s", ncclGetErrorString(r));
}

static int nccl_unique_id(void *id, char *why, size_t whylen) {
  ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)id);
  if (r == ncclSuccess) return 0;
  say(why, whylen, r, NULL);
  return status_of(r);
}

/* One group: NCCL needs every device of a process to join together where
 * a process drives several. */
static int nccl_init_ranks(int n, const int *devs, int nranks, int first, const void *id, void **comms, char *why,
                           size_t whylen) {
  ncclComm_t c[MGPU_MAX_DEVICES];
  ncclUniqueId uid;
  memcpy(&uid, id, sizeof uid);
  int saved = -1;
  (void)cudaGetDevice(&saved);
  ncclResult_t r = ncclGroupStart();
  for (int i = 0; i < n && r == ncclSuccess; i++) {
    if (cudaSetDevice(devs[i]) != cudaSuccess) {
      snprintf(why, whylen, "cudaSetDevice(%d) failed", devs[i]);
      (void)ncclGroupEnd();
      (void)cudaGetLastError();
      if (saved >= 0) (void)cudaSetDevice(saved);
      return MGPU_EDEVICE;
    }
    r = ncclCommInitRank(&c[i], nranks, uid, first + i);
  }
  ncclResult_t e = ncclGroupEnd();
  if (r == ncclSuccess) r = e;
  return init_done(r, saved, c, n, comms, why, whylen);
}

static const mgpu__nccl_t nccl_table = {nccl_version, nccl_init,    nccl_destroy,         nccl_run,
                                        nccl_abort,   sizeof(ncclUniqueId), nccl_unique_id, nccl_init_ranks};
const mgpu__nccl_t *const mgpu__nccl = &nccl_table;
