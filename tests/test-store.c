/* SPDX-License-Identifier: BSD-3-Clause */
/* test-store.c: the on-disk model store (lib/store): its files, what it
 * refuses to trust, and its writes under concurrent processes. */
#include "testutil.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"

static const mgpu_kernel_t kern = {.size = sizeof(mgpu_kernel_t), .name = "square", .nin = 1, .nout = 1,
                                   .in_size = {8}, .out_size = {8}};
static char dir[256];
static const double day = 86400;

static void fresh_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/mgpu-store-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_dir(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

static mgpu__store_entry_t entry(const char *cls, double latency, double cost, double saved) {
  mgpu__store_entry_t e = {.latency = latency, .cost = cost, .knee = 4096, .samples = 12, .reserve = -1,
                           .saved = saved};
  snprintf(e.cls, sizeof e.cls, "%s", cls);
  return e;
}

/* The kernel's file with its text replaced. */
static void put_file(const char *text) {
  char path[1200];
  ck_assert_int_eq(mgpu__store_path(dir, &kern, 0, path, sizeof path), 0);
  FILE *fp = fopen(path, "w");
  ck_assert_ptr_nonnull(fp);
  fputs(text, fp);
  fclose(fp);
}

/* lookup of class "gpu:a" now: its result, and why contains `want`. */
static int lookup_why(const char *want) {
  mgpu__store_entry_t e;
  char why[512] = "";
  int rc = mgpu__store_lookup(dir, &kern, 0, "gpu:a", (double)time(NULL), 30 * day, &e, why, sizeof why);
  if (want) ck_assert_msg(strstr(why, want) != NULL, "why '%s' lacks '%s'", why, want);
  return rc;
}

START_TEST(test_store_round_trip) {
  fresh_dir();
  double now = (double)time(NULL);
  mgpu__store_entry_t w[2] = {entry("gpu:a", 2e-3, 1e-9, now), entry("cpu:b:x4", 1e-6, 2e-6, now)};
  char why[512];
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, w, 2, why, sizeof why), 0);
  mgpu__store_entry_t e;
  ck_assert_int_eq(mgpu__store_lookup(dir, &kern, 0, "gpu:a", now, 30 * day, &e, why, sizeof why), 0);
  ck_assert(e.latency == 2e-3 && e.cost == 1e-9 && e.knee == 4096 && e.samples == 12 && e.reserve == -1);
  ck_assert_int_eq(mgpu__store_lookup(dir, &kern, 0, "cpu:b:x4", now, 30 * day, &e, why, sizeof why), 0);
  ck_assert(e.cost == 2e-6);
  /* Another footprint or item size is another kernel, in a file of its own. */
  ck_assert_int_eq(mgpu__store_lookup(dir, &kern, 7, "gpu:a", now, 30 * day, &e, why, sizeof why), 1);
  mgpu_kernel_t wide = kern;
  wide.out_size[0] = 16;
  ck_assert_int_eq(mgpu__store_lookup(dir, &wide, 0, "gpu:a", now, 30 * day, &e, why, sizeof why), 1);
  rm_dir();
}
END_TEST

START_TEST(test_store_missing_file_is_no_entry) {
  fresh_dir();
  ck_assert_int_eq(lookup_why(NULL), 1);
  rm_dir();
}
END_TEST

START_TEST(test_store_refuses_corrupt_file) {
  fresh_dir();
  put_file("\x7f" "ELF binary garbage\n\1\2\3");
  ck_assert_int_eq(lookup_why("not a model file"), -1);
  put_file("mgpurt-model 1\nkernel square\nshape nin=1 nout=1 in=8 out=8 scratch=0 footprint=0000000000000000\n"
           "weird line\nend\n");
  ck_assert_int_eq(lookup_why("line 4"), -1);
  rm_dir();
}
END_TEST

