/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-gpu.c: the runtime on real CUDA GPUs. Exactly-once and correct for every
 * mode, both GPUs take work, copies overlap kernels (device timestamps of
 * consecutive chunks), constants are uploaded once per device, real device
 * out-of-memory is recovered (a smaller cap; an item too big for the device
 * left to the CPU worker), injected faults lose nothing, many submitters.
 * Exits 77 (skip) when no GPU is present. CUDA is touched only inside tests.
 */
#include "testutil.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "mgpurt_kernels.h"

/* GPU functions of test-cuda-kern.cu. */
int mgpu_test_gpu_spin(const mgpu_chunk_t *c);
volatile uint32_t *mgpu_test_spin_flag(void);

static int gpus_present(void) {
  int n = mgpu__dev_cuda ? mgpu__dev_cuda->count() : 0;
  return n;
}

#define NEED_GPUS(k)                                                      \
  do {                                                                    \
    if (gpus_present() < (k)) {                                           \
      printf("%s: needs %d GPU(s), skipped\n", __func__, (k));           \
      return;                                                             \
    }                                                                     \
  } while (0)

static mgpu_runtime_t *start_gpu(int cpus, int ngpus, mgpu_sched_t mode, const char *faults) {
  mgpu_test_config_t c = mgpu_test_config(cpus, 0);
  c.cfg.num_gpus = ngpus;
  c.cfg.sched = mode;
  c.cfg.debug = faults ? 0 : 1;
  c.test.fault_inject = faults;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  return rt;
}

/* The kernel's CPU function on one item: the reference for a GPU result. */
static uint64_t cpu_ref(const mgpu_kernel_t *k, const void *arg, const uint64_t *x, size_t i) {
  uint64_t ref;
  const void *in[1] = {&x[i]};
  void *out[1] = {&ref};
  mgpu_chunk_t c = {.in = in, .out = out, .arg = arg, .first = i, .count = 1};
  k->cpu(&c);
  return ref;
}

/* mulmod batch: outputs checked against the kernel's CPU function. */
static void mulmod_check(mgpu_runtime_t *rt, size_t n, uint64_t intensity, mgpu_stats_t *st, int pinned) {
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_mulmod(intensity, &k), MGPU_OK);
  mgpu_mulmod_arg_t a = {intensity};
  size_t bytes = 8 * (n ? n : 1);
  uint64_t *x = pinned ? mgpu_host_alloc(rt, bytes) : malloc(bytes);
  uint64_t *y = pinned ? mgpu_host_alloc(rt, bytes) : malloc(bytes);
  uint64_t rng = n * 7 + intensity;
  for (size_t i = 0; i < n; i++) x[i] = mgpu_test_rand(&rng), y[i] = 0xDEADBEEF;
  mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x}, .out = {y}, .arg = &a, .arg_size = sizeof a};
  ck_assert_int_eq(mgpu_run(rt, &b, st), MGPU_OK);
  ck_assert_uint_eq(st->items, n);
  /* Every item was written (the poison is gone); a sample of them, or all of a
   * small batch, equals the CPU reference. */
  for (size_t i = 0; i < n; i++)
    if (y[i] == 0xDEADBEEF) ck_abort_msg("item %zu of %zu was not written", i, n);
  size_t step = n > 100000 ? 97 : 1;
  for (size_t i = 0; i < n; i += step) {
    uint64_t ref = cpu_ref(&k, &a, x, i);
    if (ref != y[i]) ck_abort_msg("item %zu of %zu: %llx, expected %llx", i, n, (unsigned long long)y[i],
                                  (unsigned long long)ref);
  }
  if (pinned) mgpu_host_free(rt, x), mgpu_host_free(rt, y);
  else free(x), free(y);
}

