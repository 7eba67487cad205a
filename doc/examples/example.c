/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * example.c: the complete program of the libmgpurt user guide (doc/guide.md).
 *
 * Three steps over N doubles, every result checked at the end:
 *   1. y = x * x + c1   a batch of the kernel "square_plus_c"; c1 comes from the
 *                       batch's argument blob
 *   2. z = y * y + c2   a second batch of the same kernel that depends on the
 *                       first (submitted before the first has finished)
 *   3. digits[i] = decimal digits of z[i], written with snprintf: a step with
 *                       no GPU version, run on the CPU workers by
 *                       mgpu_parallel_for
 *
 * Built as is, the kernel has a CPU function only. Built with
 * -DEXAMPLE_WITH_CUDA and linked with example_cuda.cu, it also has a CUDA
 * function and the batches run on every GPU and every CPU core at once; on a
 * machine without a GPU the same program runs on the CPU workers alone.
 *
 *   cc example.c $(pkg-config --cflags --libs mgpurt) -o example
 *   nvcc -c example_cuda.cu -o example_cuda.o $(pkg-config --cflags mgpurt)
 *   cc -DEXAMPLE_WITH_CUDA example.c example_cuda.o $(pkg-config --cflags --libs mgpurt) \
 *      -L/usr/local/cuda/lib64 -lcudart -lstdc++ -o example-cuda
 *
 * The inputs are small integers, so every result is an exact double and the
 * CPU and GPU functions agree bit for bit whichever worker computes an item.
 */
#include <mgpurt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000000

/* ------------------------------------------------------------ the kernel */

/* CPU function: items [first, first + count) of the batch. chunk->in[0] and
 * chunk->out[0] already point at item `first`, so the loop runs from 0. */
static int square_plus_c_cpu(const mgpu_chunk_t *chunk) {
  const double c = *(const double *)chunk->arg; /* the batch's argument blob */
  const double *x = chunk->in[0];
  double *y = chunk->out[0];
  for (size_t i = 0; i < chunk->count; i++) y[i] = x[i] * x[i] + c;
  return 0; /* non-zero would fail the batch with MGPU_EKERNEL */
}

#ifdef EXAMPLE_WITH_CUDA
/* GPU function, in example_cuda.cu: enqueues on chunk->stream, returns a cudaError_t. */
int example_square_plus_c_gpu(const mgpu_chunk_t *chunk);
#define SQUARE_PLUS_C_GPU example_square_plus_c_gpu
#else
#define SQUARE_PLUS_C_GPU NULL /* no GPU function: CPU workers only */
#endif

static const mgpu_kernel_t square_plus_c = {
    .name = "square_plus_c",
    .cpu = square_plus_c_cpu,
    .gpu = SQUARE_PLUS_C_GPU,
    .nin = 1,
    .nout = 1,
    .in_size = {sizeof(double)},
    .out_size = {sizeof(double)},
};

/* ------------------------------------------------------------ the CPU-only step */

typedef struct {
  const double *z;
  unsigned char *digits;
} digits_arg_t;

/* Body of mgpu_parallel_for: items [first, first + count), global indices. */
static int count_digits(void *arg, size_t first, size_t count) {
  const digits_arg_t *a = arg;
  char buf[64];
  for (size_t i = first; i < first + count; i++) {
    int len = snprintf(buf, sizeof buf, "%.0f", a->z[i]);
    if (len < 0 || (size_t)len >= sizeof buf) return 1; /* fails with MGPU_EKERNEL */
    a->digits[i] = (unsigned char)len;
  }
  return 0;
}

/* ------------------------------------------------------------ the program */

static void check(mgpu_status_t st, const char *what) {
  if (st == MGPU_OK) return;
  fprintf(stderr, "example: %s failed: %s: %s\n", what, mgpu_status_name(st), mgpu_last_error());
  exit(1);
}

static int decimal_digits(int64_t v) {
  int n = v < 0 ? 2 : 1; /* the sign counts */
  for (v = v < 0 ? -v : v; v >= 10; v /= 10) n++;
  return n;
}