START_TEST(test_store_refuses_truncated_file) {
  fresh_dir();
  char text[600];
  snprintf(text, sizeof text,
           "mgpurt-model 1\nkernel square\nshape nin=1 nout=1 in=8 out=8 scratch=0 footprint=0000000000000000\n"
           "entry gpu:a latency=0.002 cost=1e-09 knee=4096 samples=12 reserve=-1 saved=%.0f\n",
           (double)time(NULL));
  put_file(text); /* no end line */
  ck_assert_int_eq(lookup_why("cut short"), -1);
  text[strlen(text) - 20] = 0; /* cut inside the entry line */
  put_file(text);
  ck_assert_int_eq(lookup_why("cut short"), -1);
  rm_dir();
}
END_TEST

START_TEST(test_store_refuses_foreign_version) {
  fresh_dir();
  put_file("mgpurt-model 2\nkernel square\nanything new\nend\n");
  ck_assert_int_eq(lookup_why("version 2"), -1);
  rm_dir();
}
END_TEST

START_TEST(test_store_other_hardware_kept_but_not_used) {
  fresh_dir();
  double now = (double)time(NULL);
  char why[512];
  mgpu__store_entry_t other = entry("gpu:other", 1e-3, 1e-9, now);
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &other, 1, why, sizeof why), 0);
  ck_assert_int_eq(lookup_why("other workers"), 2);
  /* A write of this class keeps the other's entry. */
  mgpu__store_entry_t mine = entry("gpu:a", 2e-3, 1e-9, now);
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &mine, 1, why, sizeof why), 0);
  mgpu__store_entry_t e;
  ck_assert_int_eq(mgpu__store_lookup(dir, &kern, 0, "gpu:other", now, 30 * day, &e, why, sizeof why), 0);
  ck_assert_int_eq(lookup_why(NULL), 0);
  rm_dir();
}
END_TEST

START_TEST(test_store_refuses_stale_and_future_entries) {
  fresh_dir();
  double now = (double)time(NULL);
  char why[512];
  mgpu__store_entry_t old = entry("gpu:a", 2e-3, 1e-9, now - 100 * day);
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &old, 1, why, sizeof why), 0);
  ck_assert_int_eq(lookup_why("days old"), -1);
  mgpu__store_entry_t future = entry("gpu:a", 2e-3, 1e-9, now + 10 * day);
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &future, 1, why, sizeof why), 0);
  ck_assert_int_eq(lookup_why("future"), -1);
  rm_dir();
}
END_TEST

START_TEST(test_store_drops_values_out_of_range) {
  fresh_dir();
  char text[600];
  snprintf(text, sizeof text,
           "mgpurt-model 1\nkernel square\nshape nin=1 nout=1 in=8 out=8 scratch=0 footprint=0000000000000000\n"
           "entry gpu:a latency=-1 cost=1e-09 knee=4096 samples=12 reserve=-1 saved=%.0f\nend\n",
           (double)time(NULL));
  put_file(text);
  ck_assert_int_eq(lookup_why("latency out of range"), -1);
  snprintf(text, sizeof text,
           "mgpurt-model 1\nkernel square\nshape nin=1 nout=1 in=8 out=8 scratch=0 footprint=0000000000000000\n"
           "entry gpu:a latency=0.001 cost=nan knee=4096 samples=12 reserve=-1 saved=%.0f\nend\n",
           (double)time(NULL));
  put_file(text);
  ck_assert_int_eq(lookup_why("cost out of range"), -1);
  rm_dir();
}
END_TEST

START_TEST(test_store_unwritable_dir_fails_cleanly) {
  fresh_dir();
  char file[300], sub[400], why[512];
  snprintf(file, sizeof file, "%s/plain-file", dir);
  FILE *fp = fopen(file, "w");
  ck_assert_ptr_nonnull(fp);
  fclose(fp);
  snprintf(sub, sizeof sub, "%s/models", file); /* under a file: no directory can be made there */
  mgpu__store_entry_t e = entry("gpu:a", 2e-3, 1e-9, (double)time(NULL));
  ck_assert_int_eq(mgpu__store_write(sub, &kern, 0, &e, 1, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "cannot make") != NULL, "%s", why);
  if (geteuid() != 0) { /* root writes into a read-only directory all the same */
    ck_assert_int_eq(chmod(dir, 0555), 0);
    ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &e, 1, why, sizeof why), -1);
    ck_assert_int_eq(chmod(dir, 0755), 0);
  }
  rm_dir();
}
END_TEST

