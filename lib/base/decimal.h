/* SPDX-License-Identifier: BSD-3-Clause */
/* decimal.h: the one rule for decimal numbers, shared by the library's
 * settings (config.c) and mgpu-run's flags, so that a flag and its variable
 * accept the same text. */
#ifndef MGPU_DECIMAL_H
#define MGPU_DECIMAL_H

#include <ctype.h>
#include <stdbool.h>

/* [+-]digits[.digits][e[+-]digits], with a digit before or after the point.
 * strtod also reads hexadecimal floats, inf and nan, which no setting means
 * to accept. */
static inline bool mgpu_is_decimal(const char *p) {
  int digits = 0;
  if (*p == '+' || *p == '-') p++;
  for (; isdigit((unsigned char)*p); p++) digits++;
  if (*p == '.')
    for (p++; isdigit((unsigned char)*p); p++) digits++;
  if (digits == 0) return false;
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return false;
    while (isdigit((unsigned char)*p)) p++;
  }
  return *p == '\0';
}

#endif
