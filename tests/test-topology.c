/* test-topology.c: usable cores from the affinity mask (widened where OpenMP
 * bound the caller to one place) and the cgroup quota; steal time from
 * /proc/stat (mgpu-run's hostcpu.c). */
#include "testutil.h"
#include "hostcpu.h"

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

/* In a child with a one-CPU affinity mask, the runtime sees one core and
 * starts one CPU worker by default. */
START_TEST(test_affinity_child) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(3);
    if (mgpu__affinity_cores() != 1) _exit(4);
    mgpu_config_t c;
    mgpu_config_init(&c);
    c.ignore_env = 1;
    c.debug = 0;
    mgpu_runtime_t *rt;
    if (mgpu_init(&c, &rt) != MGPU_OK) _exit(5);
    const char *how;
    int ok = mgpu_usable_cores(rt, &how) == 1 && mgpu_num_cpu_workers(rt) == 1 && strstr(how, "1 of") != NULL;
    mgpu_finalize(rt);
    _exit(ok ? 0 : 6);
  }
  int status;
  waitpid(pid, &status, 0);
  ck_assert(WIFEXITED(status));
  ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* Fewest CPUs in the affinity mask of a thread that ran an emulated GPU's
 * chunk (the emulator's stream threads, started by the GPU host thread). */
static _Atomic int gpu_thread_cpus = 1 << 30;

static int mask_cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
}

static int note_cpus(const mgpu_chunk_t *c) {
  int n = mask_cpus();
  for (int old = atomic_load(&gpu_thread_cpus); n < old && !atomic_compare_exchange_weak(&gpu_thread_cpus, &old, n);) {
  }
  uint64_t *y = c->out[0];
  for (size_t i = 0; i < c->count; i++) y[i] = c->first + i;
  return 0;
}

/* The child of test_openmp_bound_caller, started with OMP_PROC_BIND=true:
 * OpenMP has bound this (initial) thread to the first of `places` places.
 * Exit 0 when the runtime counts and uses every CPU of the places, 77 when
 * this OpenMP did not bind the thread, another code naming what failed. */
static int bound_child(int places) {
  if (mask_cpus() != 1) return 77;
  mgpu_runtime_t *rt;
  mgpu_config_t c = mgpu_test_config(0, 1);
  c.num_threads = -1; /* the default: usable cores less the GPUs */
  c.sched = MGPU_SCHED_GPU;
  if (mgpu_init(&c, &rt) != MGPU_OK) return 10;
  const char *how;
  int cores = mgpu_usable_cores(rt, &how);
  if (!strstr(how, "in the OpenMP places (OpenMP binds the calling thread to 1)")) return 11;
  if (cores < 2) return 12; /* a cgroup quota may allow fewer than the places */
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
  sched_getaffinity(0, sizeof set, &set);
  int mine = -1, other = -1;
  for (int i = 0; i < CPU_SETSIZE && (mine < 0 || other < 0); i++)
    if (CPU_ISSET(i, &set)) mine = i;
    else if (other < 0) other = i;
  CPU_ZERO(&set);
  CPU_SET(other, &set);
  if (other < 0 || sched_setaffinity(0, sizeof set, &set) != 0) return 17;
  if (mgpu__affinity_cores() != 1) return 18;
  return 0;
}

static char self_path[4096];

/* Under OMP_PROC_BIND (or OMP_PLACES), OpenMP binds the initial thread to
 * its first place before main, and the threads it creates inherit that one
 * CPU: the runtime counted one usable core and ran its GPU host threads on
 * it. In a new process with OMP_PROC_BIND=true (OpenMP reads it at start),
 * the runtime counts every CPU of the places and runs its threads there. */
START_TEST(test_openmp_bound_caller) {
  int cpus = mgpu__affinity_cores();
  if (cpus < 2) {
    printf("test_openmp_bound_caller: needs 2 CPUs, skipped\n");
    return;
  }
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char arg[32];
    snprintf(arg, sizeof arg, "%d", cpus);
    setenv("OMP_PROC_BIND", "true", 1);
    unsetenv("OMP_PLACES");
    execl(self_path, self_path, "--bound-child", arg, (char *)NULL);
    _exit(126);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    printf("test_openmp_bound_caller: OpenMP did not bind the initial thread, skipped\n");
    return;
  }
  ck_assert_msg(WEXITSTATUS(status) == 0, "the OMP_PROC_BIND=true child failed check %d (see bound_child)",
                WEXITSTATUS(status));
}
END_TEST

START_TEST(test_cpu_only_runtime) {
  /* Without GPUs (none here, or a CPU-only build) the runtime is CPU only. */
  mgpu_config_t c = mgpu_test_config(2, 0);
  c.num_gpus = 0;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_init(&c, &rt), MGPU_OK);
  ck_assert_int_eq(mgpu_num_gpus(rt), 0);
  ck_assert_int_eq(mgpu_num_cpu_workers(rt), 2);
  mgpu_device_info_t info;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(), "mgpu_device_info: gpu 0: the runtime has no GPU");
  mgpu_finalize(rt);
}
END_TEST

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--bound-child") == 0) return bound_child(atoi(argv[2]));
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
  tcase_add_test(tc, test_cpu_only_runtime);
  suite_add_tcase(s, tc);
  return mgpu_test_main(s);
}