START_TEST(test_exactly_once_modes) {
  NEED_GPUS(1);
  static const size_t sizes[] = {1, 2, 7919, 1000000};
  for (int m = MGPU_SCHED_STEAL; m <= MGPU_SCHED_GPU; m++) {
    mgpu_runtime_t *rt = start_gpu(2, gpus_present(), (mgpu_sched_t)m, NULL);
    for (size_t s = 0; s < 4; s++) {
      mgpu_worker_stats_t ws[2 + MGPU_MAX_DEVICES];
      mgpu_stats_t st = {.worker = ws, .worker_cap = 2 + MGPU_MAX_DEVICES};
      mulmod_check(rt, sizes[s], 64, &st, s % 2);
      uint64_t sum = 0;
      for (int w = 0; w < st.nworkers; w++) {
        sum += ws[w].items;
        if (m == MGPU_SCHED_CPU) ck_assert(ws[w].kind == MGPU_WORKER_CPU || ws[w].items == 0);
        if (m == MGPU_SCHED_GPU) ck_assert(ws[w].kind == MGPU_WORKER_GPU || ws[w].items == 0);
      }
      ck_assert_uint_eq(sum, sizes[s]);
    }
    mgpu_finalize(rt);
  }
}
END_TEST

START_TEST(test_every_gpu_works) {
  NEED_GPUS(2);
  int g = gpus_present();
  mgpu_runtime_t *rt = start_gpu(1, g, MGPU_SCHED_GPU, NULL);
  mgpu_worker_stats_t ws[1 + MGPU_MAX_DEVICES];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 1 + MGPU_MAX_DEVICES};
  mulmod_check(rt, 4000000, 200, &st, 1);
  for (int i = 1; i <= g; i++) {
    printf("GPU %d: %llu items\n", ws[i].device, (unsigned long long)ws[i].items);
    ck_assert_uint_gt(ws[i].items, 0);
  }
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_copy_compute_overlap) {
  /* saxpy from pinned memory, GPU only: with 3 streams a chunk's copy-in starts
   * before the previous chunk has ended (device timestamps). */
  NEED_GPUS(1);
  mgpu_runtime_t *rt = start_gpu(1, 1, MGPU_SCHED_GPU, NULL);
  mgpu_kernel_t k;
  mgpu_kernel_saxpy(&k);
  const size_t n = (size_t)1 << 27;
  float *x = mgpu_host_alloc(rt, 4 * n), *y = mgpu_host_alloc(rt, 4 * n), *r = mgpu_host_alloc(rt, 4 * n);
  for (size_t i = 0; i < n; i++) x[i] = (float)(i & 1023), y[i] = 1.0f;
  mgpu_saxpy_arg_t a = {2.0f};
  mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x, y}, .out = {r}, .arg = &a, .arg_size = sizeof a};
  for (int rep = 0; rep < 2; rep++) ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  for (size_t i = 0; i < n; i += 4099)
    if (r[i] != 2.0f * (float)(i & 1023) + 1.0f) ck_abort_msg("item %zu wrong", i);
  double s[MGPU_TIMELINE], e[MGPU_TIMELINE];
  int m = mgpu__gpu_timeline(rt, 0, s, e, MGPU_TIMELINE);
  int overlapped = 0;
  for (int i = 1; i < m; i++) overlapped += s[i] < e[i - 1];
  printf("overlap: %d of %d consecutive chunks started before the previous one ended\n", overlapped, m - 1);
  ck_assert_int_gt(m, 4);
  /* compute-sanitizer serialises the device's work, so overlap cannot show. */
  if (getenv("CUDA_INJECTION64_PATH")) printf("overlap: not asserted under compute-sanitizer\n");
  else ck_assert_int_ge(overlapped, (m - 1) / 4);
  mgpu_host_free(rt, x), mgpu_host_free(rt, y), mgpu_host_free(rt, r);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_constants_once_per_device) {
  NEED_GPUS(1);
  int g = gpus_present();
  mgpu_runtime_t *rt = start_gpu(1, g, MGPU_SCHED_GPU, NULL);
  const unsigned lg = 10;
  const size_t nn = 1u << lg, n = 256;
  mgpu_kernel_t k;
  mgpu_kernel_pipeline_mul_intt(lg, &k);
  uint64_t *K = calloc(nn, 8), *x = malloc(8 * nn * n), *z = malloc(8 * nn * n);
  for (size_t i = 0; i < nn; i++) K[i] = 1; /* INTT(all ones) = unit vector e_0 */
  mgpu_const_t *c;
  ck_assert_int_eq(mgpu_const_create(rt, K, 8 * nn, &c), MGPU_OK);
  uint64_t rng = 5;
  for (size_t i = 0; i < nn * n; i++) x[i] = mgpu_test_rand(&rng) % MGPU_GOLDILOCKS_P;
  mgpu_pipeline_arg_t a = {lg, 0, 0};
  for (int rep = 0; rep < 100; rep++) {
    mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x}, .out = {z}, .arg = &a, .arg_size = sizeof a, .nconsts = 1,
                      .consts = {c}};
    ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
  }
  /* INTT(x (.) 1) = INTT(x): check against the CPU inverse NTT on one item. */
  mgpu_kernel_t ntt;
  mgpu_kernel_ntt(lg, &ntt);
  mgpu_ntt_arg_t inv = {lg, 1};
  uint64_t *ref = malloc(8 * nn);
  const void *in[1] = {x + 17 * nn};
  void *out[1] = {ref};
  mgpu_chunk_t ch = {.in = in, .out = out, .arg = &inv, .first = 17, .count = 1};
  ntt.cpu(&ch);
  ck_assert_int_eq(memcmp(ref, z + 17 * nn, 8 * nn), 0);
  uint64_t up = atomic_load(&c->uploads);
  printf("constants: %llu uploads for 100 batches on %d GPUs\n", (unsigned long long)up, g);
  ck_assert_uint_ge(up, 1);
  ck_assert_uint_le(up, (uint64_t)g);
  mgpu_const_destroy(c);
  free(K), free(x), free(z), free(ref);
  mgpu_finalize(rt);
}
END_TEST

