/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-array.c: split arrays, device memory, kernels over arrays, array sums
 * and the collectives. By default on emulated devices (the collectives then go
 * through host memory); with MGPU_TEST_REAL_GPUS=1 (tests/test-array-gpu.sh) the
 * same tests run on the machine's CUDA GPUs, the collectives through NCCL when
 * the build has it, and exit 77 without a GPU. Tests needing more GPUs than
 * there are say so and pass.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>

#include "mgpurt_kernels.h"

static int real_mode(void) {
  const char *e = getenv("MGPU_TEST_REAL_GPUS");
  return e && strcmp(e, "1") == 0;
}

static int gpus_available(void) {
  if (!real_mode()) return 8;
  return mgpu__dev_cuda ? mgpu__dev_cuda->count() : 0;
}

/* A runtime with `cpus` CPU workers and `ngpus` GPUs (emulated or real), or
 * NULL when the machine has fewer GPUs (the caller then skips). */
static mgpu_runtime_t *start(int cpus, int ngpus) {
  if (gpus_available() < ngpus) {
    printf("needs %d GPU%s, skipped\n", ngpus, ngpus == 1 ? "" : "s");
    return NULL;
  }
  mgpu_test_config_t c = mgpu_test_config(cpus, real_mode() ? 0 : ngpus);
  c.cfg.num_gpus = ngpus;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  return rt;
}

/* --------------------------------------------------------------- splits */

static void check_parts(const mgpu_array_t *a, size_t n, int ngpus, const double *shares, int nshares) {
  ck_assert_int_eq(mgpu_array_nparts(a), ngpus + 1);
  double sum = 0;
  for (int i = 0; i < nshares; i++) sum += shares[i];
  size_t next = 0;
  for (int p = 0; p <= ngpus; p++) {
    mgpu_array_part_t part = MGPU_ARRAY_PART_INIT;
    ck_assert_int_eq(mgpu_array_part(a, p, &part), MGPU_OK);
    ck_assert_int_eq(part.gpu, p < ngpus ? p : -1);
    ck_assert_uint_eq(part.first, next); /* consecutive: every element exactly once */
    double share = p < nshares ? shares[p] : 0;
    double want = (double)n * share / sum;
    ck_assert_msg(fabs((double)part.count - want) <= 1.0, "part %d has %zu elements, expected about %.1f", p,
                  part.count, want);
    ck_assert(part.count == 0 ? part.data == NULL : part.data != NULL);
    next += part.count;
  }
  ck_assert_uint_eq(next, n);
}

START_TEST(test_split_exact) {
  mgpu_runtime_t *rt = start(1, 3);
  if (!rt) return;
  static const double s1[] = {1, 1, 1}, s2[] = {0.6, 0.4, 0}, s3[] = {1, 0, 2, 1}, s4[] = {0, 1e-9, 1, 0.5},
                      s5[] = {3, 1, 1};
  const double *shares[] = {s1, s2, s3, s4, s5};
  int nshares[] = {3, 3, 4, 4, 3};
  size_t sizes[] = {0, 1, 2, 3, 7, 10, 1000003};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
    for (int k = 0; k < 5; k++) {
      size_t n = sizes[si];
      mgpu_array_t *a;
      ck_assert_int_eq(mgpu_array_create(rt, n, sizeof(uint32_t), nshares[k], shares[k], &a), MGPU_OK);
      check_parts(a, n, 3, shares[k], nshares[k]);
      /* Scatter, gather back: every element where it belongs. */
      uint32_t *x = malloc(4 * (n + 1)), *y = malloc(4 * (n + 1));
      for (size_t i = 0; i < n; i++) x[i] = (uint32_t)(i * 2654435761u), y[i] = 0;
      ck_assert_int_eq(mgpu_array_scatter(a, x), MGPU_OK);
      ck_assert_int_eq(mgpu_array_gather(a, y), MGPU_OK);
      ck_assert(n == 0 || memcmp(x, y, 4 * n) == 0);
      /* A GPU part read on its own holds its own elements. */
      mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
      ck_assert_int_eq(mgpu_array_part(a, 1, &p), MGPU_OK);
      if (p.count) {
        uint32_t *z = malloc(4 * p.count);
        ck_assert_int_eq(mgpu_memcpy_from_device(rt, 1, z, p.data, 4 * p.count), MGPU_OK);
        ck_assert(memcmp(z, x + p.first, 4 * p.count) == 0);
        free(z);
      }
      free(x);
      free(y);
      mgpu_array_destroy(a);
    }
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_split_default_and_env) {
  mgpu_runtime_t *rt = start(1, 2);
  if (!rt) return;
  mgpu_array_t *a;
  /* Equal shares of the GPUs, nothing on the host. */
  ck_assert_int_eq(mgpu_array_create(rt, 11, 8, 0, NULL, &a), MGPU_OK);
  static const double eq[] = {1, 1};
  check_parts(a, 11, 2, eq, 2);
  mgpu_array_destroy(a);
  mgpu_finalize(rt);

  if (gpus_available() < 2) return;
  mgpu_test_config_t c = mgpu_test_config(1, real_mode() ? 0 : 2);
  c.cfg.num_gpus = 2;
  c.cfg.ntensor_split = 3;
  c.cfg.tensor_split[0] = 0.6, c.cfg.tensor_split[1] = 0.3, c.cfg.tensor_split[2] = 0.1;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  ck_assert_int_eq(mgpu_array_create(rt, 1000, 4, 0, NULL, &a), MGPU_OK);
  check_parts(a, 1000, 2, c.cfg.tensor_split, 3);
  mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
  ck_assert_int_eq(mgpu_array_part(a, 0, &p), MGPU_OK);
  ck_assert_uint_eq(p.count, 600);
  mgpu_array_destroy(a);
  mgpu_finalize(rt);

  /* MGPU_TENSOR_SPLIT with a count that fits no array of the runtime is
   * refused when it starts, not at the first array. */
  c.cfg.ntensor_split = 4;
  c.cfg.tensor_split[3] = 1;
  rt = NULL;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_EINVAL);
  ck_assert_ptr_null(rt);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_TENSOR_SPLIT has 4 entries but the runtime uses 2 GPUs: "
                                                  "expected 2 (GPUs) or 3 (GPUs, then the host)"));
  c.cfg.ntensor_split = 2;
  c.cfg.num_gpus = 0;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "has 2 entries but the runtime uses 0 GPUs: expected 1 (the host)"));
  c.cfg.ntensor_split = 1;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 0, NULL, &a), MGPU_OK);
  mgpu_array_destroy(a);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_array_errors) {
  mgpu_runtime_t *rt = start(1, 2);
  if (!rt) return;
  mgpu_array_t *a = NULL;
  double bad[] = {1, -1}, zero[] = {0, 0}, nan_[] = {NAN, 1};
  ck_assert_int_eq(mgpu_array_create(rt, 10, 0, 0, NULL, &a), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "elem_size is 0"));
  ck_assert_int_eq(mgpu_array_create(rt, SIZE_MAX / 2, 4, 0, NULL, &a), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "overflow"));
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 2, bad, &a), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "share 1 is -1"));
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 2, zero, &a), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 2, nan_, &a), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 1, zero, &a), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "expected 2 (GPUs) or 3"));
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 0, NULL, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 0, bad, &a), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "nshares is 0 but shares is not NULL"));
  double negzero[] = {-0.0, 1};
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 2, negzero, &a), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "without a minus sign"));
  ck_assert_ptr_null(a);
  if (!real_mode()) {
    /* More than the device holds (emulated devices have 1 GiB). */
    ck_assert_int_eq(mgpu_array_create(rt, (size_t)3 << 30, 1, 0, NULL, &a), MGPU_ENOMEM);
    ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "out of device memory"));
  }
  ck_assert_int_eq(mgpu_array_create(rt, 10, 4, 0, NULL, &a), MGPU_OK);
  mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
  ck_assert_int_eq(mgpu_array_part(a, 3, &p), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_array_part(a, -1, &p), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_array_scatter(a, NULL), MGPU_EINVAL);
  mgpu_array_t *b;
  ck_assert_int_eq(mgpu_array_create(rt, 11, 4, 0, NULL, &b), MGPU_OK);
  ck_assert_int_eq(mgpu_array_copy(a, b, NULL), MGPU_EINVAL);
  mgpu_array_destroy(b);
  /* A destroyed array: refused by every call, destroyed again only logged. */
  ck_assert_int_eq(mgpu_array_scatter(b, &p), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is not a live array"));
  ck_assert_int_eq(mgpu_array_gather(b, &p), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_array_copy(a, b, NULL), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "src"));
  ck_assert_int_eq(mgpu_array_part(b, 0, &p), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_array_nparts(b), 0);
  double sum;
  ck_assert_int_eq(mgpu_array_sum(b, MGPU_FLOAT32, &sum), MGPU_EINVAL);
  mgpu__log_set_level(MGPU_LOG_NONE);
  mgpu_array_destroy(b);
  mgpu__log_set_level(MGPU_LOG_ERROR);
  /* Device memory calls. */
  void *d;
  ck_assert_int_eq(mgpu_device_alloc(rt, 2, 16, &d), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "gpu 2 is not a GPU of the runtime: expected 0..1"));
  ck_assert_int_eq(mgpu_device_alloc(rt, 0, 16, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_memcpy_to_device(rt, 0, NULL, &p, 4), MGPU_EINVAL);
  /* An array left at finalize is freed there (with a warning). */
  mgpu__log_set_level(MGPU_LOG_NONE);
  mgpu_finalize(rt);
}
END_TEST

