/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-claim.c: the claims layer on state built by hand: what a batch says of
 * its unclaimed items while a steal or a requeue is half done, and how much a
 * GPU's chunk may hold (room.c).
 */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>

/* Two workers' ranges of a 10-item batch, both empty: between a thief's cut
 * of its victim's range and its install of the piece into its own, or after
 * a requeue dropped its flag and before it installed. The items are in no
 * range and in no claim, so the batch is not all claimed; a look at the
 * ranges would say it is, and the copy-out sharing that this answer gates
 * would start a moment early. */
START_TEST(test_all_claimed_mid_steal) {
  mgpu__range_t r[2];
  memset(r, 0, sizeof r);
  atomic_store(&r[0].begin, 10);
  atomic_store(&r[0].end, 10);
  atomic_store(&r[1].begin, 7);
  atomic_store(&r[1].end, 7);
  mgpu__batch_t b;
  memset(&b, 0, sizeof b);
  b.ranges = r;
  atomic_store(&b.has_requeue, 0);
  atomic_store(&b.unclaimed, 3); /* [7, 10) cut from worker 0, not yet in worker 1's range */
  ck_assert(!mgpu__all_claimed(&b));
  atomic_store(&r[1].end, 10); /* installed, not yet claimed */
  ck_assert(!mgpu__all_claimed(&b));
  atomic_store(&b.unclaimed, 0); /* claimed */
  atomic_store(&r[1].begin, 10);
  ck_assert(mgpu__all_claimed(&b));
}
END_TEST

/* A range lock is counted on the thread that holds it, so that the device
 * back ends can refuse a driver call made under one. */
START_TEST(test_range_lock_counted) {
  mgpu__range_t r;
  memset(&r, 0, sizeof r);
  pthread_mutex_init(&r.lock, NULL);
  ck_assert_int_eq(mgpu__range_locks_held, 0);
  mgpu__range_lock(&r);
  ck_assert_int_eq(mgpu__range_locks_held, 1);
  mgpu__range_unlock(&r);
  ck_assert_int_eq(mgpu__range_locks_held, 0);
  pthread_mutex_destroy(&r.lock);
}
END_TEST

/* Items per chunk: the slot's memory over the bytes an item needs (with the
 * alignment of each array), at most MGPU_MAX_BATCH_SIZE. */
START_TEST(test_room_cap) {
  mgpu_kernel_t k = {.name = "k", .nin = 1, .nout = 1, .in_size = {8}, .out_size = {8}, .scratch_per_item = 16};
  mgpu__room_t room;
  memset(&room, 0, sizeof room);
  ck_assert_uint_eq(mgpu__room_bytes_per_item(&k), 32);
  atomic_store(&room.slot_bytes, (size_t)1 << 20);
  size_t per = 32 + (size_t)(3 * MGPU_ALIGN_DEV) / 8 + 1;
  ck_assert_uint_eq(mgpu__room_cap(&room, &k), ((size_t)1 << 20) / per);
  room.max_batch = 1000;
  ck_assert_uint_eq(mgpu__room_cap(&room, &k), 1000);
  atomic_store(&room.slot_bytes, 0);
  ck_assert_uint_eq(mgpu__room_cap(&room, &k), 1); /* never 0 */
}
END_TEST

/* Locks taken in the order of the table: the checks of a --enable-debug
 * build let it pass. */
START_TEST(test_lock_order_kept) {
  pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER, inner = PTHREAD_MUTEX_INITIALIZER;
  MGPU_LOCK(&outer, MGPU_LK_RT);
  MGPU_LOCK(&inner, MGPU_LK_BATCH);
  MGPU_UNLOCK(&outer); /* released in any order */
  MGPU_UNLOCK(&inner);
  MGPU_LOCK(&inner, MGPU_LK_BATCH);
  MGPU_UNLOCK(&inner);
}
END_TEST

/* A batch's lock, then rt->lock: out of order, and a --enable-debug build
 * aborts (the test expects SIGABRT there; other builds do not check). */
START_TEST(test_lock_order_broken) {
  pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER, batch_lock = PTHREAD_MUTEX_INITIALIZER;
  MGPU_LOCK(&batch_lock, MGPU_LK_BATCH);
  MGPU_LOCK(&rt_lock, MGPU_LK_RT);
  MGPU_UNLOCK(&rt_lock);
  MGPU_UNLOCK(&batch_lock);
}
END_TEST

/* Two locks of one level (two range locks) are never held at once. */
START_TEST(test_lock_order_same_level) {
  pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
  MGPU_LOCK(&a, MGPU_LK_RANGE);
  MGPU_LOCK(&b, MGPU_LK_RANGE);
  MGPU_UNLOCK(&b);
  MGPU_UNLOCK(&a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("claim");
  TCase *tc = tcase_create("claim");
  tcase_add_test(tc, test_all_claimed_mid_steal);
  tcase_add_test(tc, test_range_lock_counted);
  tcase_add_test(tc, test_room_cap);
  tcase_add_test(tc, test_lock_order_kept);
  suite_add_tcase(s, tc);
  if (mgpu__lock_order_checked()) {
    TCase *order = tcase_create("lock-order");
    tcase_add_test_raise_signal(order, test_lock_order_broken, SIGABRT);
    tcase_add_test_raise_signal(order, test_lock_order_same_level, SIGABRT);
    suite_add_tcase(s, order);
  } else {
    printf("lock order: not checked in this build (./configure --enable-debug checks it)\n");
  }
  return mgpu_test_main(s);
}