/* Take GPU g's free memory, behind the runtime's back, until `keep` bytes are
 * left; the allocation to give back with cudaFree, or NULL. */
static void *hog_device(const mgpu_runtime_t *rt, int g, size_t keep) {
  cudaSetDevice(rt->gpu_index[g]);
  size_t free_b, total_b;
  cudaMemGetInfo(&free_b, &total_b);
  void *hog = NULL;
  if (free_b > keep) ck_assert_int_eq(cudaMalloc(&hog, free_b - keep), cudaSuccess);
  return hog;
}

START_TEST(test_real_out_of_memory) {
  /* After the runtime sized itself, most device memory is taken behind its
   * back; a kernel with 256 MiB of scratch per item then meets real
   * out-of-memory errors, halves the cap and still computes everything. */
  NEED_GPUS(1);
  mgpu_runtime_t *rt = start_gpu(1, 1, MGPU_SCHED_GPU, NULL);
  void *hog = hog_device(rt, 0, 6ULL << 30);
  mgpu_kernel_t k;
  mgpu_kernel_mulmod(8, &k);
  k.scratch_per_item = 256u << 20;
  const size_t n = 200;
  uint64_t x[200], y[200];
  for (size_t i = 0; i < n; i++) x[i] = i * 1234567;
  mgpu_mulmod_arg_t a = {8};
  mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x}, .out = {y}, .arg = &a, .arg_size = sizeof a};
  mgpu_stats_t st = {0};
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  for (size_t i = 0; i < n; i++) ck_assert_uint_eq(cpu_ref(&k, &a, x, i), y[i]);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  mgpu_device_info(rt, 0, &info);
  printf("oom: %llu retries, cap %zu items at the end\n", (unsigned long long)st.retries, info.batch_cap);
  ck_assert_uint_ge(st.retries, 1);
  ck_assert_int_eq(info.retired, 0);
  if (hog) cudaFree(hog);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_item_bigger_than_free_memory) {
  /* Device memory is taken behind the runtime's back until about 1 GiB is
   * free; one item of a kernel with 2 GiB of scratch then never fits. Its
   * batches run on the CPU worker (in gpu mode, as for a retired GPU), and
   * the GPU, not retired, runs the next batch of another kernel whole. */
  NEED_GPUS(1);
  mgpu_runtime_t *rt = start_gpu(1, 1, MGPU_SCHED_GPU, NULL);
  void *hog = hog_device(rt, 0, 1ULL << 30);
  mgpu_kernel_t k;
  mgpu_kernel_mulmod(8, &k);
  k.scratch_per_item = 2ULL << 30;
  uint64_t x[4], y[4];
  for (size_t i = 0; i < 4; i++) x[i] = i * 7654321;
  mgpu_mulmod_arg_t a = {8};
  mgpu_batch_t b = {.kernel = &k, .n = 4, .in = {x}, .out = {y}, .arg = &a, .arg_size = sizeof a};
  for (int rep = 0; rep < 5; rep++) {
    mgpu_worker_stats_t ws[2];
    mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
    ck_assert_msg(mgpu_run(rt, &b, &st) == MGPU_OK, "batch %d: %s", rep, mgpu_last_error());
    for (size_t i = 0; i < 4; i++) ck_assert_uint_eq(cpu_ref(&k, &a, x, i), y[i]);
    ck_assert_uint_eq(ws[0].items, 4);
    ck_assert_uint_eq(ws[1].items, 0);
  }
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  mgpu_device_info(rt, 0, &info);
  ck_assert_int_eq(info.retired, 0);
  mgpu_worker_stats_t ws[2];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 2};
  mulmod_check(rt, 100000, 8, &st, 0);
  ck_assert_uint_eq(ws[1].items, 100000);
  if (hog) cudaFree(hog);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_fault_injection_real) {
  NEED_GPUS(1);
  int g = gpus_present();
  /* Chunks of at most 100,000 items, so that the GPU's launches reach the
   * fifth of the plan (its chunks grow past that size otherwise). */
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.num_gpus = g;
  c.cfg.sched = MGPU_SCHED_STEAL;
  c.cfg.debug = 0;
  c.cfg.max_batch_size = 100000;
  c.test.fault_inject = "launch:0:2,launch:0:5,alloc:0:1";
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  mgpu_stats_t st = {0};
  mulmod_check(rt, 2000000, 300, &st, 0);
  printf("faults: %llu retries\n", (unsigned long long)st.retries);
  ck_assert_uint_ge(st.retries, 1);
  mgpu_finalize(rt);
  /* A device that fails every chunk is retired once MGPU_FAILURES_TO_RETIRE
   * chunks in a row failed, which may take more than one batch where its
   * first chunk held its whole share; the others finish every batch. */
  rt = start_gpu(2, g, MGPU_SCHED_STEAL, "launch:0:all");
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  int batches = 0;
  for (; batches < 5 && !info.retired; batches++) {
    mulmod_check(rt, 1000000, 300, &st, 1);
    mgpu_device_info(rt, 0, &info);
  }
  printf("faults: GPU 0 retired after %d batches\n", batches);
  ck_assert_int_eq(info.retired, 1);
  mgpu_finalize(rt);
}
END_TEST