/* --------------------------------------------------------------- kernels over arrays */

/* out[i] = in[i] * 3 + global index; poisons are caught by the check. */
static int affine_cpu(const mgpu_chunk_t *c) {
  const uint64_t *x = c->in[0];
  uint64_t *y = c->out[0];
  for (size_t i = 0; i < c->count; i++) y[i] = x[i] * 3 + c->first + i;
  return 0;
}

START_TEST(test_array_run) {
  int ngpus = 2;
  mgpu_runtime_t *rt = start(2, ngpus);
  if (!rt) return;
  size_t n = 100003;
  double shares[] = {0.5, 0.3, 0.2};
  uint64_t *x = malloc(8 * n), *y = malloc(8 * n);
  uint64_t rng = 5;
  for (size_t i = 0; i < n; i++) x[i] = mgpu_test_rand(&rng) >> 8, y[i] = 0xDEADBEEF;
  mgpu_array_t *ax, *ay;
  ck_assert_int_eq(mgpu_array_create(rt, n, 8, 3, shares, &ax), MGPU_OK);
  ck_assert_int_eq(mgpu_array_create(rt, n, 8, 3, shares, &ay), MGPU_OK);
  ck_assert_int_eq(mgpu_array_scatter(ax, x), MGPU_OK);
  ck_assert_int_eq(mgpu_array_scatter(ay, y), MGPU_OK);

  /* A built-in kernel with a GPU function (runs on real GPUs too). */
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_mulmod(50, &k), MGPU_OK);
  mgpu_mulmod_arg_t ma = {50};
  mgpu_array_batch_t b = {.kernel = &k, .in = {ax}, .out = {ay}, .arg = &ma, .arg_size = sizeof ma};
  mgpu_worker_stats_t ws[16];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 16};
  ck_assert_int_eq(mgpu_array_run(rt, &b, &st), MGPU_OK);
  ck_assert_uint_eq(st.items, n);
  mgpu_array_part_t hp = MGPU_ARRAY_PART_INIT;
  ck_assert_int_eq(mgpu_array_part(ax, 2, &hp), MGPU_OK);
  ck_assert_uint_eq(ws[2].items + ws[3].items, (uint64_t)(n - hp.count)); /* the GPUs' parts */
  ck_assert_uint_eq(ws[0].items + ws[1].items, (uint64_t)hp.count);       /* the CPU workers: the host part */
  ck_assert(ws[2].busy_s > 0 && ws[3].busy_s > 0);
  ck_assert_int_eq(mgpu_array_gather(ay, y), MGPU_OK);
  for (size_t i = 0; i < n; i++) {
    uint64_t ref;
    const void *in[1] = {&x[i]};
    void *out[1] = {&ref};
    mgpu_chunk_t c = {.in = in, .out = out, .arg = &ma, .first = i, .count = 1};
    k.cpu(&c);
    if (ref != y[i]) ck_abort_msg("element %zu: %llx, expected %llx", i, (unsigned long long)y[i],
                                  (unsigned long long)ref);
  }
  /* Copies on the devices. */
  mgpu_array_t *az;
  ck_assert_int_eq(mgpu_array_create(rt, n, 8, 3, shares, &az), MGPU_OK);
  ck_assert_int_eq(mgpu_array_copy(az, ay, &st), MGPU_OK);
  uint64_t *z = calloc(n, 8);
  ck_assert_int_eq(mgpu_array_gather(az, z), MGPU_OK);
  ck_assert(memcmp(z, y, 8 * n) == 0);

  if (!real_mode()) {
    /* Emulated devices run the CPU function: check the global indices. */
    mgpu_kernel_t af = {.name = "affine", .cpu = affine_cpu, .gpu = affine_cpu, .nin = 1, .nout = 1,
                        .in_size = {8}, .out_size = {8}};
    b = (mgpu_array_batch_t){.kernel = &af, .in = {ax}, .out = {ay}};
    ck_assert_int_eq(mgpu_array_run(rt, &b, NULL), MGPU_OK);
    ck_assert_int_eq(mgpu_array_gather(ay, y), MGPU_OK);
    for (size_t i = 0; i < n; i++)
      if (y[i] != x[i] * 3 + i) ck_abort_msg("affine element %zu wrong", i);
    af.out_size[0] = 4;
    ck_assert_int_eq(mgpu_array_run(rt, &b, NULL), MGPU_EINVAL);
    ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "8-byte elements but kernel 'affine' takes 4-byte items"));
  }
  {
    /* A GPU, real or emulated, needs the kernel's GPU function for its part. */
    mgpu_kernel_t cpu_only = {.name = "affine", .cpu = affine_cpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};
    b = (mgpu_array_batch_t){.kernel = &cpu_only, .in = {ax}, .out = {ay}};
    ck_assert_int_eq(mgpu_array_run(rt, &b, NULL), MGPU_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "has no GPU function but GPU 0 holds a part"));
  }
  b = (mgpu_array_batch_t){.kernel = &k, .in = {ax}, .out = {NULL}, .arg = &ma, .arg_size = sizeof ma};
  ck_assert_int_eq(mgpu_array_run(rt, &b, NULL), MGPU_EINVAL);
  mgpu_array_destroy(ax);
  mgpu_array_destroy(ay);
  mgpu_array_destroy(az);
  free(x), free(y), free(z);
  mgpu_finalize(rt);
}
END_TEST

