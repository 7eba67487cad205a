/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stage.c: the staging copies between the user's pageable arrays and a GPU's
 * pinned buffers. One thread copies pageable memory far slower than memory
 * allows, so once a device waits for its host thread, the rest of a large
 * copy is posted as the GPU's copy job, whose pieces the GPU thread and the
 * CPU workers take (doc/tuning.md, "Internal constants").
 */
#include "workers/workers.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

/* One piece of a job, copied out of it under its lock. */
typedef struct {
  char *dst;
  const char *src;
  size_t bytes;
  mgpu__batch_t *b;
  bool to_user;
} piece_t;

/* A job (one per GPU, in the runtime: never freed under a helper) changes its
 * fields only under its lock, once every piece of the job before is done, and
 * `done` orders a helper's copy before the owner's return. Take the next
 * piece of job j, or return false; a helper takes one only while fewer than
 * mgpu__copy_threads_max threads copy. */
static bool take_piece(mgpu_runtime_t *rt, mgpu__copyjob_t *j, bool helper, piece_t *p) {
  if (!atomic_load_explicit(&j->open, memory_order_acquire)) return false;
  if (helper && atomic_load_explicit(&rt->copiers, memory_order_relaxed) >= mgpu__copy_threads_max(rt)) return false;
  bool got = false;
  MGPU_LOCK(&j->lock, MGPU_LK_COPYJOB);
  if (j->next < j->npieces) {
    size_t off = j->next * j->piece;
    *p = (piece_t){j->dst + off, j->src + off, MGPU_MIN(j->piece, j->bytes - off), j->b, j->to_user};
    got = true;
    if (++j->next == j->npieces) {
      atomic_store_explicit(&j->open, false, memory_order_relaxed);
      atomic_fetch_sub(&rt->copy_open, 1);
    }
  }
  MGPU_UNLOCK(&j->lock);
  return got;
}

/* Copy results out of staging into a user array with stores that bypass the
 * caches: a user array written once per batch is not in cache, and a plain
 * store reads each line before it writes it. Copies into staging keep memcpy:
 * that buffer stays in cache, chunk after chunk. memcpy takes the unaligned
 * head, the tail, and copies under MGPU_STREAM_MIN. */
static void stream_copy(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__) && defined(__SSE2__)
  if (bytes >= MGPU_STREAM_MIN) {
    char *d = dst;
    const char *s = src;
    _Static_assert(MGPU_CACHELINE == 4 * sizeof(__m128i), "a line is four streamed stores");
    size_t head = (size_t)(-(uintptr_t)d & (MGPU_CACHELINE - 1));
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= MGPU_CACHELINE; d += MGPU_CACHELINE, s += MGPU_CACHELINE, bytes -= MGPU_CACHELINE) {
      __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16)),
              c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
      _mm_stream_si128((__m128i *)d, a);
      _mm_stream_si128((__m128i *)(d + 16), b);
      _mm_stream_si128((__m128i *)(d + 32), c);
      _mm_stream_si128((__m128i *)(d + 48), e);
    }
    /* Streamed stores are weakly ordered: fence them before the copy is
     * reported done to the thread that hands the buffer on. */
    _mm_sfence();
    dst = d, src = s;
  }
#endif
  memcpy(dst, src, bytes);
}

/* A staging copy, into the staging buffer or out of it (to_user), counted
 * in worker w's statistics for batch b. */
static void copy_counted(mgpu__worker_t *w, mgpu__batch_t *b, void *dst, const void *src, size_t bytes, bool to_user) {
  if (to_user) stream_copy(dst, src, bytes);
  else memcpy(dst, src, bytes);
  b->wstats[w->id].staged_bytes += bytes;
  atomic_fetch_add_explicit(&w->staged, bytes, memory_order_relaxed);
}

/* Copy one piece of job j as worker w. The batch outlives the piece: its
 * owner holds its chunk until every piece is done. */
static void copy_piece(mgpu_runtime_t *rt, mgpu__copyjob_t *j, mgpu__worker_t *w, const piece_t *p) {
  atomic_fetch_add_explicit(&rt->copiers, 1, memory_order_relaxed);
  copy_counted(w, p->b, p->dst, p->src, p->bytes, p->to_user);
  atomic_fetch_sub_explicit(&rt->copiers, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&j->done, 1, memory_order_release);
}