/* Kernels that only move data: the GPU function enqueues nothing, so a batch
 * of them is pure host-to-device (sink) or device-to-host (source) traffic. */
static int move_cpu(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  return 0;
}
static int move_gpu(const mgpu_chunk_t *c) {
  MGPU_UNUSED(c);
  return 0;
}

static double plain_copy_gbs(void *host, void *dev, size_t bytes, int h2d) {
  cudaStream_t s;
  cudaEvent_t a, b;
  cudaStreamCreate(&s);
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e30f;
  for (int rep = 0; rep < 3; rep++) {
    cudaEventRecord(a, s);
    if (h2d) cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
    else cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    if (ms < best) best = ms;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(s);
  return (double)bytes / (best * 1e-3) / 1e9;
}

START_TEST(test_transfer_bandwidth) {
  /* A large pinned batch through the runtime against one plain cudaMemcpyAsync
   * of the same size, same GPU, same run; then the same batch from pageable
   * memory. Figures for the benchmark report; the assertion only catches a
   * broken copy path (under half the plain rate). */
  NEED_GPUS(1);
  mgpu_runtime_t *rt = start_gpu(1, 1, MGPU_SCHED_GPU, NULL);
  const size_t item = 1 << 16, n = (size_t)1 << 15, bytes = item * n; /* 2 GiB */
  void *pinned = mgpu_host_alloc(rt, bytes), *pageable = malloc(bytes);
  ck_assert_ptr_nonnull(pinned);
  ck_assert_ptr_nonnull(pageable);
  memset(pinned, 1, bytes);
  memset(pageable, 1, bytes);
  mgpu_kernel_t sink = {.name = "sink", .cpu = move_cpu, .gpu = move_gpu, .nin = 1, .in_size = {item}};
  mgpu_kernel_t source = {.name = "source", .cpu = move_cpu, .gpu = move_gpu, .nout = 1, .out_size = {item}};
  double gbs[2][2]; /* [pinned?][h2d?] */
  for (int pin = 1; pin >= 0; pin--)
    for (int h2d = 1; h2d >= 0; h2d--) {
      void *host = pin ? pinned : pageable;
      mgpu_batch_t b = {.kernel = h2d ? &sink : &source, .n = n};
      if (h2d) b.in[0] = host;
      else b.out[0] = host;
      ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK); /* warm-up */
      double best = 1e30;
      for (int rep = 0; rep < 3; rep++) {
        double t0 = mgpu__now();
        ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
        double t = mgpu__now() - t0;
        if (t < best) best = t;
      }
      gbs[pin][h2d] = (double)bytes / best / 1e9;
    }
  cudaSetDevice(rt->gpu_index[0]);
  void *dev;
  ck_assert_int_eq(cudaMalloc(&dev, bytes), cudaSuccess);
  double plain_h2d = plain_copy_gbs(pinned, dev, bytes, 1), plain_d2h = plain_copy_gbs(pinned, dev, bytes, 0);
  cudaFree(dev);
  printf("transfer, 2 GiB batch on GPU 0, GB/s: H2D pinned %.1f (plain cudaMemcpyAsync %.1f, %.0f%%), pageable %.1f; "
         "D2H pinned %.1f (plain %.1f, %.0f%%), pageable %.1f\n",
         gbs[1][1], plain_h2d, 100 * gbs[1][1] / plain_h2d, gbs[0][1], gbs[1][0], plain_d2h, 100 * gbs[1][0] / plain_d2h,
         gbs[0][0]);
  ck_assert(gbs[1][1] > 0.5 * plain_h2d);
  ck_assert(gbs[1][0] > 0.5 * plain_d2h);
  mgpu_host_free(rt, pinned);
  free(pageable);
  mgpu_finalize(rt);
}
END_TEST