/* affine, failing on the chunk that holds element 80. */
static int affine_fail80(const mgpu_chunk_t *c) {
  if (c->first <= 80 && 80 < c->first + c->count) return 1;
  return affine_cpu(c);
}

START_TEST(test_array_run_failure) {
  /* A failed part is reported in the arrays' indices: the host part's
   * failing chunk (its items, in the message and the statistics), a GPU's
   * whole part; the items counted are the ones computed. */
  if (real_mode()) return; /* emulated GPUs run the CPU function */
  mgpu_runtime_t *rt = start(1, 2);
  if (!rt) return;
  double shares[] = {1, 1, 1}, gpu0[] = {1, 0, 0};
  mgpu_array_t *x, *y;
  ck_assert_int_eq(mgpu_array_create(rt, 100, 8, 3, shares, &x), MGPU_OK); /* the host part: 67..99 */
  ck_assert_int_eq(mgpu_array_create(rt, 100, 8, 3, shares, &y), MGPU_OK);
  mgpu_kernel_t k = {.name = "fail80", .cpu = affine_fail80, .gpu = affine_fail80, .nin = 1, .nout = 1,
                     .in_size = {8}, .out_size = {8}};
  mgpu_array_batch_t b = {.kernel = &k, .in = {x}, .out = {y}};
  mgpu_stats_t st = MGPU_STATS_INIT;
  mgpu__log_set_level(MGPU_LOG_NONE);
  ck_assert_int_eq(mgpu_array_run(rt, &b, &st), MGPU_EKERNEL);
  ck_assert_msg(st.failed_first >= 67 && st.failed_first <= 80 && 80 < st.failed_first + st.failed_count,
                "failed %zu + %zu", st.failed_first, st.failed_count);
  char want[64];
  snprintf(want, sizeof want, "failed on items %zu..%zu", st.failed_first, st.failed_first + st.failed_count - 1);
  ck_assert_msg(strstr(mgpu_last_error(), want), "'%s' lacks '%s'", mgpu_last_error(), want);
  ck_assert_uint_le(st.items, 100 - st.failed_count);
  mgpu_array_destroy(x), mgpu_array_destroy(y);
  ck_assert_int_eq(mgpu_array_create(rt, 100, 8, 3, gpu0, &x), MGPU_OK);
  ck_assert_int_eq(mgpu_array_create(rt, 100, 8, 3, gpu0, &y), MGPU_OK);
  b = (mgpu_array_batch_t){.kernel = &k, .in = {x}, .out = {y}};
  ck_assert_int_eq(mgpu_array_run(rt, &b, &st), MGPU_EKERNEL);
  ck_assert_uint_eq(st.failed_first, 0);
  ck_assert_uint_eq(st.failed_count, 100);
  ck_assert_uint_eq(st.items, 0);
  ck_assert_msg(strstr(mgpu_last_error(), "GPU 0") && strstr(mgpu_last_error(), "items 0..99"), "%s",
                mgpu_last_error());
  mgpu__log_set_level(MGPU_LOG_ERROR);
  mgpu_array_destroy(x), mgpu_array_destroy(y);
  mgpu_finalize(rt);
}
END_TEST

/* Matrix-vector product over a row-split matrix, against the CPU function. */
START_TEST(test_array_matvec) {
  mgpu_runtime_t *rt = start(2, 2);
  if (!rt) return;
  size_t rows = 301, cols = 1027;
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_matvec(cols, &k), MGPU_OK);
  float *w = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * cols), *y = malloc(sizeof(float) * rows);
  uint64_t rng = 9;
  for (size_t i = 0; i < rows * cols; i++) w[i] = (float)((double)(mgpu_test_rand(&rng) >> 11) * 0x1p-53 - 0.5);
  for (size_t i = 0; i < cols; i++) x[i] = (float)((double)(mgpu_test_rand(&rng) >> 11) * 0x1p-53);
  double shares[] = {2, 1, 1};
  mgpu_array_t *aw, *ay;
  ck_assert_int_eq(mgpu_array_create(rt, rows, sizeof(float) * cols, 3, shares, &aw), MGPU_OK);
  ck_assert_int_eq(mgpu_array_create(rt, rows, sizeof(float), 3, shares, &ay), MGPU_OK);
  ck_assert_int_eq(mgpu_array_scatter(aw, w), MGPU_OK);
  mgpu_const_t *cx;
  ck_assert_int_eq(mgpu_const_create(rt, x, sizeof(float) * cols, &cx), MGPU_OK);
  mgpu_matvec_arg_t arg = {cols};
  mgpu_array_batch_t b = {.kernel = &k, .in = {aw}, .out = {ay}, .nconsts = 1, .consts = {cx}, .arg = &arg,
                          .arg_size = sizeof arg};
  ck_assert_int_eq(mgpu_array_run(rt, &b, NULL), MGPU_OK);
  ck_assert_int_eq(mgpu_array_gather(ay, y), MGPU_OK);
  for (size_t r = 0; r < rows; r++) {
    double ref = 0, mag = 0;
    for (size_t j = 0; j < cols; j++) ref += (double)w[r * cols + j] * x[j], mag += fabs((double)w[r * cols + j] * x[j]);
    ck_assert_msg(fabs(y[r] - ref) <= 1e-6 * mag + 1e-30, "row %zu: %g, expected %g", r, y[r], ref);
  }
  mgpu_const_destroy(cx);
  mgpu_array_destroy(aw);
  mgpu_array_destroy(ay);
  free(w), free(x), free(y);
  mgpu_finalize(rt);
}
END_TEST

