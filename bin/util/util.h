/* SPDX-License-Identifier: BSD-3-Clause */
/* util.h: what every part of mgpu-run may use (the lowest layer of
 * bin/layers.txt): the program's name and exit statuses, usage errors
 * (prog.c), the names of settings in messages (flagname.c), the host's steal
 * time (hostcpu.c) and free memory (hostmem.c), and the MPI ranks (ranks.c,
 * ranks_none.c without MPI). */
#ifndef MGPU_RUN_UTIL_H
#define MGPU_RUN_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "mgpurt.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

/* prog.c */
extern const char *const prog;
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* flagname.c */
/* Record that the command line's flag (e.g. "--threads") set the setting of
 * variable var (e.g. "MGPU_NUM_THREADS"). */
void flagname_set(const char *var, const char *flag);
/* msg with each variable whose setting a flag set named as that flag: "VAR=x"
 * as "FLAG x", VAR alone as FLAG. The text lies in a buffer of this file's,
 * valid until the next call. */
const char *flagname_apply(const char *msg);

/* hostcpu.c */
/* Cumulative ticks of all CPUs since boot: busy (user, nice, system, irq,
 * softirq and steal) and, of those, steal (time a virtual CPU was ready to
 * run while the hypervisor ran something else). */
typedef struct {
  unsigned long long busy, steal;
} hostcpu_t;
/* Read the "cpu" line of a /proc/stat format file at path into *out.
 * Returns 0, or -1 when the file cannot be read or its first line is not a
 * "cpu" line with at least eight counters (kernels before 2.6.11 have no
 * steal column: no figure then rather than a wrong one). */
int hostcpu_read(const char *path, hostcpu_t *out);

/* hostmem.c */
/* a * b and a + b in bytes, SIZE_MAX where they overflow: a total that
 * overflows is one that no memory holds. */
size_t hostmem_mul(size_t a, size_t b);
size_t hostmem_add(size_t a, size_t b);
/* Whether arrays of `bytes` in all fit in MemAvailable (read once, at the
 * first call, before any of them is made; a system that does not say counts
 * as fitting). Where they do not, says so on stderr, with the option to give
 * a smaller value of (e.g. "-n"), and returns false. */
bool hostmem_fits(size_t bytes, const char *smaller);

/* ranks.c (ranks_none.c without MPI): under an MPI launcher. */
/* Initialise MPI where a launcher started this process, unless no_mpi;
 * ranks past 0 print nothing on stdout. */
void ranks_init(bool no_mpi);
void ranks_finalize(void);
int ranks_rank(void); /* 0 alone */
int ranks_size(void); /* 1 alone */
/* After a batch across ranks whose item 0 of an array is at base (items of
 * item_bytes): the shares of every rank (rs, from mgpu_stats_t.rank),
 * gathered in place on every rank. */
void ranks_gather(void *base, size_t item_bytes, const mgpu_rank_stats_t *rs, int nranks);
/* Over all ranks: the sum, the least; rank 0's value. */
long long ranks_sum(long long v);
long long ranks_min(long long v);
double ranks_bcast(double v);

#endif