/* Best items/s of `reps` timed mulmod batches of runtime mode `mode`, after
 * one that the model learns from. */
static double mulmod_throughput(mgpu_sched_t mode, uint64_t *x, uint64_t *y, size_t n, int reps) {
  mgpu_runtime_t *rt = start_gpu(4, gpus_present(), mode, NULL);
  mgpu_kernel_t k;
  mgpu_kernel_mulmod(300, &k);
  mgpu_mulmod_arg_t a = {300};
  mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x}, .out = {y}, .arg = &a, .arg_size = sizeof a};
  ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK); /* the model learns */
  double best = 1e30;
  for (int rep = 0; rep < reps; rep++) {
    double t0 = mgpu__now();
    ck_assert_int_eq(mgpu_run(rt, &b, NULL), MGPU_OK);
    double t = mgpu__now() - t0;
    if (t < best) best = t;
  }
  mgpu_finalize(rt);
  return (double)n / best;
}

START_TEST(test_balance_real) {
  /* Balance on real devices: with 4 CPU workers and every GPU, stealing
   * reaches most of the sum of the CPU-only and GPU-only throughputs. */
  NEED_GPUS(1);
  /* 2^24 items per GPU: batches long enough for the machine's timing noise.
   * Every item costs the same, so the CPU workers' rate is measured on a
   * 32nd of the batch, which they alone take seconds over. The arrays are
   * pinned: pageable ones stage through the host's copies, whose rate drifts
   * from one runtime to the next by more than the bound allows
   * (doc/tuning.md), and this test is about the split, not the host. The two
   * modes alternate in five rounds, each with runtimes of its own, and each
   * mode's best counts. */
  const size_t n = ((size_t)1 << 24) * (size_t)gpus_present();
  uint64_t *x = NULL, *y = NULL;
  ck_assert_int_eq(cudaMallocHost((void **)&x, 8 * n), cudaSuccess);
  ck_assert_int_eq(cudaMallocHost((void **)&y, 8 * n), cudaSuccess);
  uint64_t rng = 11;
  for (size_t i = 0; i < n; i++) x[i] = mgpu_test_rand(&rng);
  double cpu = mulmod_throughput(MGPU_SCHED_CPU, x, y, n / 32, 3), gpu = 0, steal = 0;
  for (int round = 0; round < 5; round++) {
    double g = mulmod_throughput(MGPU_SCHED_GPU, x, y, n, 2), s = mulmod_throughput(MGPU_SCHED_STEAL, x, y, n, 2);
    printf("balance round %d: gpu %.3g, steal %.3g items/s\n", round, g, s);
    gpu = MGPU_MAX(gpu, g);
    steal = MGPU_MAX(steal, s);
  }
  printf("balance on GPUs: cpu %.3g, gpu %.3g, steal %.3g items/s, E = %.3f\n", cpu, gpu, steal, steal / (cpu + gpu));
  fflush(stdout);
  ck_assert_msg(steal >= 0.8 * (cpu + gpu), "steal %.3g items/s is under 0.8 of cpu + gpu %.3g", steal, cpu + gpu);
  cudaFreeHost(x), cudaFreeHost(y);
}
END_TEST

