#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The GPU suite (tests/test-gpu.c), run through this script so that make can
# order it after the other suites that use the GPUs (see Makefile.am): its
# out-of-memory test fills most of a GPU's memory. Exits 77 without a GPU.
exec "${top_builddir:-.}/tests/test-gpu"
