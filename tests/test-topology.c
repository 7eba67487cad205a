/* SPDX-License-Identifier: BSD-3-Clause */
/* test-topology.c: usable cores from the affinity mask (widened where OpenMP
 * bound the caller to one place) and the cgroup quota; steal time from
 * /proc/stat (mgpu-run's bin/base/hostcpu.c). */
#include "testutil.h"
#include "util/util.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256];

static void write_file(const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  /* make parent directories */
  for (char *p = path + strlen(root) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static void make_root(void) {
  snprintf(root, sizeof root, "/tmp/mgpu-cg-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(root));
}

START_TEST(test_cgroup_v2) {
  make_root();
  write_file("proc", "0::/a/b\n");
  write_file("sys/a/cpu.max", "300000 100000\n");
  write_file("sys/a/b/cpu.max", "max 100000\n");
  char sys[300], proc[300];
  snprintf(sys, sizeof sys, "%s/sys", root);
  snprintf(proc, sizeof proc, "%s/proc", root);
  ck_assert_double_eq_tol(mgpu__cgroup_cpu_limit(sys, proc), 3.0, 1e-9);
  /* The smallest quota on the path wins. */
  write_file("sys/a/b/cpu.max", "150000 100000\n");
  ck_assert_double_eq_tol(mgpu__cgroup_cpu_limit(sys, proc), 1.5, 1e-9);
  char how[256];
  int n = mgpu__usable_cores(sys, proc, NULL, how, sizeof how);
  ck_assert_int_le(n, 2);
  ck_assert_ptr_nonnull(strstr(how, "quota 1.50"));
  /* No limit anywhere. */
  write_file("sys/a/cpu.max", "max 100000\n");
  write_file("sys/a/b/cpu.max", "max 100000\n");
  ck_assert(mgpu__cgroup_cpu_limit(sys, proc) < 0);
  /* Garbage files are ignored, not trusted. */
  write_file("sys/a/b/cpu.max", "garbage\n");
  ck_assert(mgpu__cgroup_cpu_limit(sys, proc) < 0);
}
END_TEST

START_TEST(test_cgroup_v1) {
  make_root();
  write_file("proc", "4:cpu,cpuacct:/job\n3:memory:/job\n");
  write_file("sys/cpu,cpuacct/job/cpu.cfs_quota_us", "50000\n");
  write_file("sys/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  char sys[300], proc[300];
  snprintf(sys, sizeof sys, "%s/sys", root);
  snprintf(proc, sizeof proc, "%s/proc", root);
  ck_assert_double_eq_tol(mgpu__cgroup_cpu_limit(sys, proc), 0.5, 1e-9);
  char how[256];
  ck_assert_int_eq(mgpu__usable_cores(sys, proc, NULL, how, sizeof how), 1);
  write_file("sys/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
  ck_assert(mgpu__cgroup_cpu_limit(sys, proc) < 0);
}
END_TEST

START_TEST(test_missing_files) {
  ck_assert(mgpu__cgroup_cpu_limit("/nonexistent", "/nonexistent/cgroup") < 0);
  char how[256];
  ck_assert_int_ge(mgpu__usable_cores("/nonexistent", "/nonexistent/cgroup", NULL, how, sizeof how), 1);
}
END_TEST

START_TEST(test_hostcpu) {
  make_root();
  char path[512];
  snprintf(path, sizeof path, "%s/stat", root);
  hostcpu_t h = {7, 7};
  /* user nice system idle iowait irq softirq steal guest guest_nice */
  write_file("stat", "cpu  100 2 30 5000 40 3 4 50 9 1\ncpu0 50 1 15 2500 20 1 2 25 4 0\nintr 1 2 3\n");
  ck_assert_int_eq(hostcpu_read(path, &h), 0);
  ck_assert_uint_eq(h.busy, 100 + 2 + 30 + 3 + 4 + 50); /* idle, iowait and guest (in user) left out */
  ck_assert_uint_eq(h.steal, 50);
  /* Without the guest columns (kernels 2.6.11 to 2.6.23). */
  write_file("stat", "cpu 1 0 0 9 0 0 0 3\n");
  ck_assert_int_eq(hostcpu_read(path, &h), 0);
  ck_assert_uint_eq(h.busy, 4);
  ck_assert_uint_eq(h.steal, 3);
  /* No steal column, a per-CPU line first, junk, an empty file: no figure,
   * and *out untouched. */
  h = (hostcpu_t){7, 7};
  const char *bad[] = {"cpu 1 2 3 4 5 6 7\n", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 x 4 5 6 7 8\n", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    write_file("stat", bad[i]);
    ck_assert_int_eq(hostcpu_read(path, &h), -1);
    ck_assert_uint_eq(h.busy, 7);
    ck_assert_uint_eq(h.steal, 7);
  }
  snprintf(path, sizeof path, "%s/none", root);
  ck_assert_int_eq(hostcpu_read(path, &h), -1);
  /* This machine's own, where it has one: steal never exceeds busy. */
  if (hostcpu_read("/proc/stat", &h) == 0) ck_assert_uint_le(h.steal, h.busy);
}
END_TEST

/* The affinity tests run in a new process of this program (a mode of
 * main), started by run_child with OpenMP's binding as they need it: OpenMP
 * reads OMP_PROC_BIND and OMP_PLACES when the process starts. */
static char self_path[4096];

static int mask_cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
}

/* Runs this program as `self_path mode` with OMP_PROC_BIND set to `bind`
 * (NULL: unset) and OMP_PLACES unset, from every CPU this process may use
 * (under an OMP_PROC_BIND of make's, OpenMP bound this one to one CPU);
 * returns its exit status, 77 where it skipped (and says why). */
static int run_child(const char *mode, const char *bind) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    mgpu__cpus_t all;
    int bound;
    mgpu__runtime_cpus(&all, &bound);
    mgpu__cpus_apply(&all);
    if (bind) setenv("OMP_PROC_BIND", bind, 1);
    else unsetenv("OMP_PROC_BIND");
    unsetenv("OMP_PLACES");
    execl(self_path, self_path, mode, (char *)NULL);
    _exit(126);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) printf("%s: skipped\n", mode);
  return WEXITSTATUS(status);
}

/* --mask-child: with a one-CPU affinity mask of its own (no OpenMP binding),
 * the runtime sees one core and starts one CPU worker by default. */
static int mask_child(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 3;
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) first++;
  CPU_ZERO(&set);
  CPU_SET(first, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return 3;
  if (mgpu__affinity_cores() != 1) return 4;
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.ignore_env = 1;
  c.debug = 0;
  mgpu_runtime_t *rt;
  if (mgpu_init(&c, &rt) != MGPU_OK) return 5;
  const char *how;
  int ok = mgpu_usable_cores(rt, &how) == 1 && mgpu_num_cpu_workers(rt) == 1 && strstr(how, "1 of") != NULL;
  mgpu_finalize(rt);
  return ok ? 0 : 6;
}

/* Runs `mode` under OMP_PROC_BIND=bind where there are 2 CPUs to bind to;
 * it passes or skips (77), or names the check that failed. */
static void bound_child_passes(const char *mode, const char *bind) {
  if (mgpu__affinity_cores() < 2) {
    printf("%s: needs 2 CPUs, skipped\n", mode);
    return;
  }
  int rc = run_child(mode, bind);
  ck_assert_msg(rc == 0 || rc == 77, "%s under OMP_PROC_BIND=%s failed its check %d", mode, bind, rc);
}

START_TEST(test_affinity_child) {
  ck_assert_int_eq(run_child("--mask-child", NULL), 0);
}
END_TEST

/* Fewest CPUs in the affinity mask of a thread that ran an emulated GPU's
 * chunk (the emulator's stream threads, started by the GPU host thread). */
static _Atomic int gpu_thread_cpus = 1 << 30;

static int note_cpus(const mgpu_chunk_t *c) {
  int n = mask_cpus();
  for (int old = atomic_load(&gpu_thread_cpus); n < old && !atomic_compare_exchange_weak(&gpu_thread_cpus, &old, n);) {
  }
  uint64_t *y = c->out[0];
  for (size_t i = 0; i < c->count; i++) y[i] = c->first + i;
  return 0;
}

/* --bound-child, started with OMP_PROC_BIND=true: OpenMP has bound this
 * (initial) thread to its first place, before main (libgomp) or at this
 * program's first OpenMP call (libomp). Exit 0 when the runtime counts every
 * CPU of the places and runs its GPU host thread on them, 77 where this
 * cannot be tried, another code naming the check that failed. */
static int bound_child(void) {
  int nplaces = omp_get_num_places(), place = omp_get_place_num();
  if (nplaces < 2 || place < 0 || mask_cpus() != 1) return 77;
  int places = 0, other = -1; /* CPUs of all the places; one of another place */
  for (int p = 0; p < nplaces; p++) {
    int ids[64], k = omp_get_place_num_procs(p);
    if (k < 1 || k > 64) return 77;
    omp_get_place_proc_ids(p, ids);
    places += k;
    if (p != place && other < 0) other = ids[0];
  }
  mgpu_runtime_t *rt;
  mgpu_test_config_t c = mgpu_test_config(0, 1);
  c.cfg.num_threads = -1; /* the default: usable cores less the GPUs */
  c.cfg.sched = MGPU_SCHED_GPU;
  if (mgpu_test_init(&c, &rt) != MGPU_OK) return 10;
  const char *how;
  int cores = mgpu_usable_cores(rt, &how);
  if (!strstr(how, "in the OpenMP places (OpenMP binds the calling thread to 1)")) return 11;
  if (cores < 2) { /* a cgroup CPU quota allows fewer than the places */
    mgpu_finalize(rt);
    return 77;
  }
  if (mgpu_num_cpu_workers(rt) != MGPU_MAX(1, cores - 1)) return 13;
  static uint64_t y[4096];
  mgpu_kernel_t k = {.name = "note_cpus", .cpu = note_cpus, .gpu = note_cpus, .nout = 1, .out_size = {8}};
  mgpu_batch_t b = {.kernel = &k, .n = 4096, .out = {y}};
  if (mgpu_run(rt, &b, NULL) != MGPU_OK) return 14;
  for (size_t i = 0; i < 4096; i++)
    if (y[i] != i) return 15;
  mgpu_finalize(rt);
  /* The GPU host thread's threads ran on every place, not on this one's CPU. */
  if (atomic_load(&gpu_thread_cpus) != places) return 16;
  /* A mask narrowed by the caller to something other than its place is kept. */
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(other, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return 17;
  if (mgpu__affinity_cores() != 1) return 18;
  return 0;
}

/* Under OMP_PROC_BIND (or OMP_PLACES), OpenMP binds the initial thread to
 * its first place, and the threads it creates inherit that one CPU: the
 * runtime counted one usable core and ran its GPU host threads on it. */
START_TEST(test_openmp_bound_caller) {
  bound_child_passes("--bound-child", "true");
}
END_TEST

/* CPUs (as bits, CPUs 0..63) of the affinity mask of each CPU worker that ran a chunk. */
static _Atomic uint64_t worker_cpus[2];

static int note_worker(const mgpu_chunk_t *c) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  uint64_t bits = 0;
  for (int i = 0; i < 64; i++)
    if (CPU_ISSET(i, &set)) bits |= (uint64_t)1 << i;
  if (c->worker >= 0 && c->worker < 2) atomic_store(&worker_cpus[c->worker], bits);
  mgpu_test_sleep(0.5e-3 * (double)c->count);
  uint64_t *y = c->out[0];
  for (size_t i = 0; i < c->count; i++) y[i] = c->first + i;
  return 0;
}

/* --master-child, started with OMP_PROC_BIND=master: two CPU workers, each
 * of which must run on a place of its own (0), not share one (16). */
static int master_child(void) {
  if (omp_get_num_places() < 2 || omp_get_place_num_procs(0) != 1 || omp_get_place_num_procs(1) != 1) return 77;
  mgpu_runtime_t *rt;
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.sched = MGPU_SCHED_CPU;
  if (mgpu_test_init(&c, &rt) != MGPU_OK) return 10;
  static uint64_t y[64];
  mgpu_kernel_t k = {.name = "note_worker", .cpu = note_worker, .nout = 1, .out_size = {8}};
  mgpu_batch_t b = {.kernel = &k, .n = 64, .out = {y}};
  if (mgpu_run(rt, &b, NULL) != MGPU_OK) return 14;
  mgpu_finalize(rt);
  for (size_t i = 0; i < 64; i++)
    if (y[i] != i) return 15;
  uint64_t a = atomic_load(&worker_cpus[0]), z = atomic_load(&worker_cpus[1]);
  if (!a || !z) return 77; /* one worker took every chunk: nothing to compare */
  return __builtin_popcountll(a | z) >= 2 ? 0 : 16;
}

/* Under OMP_PROC_BIND=master (primary) OpenMP binds a team to its first
 * thread's place: the runtime's CPU workers all ran on one CPU. */
START_TEST(test_openmp_master_binding) {
  bound_child_passes("--master-child", "master");
}
END_TEST

/* --limit-child, started with OMP_THREAD_LIMIT=1: the default CPU worker
 * count respects it, and an explicit count above it is refused. */
static int limit_child(void) {
  if (omp_get_thread_limit() != 1) return 20;
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.ignore_env = 1;
  c.num_gpus = 0;
  c.debug = 0;
  mgpu_runtime_t *rt;
  if (mgpu_init(&c, &rt) != MGPU_OK) return 21;
  int ok = mgpu_num_cpu_workers(rt) == 1;
  mgpu_setting_t set = MGPU_SETTING_INIT;
  bool shown = false;
  for (int i = 0; mgpu_info_setting(rt, i, &set) == MGPU_OK; i++)
    if (strcmp(set.name, "OMP_THREAD_LIMIT") == 0) shown = strcmp(set.value, "1") == 0;
  mgpu_finalize(rt);
  if (!ok) return 22;
  if (!shown) return 23;
  c.num_threads = 2;
  if (mgpu_init(&c, &rt) != MGPU_EINVAL) return 24;
  if (!strstr(mgpu_last_error(), "MGPU_NUM_THREADS=2") || !strstr(mgpu_last_error(), "OMP_THREAD_LIMIT=1")) return 25;
  return 0;
}

START_TEST(test_omp_thread_limit) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    setenv("OMP_THREAD_LIMIT", "1", 1);
    execl(self_path, self_path, "--limit-child", (char *)NULL);
    _exit(126);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  ck_assert_msg(WEXITSTATUS(status) == 0, "--limit-child under OMP_THREAD_LIMIT=1 failed its check %d",
                WEXITSTATUS(status));
}
END_TEST

START_TEST(test_cpu_only_runtime) {
  /* Without GPUs (none here, or a CPU-only build) the runtime is CPU only. */
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.num_gpus = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  ck_assert_int_eq(mgpu_num_gpus(rt), 0);
  ck_assert_int_eq(mgpu_num_cpu_workers(rt), 2);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(), "mgpu_device_info: gpu 0: the runtime has no GPU");
  mgpu_finalize(rt);
}
END_TEST

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--mask-child") == 0) return mask_child();
  if (argc == 2 && strcmp(argv[1], "--bound-child") == 0) return bound_child();
  if (argc == 2 && strcmp(argv[1], "--master-child") == 0) return master_child();
  if (argc == 2 && strcmp(argv[1], "--limit-child") == 0) return limit_child();
  ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (len > 0) self_path[len] = '\0';
  Suite *s = suite_create("topology");
  TCase *tc = tcase_create("topology");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_cgroup_v2);
  tcase_add_test(tc, test_cgroup_v1);
  tcase_add_test(tc, test_missing_files);
  tcase_add_test(tc, test_hostcpu);
  tcase_add_test(tc, test_affinity_child);
  tcase_add_test(tc, test_openmp_bound_caller);
  tcase_add_test(tc, test_openmp_master_binding);
  tcase_add_test(tc, test_cpu_only_runtime);
  tcase_add_test(tc, test_omp_thread_limit);
  suite_add_tcase(s, tc);
  return mgpu_test_main(s);
}
