/* test-topology.c: usable cores from the affinity mask and the cgroup quota. */
#include "testutil.h"

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
  int n = mgpu__usable_cores(sys, proc, how, sizeof how);
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
  ck_assert_int_eq(mgpu__usable_cores(sys, proc, how, sizeof how), 1);
  write_file("sys/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
  ck_assert(mgpu__cgroup_cpu_limit(sys, proc) < 0);
}
END_TEST

START_TEST(test_missing_files) {
  ck_assert(mgpu__cgroup_cpu_limit("/nonexistent", "/nonexistent/cgroup") < 0);
  char how[256];
  ck_assert_int_ge(mgpu__usable_cores("/nonexistent", "/nonexistent/cgroup", how, sizeof how), 1);
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
  mgpu_finalize(rt);
}
END_TEST

int main(void) {
  Suite *s = suite_create("topology");
  TCase *tc = tcase_create("topology");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_cgroup_v2);
  tcase_add_test(tc, test_cgroup_v1);
  tcase_add_test(tc, test_missing_files);
  tcase_add_test(tc, test_affinity_child);
  tcase_add_test(tc, test_cpu_only_runtime);
  suite_add_tcase(s, tc);
  return mgpu_test_main(s);
}