typedef struct {
  mgpu_runtime_t *rt;
  int fails;
  uint64_t seed;
} sub_t;

static void *submit_many(void *p) {
  sub_t *s = p;
  mgpu_kernel_t k;
  mgpu_kernel_mulmod(32, &k);
  mgpu_mulmod_arg_t a = {32};
  for (int i = 0; i < 50; i++) {
    size_t n = (size_t)(mgpu_test_rand(&s->seed) % 200000);
    uint64_t *x = malloc(8 * (n + 1)), *y = malloc(8 * (n + 1));
    for (size_t j = 0; j < n; j++) x[j] = mgpu_test_rand(&s->seed);
    mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x}, .out = {y}, .arg = &a, .arg_size = sizeof a};
    if (mgpu_run(s->rt, &b, NULL) != MGPU_OK) s->fails++;
    for (size_t j = 0; j < n; j += 101) {
      if (cpu_ref(&k, &a, x, j) != y[j]) {
        s->fails++;
        break;
      }
    }
    free(x), free(y);
  }
  return NULL;
}

START_TEST(test_many_submitters_gpu) {
  NEED_GPUS(1);
  mgpu_runtime_t *rt = start_gpu(4, gpus_present(), MGPU_SCHED_STEAL, NULL);
  pthread_t th[8];
  sub_t s[8];
  for (int i = 0; i < 8; i++) {
    s[i] = (sub_t){rt, 0, 99 + (uint64_t)i};
    pthread_create(&th[i], NULL, submit_many, &s[i]);
  }
  int fails = 0;
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL), fails += s[i].fails;
  ck_assert_int_eq(fails, 0);
  mgpu_finalize(rt);
}
END_TEST

/* The CPU side of the spinning kernel: out[i] = (first + i) * 3 + 1. */
static int spin_cpu(const mgpu_chunk_t *c) {
  uint32_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) out[j] = (uint32_t)(c->first + j) * 3u + 1u;
  return 0;
}

/* A real GPU whose kernel never ends (it spins on a flag in host memory):
 * at its deadline (MGPU_TIMEOUT) the runtime gives the device up, the CPU
 * workers compute its items, and when the kernel is let go later, its
 * results (0xDEADBEEF) never reach the caller's pinned array. Finalize
 * returns in bounded time. */
