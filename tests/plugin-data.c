/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin-data.c: a test plugin whose entry point is a variable, not a
 * function: mgpu-run refuses it rather than calling it.
 */
#include "mgpurt_plugin.h"

int mgpu_plugin_init = 5;
