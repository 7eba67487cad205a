#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The array and collective suite on the machine's real GPUs: NCCL collectives
# where the build has NCCL. Exits 77 (skip) without a GPU.
MGPU_TEST_REAL_GPUS=1 exec "${top_builddir:-.}/tests/test-array"