START_TEST(test_hung_gpu_real) {
  NEED_GPUS(1);
  volatile uint32_t *flag = mgpu_test_spin_flag();
  ck_assert_ptr_nonnull((void *)flag);
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.num_gpus = 1;
  c.cfg.timeout = 2;
  c.cfg.debug = 1;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  mgpu_kernel_t k = {.name = "spin", .cpu = spin_cpu, .gpu = mgpu_test_gpu_spin, .nout = 1, .out_size = {4}};
  const size_t n = 1 << 20;
  uint32_t *y = mgpu_host_alloc(rt, 4 * n);
  ck_assert_ptr_nonnull(y);
  for (size_t i = 0; i < n; i++) y[i] = 0;
  mgpu_batch_t b = {.kernel = &k, .n = n, .out = {y}, .arg = &flag, .arg_size = sizeof flag};
  mgpu_worker_stats_t ws[3];
  mgpu_stats_t st = {.worker = ws, .worker_cap = 3};
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  double t = mgpu__now() - t0;
  for (size_t i = 0; i < n; i++)
    if (y[i] != (uint32_t)i * 3u + 1u) ck_abort_msg("item %zu: %#x", i, y[i]);
  ck_assert_uint_eq(st.items, n);
  ck_assert_uint_eq(ws[2].items, 0);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  ck_assert_int_eq(info.retired, 1);
  printf("hung GPU: batch of %zu items done in %.2f s with a 2 s deadline, GPU 0 retired\n", n, t);
  ck_assert_msg(t < 20, "the batch took %.1f s", t);
  /* Let the kernel end: the gate keeps its results on the device. */
  *flag = 1;
  mgpu_test_sleep(1.0);
  for (size_t i = 0; i < n; i++)
    if (y[i] != (uint32_t)i * 3u + 1u) ck_abort_msg("item %zu overwritten late by the hung GPU: %#x", i, y[i]);
  t0 = mgpu__now();
  mgpu_finalize(rt); /* y is left to it: freeing pinned memory could wait on the device */
  printf("hung GPU: finalize in %.3f s\n", mgpu__now() - t0);
  ck_assert_msg(mgpu__now() - t0 < 10, "finalize took %.1f s", mgpu__now() - t0);
}
END_TEST

/* A real GPU whose third chunk hangs (hang:0:2: its stream waits for good
 * before the launch) with four chunks in flight, in place on pinned memory:
 * the chunks on its other streams end and write their results into the
 * array while the host thread waits for the hung one. At the deadline the
 * GPU is given up; the chunks it ended count as done, the hung one goes to
 * the CPU workers, and every item is f(x) of its input (computed again, an
 * ended chunk's items would be f(f(x))). */
START_TEST(test_hang_ended_chunks_real) {
  NEED_GPUS(1);
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.num_gpus = 1;
  c.cfg.sched = MGPU_SCHED_GPU;
  c.cfg.streams_per_gpu = 4;
  c.cfg.max_batch_size = 100000;
  c.cfg.timeout = 1;
  c.cfg.debug = 1;
  c.test.fault_inject = "hang:0:2";
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  mgpu_kernel_t k;
  ck_assert_int_eq(mgpu_kernel_mulmod(100, &k), MGPU_OK);
  mgpu_mulmod_arg_t a = {100};
  const size_t n = 1000000;
  uint64_t *x = mgpu_host_alloc(rt, 8 * n), *orig = malloc(8 * n);
  ck_assert_ptr_nonnull(x);
  uint64_t rng = 12345;
  for (size_t i = 0; i < n; i++) orig[i] = x[i] = mgpu_test_rand(&rng);
  mgpu_batch_t b = {.kernel = &k, .n = n, .in = {x}, .out = {x}, .arg = &a, .arg_size = sizeof a};
  mgpu_stats_t st = {0};
  ck_assert_int_eq(mgpu_run(rt, &b, &st), MGPU_OK);
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += x[i] != cpu_ref(&k, &a, orig, i);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  printf("hung GPU beside chunks that ended, in place: %zu of %zu items wrong, %llu retries, GPU 0 %s\n", wrong, n,
         (unsigned long long)st.retries, info.retired ? "retired" : "in use");
  ck_assert_uint_eq(wrong, 0);
  ck_assert_uint_eq(st.items, n);
  ck_assert_int_eq(info.retired, 1);
  free(orig);
  mgpu_finalize(rt); /* x is left to it: freeing pinned memory could wait on the device */
}
END_TEST