/* --------------------------------------------------------------- sums */

START_TEST(test_array_sum) {
  mgpu_runtime_t *rt = start(2, 2);
  if (!rt) return;
  size_t n = 3000017;
  float *xf = malloc(4 * n);
  double *xd = malloc(8 * n);
  uint64_t rng = 3;
  long double ref_f = 0, ref_d = 0, mag = 0;
  for (size_t i = 0; i < n; i++) {
    xd[i] = (double)(mgpu_test_rand(&rng) >> 11) * 0x1p-53 * 2 - 0.7;
    xf[i] = (float)xd[i];
    ref_d += xd[i];
    ref_f += xf[i];
    mag += fabsl((long double)xd[i]);
  }
  double shares[][3] = {{1, 1, 1}, {1, 0, 0}, {0, 0, 1}, {0.7, 0.2, 0.1}};
  for (int s = 0; s < 4; s++) {
    for (int dbl = 0; dbl < 2; dbl++) {
      mgpu_array_t *a;
      ck_assert_int_eq(mgpu_array_create(rt, n, dbl ? 8 : 4, 3, shares[s], &a), MGPU_OK);
      ck_assert_int_eq(mgpu_array_scatter(a, dbl ? (void *)xd : (void *)xf), MGPU_OK);
      double r1 = 0, r2 = 1;
      mgpu_dtype_t dt = dbl ? MGPU_FLOAT64 : MGPU_FLOAT32;
      ck_assert_int_eq(mgpu_array_sum(a, dt, &r1), MGPU_OK);
      ck_assert_int_eq(mgpu_array_sum(a, dt, &r2), MGPU_OK);
      long double ref = dbl ? ref_d : ref_f;
      ck_assert_msg(fabsl((long double)r1 - ref) <= 1e-13L * mag, "split %d %s: %.17g, expected %.17Lg", s,
                    dbl ? "f64" : "f32", r1, ref);
      ck_assert_msg(memcmp(&r1, &r2, sizeof r1) == 0, "two sums of the same array differ: %.17g %.17g", r1, r2);
      ck_assert_int_eq(mgpu_array_sum(a, dbl ? MGPU_FLOAT32 : MGPU_FLOAT64, &r1), MGPU_EINVAL);
      ck_assert_int_eq(mgpu_array_sum(a, MGPU_INT32, &r1), MGPU_EINVAL);
      mgpu_array_destroy(a);
    }
  }
  free(xf);
  free(xd);
  mgpu_finalize(rt);
}
END_TEST

/* --------------------------------------------------------------- collectives */

static double value_of(int g, size_t i) { return (double)((g * 7 + (int)(i % 13)) % 11 + 1); }

static void put(void *p, mgpu_dtype_t dt, size_t i, double v) {
  switch (dt) {
  case MGPU_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case MGPU_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
  case MGPU_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
  case MGPU_FLOAT32: ((float *)p)[i] = (float)v; break;
  case MGPU_FLOAT64: ((double *)p)[i] = v; break;
  }
}

static double get(const void *p, mgpu_dtype_t dt, size_t i) {
  switch (dt) {
  case MGPU_INT32: return ((const int32_t *)p)[i];
  case MGPU_INT64: return (double)((const int64_t *)p)[i];
  case MGPU_UINT64: return (double)((const uint64_t *)p)[i];
  case MGPU_FLOAT32: return ((const float *)p)[i];
  case MGPU_FLOAT64: return ((const double *)p)[i];
  }
  return 0;
}

static double reduce_ref(int ngpus, size_t i, mgpu_redop_t op) {
  double r = value_of(0, i);
  for (int g = 1; g < ngpus; g++) {
    double v = value_of(g, i);
    switch (op) {
    case MGPU_OP_SUM: r += v; break;
    case MGPU_OP_PROD: r *= v; break;
    case MGPU_OP_MIN: r = v < r ? v : r; break;
    case MGPU_OP_MAX: r = v > r ? v : r; break;
    }
  }
  return r;
}

/* Device buffers of `elems` elements per GPU, filled with value_of. */
static void fill(mgpu_runtime_t *rt, int ngpus, void **dev, size_t elems, mgpu_dtype_t dt) {
  size_t es = mgpu_dtype_size(dt);
  void *h = malloc(es * elems + 1);
  for (int g = 0; g < ngpus; g++) {
    for (size_t i = 0; i < elems; i++) put(h, dt, i, value_of(g, i));
    ck_assert_int_eq(mgpu_device_alloc(rt, g, es * elems + 1, &dev[g]), MGPU_OK);
    ck_assert_int_eq(mgpu_memcpy_to_device(rt, g, dev[g], h, es * elems), MGPU_OK);
  }
  free(h);
}

static void *fetch(mgpu_runtime_t *rt, int g, const void *dev, size_t bytes) {
  void *h = malloc(bytes + 1);
  ck_assert_int_eq(mgpu_memcpy_from_device(rt, g, h, dev, bytes), MGPU_OK);
  return h;
}

