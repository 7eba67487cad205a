/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * matvec_cuda.cu: y = W x on floats on CUDA GPUs, one row of W per item,
 * memory-bound: W is read once, streamed past the caches (__ldcs) so that x
 * stays in them. A group of threads owns a row (a block for long rows, else
 * 1..32 lanes of a warp); products are exact in double and summed in double
 * (warp shuffles, then shared memory), rounded once to float.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "builtin.h"

#define THREADS 256
/* Blocks per SM the register budget must allow (at most 42 registers). */
#define MIN_BLOCKS 6
#define MAX_BLOCKS 65535u
/* A row gets a whole block when each thread then has this many loads. */
#define BLOCK_MIN_LOADS 8

/* Loads in flight per thread, about 32 bytes: 2 float4 where every row and x
 * are 16-byte aligned, else 4 floats. Resident warps matter more than loads
 * per thread here (doc/tuning.md, "Kernels"). */
template <typename V>
struct unroll_of {
  static constexpr int value = sizeof(V) == sizeof(float4) ? 2 : 4;
};

static __device__ __forceinline__ double dot(float4 a, float4 b, double acc) {
  acc = fma((double)a.x, (double)b.x, acc);
  acc = fma((double)a.y, (double)b.y, acc);
  acc = fma((double)a.z, (double)b.z, acc);
  return fma((double)a.w, (double)b.w, acc);
}

static __device__ __forceinline__ double dot(float a, float b, double acc) { return fma((double)a, (double)b, acc); }

template <typename V>
static __device__ __forceinline__ V load_stream(const V *p) {
  return __ldcs(p);
}

template <typename V>
static __device__ __forceinline__ V load_cached(const V *p) {
  return __ldg(p);
}

/*
 * This thread's share of the dot product of w and x, n elements of type V
 * (float4 or float): elements lane, lane + TPR, ... with UNROLL loads in flight,
 * the last round (at most UNROLL - 1 elements) predicated rather than looped.
 */
template <int TPR, typename V>
static __device__ __forceinline__ double dot_part(const V *__restrict__ w, const V *__restrict__ x, size_t n,
                                                  unsigned lane) {
  constexpr int UNROLL = unroll_of<V>::value;
  double acc[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; u++) acc[u] = 0.0;
  size_t i = lane;
  for (; i + (size_t)(UNROLL - 1) * TPR < n; i += (size_t)UNROLL * TPR) {
    V a[UNROLL], b[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) a[u] = load_stream(w + i + (size_t)u * TPR);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) b[u] = load_cached(x + i + (size_t)u * TPR);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) acc[u] = dot(a[u], b[u], acc[u]);
  }
#pragma unroll
  for (int u = 0; u < UNROLL - 1; u++)
    if (i + (size_t)u * TPR < n)
      acc[u] = dot(load_stream(w + i + (size_t)u * TPR), load_cached(x + i + (size_t)u * TPR), acc[u]);
  double s = acc[0];
#pragma unroll
  for (int u = 1; u < UNROLL; u++) s += acc[u];
  return s;
}

/* Row r of W times x, this thread's share; VEC: rows and x read as float4. */
template <int TPR, bool VEC>
static __device__ __forceinline__ double row_part(const float *W, const float *x, size_t r, size_t cols,
                                                  unsigned lane) {
  const float *w = W + r * cols;
  if constexpr (VEC)
    return dot_part<TPR>(reinterpret_cast<const float4 *>(w), reinterpret_cast<const float4 *>(x), cols / 4, lane);
  else
    return dot_part<TPR>(w, x, cols, lane);
}

/* The sum of v over aligned groups of `width` lanes (a power of two <= 32), in
 * the group's first lane. */
static __device__ __forceinline__ double group_sum(double v, int width) {
  for (int off = width / 2; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off, width);
  return v;
}

/*
 * Short rows: groups of TPR lanes (a power of two, 1..32) of one warp, so a warp
 * takes 32 / TPR consecutive rows at a time. Rows are handed out per warp,
 * which keeps every lane of a warp in the loop together for the shuffles.
 */
