/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_none.c: the table of GPU functions in a build without CUDA, where the
 * built-in kernels run on CPU workers and emulated devices, and the internal
 * sum kernel, CPU only.
 */
#include "builtin.h"

/* Marks the built-in kernels offloadable, so that emulated devices (which run
 * the CPU function) take their items as real ones would in a build with CUDA;
 * no device of this build calls it, and a call would fail its chunk. */
static int no_cuda(const mgpu_chunk_t *c) {
  (void)c;
  return MGPU_ENOTSUP;
}

const mgpu__builtin_gpu_t mgpu__builtin_gpu = {no_cuda, no_cuda, no_cuda, no_cuda,
                                               no_cuda, no_cuda, no_cuda, no_cuda};

const mgpu_kernel_t mgpu__sum_kernel = {.size = sizeof(mgpu_kernel_t),
                                        .name = "sum",
                                        .cpu = mgpu__sum_cpu,
                                        .gpu = NULL,
                                        .nin = 1,
                                        .nout = 1,
                                        .in_size = {sizeof(float)},
                                        .out_size = {sizeof(double)}};
