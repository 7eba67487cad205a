/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ntt_cuda.cu: the NTT over the Goldilocks field on CUDA GPUs, with ntt.c's
 * results. A polynomial of n = 2^log_n is cut into tiles of T = min(n, 4096)
 * positions of the bit-reversed order; ntt_local runs a tile's first log2 T
 * stages in shared memory (32 KiB at most), for n <= 4096 the whole transform.
 */
#include <cuda_runtime.h>
#include <pthread.h>

#include "builtin.h"

#define TILE_LOG 12
#define TILE (1u << TILE_LOG)
#define LOCAL_THREADS 512
#define HIGH_THREADS 256
/* Polynomials per launch: keeps every grid far below 2^31 - 1 blocks. */
#define MAX_POLYS_PER_LAUNCH ((size_t)1 << 20)

/* The twiddle table of ntt.c, one copy per device (see ntt_twiddles_ready). */
__device__ uint64_t g_tw_fwd[MGPU_NTT_MAX_N];
__device__ uint64_t g_tw_inv[MGPU_NTT_MAX_N];

__global__ void __launch_bounds__(LOCAL_THREADS)
    ntt_local(const uint64_t *__restrict__ in, uint64_t *__restrict__ out, const uint64_t *__restrict__ factor,
              unsigned log_n, unsigned log_t, int inverse, int scale) {
  extern __shared__ uint64_t s[];
  const unsigned t = 1u << log_t;
  const unsigned tiles_log = log_n - log_t;
  const size_t base = (size_t)(blockIdx.x >> tiles_log) << log_n;
  const unsigned tile_first = (blockIdx.x & ((1u << tiles_log) - 1)) << log_t;
  const uint64_t *__restrict__ tw = inverse ? g_tw_inv : g_tw_fwd;

  for (unsigned i = threadIdx.x; i < t; i += blockDim.x) {
    const unsigned r = __brev(tile_first | i) >> (32 - log_n);
    uint64_t v = mgpu__gl_canon(in[base + r]);
    if (factor) v = mgpu__gl_mul(v, factor[r]);
    s[i] = v;
  }
  __syncthreads();
  /* Stage h pairs i0 and i0 + h, i0 = (b / h) * 2h + b % h for butterfly b; the
   * tile starts at a multiple of T, so the twiddle index is the same as in the
   * whole polynomial. */
  for (unsigned h = 1; h < t; h <<= 1) {
    for (unsigned b = threadIdx.x; b < t / 2; b += blockDim.x) {
      const unsigned j = b & (h - 1);
      const unsigned i0 = ((b - j) << 1) + j;
      const uint64_t u = s[i0], v = mgpu__gl_mul(s[i0 + h], tw[h + j]);
      s[i0] = mgpu__gl_add(u, v);
      s[i0 + h] = mgpu__gl_sub(u, v);
    }
    __syncthreads();
  }
  const uint64_t n_inv = mgpu__gl_inv_pow2(log_n);
  for (unsigned i = threadIdx.x; i < t; i += blockDim.x) {
    const uint64_t v = s[i];
    out[base + tile_first + i] = scale ? mgpu__gl_mul(v, n_inv) : v;
  }
}

/* The stages h = 4096 .. n/2 of n = 2^(12 + R), which pair positions 4096
 * apart only: in registers, one coalesced read and write, one thread per
 * (polynomial, j < 4096). Stage h = 4096 << st pairs elements m and m + 2^st of
 * the thread's x[m] = a[j + 4096 m]; the position mod h is j + 4096 (m mod 2^st). */
template <int R>
__global__ void __launch_bounds__(HIGH_THREADS) ntt_high(uint64_t *__restrict__ a, size_t npoly, int inverse) {
  const size_t gid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t poly = gid >> TILE_LOG;
  const unsigned j = (unsigned)gid & (TILE - 1);
  if (poly >= npoly) return;
  const unsigned log_n = TILE_LOG + R;
  uint64_t *__restrict__ p = a + (poly << log_n) + j;
  const uint64_t *__restrict__ tw = inverse ? g_tw_inv : g_tw_fwd;
  uint64_t x[1 << R];

#pragma unroll
  for (int m = 0; m < (1 << R); m++) x[m] = p[(size_t)m << TILE_LOG];
#pragma unroll
  for (int st = 0; st < R; st++) {
    const int hs = 1 << st;
#pragma unroll
    for (int m = 0; m < (1 << R); m++) {
      if (m & hs) continue;
      const uint64_t w = tw[(TILE << st) + j + ((unsigned)(m & (hs - 1)) << TILE_LOG)];
      const uint64_t u = x[m], v = mgpu__gl_mul(x[m + hs], w);
      x[m] = mgpu__gl_add(u, v);
      x[m + hs] = mgpu__gl_sub(u, v);
    }
  }
  if (inverse) {
    const uint64_t n_inv = mgpu__gl_inv_pow2(log_n);
#pragma unroll
    for (int m = 0; m < (1 << R); m++) x[m] = mgpu__gl_mul(x[m], n_inv);
  }
#pragma unroll
  for (int m = 0; m < (1 << R); m++) p[(size_t)m << TILE_LOG] = x[m];
}

