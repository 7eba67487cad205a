/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * internal.h: every internal interface of lib/, for the suites that test its
 * layers directly. The top layer's header includes each one below it.
 */
#ifndef MGPU_TESTS_INTERNAL_H
#define MGPU_TESTS_INTERNAL_H

#include "dist/dist.h"

#endif /* MGPU_TESTS_INTERNAL_H */
