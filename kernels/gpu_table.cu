/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_table.cu: the table of the built-in kernels' GPU functions in a build with
 * CUDA (gpu_none.c is its CPU-only counterpart), and the internal sum kernel.
 */
#include "builtin.h"

extern "C" const mgpu__builtin_gpu_t mgpu__builtin_gpu = {
    mgpu__ntt_gpu,    mgpu__sha256_gpu, mgpu__mandelbrot_gpu, mgpu__saxpy_gpu,
    mgpu__mulmod_gpu, mgpu__pipeline_mul_intt_gpu, mgpu__matvec_gpu, mgpu__chain_gpu,
};

/* C++17 has no designated initialisers: the fields in mgpu_kernel_t's order. */
extern "C" const mgpu_kernel_t mgpu__sum_kernel = {
    sizeof(mgpu_kernel_t), "sum", mgpu__sum_cpu, mgpu__sum_gpu, 1, 1, {sizeof(float)}, {sizeof(double)}, 0,
};