/*
 * The table is uploaded once per device, on the stream of the first call there,
 * and an event marks its arrival; every launch makes its own stream wait for that
 * event, which costs nothing once it has completed. So no call synchronises, and
 * streams of other host threads on the same device never see a half-written
 * table. tw_lock guards tw_ready[]; the events live as long as the process.
 */
static pthread_mutex_t tw_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaEvent_t tw_ready[MGPU_MAX_DEVICES];

static cudaError_t ntt_twiddles_ready(cudaStream_t stream) {
  int dev;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  if (dev < 0 || dev >= MGPU_MAX_DEVICES) return cudaErrorInvalidDevice;

  if (pthread_mutex_lock(&tw_lock) != 0) return cudaErrorUnknown;
  cudaEvent_t ev = tw_ready[dev];
  if (!ev) {
    const mgpu__ntt_twiddles_t *t = mgpu__ntt_twiddles();
    e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess)
      e = cudaMemcpyToSymbolAsync(g_tw_fwd, t->fwd, sizeof t->fwd, 0, cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess)
      e = cudaMemcpyToSymbolAsync(g_tw_inv, t->inv, sizeof t->inv, 0, cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess) e = cudaEventRecord(ev, stream);
    if (e == cudaSuccess) {
      tw_ready[dev] = ev;
    } else if (ev) {
      cudaEventDestroy(ev);
      ev = NULL;
    }
  }
  pthread_mutex_unlock(&tw_lock);
  if (e != cudaSuccess) return e;
  return cudaStreamWaitEvent(stream, ev, 0);
}

extern "C" int mgpu__ntt_gpu_enqueue(const uint64_t *in, uint64_t *out, const uint64_t *factor, size_t count,
                                     unsigned log_n, int inverse, void *stream_v) {
  cudaStream_t stream = (cudaStream_t)stream_v;
  if (log_n < MGPU_NTT_LOG_MIN || log_n > MGPU_NTT_LOG_MAX) return (int)cudaErrorInvalidValue;
  /* Only this call's launches should decide its result. */
  (void)cudaGetLastError();
  cudaError_t e = ntt_twiddles_ready(stream);
  if (e != cudaSuccess) return (int)e;

  const unsigned log_t = log_n < TILE_LOG ? log_n : TILE_LOG;
  const unsigned tiles_log = log_n - log_t;
  const unsigned threads = (1u << log_t) / 4 < LOCAL_THREADS ? (1u << log_t) / 4 : LOCAL_THREADS;
  const size_t smem = sizeof(uint64_t) << log_t;
  const size_t n = (size_t)1 << log_n;
  const int scale_local = inverse && tiles_log == 0;

  for (size_t done = 0; done < count; done += MAX_POLYS_PER_LAUNCH) {
    const size_t polys = count - done < MAX_POLYS_PER_LAUNCH ? count - done : MAX_POLYS_PER_LAUNCH;
    const uint64_t *src = in + done * n;
    uint64_t *dst = out + done * n;
    ntt_local<<<(unsigned)(polys << tiles_log), threads, smem, stream>>>(src, dst, factor, log_n, log_t,
                                                                         inverse, scale_local);
    if ((e = cudaGetLastError()) != cudaSuccess) return (int)e;
    const unsigned blocks = (unsigned)(polys * (TILE / HIGH_THREADS));
    switch (tiles_log) {
    case 0: break;
    case 1: ntt_high<1><<<blocks, HIGH_THREADS, 0, stream>>>(dst, polys, inverse); break;
    case 2: ntt_high<2><<<blocks, HIGH_THREADS, 0, stream>>>(dst, polys, inverse); break;
    case 3: ntt_high<3><<<blocks, HIGH_THREADS, 0, stream>>>(dst, polys, inverse); break;
    case 4: ntt_high<4><<<blocks, HIGH_THREADS, 0, stream>>>(dst, polys, inverse); break;
    default: return (int)cudaErrorInvalidValue;
    }
    if ((e = cudaGetLastError()) != cudaSuccess) return (int)e;
  }
  return (int)cudaSuccess;
}

extern "C" int mgpu__ntt_gpu(const mgpu_chunk_t *c) {
  const mgpu_ntt_arg_t *arg = (const mgpu_ntt_arg_t *)c->arg;
  if (!arg) return (int)cudaErrorInvalidValue;
  return mgpu__ntt_gpu_enqueue((const uint64_t *)c->in[0], (uint64_t *)c->out[0], NULL, c->count, arg->log_n,
                               arg->inverse != 0, c->stream);
}
