/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topology.c: how many CPU cores this process may really use, and where the
 * runtime's GPU host threads run: the affinity mask (widened to OpenMP's places
 * where OpenMP bound the calling thread to one of them), capped by the cgroup
 * CPU quota (v2 cpu.max or v1 cfs quota) of its cgroup and every ancestor, as
 * containers set them.
 */
#include "base/base.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_SCHED_GETAFFINITY
/* The calling thread's affinity mask, in a set grown until the kernel
 * accepts it (machines with over 1024 CPUs); NULL where it cannot be read. */
static cpu_set_t *thread_mask(size_t *ncpu_p) {
  for (size_t ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set) return NULL;
    size_t size = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      *ncpu_p = ncpu;
      return set;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;
  }
  return NULL;
}

/* Adds the CPUs of OpenMP place p to `set` (of ncpu CPUs). */
static void add_place(cpu_set_t *set, size_t ncpu, int p) {
  int k = omp_get_place_num_procs(p);
  int *ids = k > 0 ? malloc(sizeof(int) * (size_t)k) : NULL;
  if (!ids) return;
  omp_get_place_proc_ids(p, ids);
  for (int i = 0; i < k; i++)
    if (ids[i] >= 0 && (size_t)ids[i] < ncpu) CPU_SET_S((size_t)ids[i], CPU_ALLOC_SIZE(ncpu), set);
  free(ids);
}
#endif

/* Where OpenMP bound the calling thread to one of its places (OMP_PROC_BIND,
 * OMP_PLACES) and its mask is exactly that place's CPUs, the runtime counts
 * the CPUs of all the places and moves its GPU host threads there
 * (mgpu__cpus_apply): they would otherwise share that place with the caller.
 * A mask narrowed any other way is the caller's choice and kept. */
int mgpu__runtime_cpus(mgpu__cpus_t *wide, int *bound_p) {
  wide->set = NULL;
  wide->size = 0;
  *bound_p = 0;
#ifdef HAVE_SCHED_GETAFFINITY
  /* Asked first: LLVM's libomp binds a thread at its first OpenMP call. */
  int place = omp_get_place_num(), nplaces = omp_get_num_places();
  size_t ncpu;
  cpu_set_t *mine = thread_mask(&ncpu);
  if (mine) {
    size_t size = CPU_ALLOC_SIZE(ncpu);
    int n = CPU_COUNT_S(size, mine);
    if (place >= 0 && nplaces > 1) {
      cpu_set_t *own = CPU_ALLOC(ncpu), *all = CPU_ALLOC(ncpu);
      if (own && all) {
        CPU_ZERO_S(size, own);
        CPU_ZERO_S(size, all);
        add_place(own, ncpu, place);
        for (int p = 0; p < nplaces; p++) add_place(all, ncpu, p);
        int m = CPU_COUNT_S(size, all);
        if (CPU_EQUAL_S(size, own, mine) && m > n) {
          wide->set = all, wide->size = size, all = NULL;
          *bound_p = n;
          n = m;
        }
      }
      if (own) CPU_FREE(own);
      if (all) CPU_FREE(all);
    }
    CPU_FREE(mine);
    return n > 0 ? n : 1;
  }
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void mgpu__cpus_free(mgpu__cpus_t *c) {
#ifdef HAVE_SCHED_GETAFFINITY
  if (c->set) CPU_FREE((cpu_set_t *)c->set);
#endif
  c->set = NULL;
}

void mgpu__cpus_apply(const mgpu__cpus_t *c) {
#ifdef HAVE_SCHED_GETAFFINITY
  if (c->set && sched_setaffinity(0, c->size, c->set) != 0)
    mgpu__log(MGPU_LOG_WARN, "cannot move a GPU host thread onto the CPUs of the OpenMP places: %s", strerror(errno));
#else
  (void)c;
#endif
}

int mgpu__affinity_cores(void) {
  mgpu__cpus_t wide;
  int bound;
  int n = mgpu__runtime_cpus(&wide, &bound);
  mgpu__cpus_free(&wide);
  return n;
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

int mgpu__usable_cores(const char *cgroup_root, const char *proc_cgroup, mgpu__cpus_t *wide_p, char *how,
                       size_t howlen) {
  mgpu__cpus_t wide;
  int bound;
  int aff = mgpu__runtime_cpus(&wide, &bound);
  if (wide_p) *wide_p = wide;
  else mgpu__cpus_free(&wide);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  double quota = mgpu__cgroup_cpu_limit(cgroup_root, proc_cgroup);
  char mask[160], limit[64] = "no cgroup CPU quota";
  if (bound)
    snprintf(mask, sizeof mask, "%d of %ld online CPUs in the OpenMP places (OpenMP binds the calling thread to %d)", aff,
             online, bound);
  else
    snprintf(mask, sizeof mask, "%d of %ld online CPUs in the affinity mask", aff, online);
  int n = aff;
  if (quota > 0) {
    /* A quota of 2.5 CPUs allows 3 busy threads part of the time; round up. */
    int q = (int)ceil(quota - MGPU_QUOTA_ROUND_EPS);
    if (q < 1) q = 1;
    if (q < n) n = q;
    snprintf(limit, sizeof limit, "cgroup CPU quota %.2f CPUs", quota);
  }
  snprintf(how, howlen, "%s; %s", mask, limit);
  return n;
}
