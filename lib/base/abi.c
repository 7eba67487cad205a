/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi.c: the sizes of the structs that callers allocate: checking a caller's
 * size against the layouts this library knows, and copying a struct in and
 * out within it, so that programs built against other versions of mgpurt.h
 * keep working (mgpurt.h, "Structs and versions").
 */
#include "base/base.h"

#include <string.h>

mgpu_status_t mgpu__abi_size(const char *fn, const char *what, const char *type, size_t size, size_t v1,
                             size_t known, size_t align, bool has_size, size_t *bytes_p) {
  if (size == 0) size = v1;
  if (size > known)
    return mgpu__fail(MGPU_EINVAL, "%s: %s = %zu, but this library's %s has %zu bytes: the program was built "
                                   "against a newer mgpurt.h",
                      fn, what, size, type, known);
  if (has_size && size < sizeof(size_t))
    return mgpu__fail(MGPU_EINVAL, "%s: %s = %zu is smaller than the %zu bytes of its own size field (%s has %zu "
                                   "bytes; 0 means the first version's layout)",
                      fn, what, size, sizeof(size_t), type, known);
  /* Every sizeof of a struct is a multiple of its alignment, which no
   * version lowers; another size ends inside a field, which would be read
   * or written in part. */
  if (size % align != 0) {
    size_t least = has_size ? MGPU__ROUND_UP(sizeof(size_t), align) : align;
    return mgpu__fail(MGPU_EINVAL, "%s: %s = %zu is not a size that %s has in any mgpurt.h: expected 0 (the first "
                                   "version's layout) or the program's sizeof(%s), a multiple of %zu (its "
                                   "alignment) from %zu to %zu bytes (this library's)",
                      fn, what, size, type, type, align, least, known);
  }
  *bytes_p = size;
  return MGPU_OK;
}

void mgpu__abi_in(void *to, size_t known, const void *from, size_t bytes) {
  memcpy(to, from, MGPU_MIN(bytes, known));
}

void mgpu__abi_out(void *to, size_t bytes, const void *from, size_t known) {
  memcpy(to, from, MGPU_MIN(bytes, known));
}
