/* SPDX-License-Identifier: BSD-3-Clause */
/* status.c: names and descriptions of status codes, from MGPU_STATUS_MAP. */
#include "base/base.h"

MGPU_API const char *mgpu_strerror(mgpu_status_t status) {
  switch (status) {
#define TEXT_(name, value, text) \
  case name: return text;
    MGPU_STATUS_MAP(TEXT_)
#undef TEXT_
  }
  return "unknown status code";
}

MGPU_API const char *mgpu_status_name(mgpu_status_t status) {
  switch (status) {
#define NAME_(name, value, text) \
  case name: return #name;
    MGPU_STATUS_MAP(NAME_)
#undef NAME_
  }
  return "MGPU_UNKNOWN";
}

MGPU_API const char *mgpu_version(void) { return MGPU_VERSION_STRING; }