static void collectives_on(int ngpus) {
  mgpu_runtime_t *rt = start(1, ngpus);
  if (!rt) return;
  size_t count = 1001;
  for (int dti = 0; dti <= MGPU_FLOAT64; dti++) {
    mgpu_dtype_t dt = (mgpu_dtype_t)dti;
    size_t es = mgpu_dtype_size(dt);
    void *send[MGPU_MAX_DEVICES], *recv[MGPU_MAX_DEVICES];
    fill(rt, ngpus, send, count * (size_t)ngpus, dt);
    for (int g = 0; g < ngpus; g++) ck_assert_int_eq(mgpu_device_alloc(rt, g, es * count * (size_t)ngpus, &recv[g]), MGPU_OK);
    for (int opi = 0; opi <= MGPU_OP_MAX; opi++) {
      mgpu_redop_t op = (mgpu_redop_t)opi;
      /* Products of up to 8 values of at most 11 stay exact in every type. */
      ck_assert_int_eq(mgpu_allreduce(rt, (const void *const *)send, recv, count, dt, op), MGPU_OK);
      for (int g = 0; g < ngpus; g++) {
        void *h = fetch(rt, g, recv[g], es * count);
        for (size_t i = 0; i < count; i++)
          if (get(h, dt, i) != reduce_ref(ngpus, i, op))
            ck_abort_msg("allreduce %s %s on %d GPUs: GPU %d element %zu is %g, expected %g", mgpu_dtype_name(dt),
                         mgpu_redop_name(op), ngpus, g, i, get(h, dt, i), reduce_ref(ngpus, i, op));
        free(h);
      }
      ck_assert_int_eq(mgpu_reduce_scatter(rt, (const void *const *)send, recv, count, dt, op), MGPU_OK);
      for (int g = 0; g < ngpus; g++) {
        void *h = fetch(rt, g, recv[g], es * count);
        for (size_t i = 0; i < count; i++)
          if (get(h, dt, i) != reduce_ref(ngpus, (size_t)g * count + i, op))
            ck_abort_msg("reduce_scatter %s %s: GPU %d element %zu wrong", mgpu_dtype_name(dt), mgpu_redop_name(op),
                         g, i);
        free(h);
      }
    }
    for (int root = 0; root < ngpus; root++) {
      ck_assert_int_eq(mgpu_broadcast(rt, (const void *const *)send, recv, count, dt, root), MGPU_OK);
      for (int g = 0; g < ngpus; g++) {
        void *h = fetch(rt, g, recv[g], es * count);
        for (size_t i = 0; i < count; i++)
          if (get(h, dt, i) != value_of(root, i)) ck_abort_msg("broadcast from %d: GPU %d element %zu wrong", root, g, i);
        free(h);
      }
    }
    ck_assert_int_eq(mgpu_allgather(rt, (const void *const *)send, recv, count, dt), MGPU_OK);
    for (int g = 0; g < ngpus; g++) {
      void *h = fetch(rt, g, recv[g], es * count * (size_t)ngpus);
      for (int src = 0; src < ngpus; src++)
        for (size_t i = 0; i < count; i++)
          if (get(h, dt, (size_t)src * count + i) != value_of(src, i))
            ck_abort_msg("allgather %s: GPU %d block %d element %zu wrong", mgpu_dtype_name(dt), g, src, i);
      free(h);
    }
    /* In place. */
    ck_assert_int_eq(mgpu_allreduce(rt, (const void *const *)send, send, count, dt, MGPU_OP_MAX), MGPU_OK);
    void *h = fetch(rt, ngpus - 1, send[ngpus - 1], es * count);
    for (size_t i = 0; i < count; i++) ck_assert(get(h, dt, i) == reduce_ref(ngpus, i, MGPU_OP_MAX));
    free(h);
    for (int g = 0; g < ngpus; g++) {
      ck_assert_int_eq(mgpu_device_free(rt, g, send[g]), MGPU_OK);
      ck_assert_int_eq(mgpu_device_free(rt, g, recv[g]), MGPU_OK);
    }
  }
  mgpu_finalize(rt);
}

START_TEST(test_collectives_1) { collectives_on(1); }
END_TEST
START_TEST(test_collectives_2) { collectives_on(2); }
END_TEST
START_TEST(test_collectives_3) { collectives_on(3); }
END_TEST
START_TEST(test_collectives_4) { collectives_on(4); }
END_TEST

/* A batch feeds an all-reduce that feeds a batch, all asynchronous. */
static int add_one_cpu(const mgpu_chunk_t *c) {
  double *y = c->out[0];
  const double *x = c->in[0];
  for (size_t i = 0; i < c->count; i++) y[i] = x[i] + 1;
  return 0;
}

START_TEST(test_collective_async_chain) {
  mgpu_runtime_t *rt = start(2, 2);
  if (!rt) return;
  size_t count = 4096;
  void *buf[2];
  double *h = malloc(8 * count), *out = malloc(8 * count);
  for (size_t i = 0; i < count; i++) h[i] = (double)i;
  for (int g = 0; g < 2; g++) {
    ck_assert_int_eq(mgpu_device_alloc(rt, g, 8 * count, &buf[g]), MGPU_OK);
    ck_assert_int_eq(mgpu_memcpy_to_device(rt, g, buf[g], h, 8 * count), MGPU_OK);
  }
  /* A CPU batch first (it touches only host arrays), then a chain of 10
   * all-reduces, each after the one before: each doubles the values. */
  mgpu_kernel_t k = {.name = "add_one", .cpu = add_one_cpu, .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}};
  mgpu_batch_t b = {.kernel = &k, .n = count, .in = {h}, .out = {out}};
  mgpu_event_t *ev0, *ev[10];
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &ev0), MGPU_OK);
  for (int r = 0; r < 10; r++)
    ck_assert_int_eq(mgpu_allreduce_async(rt, (const void *const *)buf, buf, count, MGPU_FLOAT64, MGPU_OP_SUM,
                                          1, r == 0 ? &ev0 : &ev[r - 1], &ev[r]),
                     MGPU_OK);
  /* A batch after the last all-reduce. */
  mgpu_event_t *ev1;
  mgpu_batch_t b2 = {.kernel = &k, .n = count, .in = {out}, .out = {out}};
  ck_assert_int_eq(mgpu_submit(rt, &b2, 1, &ev[9], &ev1), MGPU_OK);
  ck_assert_int_eq(mgpu_event_wait(ev1, NULL), MGPU_OK);
  for (int r = 0; r < 10; r++) {
    ck_assert_int_eq(mgpu_event_test(ev[r]), MGPU_OK);
    mgpu_event_release(ev[r]);
  }
  mgpu_stats_t st = MGPU_STATS_INIT;
  st.worker = NULL;
  ck_assert_int_eq(mgpu_event_wait(ev0, &st), MGPU_OK);
  mgpu_event_release(ev0);
  mgpu_event_release(ev1);
  for (int g = 0; g < 2; g++) {
    double *r = fetch(rt, g, buf[g], 8 * count);
    for (size_t i = 0; i < count; i++) ck_assert(r[i] == (double)i * 1024);
    free(r);
  }
  for (size_t i = 0; i < count; i++) ck_assert(out[i] == (double)i + 2);
  for (int g = 0; g < 2; g++) mgpu_device_free(rt, g, buf[g]);
  free(h), free(out);
  mgpu_finalize(rt);
}
END_TEST

/* mgpu_device_free and mgpu_array_destroy wait for earlier device tasks that
 * may use the memory, also one still waiting for its dependency, which the
 * free's own task would otherwise overtake (the collective then read freed
 * memory and reported MGPU_OK). */
