/*
 * topology.c: how many CPU cores this process may really use: the affinity mask,
 * capped by the cgroup CPU quota (v2 cpu.max or v1 cfs quota) of its cgroup and
 * every ancestor, as containers set them.
 */
#include "mgpurt_int.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mgpu__affinity_cores(void) {
#ifdef HAVE_SCHED_GETAFFINITY
  /* Grow the set until the kernel accepts it, for machines with > 1024 CPUs. */
  for (size_t ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set) break;
    size_t size = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      int n = CPU_COUNT_S(size, set);
      CPU_FREE(set);
      return n > 0 ? n : 1;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;
  }
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static int read_line(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *ok = fgets(buf, (int)len, f);
  fclose(f);
  if (!ok) return -1;
  buf[strcspn(buf, "\n")] = '\0';
  return 0;
}

/* Limit in CPUs from one directory's files, or -1 for none. */
static double dir_limit(const char *dir, bool v2) {
  char path[4200], line[256];
  if (v2) {
    /* cpu.max: "max 100000" or "QUOTA PERIOD" */
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    if (read_line(path, line, sizeof line) != 0) return -1;
    char quota[64];
    long long period;
    if (sscanf(line, "%63s %lld", quota, &period) != 2 || period <= 0) return -1;
    if (strcmp(quota, "max") == 0) return -1;
    long long q = atoll(quota);
    return q > 0 ? (double)q / (double)period : -1;
  }
  snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
  if (read_line(path, line, sizeof line) != 0) return -1;
  long long q = atoll(line);
  snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
  if (read_line(path, line, sizeof line) != 0) return -1;
  long long p = atoll(line);
  return (q > 0 && p > 0) ? (double)q / (double)p : -1;
}

/* Smallest limit from `base` + `rel` up to `base`. */
static double walk_limit(const char *base, const char *rel, bool v2) {
  char dir[4096];
  double best = -1;
  snprintf(dir, sizeof dir, "%s%s", base, rel);
  size_t base_len = strlen(base);
  for (;;) {
    double l = dir_limit(dir, v2);
    if (l > 0 && (best < 0 || l < best)) best = l;
    if (strlen(dir) <= base_len) break;
    char *slash = strrchr(dir + base_len, '/');
    if (!slash) break;
    *slash = '\0';
  }
  return best;
}

double mgpu__cgroup_cpu_limit(const char *root, const char *proc_cgroup) {
  FILE *f = fopen(proc_cgroup, "r");
  double best = -1;
  char line[4096];
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH". */
    char *c1 = strchr(line, ':');
    if (!c1) continue;
    char *c2 = strchr(c1 + 1, ':');
    if (!c2) continue;
    *c2 = '\0';
    const char *controllers = c1 + 1, *path = c2 + 1;
    char base[4096];
    double l = -1;
    if (*controllers == '\0') {
      l = walk_limit(root, strcmp(path, "/") == 0 ? "" : path, true);
    } else if (strstr(controllers, "cpu") && (strstr(controllers, "cpu,") || strstr(controllers, ",cpu") ||
                                              strcmp(controllers, "cpu") == 0)) {
      snprintf(base, sizeof base, "%s/cpu,cpuacct", root);
      l = walk_limit(base, strcmp(path, "/") == 0 ? "" : path, false);
      if (l < 0) {
        snprintf(base, sizeof base, "%s/cpu", root);
        l = walk_limit(base, strcmp(path, "/") == 0 ? "" : path, false);
      }
    }
    if (l > 0 && (best < 0 || l < best)) best = l;
  }
  fclose(f);
  return best;
}

int mgpu__usable_cores(const char *cgroup_root, const char *proc_cgroup, char *how, size_t howlen) {
  int aff = mgpu__affinity_cores();
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  double quota = mgpu__cgroup_cpu_limit(cgroup_root, proc_cgroup);
  int n = aff;
  if (quota > 0) {
    /* A quota of 2.5 CPUs allows 3 busy threads part of the time; round up. */
    int q = (int)ceil(quota - 1e-9);
    if (q < 1) q = 1;
    if (q < n) n = q;
    snprintf(how, howlen, "%d of %ld online CPUs in the affinity mask; cgroup CPU quota %.2f CPUs", aff, online,
             quota);
  } else {
    snprintf(how, howlen, "%d of %ld online CPUs in the affinity mask; no cgroup CPU quota", aff, online);
  }
  return n;
}
