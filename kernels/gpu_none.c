/*
 * gpu_none.c: the table of GPU functions in a build without CUDA, where every
 * built-in kernel runs on CPU workers only, and the internal sum kernel, CPU only.
 */
#include "builtin.h"

const mgpu__builtin_gpu_t mgpu__builtin_gpu = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};

const mgpu_kernel_t mgpu__sum_kernel = {.name = "sum",
                                        .cpu = mgpu__sum_cpu,
                                        .gpu = NULL,
                                        .nin = 1,
                                        .nout = 1,
                                        .in_size = {sizeof(float)},
                                        .out_size = {sizeof(double)}};