static int slow_item(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  mgpu_test_sleep(0.2);
  return 0;
}

START_TEST(test_free_waits_for_tasks) {
  const int G = gpus_available() >= 2 ? 2 : 1; /* one real GPU does too */
  mgpu_runtime_t *rt = start(1, G);
  if (!rt) return;
  const size_t count = 1000;
  double *h = malloc(8 * 2 * count);
  for (size_t i = 0; i < 2 * count; i++) h[i] = (double)i;
  void *send[2], *recv[2];
  for (int g = 0; g < G; g++) {
    ck_assert_int_eq(mgpu_device_alloc(rt, g, 8 * count, &send[g]), MGPU_OK);
    ck_assert_int_eq(mgpu_device_alloc(rt, g, 8 * count, &recv[g]), MGPU_OK);
    ck_assert_int_eq(mgpu_memcpy_to_device(rt, g, send[g], h, 8 * count), MGPU_OK);
  }
  mgpu_kernel_t k = {.name = "slow", .cpu = slow_item};
  mgpu_batch_t b = {.kernel = &k, .n = 1};
  /* Raw device memory. */
  mgpu_event_t *e, *ce;
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &e), MGPU_OK);
  ck_assert_int_eq(mgpu_allreduce_async(rt, (const void *const *)send, recv, count, MGPU_FLOAT64, MGPU_OP_SUM, 1, &e,
                                        &ce), MGPU_OK);
  for (int g = 0; g < G; g++) ck_assert_int_eq(mgpu_device_free(rt, g, send[g]), MGPU_OK);
  ck_assert_int_eq(mgpu_event_test(ce), MGPU_OK); /* done before the free returned */
  mgpu_event_release(e), mgpu_event_release(ce);
  for (int g = 0; g < G; g++) {
    double *r = fetch(rt, g, recv[g], 8 * count);
    for (size_t i = 0; i < count; i++)
      if (r[i] != G * (double)i) ck_abort_msg("GPU %d element %zu is %g, expected %g", g, i, r[i], G * (double)i);
    free(r);
  }
  /* An array's parts: part g holds elements g * count .. (g + 1) * count - 1. */
  mgpu_array_t *a;
  ck_assert_int_eq(mgpu_array_create(rt, (size_t)G * count, 8, 0, NULL, &a), MGPU_OK);
  ck_assert_int_eq(mgpu_array_scatter(a, h), MGPU_OK);
  const void *part[2];
  for (int g = 0; g < G; g++) {
    mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
    ck_assert_int_eq(mgpu_array_part(a, g, &p), MGPU_OK);
    ck_assert_uint_eq(p.count, count);
    part[g] = p.data;
  }
  ck_assert_int_eq(mgpu_submit(rt, &b, 0, NULL, &e), MGPU_OK);
  ck_assert_int_eq(mgpu_allreduce_async(rt, part, recv, count, MGPU_FLOAT64, MGPU_OP_SUM, 1, &e, &ce), MGPU_OK);
  mgpu_array_destroy(a);
  ck_assert_int_eq(mgpu_event_test(ce), MGPU_OK);
  mgpu_event_release(e), mgpu_event_release(ce);
  for (int g = 0; g < G; g++) {
    double *r = fetch(rt, g, recv[g], 8 * count);
    for (size_t i = 0; i < count; i++) {
      double want = G * (double)i + (double)(count * (size_t)(G * (G - 1) / 2));
      if (r[i] != want) ck_abort_msg("GPU %d element %zu is %g after the array's all-reduce, expected %g", g, i, r[i], want);
    }
    free(r);
    ck_assert_int_eq(mgpu_device_free(rt, g, recv[g]), MGPU_OK);
  }
  free(h);
  mgpu_finalize(rt);
}
END_TEST

/* Device memory the caller left is freed at finalize (with a warning); a
 * pointer the runtime did not give out is refused by mgpu_device_free. */
START_TEST(test_device_alloc_freed_at_finalize) {
  if (real_mode()) return; /* counts the emulated devices' memory */
  atomic_store(&mgpu__emul_allocs, 0);
  atomic_store(&mgpu__emul_frees, 0);
  mgpu_runtime_t *rt = start(1, 2);
  if (!rt) return;
  atomic_store(&mgpu__emul_left_bytes, 0);
  /* Everything else the runtime allocates on the caller's behalf is left
   * too: pinned host memory, a constant's copies on each GPU, and a batch's
   * staging and device buffers. */
  void *host = mgpu_host_alloc(rt, 4096);
  ck_assert_ptr_nonnull(host);
  mgpu_const_t *k;
  ck_assert_int_eq(mgpu_const_create(rt, host, 64, &k), MGPU_OK);
  void *p[5];
  for (int i = 0; i < 5; i++) ck_assert_int_eq(mgpu_device_alloc(rt, i % 2, 1000 + (size_t)i, &p[i]), MGPU_OK);
  ck_assert_int_eq(mgpu_device_free(rt, 0, p[0]), MGPU_OK);
  ck_assert_int_eq(mgpu_device_free(rt, 0, p[0]), MGPU_EINVAL); /* twice */
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "was not allocated by mgpu_device_alloc on GPU 0"));
  ck_assert_int_eq(mgpu_device_free(rt, 0, p[1]), MGPU_EINVAL); /* p[1] is GPU 1's */
  int local;
  ck_assert_int_eq(mgpu_device_free(rt, 1, &local), MGPU_EINVAL);
  mgpu_finalize(rt); /* p[1..4], host and k left: freed here */
  ck_assert_uint_eq(atomic_load(&mgpu__emul_left_bytes), 0);
  uint64_t allocs = atomic_load(&mgpu__emul_allocs), frees = atomic_load(&mgpu__emul_frees);
  printf("finalize: %llu allocations, %llu frees on the emulated devices\n", (unsigned long long)allocs,
         (unsigned long long)frees);
  ck_assert_uint_ge(allocs, 6);
  ck_assert_uint_eq(frees, allocs);
}
END_TEST

/* Copies between the host and device memory stay within the allocation:
 * one that starts in memory of mgpu_device_alloc but runs past its end, or
 * names the wrong GPU, is refused with MGPU_EINVAL naming both; on an
 * emulated device, which is host memory, one past the end of any of its
 * allocations or into memory freed is refused too, as CUDA refuses it,
 * instead of writing over the heap. Nothing is copied by a refused call. */
