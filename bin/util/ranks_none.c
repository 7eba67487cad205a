/* SPDX-License-Identifier: BSD-3-Clause */
/* ranks_none.c: stands in for ranks.c in a build without MPI: one process. */
#include "config.h"

#include "util/util.h"

void ranks_init(bool no_mpi) { (void)no_mpi; }
void ranks_finalize(void) {}
int ranks_rank(void) { return 0; }
int ranks_size(void) { return 1; }
void ranks_gather(void *base, size_t item_bytes, const mgpu_rank_stats_t *rs, int nranks) {
  (void)base, (void)item_bytes, (void)rs, (void)nranks;
}
long long ranks_sum(long long v) { return v; }
long long ranks_min(long long v) { return v; }
double ranks_bcast(double v) { return v; }