START_TEST(test_store_unnamed_kernel_never_written) {
  fresh_dir();
  mgpu_kernel_t anon = kern;
  anon.name = NULL;
  mgpu__store_entry_t e = entry("gpu:a", 2e-3, 1e-9, (double)time(NULL));
  char why[512];
  ck_assert_int_eq(mgpu__store_write(dir, &anon, 0, &e, 1, why, sizeof why), -1);
  anon.name = "";
  ck_assert_int_eq(mgpu__store_write(dir, &anon, 0, &e, 1, why, sizeof why), -1);
  ck_assert_int_eq(mgpu__store_clear(dir, NULL, why, sizeof why), 0);
  rm_dir();
}
END_TEST

/* Processes writing their own classes at once: the file stays whole, and
 * each class's last write is in it. */
START_TEST(test_store_concurrent_writers) {
  fresh_dir();
  enum { PROCS = 6, WRITES = 40 };
  pid_t pid[PROCS];
  for (int p = 0; p < PROCS; p++) {
    pid[p] = fork();
    ck_assert_int_ge(pid[p], 0);
    if (pid[p] == 0) {
      char cls[32], why[512];
      snprintf(cls, sizeof cls, "gpu:p%d", p);
      for (int i = 1; i <= WRITES; i++) {
        /* Each write differs from the last, or the store keeps the file. */
        mgpu__store_entry_t e = entry(cls, 1e-3, i % 2 ? 1e-9 : 2e-9, (double)time(NULL));
        e.samples = i;
        if (mgpu__store_write(dir, &kern, 0, &e, 1, why, sizeof why) != 0) _exit(1);
        mgpu__store_entry_t r;
        /* A reader meanwhile sees a whole file. */
        if (mgpu__store_lookup(dir, &kern, 0, cls, (double)time(NULL), 30 * day, &r, why, sizeof why) < 0) _exit(2);
      }
      _exit(0);
    }
  }
  for (int p = 0; p < PROCS; p++) {
    int st;
    ck_assert_int_eq(waitpid(pid[p], &st, 0), pid[p]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d ended with %d", p, st);
  }
  char path[1200], why[512];
  mgpu__store_file_t f;
  ck_assert_int_eq(mgpu__store_path(dir, &kern, 0, path, sizeof path), 0);
  ck_assert_int_eq(mgpu__store_parse(path, &f, NULL, why, sizeof why), 0);
  ck_assert_int_eq(f.n, PROCS);
  for (int i = 0; i < f.n; i++) ck_assert(f.e[i].samples == WRITES);
  rm_dir();
}
END_TEST

/* Many kernels in one write: each put gets its file, a put refused (an
 * unnamed kernel) is counted and named, and the others are written all the
 * same. */
START_TEST(test_store_write_many) {
  fresh_dir();
  enum { K = 5 };
  mgpu_kernel_t ks[K];
  char names[K][16];
  mgpu__store_entry_t e[K];
  mgpu__store_put_t puts[K];
  for (int i = 0; i < K; i++) {
    snprintf(names[i], sizeof names[i], "many-%d", i);
    ks[i] = kern;
    ks[i].name = i == 2 ? NULL : names[i];
    e[i] = entry("gpu:a", 1e-3 * (i + 1), 1e-9, (double)time(NULL));
    puts[i] = (mgpu__store_put_t){.k = &ks[i], .footprint = (uint64_t)i, .e = &e[i], .n = 1};
  }
  char why[512];
  ck_assert_int_eq(mgpu__store_write_many(dir, puts, K, why, sizeof why), 1);
  ck_assert_msg(strstr(why, "unnamed") != NULL, "%s", why);
  for (int i = 0; i < K; i++) ck_assert_int_eq(puts[i].rc, i == 2 ? -1 : 0);
  for (int i = 0; i < K; i++) {
    if (i == 2) continue;
    mgpu__store_entry_t r;
    ck_assert_int_eq(mgpu__store_lookup(dir, &ks[i], (uint64_t)i, "gpu:a", (double)time(NULL), 30 * day, &r, why,
                                        sizeof why), 0);
    ck_assert(r.latency == e[i].latency);
  }
  char file[300], sub[400];
  snprintf(file, sizeof file, "%s/plain-file", dir);
  FILE *fp = fopen(file, "w");
  ck_assert_ptr_nonnull(fp);
  fclose(fp);
  snprintf(sub, sizeof sub, "%s/models", file);
  ck_assert_int_eq(mgpu__store_write_many(sub, puts, K, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "cannot make") != NULL, "%s", why);
  rm_dir();
}
END_TEST

/* The inode of kern's file in dir: a rewrite renames a new file over it. */
static ino_t file_inode(void) {
  char path[1200];
  ck_assert_int_eq(mgpu__store_path(dir, &kern, 0, path, sizeof path), 0);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  return st.st_ino;
}

/* A file that agrees with what is written (the latency, the cost and the
 * knee each within 1.5 times, the same reserve way, written less than a day
 * before) stays as it is; each of a value off by more, another way, a day
 * passed, a new class or an entry dropped as out of range rewrites it. */
START_TEST(test_store_agreeing_file_is_kept) {
  fresh_dir();
  double now = (double)time(NULL);
  mgpu__store_entry_t e = entry("gpu:a", 2e-3, 1e-9, now), r;
  e.knee = 4096;
  char why[512];
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &e, 1, why, sizeof why), 0);
  ino_t ino = file_inode();
  mgpu__store_entry_t near = e;
  near.latency *= 1.4, near.cost /= 1.2, near.knee *= 1.2, near.samples = 99, near.saved = now + 3600;
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &near, 1, why, sizeof why), 0);
  ck_assert(file_inode() == ino);
  ck_assert_int_eq(mgpu__store_lookup(dir, &kern, 0, "gpu:a", now, 30 * day, &r, why, sizeof why), 0);
  ck_assert(r.latency == e.latency && r.samples == e.samples);
  mgpu__store_entry_t far[6] = {e, e, e, e, e, e};
  far[0].cost *= 1.6;
  far[1].reserve = 2;
  far[2].saved = now + 1.5 * day;
  snprintf(far[3].cls, sizeof far[3].cls, "gpu:b");
  far[4].knee *= 1.6;
  far[5].latency /= 1.6;
  for (int i = 0; i < 6; i++) {
    /* From a file of e alone, so that each case differs in one thing. */
    rm_dir();
    fresh_dir();
    ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &e, 1, why, sizeof why), 0);
    ino = file_inode();
    ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &far[i], 1, why, sizeof why), 0);
    ck_assert_msg(file_inode() != ino, "write %d kept the file", i);
    ck_assert_int_eq(mgpu__store_lookup(dir, &kern, 0, far[i].cls, far[i].saved, 30 * day, &r, why, sizeof why), 0);
    ck_assert(r.cost == far[i].cost && r.reserve == far[i].reserve && r.knee == far[i].knee);
  }
  /* A file of e and an entry out of range: e's write drops that entry. */
  char text[800];
  snprintf(text, sizeof text,
           "mgpurt-model 1\nkernel square\nshape nin=1 nout=1 in=8 out=8 scratch=0 footprint=0000000000000000\n"
           "entry gpu:a latency=0.002 cost=1e-09 knee=4096 samples=12 reserve=-1 saved=%.0f\n"
           "entry gpu:b latency=-1 cost=1e-09 knee=4096 samples=12 reserve=-1 saved=%.0f\nend\n", now, now);
  put_file(text);
  ino = file_inode();
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &e, 1, why, sizeof why), 0);
  ck_assert_msg(file_inode() != ino, "a file with an entry out of range was kept");
  ck_assert_int_eq(lookup_why(NULL), 0);
  mgpu__store_file_t f;
  char path[1200];
  ck_assert_int_eq(mgpu__store_path(dir, &kern, 0, path, sizeof path), 0);
  int dropped;
  ck_assert_int_eq(mgpu__store_parse(path, &f, &dropped, why, sizeof why), 0);
  ck_assert_int_eq(dropped, 0);
  ck_assert_int_eq(f.n, 1);
  rm_dir();
}
END_TEST

