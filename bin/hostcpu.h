/* hostcpu.h: how much of the busy CPU time the host took (steal time), from
 * /proc/stat, for mgpu-run's reports (hostcpu.c). */
#ifndef MGPU_RUN_HOSTCPU_H
#define MGPU_RUN_HOSTCPU_H

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

#endif
