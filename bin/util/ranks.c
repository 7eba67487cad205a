/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ranks.c: mgpu-run under an MPI launcher (mpirun, mpiexec, srun): MPI is
 * initialised where a launcher started the process (unless --no-mpi), so the
 * runtimes span the ranks and every batch runs once over all of them; rank 0
 * alone prints; and a batch's results, each rank's share in its own memory,
 * are gathered on every rank in place (for verification and the image).
 * ranks_none.c stands in for it in a build without MPI.
 */
#include "config.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/util.h"

static int inited, rank, size = 1;

/* The variables that the launchers of Open MPI, MPICH (Hydra), Intel MPI,
 * MVAPICH and Slurm's PMI plug-ins set in the processes they start. */
static bool launched(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
                                     "MV2_COMM_WORLD_SIZE", NULL};
  for (int i = 0; vars[i]; i++)
    if (getenv(vars[i])) return true;
  return false;
}

void ranks_init(bool no_mpi) {
  if (no_mpi || !launched()) return;
  /* The runtime makes its MPI calls in this (the main) thread. */
  int provided;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "%s: an MPI launcher started this process, but MPI_Init_thread failed\n", prog);
    exit(EXIT_FAIL);
  }
  inited = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* One report: rank 0's. Errors still come from every rank, on stderr. */
  if (rank > 0 && !freopen("/dev/null", "w", stdout)) {
    fprintf(stderr, "%s: rank %d cannot silence its output\n", prog, rank);
    exit(EXIT_FAIL);
  }
}

void ranks_finalize(void) {
  if (inited) MPI_Finalize();
  inited = 0;
}

int ranks_rank(void) { return rank; }
int ranks_size(void) { return size; }

void ranks_gather(void *base, size_t item_bytes, const mgpu_rank_stats_t *rs, int nranks) {
  if (!inited || nranks < 2 || item_bytes == 0) return;
  int *counts = malloc(sizeof *counts * (size_t)nranks), *displs = malloc(sizeof *displs * (size_t)nranks);
  if (!counts || !displs) {
    fprintf(stderr, "%s: out of memory gathering the results\n", prog);
    exit(EXIT_FAIL);
  }
  for (int r = 0; r < nranks; r++) counts[r] = (int)rs[r].share_count, displs[r] = (int)rs[r].share_first;
  MPI_Datatype item;
  MPI_Type_contiguous((int)item_bytes, MPI_BYTE, &item);
  MPI_Type_commit(&item);
  int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base, counts, displs, item, MPI_COMM_WORLD);
  MPI_Type_free(&item);
  free(counts);
  free(displs);
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "%s: rank %d: gathering the results failed\n", prog, rank);
    exit(EXIT_FAIL);
  }
}

long long ranks_sum(long long v) {
  long long s = v;
  if (inited) MPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

long long ranks_min(long long v) {
  long long s = v;
  if (inited) MPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  return s;
}

double ranks_bcast(double v) {
  if (inited) MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return v;
}