int main(void) {
  mgpu_runtime_t *rt;
  check(mgpu_init(NULL, &rt), "mgpu_init"); /* settings from the MGPU_* variables */
  printf("example: %d CPU workers, %d GPUs\n", mgpu_num_cpu_workers(rt), mgpu_num_gpus(rt));

  /* Arrays the runtime reads and writes: pinned host memory when the runtime
   * has CUDA GPUs, so their copies skip the staging buffers. */
  double *x = mgpu_host_alloc(rt, N * sizeof(double));
  double *y = mgpu_host_alloc(rt, N * sizeof(double));
  double *z = mgpu_host_alloc(rt, N * sizeof(double));
  unsigned char *digits = malloc(N);
  if (!x || !y || !z || !digits) {
    fprintf(stderr, "example: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < N; i++) x[i] = (double)((int)(i % 2001) - 1000);

  /* Step 1: y = x * x + c1. The argument is copied at submit ... */
  double c = 3.0;
  mgpu_batch_t b1 = {.kernel = &square_plus_c, .n = N, .in = {x}, .out = {y}, .arg = &c, .arg_size = sizeof c};
  mgpu_event_t *e1, *e2;
  check(mgpu_submit(rt, &b1, 0, NULL, &e1), "submitting step 1");

  /* ... so c may change at once. Step 2: z = y * y + c2, after step 1. */
  c = -7.0;
  mgpu_batch_t b2 = {.kernel = &square_plus_c, .n = N, .in = {y}, .out = {z}, .arg = &c, .arg_size = sizeof c};
  check(mgpu_submit(rt, &b2, 1, &e1, &e2), "submitting step 2");

  mgpu_worker_stats_t *ws = calloc((size_t)mgpu_num_workers(rt), sizeof *ws);
  mgpu_stats_t st = {.worker = ws, .worker_cap = ws ? mgpu_num_workers(rt) : 0};
  check(mgpu_event_wait(e2, &st), "step 2");
  check(mgpu_event_test(e1), "step 1"); /* done: step 2 started after it */
  mgpu_event_release(e1);
  mgpu_event_release(e2);

  uint64_t on_cpu = 0, on_gpu = 0;
  for (int w = 0; w < st.nworkers && w < st.worker_cap; w++) {
    if (ws[w].kind == MGPU_WORKER_GPU) on_gpu += ws[w].items;
    else on_cpu += ws[w].items;
  }
  free(ws);
  printf("example: step 2: %llu items on CPU workers, %llu on GPUs, %llu steals, %.4f s\n",
         (unsigned long long)on_cpu, (unsigned long long)on_gpu, (unsigned long long)st.steals, st.wall_s);

  /* Step 3: an unoffloadable step on the runtime's own CPU workers. */
  digits_arg_t da = {z, digits};
  check(mgpu_parallel_for(rt, N, count_digits, &da), "step 3");

  /* Check every result against a plain computation. */
  size_t bad = 0;
  if (st.items != N || on_cpu + on_gpu != N) bad++;
  for (size_t i = 0; i < N; i++) {
    int64_t xi = (int64_t)(i % 2001) - 1000;
    int64_t yi = xi * xi + 3, zi = yi * yi - 7;
    if (y[i] != (double)yi || z[i] != (double)zi || digits[i] != decimal_digits(zi)) {
      if (bad++ < 5) fprintf(stderr, "example: item %zu: y = %.0f, z = %.0f, digits = %d; expected %lld, %lld, %d\n", i,
                             y[i], z[i], digits[i], (long long)yi, (long long)zi, decimal_digits(zi));
    }
  }

  mgpu_host_free(rt, x);
  mgpu_host_free(rt, y);
  mgpu_host_free(rt, z);
  free(digits);
  mgpu_finalize(rt);
  if (bad) {
    fprintf(stderr, "example: %zu wrong results\n", bad);
    return 1;
  }
  printf("example: ok\n");
  return 0;
}
