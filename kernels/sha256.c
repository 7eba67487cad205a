/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sha256.c: FIPS 180-4 SHA-256 of one fixed-length message per item, on CPUs.
 */
#include "builtin.h"

#include <string.h>

static const uint32_t k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

static inline uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static inline uint32_t load_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void compress(uint32_t h[8], const uint8_t *block) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++) w[i] = load_be32(block + 4 * i);
  for (int i = 16; i < 64; i++) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k256[i] + w[i];
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

static void sha256_one(const uint8_t *msg, size_t len, uint8_t *digest) {
  uint32_t h[8];
  memcpy(h, h0, sizeof h);
  const size_t full = len / 64;
  for (size_t b = 0; b < full; b++) compress(h, msg + 64 * b);

  /* The tail, the 0x80 marker and the 64-bit bit length take one block, or two
   * when fewer than 9 bytes are left after the tail. */
  uint8_t last[128];
  const size_t rem = len - 64 * full;
  const size_t tail = rem + 9 <= 64 ? 64 : 128;
  memset(last, 0, sizeof last);
  if (rem) memcpy(last, msg + 64 * full, rem);
  last[rem] = 0x80;
  const uint64_t bits = (uint64_t)len * 8;
  for (int i = 0; i < 8; i++) last[tail - 1 - i] = (uint8_t)(bits >> (8 * i));
  compress(h, last);
  if (tail == 128) compress(h, last + 64);

  for (int i = 0; i < 8; i++) {
    digest[4 * i] = (uint8_t)(h[i] >> 24);
    digest[4 * i + 1] = (uint8_t)(h[i] >> 16);
    digest[4 * i + 2] = (uint8_t)(h[i] >> 8);
    digest[4 * i + 3] = (uint8_t)h[i];
  }
}

int mgpu__sha256_cpu(const mgpu_chunk_t *c) {
  const mgpu_sha256_arg_t *arg = c->arg;
  if (!arg || arg->msg_len > MGPU_SHA256_MAX_LEN)
    return mgpu__fail(MGPU_EINVAL, "sha256: argument msg_len %llu is above %llu (or no argument)",
                      arg ? (unsigned long long)arg->msg_len : 0ULL,
                      (unsigned long long)MGPU_SHA256_MAX_LEN);
  const size_t len = (size_t)arg->msg_len;
  /* With no message bytes the kernel has no input array. */
  const uint8_t *in = len ? c->in[0] : NULL;
  uint8_t *out = c->out[0];
  for (size_t j = 0; j < c->count; j++) sha256_one(len ? in + j * len : NULL, len, out + 32 * j);
  return 0;
}
