/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostcpu.c: steal time from /proc/stat. On a virtual machine the host can
 * take a busy virtual CPU away for milliseconds at a time; a CPU worker then
 * holds its chunk that long, and a comparison of modes measures the host as
 * much as the runtime. mgpu-run reports the share of busy CPU time stolen
 * during each mode's timed runs so that such runs can be told apart.
 */
#include "util/util.h"

#include <stdio.h>
#include <string.h>

int hostcpu_read(const char *path, hostcpu_t *out) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  char *ok = fgets(line, sizeof line, f);
  fclose(f);
  if (!ok || strncmp(line, "cpu ", 4) != 0) return -1;
  /* user nice system idle iowait irq softirq steal [guest guest_nice]:
   * guest time is already counted in user and nice. */
  unsigned long long v[8];
  if (sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
             &v[7]) != 8)
    return -1;
  out->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  out->steal = v[7];
  return 0;
}
