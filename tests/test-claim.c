/*
 * test-claim.c: the claims layer on state built by hand: what a batch says of
 * its unclaimed items while a steal or a requeue is half done, and how much a
 * GPU's chunk may hold (room.c).
 */
#include "testutil.h"

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

int main(void) {
  Suite *s = suite_create("claim");
  TCase *tc = tcase_create("claim");
  tcase_add_test(tc, test_all_claimed_mid_steal);
  tcase_add_test(tc, test_range_lock_counted);
  tcase_add_test(tc, test_room_cap);
  suite_add_tcase(s, tc);
  return mgpu_test_main(s);
}