/* Whether copies are shared early (asked after every piece, and ahead once
 * the device ran dry). With more GPUs their host threads already copy at once
 * and memory bandwidth is the limit: a copy is shared only where its device
 * waits as it starts. */
static bool shares_early(const mgpu_runtime_t *rt) { return rt->ngpus <= MGPU_SHARE_EARLY_GPUS; }

void mgpu__copy(mgpu_runtime_t *rt, mgpu__worker_t *w, mgpu__batch_t *b, void *dst, const void *src, size_t bytes,
                bool to_user, mgpu__starved_fn starved, void *arg) {
  if (!starved || bytes < MGPU_COPY_SPLIT_MIN || rt->ncpu == 0) {
    copy_counted(w, b, dst, src, bytes, to_user);
    return;
  }
  size_t piece = MGPU_MAX(MGPU_COPY_PIECE_MIN,
                          (bytes / MGPU_COPY_PIECES_MAX + MGPU_COPY_PIECE_ALIGN - 1) & ~(MGPU_COPY_PIECE_ALIGN - 1));
  /* A copy can outlast the work in flight and leave the device idle: where
   * copies are shared early, the device is asked again after each piece and
   * the rest is shared from the moment it waits; elsewhere it is asked once,
   * as the copy starts (the step is then the whole copy). */
  size_t off = 0, step = shares_early(rt) ? piece : bytes;
  while (off < bytes && !starved(arg)) {
    size_t len = MGPU_MIN(step, bytes - off);
    copy_counted(w, b, (char *)dst + off, (const char *)src + off, len, to_user);
    off += len;
  }
  if (off == bytes) return;
  mgpu__copyjob_t *j = &rt->copyjobs[w->gpu];
  size_t left = bytes - off, npieces = (left + piece - 1) / piece;
  /* Counted before it opens, so that taking its last piece never takes the
   * count below the jobs really open. */
  atomic_fetch_add(&rt->copy_open, 1);
  MGPU_LOCK(&j->lock, MGPU_LK_COPYJOB);
  j->dst = (char *)dst + off;
  j->src = (const char *)src + off;
  j->bytes = left;
  j->piece = piece;
  j->npieces = npieces;
  j->next = 0;
  j->b = b;
  j->to_user = to_user;
  atomic_store_explicit(&j->done, 0, memory_order_relaxed);
  atomic_store_explicit(&j->open, true, memory_order_release);
  MGPU_UNLOCK(&j->lock);
  mgpu__wake_helpers(rt, (int)MGPU_MIN(npieces - 1, (size_t)MGPU_COPY_WAKE_MAX));
  piece_t p;
  while (take_piece(rt, j, false, &p)) copy_piece(rt, j, w, &p);
  /* The rest is being copied by helpers, a piece each at most. */
  while (atomic_load_explicit(&j->done, memory_order_acquire) < npieces) sched_yield();
}

int mgpu__share_ahead(const mgpu_runtime_t *rt, int left, bool dry) {
  if (!shares_early(rt)) return 0;
  if (dry) return MGPU_SHARE_AHEAD;
  return left > 0 ? left - 1 : 0;
}

void mgpu__copy_help(mgpu_runtime_t *rt, mgpu__worker_t *w) {
  for (bool got = true; got && atomic_load_explicit(&rt->copy_open, memory_order_relaxed) > 0;) {
    got = false; /* stays false once the pieces left are taken, or enough threads copy */
    for (int g = 0; g < rt->ngpus; g++) {
      piece_t p;
      if (take_piece(rt, &rt->copyjobs[g], true, &p)) {
        copy_piece(rt, &rt->copyjobs[g], w, &p);
        got = true;
      }
    }
  }
}

void mgpu__copyjobs_init(mgpu_runtime_t *rt) {
  for (int g = 0; g < MGPU_MAX_DEVICES; g++) pthread_mutex_init(&rt->copyjobs[g].lock, NULL);
}

void mgpu__copyjobs_destroy(mgpu_runtime_t *rt) {
  for (int g = 0; g < MGPU_MAX_DEVICES; g++) pthread_mutex_destroy(&rt->copyjobs[g].lock);
}
