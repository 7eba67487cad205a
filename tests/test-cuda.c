/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-cuda.c: the CUDA back end's operations, called directly (not through the
 * runtime). Without a GPU every test checks what it can without one and skips
 * the rest; the program then exits 77 (automake's SKIP).
 *
 * No CUDA call may happen in main() before Check forks the tests: a child
 * inherits a CUDA state it cannot use. Each test asks count() itself.
 */
#include "internal.h"

#include <check.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* GPU functions of test-cuda-kern.cu. */
int mgpu_test_gpu_fill(const mgpu_chunk_t *c);
int mgpu_test_gpu_einval(const mgpu_chunk_t *c);
int mgpu_test_gpu_oom(const mgpu_chunk_t *c);
int mgpu_test_gpu_badconfig(const mgpu_chunk_t *c);

#define OPS mgpu__dev_cuda
#define MIB ((size_t)1 << 20)

/* Return from the test, with a note, when this machine has no CUDA device. */
#define NEED_GPU()                                                                   \
  do {                                                                               \
    if (OPS->count() == 0) {                                                         \
      fprintf(stderr, "%s: no CUDA device; GPU part skipped\n", __func__);          \
      return;                                                                        \
    }                                                                                \
  } while (0)

static mgpu__config_t cfg; /* open() takes one; the CUDA back end reads nothing in it */

static void *open_dev0(void)
{
  void *ctx = NULL;
  ck_assert_int_eq(OPS->open(0, &cfg, &ctx), MGPU_OK);
  ck_assert_ptr_nonnull(ctx);
  return ctx;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t fill_value(size_t i)
{
  return (uint32_t)i * 3u + 1u; /* as fill_kernel in test-cuda-kern.cu */
}

/* ---------------------------------------------------------------- tests */

/* Runs with or without a GPU: a device index past the last one fails cleanly
 * and leaves the outputs alone. On a machine without GPUs that is device 0, so
 * this exercises the error paths of count, props, open, can_peer and the host
 * calls. */
START_TEST(test_bad_device)
{
  int n = OPS->count();
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  void *ctx = (void *)&info;
  int x = 0;

  ck_assert_int_ge(n, 0);
  ck_assert_int_eq(OPS->count(), n);
  memset(&info, 0xab, sizeof info);
  ck_assert_int_lt(OPS->props(n, &info), 0);
  ck_assert_int_eq((unsigned char)info.name[0], 0xab);
  ck_assert_int_lt(OPS->open(n, &cfg, &ctx), 0);
  ck_assert_ptr_eq(ctx, (void *)&info);
  ck_assert_int_eq(OPS->can_peer(n, 0), 0);
  ck_assert_int_eq(OPS->can_peer(-1, n), 0);
  ck_assert_int_eq(OPS->host_is_pinned(&x, sizeof x), 0);
  ck_assert_int_eq(OPS->host_is_pinned(NULL, 8), 0);
  if (n == 0) {
    void *p = (void *)&x;
    fprintf(stderr, "%s: count() is 0 on this machine\n", __func__);
    ck_assert_int_lt(OPS->host_alloc(64, &p), 0);
    ck_assert_ptr_eq(p, (void *)&x);
  }
  /* Every failure above was cleared. */
  ck_assert_int_eq(n == 0 ? cudaSuccess : cudaPeekAtLastError(), cudaSuccess);
}
END_TEST

START_TEST(test_props)
{
  int n, d, cur = -1;
  NEED_GPU();
  n = OPS->count();
  /* props must put back the calling thread's current device. */
  ck_assert_int_eq(cudaSetDevice(n - 1), cudaSuccess);
  for (d = 0; d < n; d++) {
    mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
    ck_assert_int_eq(OPS->props(d, &info), MGPU_OK);
    fprintf(stderr, "device %d: %s, %s, cc %d.%d, %d SMs, %d MHz, %zu MiB (%zu free)\n", d, info.name,
            info.pci_bus_id, info.cc_major, info.cc_minor, info.sm_count, info.clock_khz / 1000,
            info.total_mem / MIB, info.free_mem / MIB);
    ck_assert_int_eq(info.index, d);
    ck_assert(info.name[0] != '\0');
    ck_assert(memchr(info.name, '\0', sizeof info.name) != NULL);
    ck_assert(info.pci_bus_id[0] != '\0');
    ck_assert_int_gt(info.sm_count, 0);
    ck_assert_int_ge(info.cc_major, 3);
    ck_assert_int_gt(info.clock_khz, 0);
    ck_assert_uint_gt(info.total_mem, 0);
    ck_assert_uint_gt(info.free_mem, 0);
    ck_assert_uint_le(info.free_mem, info.total_mem);
    ck_assert_int_eq(info.emulated, 0);
    ck_assert_int_eq(cudaGetDevice(&cur), cudaSuccess);
    ck_assert_int_eq(cur, n - 1);
  }
  for (d = 0; d < n; d++) {
    int v = OPS->can_peer(0, d);
    ck_assert(v == 0 || v == 1);
  }
}
END_TEST

START_TEST(test_alloc)
{
  void *ctx, *p = NULL, *q = NULL;
  size_t f = 0, t = 0;
  NEED_GPU();
  ctx = open_dev0();
  ck_assert_int_eq(OPS->mem_info(ctx, &f, &t), MGPU_OK);
  ck_assert_uint_gt(t, 0);
  ck_assert_uint_le(f, t);
  ck_assert_int_eq(OPS->mem_alloc(ctx, 16 * MIB, &p), MGPU_OK);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(OPS->mem_alloc(ctx, 0, &q), MGPU_OK);
  ck_assert_ptr_nonnull(q);
  /* Device memory is not pinned host memory. */
  ck_assert_int_eq(OPS->host_is_pinned(p, 16 * MIB), 0);
  OPS->mem_free(ctx, q);
  OPS->mem_free(ctx, p);
  OPS->mem_free(ctx, NULL);
  OPS->close(ctx);
}
END_TEST

START_TEST(test_oom)
{
  void *ctx, *p = (void *)&ctx, *q = NULL;
  size_t f = 0, t = 0;
  NEED_GPU();
  ctx = open_dev0();
  ck_assert_int_eq(OPS->mem_info(ctx, &f, &t), MGPU_OK);
  ck_assert_int_eq(OPS->mem_alloc(ctx, t * 2, &p), MGPU_ENOMEM);
  ck_assert_ptr_eq(p, (void *)&ctx);
  /* Out of memory is not sticky, and the back end cleared it. */
  ck_assert_int_eq(cudaPeekAtLastError(), cudaSuccess);
  ck_assert_int_eq(OPS->mem_alloc(ctx, MIB, &q), MGPU_OK);
  ck_assert_ptr_nonnull(q);
  OPS->mem_free(ctx, q);
  OPS->close(ctx);
}
END_TEST

START_TEST(test_pinned)
{
  void *ctx, *h = NULL;
  char *m;
  NEED_GPU();
  ctx = open_dev0();
  ck_assert_int_eq(OPS->host_alloc(MIB, &h), MGPU_OK);
  ck_assert_ptr_nonnull(h);
  ck_assert_int_eq(OPS->host_is_pinned(h, MIB), 1);
  ck_assert_int_eq(OPS->host_is_pinned((char *)h + 4096, MIB - 4096), 1);
  ck_assert_int_eq(OPS->host_is_pinned(h, 0), 0);

  m = aligned_alloc(4096, 4 * MIB);
  ck_assert_ptr_nonnull(m);
  memset(m, 1, 4 * MIB);
  ck_assert_int_eq(OPS->host_is_pinned(m, 4 * MIB), 0);
  /* Memory the user registered counts as pinned, but only as far as it goes:
   * a range that runs past the registered part is not. */
  ck_assert_int_eq(cudaHostRegister(m, MIB, cudaHostRegisterPortable), cudaSuccess);
  ck_assert_int_eq(OPS->host_is_pinned(m, MIB), 1);
  ck_assert_int_eq(OPS->host_is_pinned(m, 4 * MIB), 0);
  ck_assert_int_eq(OPS->host_is_pinned(m + MIB, MIB), 0);
  ck_assert_int_eq(cudaHostUnregister(m), cudaSuccess);
  ck_assert_int_eq(OPS->host_is_pinned(m, MIB), 0);
  ck_assert_int_eq(cudaPeekAtLastError(), cudaSuccess);
  free(m);
  OPS->host_free(h);
  OPS->host_free(NULL);
  OPS->close(ctx);
}
END_TEST

/* Round trip on two streams at once: stream 0 from pinned memory, stream 1
 * from pageable memory. */
START_TEST(test_copy_streams)
{
  enum { NS = 2 };
  const size_t bytes = 8 * MIB;
  void *ctx, *s[NS] = {NULL, NULL}, *dev[NS] = {NULL, NULL};
  unsigned char *src[NS], *dst[NS];
  int i;
  size_t j;
  NEED_GPU();
  ctx = open_dev0();
  for (i = 0; i < NS; i++) {
    ck_assert_int_eq(OPS->stream_create(ctx, &s[i]), MGPU_OK);
    ck_assert_ptr_nonnull(s[i]);
    ck_assert_int_eq(OPS->mem_alloc(ctx, bytes, &dev[i]), MGPU_OK);
    if (i == 0) {
      ck_assert_int_eq(OPS->host_alloc(bytes, (void **)&src[i]), MGPU_OK);
      ck_assert_int_eq(OPS->host_alloc(bytes, (void **)&dst[i]), MGPU_OK);
    } else {
      src[i] = malloc(bytes);
      dst[i] = malloc(bytes);
      ck_assert(src[i] != NULL && dst[i] != NULL);
    }
    for (j = 0; j < bytes; j++) src[i][j] = (unsigned char)(j * 7 + (size_t)i * 13 + j / 4096);
    memset(dst[i], 0, bytes);
  }
  for (i = 0; i < NS; i++) {
    ck_assert_int_eq(OPS->copy_h2d(ctx, dev[i], src[i], bytes, s[i]), MGPU_OK);
    ck_assert_int_eq(OPS->copy_d2h(ctx, dst[i], dev[i], bytes, s[i]), MGPU_OK);
    ck_assert_int_eq(OPS->copy_h2d(ctx, dev[i], src[i], 0, s[i]), MGPU_OK);
  }
  for (i = 0; i < NS; i++) {
    ck_assert_int_eq(OPS->stream_sync(ctx, s[i]), MGPU_OK);
    ck_assert_int_eq(OPS->stream_query(ctx, s[i]), 0);
    ck_assert(memcmp(src[i], dst[i], bytes) == 0);
  }
  for (i = 0; i < NS; i++) {
    if (i == 0) {
      OPS->host_free(src[i]);
      OPS->host_free(dst[i]);
    } else {
      free(src[i]);
      free(dst[i]);
    }
    OPS->mem_free(ctx, dev[i]);
    OPS->stream_destroy(ctx, s[i]);
  }
  OPS->close(ctx);
}
END_TEST

static int cpu_unused(const mgpu_chunk_t *c)
{
  MGPU_UNUSED(c);
  return 0;
}

/* Launch fill for items [first, first + count) and check the result. */
static void launch_fill_and_check(void *ctx, void *s, void *dev, uint32_t *host, size_t first, size_t count)
{
  mgpu_kernel_t k = {.name = "fill", .cpu = cpu_unused, .gpu = mgpu_test_gpu_fill, .nout = 1, .out_size = {4}};
  void *const outs[1] = {dev};
  mgpu_chunk_t c = {.out = outs, .first = first, .count = count, .stream = s};
  size_t i;

  memset(host, 0, count * sizeof *host);
  ck_assert_int_eq(OPS->launch(ctx, &k, &c, s), MGPU_OK);
  ck_assert_int_eq(OPS->copy_d2h(ctx, host, dev, count * sizeof *host, s), MGPU_OK);
  ck_assert_int_eq(OPS->stream_sync(ctx, s), MGPU_OK);
  ck_assert_int_eq(OPS->stream_query(ctx, s), 0);
  for (i = 0; i < count; i++)
    if (host[i] != fill_value(first + i))
      ck_abort_msg("item %zu: %u, expected %u", first + i, host[i], fill_value(first + i));
}

START_TEST(test_launch)
{
  const size_t n = 1000003;
  mgpu_kernel_t k = {.name = "failing", .cpu = cpu_unused, .nout = 1, .out_size = {4}};
  void *ctx, *s = NULL, *s2 = NULL, *dev = NULL, *host = NULL;
  void *outs[1];
  mgpu_chunk_t c = {.first = 5, .count = 100};
  NEED_GPU();
  ctx = open_dev0();
  ck_assert_int_eq(OPS->stream_create(ctx, &s), MGPU_OK);
  ck_assert_int_eq(OPS->stream_create(ctx, &s2), MGPU_OK);
  ck_assert_int_eq(OPS->mem_alloc(ctx, n * 4, &dev), MGPU_OK);
  ck_assert_int_eq(OPS->host_alloc(n * 4, &host), MGPU_OK);
  launch_fill_and_check(ctx, s, dev, host, 1000, n);

  outs[0] = dev;
  c.out = outs;
  c.stream = s;
  /* The function's own error code. */
  k.gpu = mgpu_test_gpu_einval;
  ck_assert_int_eq(OPS->launch(ctx, &k, &c, s), MGPU_EKERNEL);
  k.gpu = mgpu_test_gpu_oom;
  ck_assert_int_eq(OPS->launch(ctx, &k, &c, s), MGPU_ENOMEM);
  /* A launch that never started, although the function returned 0. */
  k.gpu = mgpu_test_gpu_badconfig;
  ck_assert_int_eq(OPS->launch(ctx, &k, &c, s), MGPU_EKERNEL);
  ck_assert_int_eq(cudaPeekAtLastError(), cudaSuccess);
  /* A chunk whose stream is not the one named: a caller bug, refused. */
  k.gpu = mgpu_test_gpu_fill;
  ck_assert_int_eq(OPS->launch(ctx, &k, &c, s2), MGPU_EINVAL);
  k.gpu = NULL;
  ck_assert_int_eq(OPS->launch(ctx, &k, &c, s), MGPU_EINVAL);

  /* None of this poisoned the device. */
  ck_assert_int_eq(OPS->stream_sync(ctx, s), MGPU_OK);
  launch_fill_and_check(ctx, s, dev, host, 7, n);
  launch_fill_and_check(ctx, s2, dev, host, 0, 1);

  OPS->host_free(host);
  OPS->mem_free(ctx, dev);
  OPS->stream_destroy(ctx, s2);
  OPS->stream_destroy(ctx, s);
  OPS->close(ctx);
}
END_TEST

START_TEST(test_speed_estimate)
{
  void *ctx;
  double r;
  NEED_GPU();
  ctx = open_dev0();
  r = OPS->speed_estimate(ctx);
  fprintf(stderr, "device 0: first-split device-to-core ratio estimate %.0f\n", r);
  ck_assert(r >= 1.0 && r <= 5000.0);
  OPS->close(ctx);
}
END_TEST

/* Average GB/s of `reps` copies of `bytes` (one warm-up copy first). */
static double copy_gbs(void *ctx, void *s, int h2d, void *dev, void *host, size_t bytes, int reps)
{
  double t0 = 0;
  int r;
  for (r = -1; r < reps; r++) {
    if (h2d) ck_assert_int_eq(OPS->copy_h2d(ctx, dev, host, bytes, s), MGPU_OK);
    else ck_assert_int_eq(OPS->copy_d2h(ctx, host, dev, bytes, s), MGPU_OK);
    ck_assert_int_eq(OPS->stream_sync(ctx, s), MGPU_OK);
    if (r == -1) t0 = now_s();
  }
  return (double)bytes * reps / (now_s() - t0) / 1e9;
}

/* Information only, not asserted: what pinned memory buys on this machine. */
START_TEST(test_bandwidth)
{
  const size_t bytes = 256 * MIB;
  const int reps = 4;
  void *ctx, *s = NULL, *dev = NULL, *pinned = NULL;
  char *pageable;
  size_t f = 0, t = 0;
  NEED_GPU();
  ctx = open_dev0();
  ck_assert_int_eq(OPS->mem_info(ctx, &f, &t), MGPU_OK);
  if (f < 2 * bytes || OPS->host_alloc(bytes, &pinned) != MGPU_OK) {
    fprintf(stderr, "%s: not enough memory for 256 MiB buffers; skipped\n", __func__);
    OPS->close(ctx);
    return;
  }
  pageable = malloc(bytes);
  ck_assert_ptr_nonnull(pageable);
  memset(pageable, 1, bytes); /* fault the pages in before timing */
  memset(pinned, 1, bytes);
  ck_assert_int_eq(OPS->stream_create(ctx, &s), MGPU_OK);
  ck_assert_int_eq(OPS->mem_alloc(ctx, bytes, &dev), MGPU_OK);

  fprintf(stderr,
          "device 0, 256 MiB copies (cudaMemcpyAsync + stream sync), GB/s:\n"
          "  H2D pinned %6.1f   pageable %6.1f\n"
          "  D2H pinned %6.1f   pageable %6.1f\n",
          copy_gbs(ctx, s, 1, dev, pinned, bytes, reps), copy_gbs(ctx, s, 1, dev, pageable, bytes, reps),
          copy_gbs(ctx, s, 0, dev, pinned, bytes, reps), copy_gbs(ctx, s, 0, dev, pageable, bytes, reps));

  OPS->mem_free(ctx, dev);
  OPS->stream_destroy(ctx, s);
  OPS->host_free(pinned);
  free(pageable);
  OPS->close(ctx);
}
END_TEST

static Suite *cuda_suite(void)
{
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("ops");
  /* Context creation takes a second or more on some machines, per test. */
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_bad_device);
  tcase_add_test(tc, test_props);
  tcase_add_test(tc, test_alloc);
  tcase_add_test(tc, test_oom);
  tcase_add_test(tc, test_pinned);
  tcase_add_test(tc, test_copy_streams);
  tcase_add_test(tc, test_launch);
  tcase_add_test(tc, test_speed_estimate);
  tcase_add_test(tc, test_bandwidth);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr;
  int failed;

  if (OPS == NULL) {
    printf("built without CUDA: nothing to test\n");
    return 77;
  }
  sr = srunner_create(cuda_suite());
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (failed != 0) return EXIT_FAILURE;
  /* The forked tests are over, so this process may now touch CUDA itself. */
  if (OPS->count() == 0) {
    printf("no CUDA device: every test skipped its GPU part\n");
    return 77;
  }
  return EXIT_SUCCESS;
}
