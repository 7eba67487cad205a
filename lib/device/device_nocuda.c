/* SPDX-License-Identifier: BSD-3-Clause */
/* device_nocuda.c: stands in for device_cuda.c in builds without CUDA; no CUDA back end. */
#include "device/device.h"

const mgpu_dev_ops_t *const mgpu__dev_cuda = NULL;