/* A collective whose part on a real GPU never ends (hangcoll: the stream
 * waits for good before the part): at its deadline the collective fails and,
 * with NCCL, the communicators are aborted; at twice the deadline the GPU is
 * given up; batches go on on the CPU workers; later collectives fail at once;
 * finalize returns. */
START_TEST(test_hung_collective_real) {
  NEED_GPUS(1);
  mgpu_test_config_t c = mgpu_test_config(2, 0);
  c.cfg.num_gpus = 1;
  c.cfg.timeout = 1;
  c.cfg.debug = 1;
  c.test.fault_inject = "hangcoll:0:1"; /* part 0 is the buffer's allocation */
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&c, &rt), MGPU_OK);
  bool nccl = !strncmp(mgpu_collectives_backend(rt), "nccl", 4);
  void *buf;
  ck_assert_int_eq(mgpu_device_alloc(rt, 0, 64, &buf), MGPU_OK);
  double t0 = mgpu__now();
  ck_assert_int_eq(mgpu_allreduce(rt, (const void *const *)&buf, &buf, 8, MGPU_FLOAT64, MGPU_OP_SUM), MGPU_EDEVICE);
  double t = mgpu__now() - t0;
  printf("hung collective: failed in %.2f s (%s): %s\n", t, mgpu_collectives_backend(rt), mgpu_last_error());
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "GPU 0 within 1 s (MGPU_TIMEOUT)"));
  if (nccl) ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "NCCL communicators are aborted"));
  ck_assert_msg(t < 20, "the hung collective took %.1f s to fail", t);
  mgpu_device_info_t info = MGPU_DEVICE_INFO_INIT;
  ck_assert_int_eq(mgpu_device_info(rt, 0, &info), MGPU_OK);
  ck_assert_int_eq(info.retired, 1);
  ck_assert_int_eq(mgpu_allreduce(rt, (const void *const *)&buf, &buf, 8, MGPU_FLOAT64, MGPU_OP_SUM), MGPU_EDEVICE);
  mgpu_stats_t st = {0};
  mulmod_check(rt, 100000, 10, &st, 0); /* on the CPU workers */
  t0 = mgpu__now();
  mgpu_finalize(rt);
  printf("hung collective: finalize in %.3f s\n", mgpu__now() - t0);
  ck_assert_msg(mgpu__now() - t0 < 10, "finalize took %.1f s", mgpu__now() - t0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_exactly_once_modes);
  tcase_add_test(tc, test_every_gpu_works);
  tcase_add_test(tc, test_copy_compute_overlap);
  tcase_add_test(tc, test_constants_once_per_device);
  tcase_add_test(tc, test_real_out_of_memory);
  tcase_add_test(tc, test_item_bigger_than_free_memory);
  tcase_add_test(tc, test_fault_injection_real);
  tcase_add_test(tc, test_many_submitters_gpu);
  tcase_add_test(tc, test_transfer_bandwidth);
  tcase_add_test(tc, test_balance_real);
  tcase_add_test(tc, test_hang_ended_chunks_real);
  tcase_add_test(tc, test_hung_gpu_real);
  tcase_add_test(tc, test_hung_collective_real);
  suite_add_tcase(s, tc);
  int rc = mgpu_test_main(s);
  /* Counted after the forked tests, so CUDA never starts before a fork. */
  if (rc == EXIT_SUCCESS && gpus_present() == 0) {
    printf("no GPU: the real-GPU runtime tests were skipped\n");
    return 77;
  }
  return rc;
}