START_TEST(test_store_clear_by_kernel) {
  fresh_dir();
  double now = (double)time(NULL);
  char why[512];
  mgpu__store_entry_t e = entry("gpu:a", 2e-3, 1e-9, now);
  mgpu_kernel_t other = kern;
  other.name = "cube";
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 0, &e, 1, why, sizeof why), 0);
  ck_assert_int_eq(mgpu__store_write(dir, &kern, 5, &e, 1, why, sizeof why), 0);
  ck_assert_int_eq(mgpu__store_write(dir, &other, 0, &e, 1, why, sizeof why), 0);
  ck_assert_int_eq(mgpu__store_clear(dir, "square", why, sizeof why), 2);
  ck_assert_int_eq(lookup_why(NULL), 1);
  ck_assert_int_eq(mgpu__store_clear(dir, NULL, why, sizeof why), 1);
  rm_dir();
}
END_TEST

START_TEST(test_store_classes_name_the_hardware) {
  mgpu_device_info_t a = {.name = "Some GPU 80GB", .sm_count = 132, .cc_major = 9, .total_mem = (size_t)80 << 30};
  mgpu_device_info_t b = a;
  b.sm_count = 114;
  char ca[MGPU_STORE_CLASS_LEN], cb[MGPU_STORE_CLASS_LEN], cc[MGPU_STORE_CLASS_LEN];
  mgpu__store_class_gpu(&a, NULL, ca, sizeof ca);
  mgpu__store_class_gpu(&b, NULL, cb, sizeof cb);
  ck_assert_str_ne(ca, cb);
  ck_assert_ptr_null(strchr(ca, ' ')); /* one word in the file's entry line */
  mgpu__store_class_cpu(4, ca, sizeof ca);
  mgpu__store_class_cpu(8, cc, sizeof cc);
  ck_assert_str_ne(ca, cc);
}
END_TEST

