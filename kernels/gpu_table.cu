/*
 * gpu_table.cu: the table of the built-in kernels' GPU functions in a build with
 * CUDA (gpu_none.c is its CPU-only counterpart).
 */
#include "builtin.h"

extern "C" const mgpu__builtin_gpu_t mgpu__builtin_gpu = {
    mgpu__ntt_gpu, mgpu__sha256_gpu, mgpu__mandelbrot_gpu, mgpu__saxpy_gpu, mgpu__mulmod_gpu, mgpu__pipeline_mul_intt_gpu,
};