START_TEST(test_copy_bounds) {
  mgpu_runtime_t *rt = start(1, 2);
  if (!rt) return;
  uint8_t host[4096], back[4096];
  for (size_t i = 0; i < sizeof host; i++) host[i] = (uint8_t)(i * 7 + 1);
  void *p, *q;
  ck_assert_int_eq(mgpu_device_alloc(rt, 0, 1024, &p), MGPU_OK);
  ck_assert_int_eq(mgpu_device_alloc(rt, 1, 1024, &q), MGPU_OK);
  ck_assert_int_eq(mgpu_memcpy_to_device(rt, 0, p, host, 1024), MGPU_OK);
  ck_assert_int_eq(mgpu_memcpy_to_device(rt, 0, p, host + 1024, 4096 - 1024), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_memcpy_to_device: 3072 bytes at dst"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "run 2048 bytes past the end of its allocation (1024 bytes at"));
  ck_assert_int_eq(mgpu_memcpy_to_device(rt, 0, (uint8_t *)p + 1000, host, 25), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "run 1 bytes past the end"));
  ck_assert_int_eq(mgpu_memcpy_from_device(rt, 0, back, (uint8_t *)p + 1000, 25), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_memcpy_from_device: 25 bytes at src"));
  ck_assert_int_eq(mgpu_memcpy_to_device(rt, 1, p, host, 16), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "is memory of GPU 0 (mgpu_device_alloc), not of GPU 1"));
  /* The allocation holds what the first copy put there, all of it. */
  memset(back, 0, sizeof back);
  ck_assert_int_eq(mgpu_memcpy_from_device(rt, 0, back + 24, (uint8_t *)p + 24, 1000), MGPU_OK);
  ck_assert_int_eq(memcmp(back + 24, host + 24, 1000), 0);
  ck_assert_int_eq(mgpu_device_free(rt, 0, p), MGPU_OK);
  if (!real_mode()) {
    /* Memory freed, and host memory, are not the emulated device's. */
    ck_assert_int_eq(mgpu_memcpy_to_device(rt, 0, p, host, 16), MGPU_EINVAL);
    ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "GPU 0 failed (invalid argument"));
    ck_assert_int_eq(mgpu_memcpy_to_device(rt, 1, back, host, 16), MGPU_EINVAL);
    ck_assert_int_eq(mgpu_memcpy_from_device(rt, 1, back, host, 16), MGPU_EINVAL);
  }
  ck_assert_int_eq(mgpu_memcpy_to_device(rt, 1, q, host, 1024), MGPU_OK);
  ck_assert_int_eq(mgpu_device_free(rt, 1, q), MGPU_OK);
  mgpu_finalize(rt);
}
END_TEST

/* The message of a refused collective starts with want, and the call left
 * both GPUs' buffers as they were. */
static void assert_refused(mgpu_runtime_t *rt, mgpu_status_t st, const char *want, void *const *buf,
                           const uint8_t *was) {
  ck_assert_int_eq(st, MGPU_EINVAL);
  ck_assert_msg(strncmp(mgpu_last_error(), want, strlen(want)) == 0, "want \"%s...\", got \"%s\"", want,
                mgpu_last_error());
  uint8_t now[64];
  for (int g = 0; g < 2; g++) {
    ck_assert_int_eq(mgpu_memcpy_from_device(rt, g, now, buf[g], sizeof now), MGPU_OK);
    ck_assert_msg(memcmp(now, was + 64 * g, sizeof now) == 0, "GPU %d's buffer changed", g);
  }
}

/* A collective's buffers stay within their allocations of mgpu_device_alloc:
 * one that would read or write past the end is refused before anything
 * moves, with a message naming the call, the buffer, the allocation's size
 * and the bytes of it that the call asks for. */
