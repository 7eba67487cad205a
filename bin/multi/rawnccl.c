/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawnccl.c: the all-reduce loop that a user would write by hand with NCCL and
 * the CUDA runtime, as nccl-tests does with one thread driving every GPU
 * (ncclCommInitAll, a group call per operation, float sum, out of place): the
 * baseline that mgpu-run allreduce measures the runtime against, in the same
 * process.
 */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "multi/multi.h"

#ifdef MGPU_HAVE_NCCL
#include <cuda_runtime_api.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CU(call)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      snprintf(why, whylen, "%s: %s", #call, cudaGetErrorString(e_));                         \
      goto out;                                                                               \
    }                                                                                         \
  } while (0)
#define NC(call)                                                                              \
  do {                                                                                        \
    ncclResult_t r_ = (call);                                                                 \
    if (r_ != ncclSuccess) {                                                                  \
      snprintf(why, whylen, "%s: %s", #call, ncclGetErrorString(r_));                         \
      goto out;                                                                               \
    }                                                                                         \
  } while (0)

int raw_nccl_allreduce(int ngpus, const int *devs, const size_t *bytes, int nsizes, int warmup, int iters,
                       double *seconds, char *why, size_t whylen) {
  ncclComm_t comms[MGPU_MAX_DEVICES] = {0};
  cudaStream_t streams[MGPU_MAX_DEVICES] = {0};
  void *send[MGPU_MAX_DEVICES] = {0}, *recv[MGPU_MAX_DEVICES] = {0};
  size_t maxb = 0;
  int rc = -1;
  for (int i = 0; i < nsizes; i++) maxb = bytes[i] > maxb ? bytes[i] : maxb;
  NC(ncclCommInitAll(comms, ngpus, devs));
  for (int g = 0; g < ngpus; g++) {
    CU(cudaSetDevice(devs[g]));
    CU(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
    CU(cudaMalloc(&send[g], maxb));
    CU(cudaMalloc(&recv[g], maxb));
    CU(cudaMemset(send[g], 0, maxb));
  }
  for (int s = 0; s < nsizes; s++) {
    size_t count = bytes[s] / sizeof(float);
    for (int it = -warmup; it < iters; it++) {
      if (it == 0) {
        for (int g = 0; g < ngpus; g++) CU(cudaStreamSynchronize(streams[g]));
        seconds[s] = now();
      }
      NC(ncclGroupStart());
      for (int g = 0; g < ngpus; g++)
        NC(ncclAllReduce(send[g], recv[g], count, ncclFloat32, ncclSum, comms[g], streams[g]));
      NC(ncclGroupEnd());
    }
    for (int g = 0; g < ngpus; g++) CU(cudaStreamSynchronize(streams[g]));
    seconds[s] = (now() - seconds[s]) / iters;
  }
  rc = 0;
out:
  for (int g = 0; g < ngpus; g++) {
    cudaSetDevice(devs[g]);
    if (send[g]) cudaFree(send[g]);
    if (recv[g]) cudaFree(recv[g]);
    if (streams[g]) cudaStreamDestroy(streams[g]);
    if (comms[g]) ncclCommDestroy(comms[g]);
  }
  return rc;
}
#else
int raw_nccl_allreduce(int ngpus, const int *devs, const size_t *bytes, int nsizes, int warmup, int iters,
                       double *seconds, char *why, size_t whylen) {
  (void)ngpus, (void)devs, (void)bytes, (void)nsizes, (void)warmup, (void)iters, (void)seconds;
  snprintf(why, whylen, "this build has no NCCL");
  return -1;
}
#endif