template <int TPR, bool VEC>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    matvec_warp(const float *__restrict__ W, const float *__restrict__ x, float *__restrict__ y, size_t rows,
                size_t cols) {
  constexpr unsigned RPW = 32 / TPR, WPB = THREADS / 32;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % TPR, sub = (threadIdx.x % 32) / TPR;
  const size_t step = (size_t)gridDim.x * WPB * RPW;
  for (size_t base = ((size_t)blockIdx.x * WPB + warp) * RPW; base < rows; base += step) {
    const size_t r = base + sub;
    double s = r < rows ? row_part<TPR, VEC>(W, x, r, cols, lane) : 0.0;
    if constexpr (TPR > 1) s = group_sum(s, TPR);
    if (lane == 0 && r < rows) y[r] = (float)s;
  }
}

/* Long rows: the whole block on one row, rows in a grid-stride loop. */
template <bool VEC>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    matvec_block(const float *__restrict__ W, const float *__restrict__ x, float *__restrict__ y, size_t rows,
                 size_t cols) {
  __shared__ double part[THREADS / 32];
  const unsigned warp = threadIdx.x / 32, wl = threadIdx.x % 32;
  /* The same rows for every thread of the block, so the barriers are uniform. */
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    double s = group_sum(row_part<THREADS, VEC>(W, x, r, cols, threadIdx.x), 32);
    if (wl == 0) part[warp] = s;
    __syncthreads();
    if (warp == 0) {
      s = group_sum(wl < THREADS / 32 ? part[wl] : 0.0, 32);
      if (wl == 0) y[r] = (float)s;
    }
    __syncthreads(); /* part is free for the next row */
  }
}

template <int TPR, bool VEC>
static void launch_warp(const float *W, const float *x, float *y, size_t rows, size_t cols, cudaStream_t stream) {
  constexpr size_t RPB = THREADS / TPR;
  const size_t want = (rows + RPB - 1) / RPB;
  const unsigned blocks = want < MAX_BLOCKS ? (unsigned)want : MAX_BLOCKS;
  matvec_warp<TPR, VEC><<<blocks, THREADS, 0, stream>>>(W, x, y, rows, cols);
}

template <bool VEC>
static void launch(const float *W, const float *x, float *y, size_t rows, size_t cols, cudaStream_t stream) {
  /* Loads per row: float4s or floats. A block when each of its threads gets
   * BLOCK_MIN_LOADS of them, else the widest group (up to a warp) whose lanes
   * each get at least UNROLL. */
  constexpr int UNROLL = unroll_of<typename std::conditional<VEC, float4, float>::type>::value;
  const size_t n = VEC ? cols / 4 : cols;
  if (n >= (size_t)THREADS * BLOCK_MIN_LOADS) {
    const unsigned blocks = rows < MAX_BLOCKS ? (unsigned)rows : MAX_BLOCKS;
    matvec_block<VEC><<<blocks, THREADS, 0, stream>>>(W, x, y, rows, cols);
  } else if (n >= 32 * UNROLL) {
    launch_warp<32, VEC>(W, x, y, rows, cols, stream);
  } else if (n >= 16 * UNROLL) {
    launch_warp<16, VEC>(W, x, y, rows, cols, stream);
  } else if (n >= 8 * UNROLL) {
    launch_warp<8, VEC>(W, x, y, rows, cols, stream);
  } else if (n >= 4 * UNROLL) {
    launch_warp<4, VEC>(W, x, y, rows, cols, stream);
  } else if (n >= 2 * UNROLL) {
    launch_warp<2, VEC>(W, x, y, rows, cols, stream);
  } else {
    launch_warp<1, VEC>(W, x, y, rows, cols, stream);
  }
}

extern "C" int mgpu__matvec_gpu(const mgpu_chunk_t *c) {
  const mgpu_matvec_arg_t *arg = (const mgpu_matvec_arg_t *)c->arg;
  if (!arg || arg->cols < 1 || arg->cols > SIZE_MAX / sizeof(float) || !c->consts || !c->consts[0])
    return (int)cudaErrorInvalidValue;
  if (c->count == 0) return (int)cudaSuccess;
  const size_t cols = (size_t)arg->cols, rows = c->count;
  const float *W = (const float *)c->in[0];
  const float *x = (const float *)c->consts[0];
  float *y = (float *)c->out[0];
  cudaStream_t stream = (cudaStream_t)c->stream;
  (void)cudaGetLastError();
  if (cols % 4 == 0 && (uintptr_t)W % 16 == 0 && (uintptr_t)x % 16 == 0)
    launch<true>(W, x, y, rows, cols, stream);
  else
    launch<false>(W, x, y, rows, cols, stream);
  return (int)cudaGetLastError();
}
