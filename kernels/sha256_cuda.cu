/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sha256_cuda.cu: FIPS 180-4 SHA-256 of one fixed-length message per item on
 * CUDA GPUs, one thread per message, with sha256.c's digests. The padded tail
 * is never materialised: its words are assembled from the message bytes, the
 * 0x80 marker and the length as needed, which keeps the state in registers.
 */
#include <cuda_runtime.h>

#include "builtin.h"

#define THREADS 128
#define MAX_BLOCKS 65535u

__constant__ uint32_t c_k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static __device__ __forceinline__ uint32_t rotr(uint32_t x, unsigned n) { return __funnelshift_r(x, x, n); }

/* One block; w[] is consumed as the rolling 16-word message schedule. */
static __device__ __forceinline__ void compress(uint32_t h[8], uint32_t w[16]) {
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
#pragma unroll
  for (int i = 0; i < 64; i++) {
    if (i >= 16) {
      const uint32_t w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];
      const uint32_t s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >> 3);
      const uint32_t s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >> 10);
      w[i & 15] += s0 + w[(i - 7) & 15] + s1;
    }
    const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + c_k256[i] + w[i & 15];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

__global__ void __launch_bounds__(THREADS)
    sha256_kernel(const uint8_t *__restrict__ in, uint8_t *__restrict__ out, size_t count, size_t len) {
  const size_t full = len / 64, rem = len % 64;
  const size_t tail_blocks = rem + 9 <= 64 ? 1 : 2;
  const uint64_t bits = (uint64_t)len * 8;
  for (size_t item = (size_t)blockIdx.x * blockDim.x + threadIdx.x; item < count;
       item += (size_t)gridDim.x * blockDim.x) {
    const uint8_t *msg = in + item * len;
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    uint32_t w[16];
    /* Messages start 4-byte aligned when len is a multiple of 4 (and the chunk's
     * start is): then whole words can be loaded and byte-swapped. */
    const bool aligned = ((uintptr_t)msg & 3) == 0;
    for (size_t blk = 0; blk < full; blk++) {
      const uint8_t *p = msg + 64 * blk;
      if (aligned) {
#pragma unroll
        for (int i = 0; i < 16; i++) w[i] = __byte_perm(((const uint32_t *)p)[i], 0, 0x0123);
      } else {
#pragma unroll
        for (int i = 0; i < 16; i++)
          w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
      }
      compress(h, w);
    }
    const uint8_t *tail = msg + 64 * full;
    for (size_t tb = 0; tb < tail_blocks; tb++) {
#pragma unroll
      for (int i = 0; i < 16; i++) {
        uint32_t word = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
          const size_t q = 64 * tb + 4 * i + k;
          const uint32_t byte = q < rem ? tail[q] : q == rem ? 0x80u : 0u;
          word = word << 8 | byte;
        }
        w[i] = word;
      }
      if (tb + 1 == tail_blocks) {
        w[14] = (uint32_t)(bits >> 32);
        w[15] = (uint32_t)bits;
      }
      compress(h, w);
    }
    uint8_t *d = out + 32 * item;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      d[4 * i] = (uint8_t)(h[i] >> 24);
      d[4 * i + 1] = (uint8_t)(h[i] >> 16);
      d[4 * i + 2] = (uint8_t)(h[i] >> 8);
      d[4 * i + 3] = (uint8_t)h[i];
    }
  }
}

extern "C" int mgpu__sha256_gpu(const mgpu_chunk_t *c) {
  const mgpu_sha256_arg_t *arg = (const mgpu_sha256_arg_t *)c->arg;
  if (!arg || arg->msg_len > MGPU_SHA256_MAX_LEN) return (int)cudaErrorInvalidValue;
  if (c->count == 0) return (int)cudaSuccess;
  const size_t len = (size_t)arg->msg_len;
  const size_t want = (c->count + THREADS - 1) / THREADS;
  const unsigned blocks = want < MAX_BLOCKS ? (unsigned)want : MAX_BLOCKS;
  (void)cudaGetLastError();
  sha256_kernel<<<blocks, THREADS, 0, (cudaStream_t)c->stream>>>(
      len ? (const uint8_t *)c->in[0] : NULL, (uint8_t *)c->out[0], c->count, len);
  return (int)cudaGetLastError();
}