int main(void) {
  Suite *s = suite_create("store");
  TCase *files = tcase_create("files");
  tcase_add_test(files, test_store_round_trip);
  tcase_add_test(files, test_store_missing_file_is_no_entry);
  tcase_add_test(files, test_store_classes_name_the_hardware);
  tcase_add_test(files, test_store_clear_by_kernel);
  tcase_add_test(files, test_store_write_many);
  tcase_add_test(files, test_store_agreeing_file_is_kept);
  suite_add_tcase(s, files);
  TCase *trust = tcase_create("not trusted");
  tcase_add_test(trust, test_store_refuses_corrupt_file);
  tcase_add_test(trust, test_store_refuses_truncated_file);
  tcase_add_test(trust, test_store_refuses_foreign_version);
  tcase_add_test(trust, test_store_other_hardware_kept_but_not_used);
  tcase_add_test(trust, test_store_refuses_stale_and_future_entries);
  tcase_add_test(trust, test_store_drops_values_out_of_range);
  tcase_add_test(trust, test_store_unwritable_dir_fails_cleanly);
  tcase_add_test(trust, test_store_unnamed_kernel_never_written);
  suite_add_tcase(s, trust);
  TCase *conc = tcase_create("concurrent");
  tcase_set_timeout(conc, 60);
  tcase_add_test(conc, test_store_concurrent_writers);
  suite_add_tcase(s, conc);
  return mgpu_test_main(s);
}