START_TEST(test_collective_bounds) {
  mgpu_runtime_t *rt = start(1, 2);
  if (!rt) return;
  void *buf[2];
  uint8_t was[128];
  for (size_t i = 0; i < sizeof was; i++) was[i] = (uint8_t)(i * 5 + 3);
  for (int g = 0; g < 2; g++) {
    ck_assert_int_eq(mgpu_device_alloc(rt, g, 64, &buf[g]), MGPU_OK);
    ck_assert_int_eq(mgpu_memcpy_to_device(rt, g, buf[g], was + 64 * g, 64), MGPU_OK);
  }
  const void *const *s = (const void *const *)buf;
  char want[400];
  /* 16 floats fill an allocation of 64 bytes; 17 run past it. */
  snprintf(want, sizeof want, "mgpu_allreduce: 68 bytes at send[0] %p (count 17 of f32) run 4 bytes past the end of "
           "its allocation (64 bytes at %p on GPU 0; the call asks for its bytes 0..67)", buf[0], buf[0]);
  assert_refused(rt, mgpu_allreduce(rt, s, buf, 17, MGPU_FLOAT32, MGPU_OP_MAX), want, buf, was);
  mgpu_event_t *ev = (mgpu_event_t *)0x1;
  snprintf(want, sizeof want, "mgpu_allreduce_async: 68 bytes at send[0] %p (count 17 of f32)", buf[0]);
  assert_refused(rt, mgpu_allreduce_async(rt, s, buf, 17, MGPU_FLOAT32, MGPU_OP_MAX, 0, NULL, &ev), want, buf, was);
  ck_assert_ptr_eq(ev, (mgpu_event_t *)0x1);
  /* Broadcast reads only the root's send buffer, and writes every recv. */
  void *big[2];
  for (int g = 0; g < 2; g++) ck_assert_int_eq(mgpu_device_alloc(rt, g, 256, &big[g]), MGPU_OK);
  const void *root_small[2] = {big[0], buf[1]};
  snprintf(want, sizeof want, "mgpu_broadcast: 128 bytes at send[1] %p (count 32 of f32) run 64 bytes past the end "
           "of its allocation (64 bytes at %p on GPU 1;", buf[1], buf[1]);
  assert_refused(rt, mgpu_broadcast(rt, root_small, big, 32, MGPU_FLOAT32, 1), want, buf, was);
  ck_assert_int_eq(mgpu_broadcast(rt, root_small, big, 32, MGPU_FLOAT32, 0), MGPU_OK);
  snprintf(want, sizeof want, "mgpu_broadcast: 128 bytes at recv[0] %p (count 32 of f32)", buf[0]);
  const void *bs[2] = {big[0], big[1]};
  assert_refused(rt, mgpu_broadcast(rt, bs, buf, 32, MGPU_FLOAT32, 0), want, buf, was);
  /* All-gather writes count from each GPU into every recv; reduce-scatter
   * reads as much from every send. */
  ck_assert_int_eq(mgpu_allgather(rt, s, big, 8, MGPU_FLOAT32), MGPU_OK);
  snprintf(want, sizeof want, "mgpu_allgather: 72 bytes at recv[0] %p (count 9 of f32 for each of 2 GPUs) run 8 "
           "bytes past the end of its allocation (64 bytes at %p on GPU 0; the call asks for its bytes 0..71)",
           buf[0], buf[0]);
  assert_refused(rt, mgpu_allgather(rt, s, buf, 9, MGPU_FLOAT32), want, buf, was);
  snprintf(want, sizeof want, "mgpu_reduce_scatter: 72 bytes at send[0] %p (count 9 of f32 for each of 2 GPUs) run "
           "8 bytes past the end", buf[0]);
  assert_refused(rt, mgpu_reduce_scatter(rt, s, big, 9, MGPU_FLOAT32, MGPU_OP_SUM), want, buf, was);
  /* A buffer that starts inside its allocation: the bytes asked for are
   * counted from the allocation's start. */
  void *mid[2] = {(uint8_t *)buf[0] + 32, (uint8_t *)buf[1] + 32};
  snprintf(want, sizeof want, "mgpu_allreduce: 64 bytes at send[0] %p (count 8 of f64) run 32 bytes past the end "
           "of its allocation (64 bytes at %p on GPU 0; the call asks for its bytes 32..95)", mid[0], buf[0]);
  assert_refused(rt, mgpu_allreduce(rt, (const void *const *)mid, mid, 8, MGPU_FLOAT64, MGPU_OP_SUM), want, buf, was);
  /* Memory of the other GPU. */
  void *crossed[2] = {big[0], buf[0]};
  snprintf(want, sizeof want, "mgpu_allreduce: recv[1] %p is memory of GPU 0 (mgpu_device_alloc), not of GPU 1",
           buf[0]);
  assert_refused(rt, mgpu_allreduce(rt, bs, crossed, 4, MGPU_FLOAT32, MGPU_OP_SUM), want, buf, was);
  for (int g = 0; g < 2; g++) {
    mgpu_device_free(rt, g, buf[g]);
    mgpu_device_free(rt, g, big[g]);
  }
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_collective_errors) {
  mgpu_runtime_t *rt = start(1, 2);
  if (!rt) return;
  void *buf[2];
  for (int g = 0; g < 2; g++) ck_assert_int_eq(mgpu_device_alloc(rt, g, 64, &buf[g]), MGPU_OK);
  const void *const *s = (const void *const *)buf;
  ck_assert_int_eq(mgpu_allreduce(rt, s, buf, 4, (mgpu_dtype_t)9, MGPU_OP_SUM), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_allreduce: dtype 9 is not one of"));
  ck_assert_int_eq(mgpu_allreduce(rt, s, buf, 4, MGPU_FLOAT32, (mgpu_redop_t)7), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_broadcast(rt, s, buf, 4, MGPU_FLOAT32, 2), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "root 2 is not a GPU of the runtime: expected 0..1"));
  ck_assert_int_eq(mgpu_allgather(rt, NULL, buf, 4, MGPU_FLOAT32), MGPU_EINVAL);
  void *holes[2] = {buf[0], NULL};
  ck_assert_int_eq(mgpu_reduce_scatter(rt, s, holes, 4, MGPU_INT32, MGPU_OP_MIN), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "recv[1] is NULL"));
  /* Broadcast reads only the root's send buffer. */
  const void *only_root[2] = {NULL, buf[1]};
  ck_assert_int_eq(mgpu_broadcast(rt, only_root, buf, 4, MGPU_FLOAT32, 1), MGPU_OK);
  ck_assert_int_eq(mgpu_allreduce_async(rt, s, buf, 4, MGPU_FLOAT32, MGPU_OP_SUM, 0, NULL, NULL), MGPU_EINVAL);
  ck_assert_int_eq(mgpu_allreduce(rt, s, buf, 0, MGPU_FLOAT32, MGPU_OP_SUM), MGPU_OK);
  const char *be = mgpu_collectives_backend(rt);
  ck_assert(strcmp(be, "host") == 0 || strncmp(be, "nccl ", 5) == 0);
  if (!real_mode()) ck_assert_str_eq(be, "host");
  for (int g = 0; g < 2; g++) mgpu_device_free(rt, g, buf[g]);
  mgpu_finalize(rt);
  /* No GPU. */
  mgpu_test_config_t c = mgpu_test_config(1, 0);
  c.cfg.num_gpus = 0;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  ck_assert_int_eq(mgpu_allreduce(rt, s, buf, 4, MGPU_FLOAT32, MGPU_OP_SUM), MGPU_ENODEV);
  mgpu_array_t *a;
  ck_assert_int_eq(mgpu_array_create(rt, 5, 4, 0, NULL, &a), MGPU_OK); /* all on the host */
  mgpu_array_part_t p = MGPU_ARRAY_PART_INIT;
  ck_assert_int_eq(mgpu_array_part(a, 0, &p), MGPU_OK);
  ck_assert_int_eq(p.gpu, -1);
  ck_assert_uint_eq(p.count, 5);
  float v[5] = {1, 2, 3, 4, 5};
  double sum;
  ck_assert_int_eq(mgpu_array_scatter(a, v), MGPU_OK);
  ck_assert_int_eq(mgpu_array_sum(a, MGPU_FLOAT32, &sum), MGPU_OK);
  ck_assert(sum == 15);
  mgpu_array_destroy(a);
  mgpu_finalize(rt);
}
END_TEST

int main(void) {
  Suite *s = suite_create("array");
  TCase *tc = tcase_create("array");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_split_exact);
  tcase_add_test(tc, test_split_default_and_env);
  tcase_add_test(tc, test_array_errors);
  tcase_add_test(tc, test_array_run);
  tcase_add_test(tc, test_array_run_failure);
  tcase_add_test(tc, test_array_matvec);
  tcase_add_test(tc, test_array_sum);
  tcase_add_test(tc, test_collectives_1);
  tcase_add_test(tc, test_collectives_2);
  tcase_add_test(tc, test_collectives_3);
  tcase_add_test(tc, test_collectives_4);
  tcase_add_test(tc, test_collective_async_chain);
  tcase_add_test(tc, test_free_waits_for_tasks);
  tcase_add_test(tc, test_collective_errors);
  tcase_add_test(tc, test_collective_bounds);
  tcase_add_test(tc, test_device_alloc_freed_at_finalize);
  tcase_add_test(tc, test_copy_bounds);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  /* On real GPUs, no fork: CUDA does not survive one once started. */
  if (real_mode()) srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (failed) return EXIT_FAILURE;
  if (real_mode() && gpus_available() == 0) {
    printf("no GPU: the real-GPU array and collective tests were skipped\n");
    return 77;
  }
  return EXIT_SUCCESS;
}
