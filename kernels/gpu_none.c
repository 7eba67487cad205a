/*
 * gpu_none.c: the table of GPU functions in a build without CUDA, where every
 * built-in kernel runs on CPU workers only.
 */
#include "builtin.h"

const mgpu__builtin_gpu_t mgpu__builtin_gpu = {NULL, NULL, NULL, NULL, NULL, NULL};
