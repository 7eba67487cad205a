/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * runtime.h: starting and stopping a runtime of one process, and its
 * statistics.
 */
#ifndef MGPU_RUNTIME_H
#define MGPU_RUNTIME_H

#include "data/data.h"

/* mgpu_init of one process (api.c's mgpu_init starts here), with the
 * test-only settings of *test (NULL: the environment's alone); the Check
 * suites, which link the library's objects, call it for a runtime that is
 * never distributed. Hidden: not part of the library's exports. */
mgpu_status_t mgpu__init_test(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, mgpu_runtime_t **rt_p);
/* mgpu__init_test for MPI rank `rank` of a runtime across ranks (the rank
 * names its trace file, MGPU_TRACE's %r). */
mgpu_status_t mgpu__init_rank(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, int rank, mgpu_runtime_t **rt_p);
/* mgpu_finalize_checked of one process: rt's handle given back, then its
 * batches waited for, its workers stopped and its memory freed. */
mgpu_status_t mgpu__node_finalize(mgpu_runtime_t *rt);
/* --------------------------------------------------------------- stats.c */
/* mgpu_runtime_stats without the handle check, for finalize: the figures
 * into *s (full), the workers' into r's array. */
void mgpu__runtime_stats(const mgpu_runtime_t *rt, mgpu_stats_t *s, const mgpu__stats_ref_t *r);

#endif /* MGPU_RUNTIME_H */
