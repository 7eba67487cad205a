/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parse.c: the strict parsers of settings and option values: the whole text
 * is read, blanks around it aside, and a value out of range is an error, never
 * clamped. config.c and fault.c read through them, and so does mgpu-run,
 * which builds this file in, so that a flag and its variable agree.
 */
#include "base/base.h"

#include "base/decimal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Leading and trailing blanks are allowed around a value; nothing else is. */
const char *mgpu__parse_trim(const char *s, char *buf, size_t len) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
  if (n >= len) n = len - 1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return buf;
}

int mgpu__parse_ll(const char *s, long long lo, long long hi, long long *out) {
  char buf[128], *end;
  if (!s) return -1;
  const char *t = mgpu__parse_trim(s, buf, sizeof buf);
  if (*t == '\0' || strlen(s) >= sizeof buf) return -1;
  /* strtoll accepts a sign; a '-' is caught by the range check, except in
   * -0, which is refused like any negative where negatives are. */
  if (*t == '-' && lo >= 0) return -1;
  errno = 0;
  long long v = strtoll(t, &end, 10);
  if (errno == ERANGE || end == t || *end != '\0') return -1;
  if (v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int mgpu__parse_double(const char *s, double lo, double hi, double *out) {
  char buf[128], *end;
  if (!s) return -1;
  const char *t = mgpu__parse_trim(s, buf, sizeof buf);
  if (*t == '\0' || strlen(s) >= sizeof buf || !mgpu_is_decimal(t)) return -1;
  errno = 0;
  double v = strtod(t, &end);
  /* Past the range is refused; a number too small to be normal is not, as
   * long as it does not round to 0. */
  if ((errno == ERANGE && (v == 0 || !isfinite(v))) || end == t || *end != '\0' || !isfinite(v)) return -1;
  /* -0 compares equal to 0: where negatives are refused, so is it. */
  if (v < lo || v > hi || (lo >= 0 && signbit(v))) return -1;
  *out = v;
  return 0;
}

/* A keyword, ignoring case and the blanks around it, as every keyword is read. */
bool mgpu__parse_keyword(const char *s, const char *word) {
  char buf[64];
  if (!s || strlen(s) >= sizeof buf) return false;
  return strcasecmp(mgpu__parse_trim(s, buf, sizeof buf), word) == 0;
}

int mgpu__parse_bytes(const char *s, long long lo, long long hi, long long *out) {
  char buf[128], *end;
  if (!s) return -1;
  const char *t = mgpu__parse_trim(s, buf, sizeof buf);
  if (*t == '\0' || strlen(s) >= sizeof buf || *t == '-') return -1;
  errno = 0;
  unsigned long long v = strtoull(t, &end, 10);
  if (errno == ERANGE || end == t) return -1;
  int shift = 0;
  switch (toupper((unsigned char)*end)) {
  case '\0': break;
  case 'K': shift = 10; end++; break;
  case 'M': shift = 20; end++; break;
  case 'G': shift = 30; end++; break;
  case 'T': shift = 40; end++; break;
  default: return -1;
  }
  if (shift && (*end == 'i' || *end == 'I')) end++;
  if (shift && (*end == 'b' || *end == 'B')) end++;
  if (*end != '\0') return -1;
  if (shift && v > (unsigned long long)(LLONG_MAX >> shift)) return -1;
  v <<= shift;
  if (v > (unsigned long long)hi || (long long)v < lo) return -1;
  *out = (long long)v;
  return 0;
}

int mgpu__check_ratios(const double *r, int n, char *why, size_t whylen) {
  double sum = 0;
  for (int i = 0; i < n; i++) {
    if (!isfinite(r[i]) || r[i] < 0 || signbit(r[i]) || r[i] > MGPU_SHARE_MAX) {
      snprintf(why, whylen, "share %d is %g: expected a number in 0..1e12%s", i, r[i],
               r[i] == 0 ? " without a minus sign" : "");
      return -1;
    }
    sum += r[i];
  }
  if (n < 1 || !(sum > 0)) {
    snprintf(why, whylen, "%s", n < 1 ? "no shares are given" : "every share is 0");
    return -1;
  }
  return 0;
}

int mgpu__parse_ratios(const char *s, double *out, int max, int *n_p, char *why, size_t whylen) {
  char buf[1024], item[1024];
  why[0] = '\0';
  if (!s || strlen(s) >= sizeof buf) {
    snprintf(why, whylen, "the list is too long");
    return -1;
  }
  const char *p = mgpu__parse_trim(s, buf, sizeof buf);
  int n = 0;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    memcpy(item, p, len);
    item[len] = '\0';
    if (n == max) {
      snprintf(why, whylen, "more than %d entries", max);
      return -1;
    }
    if (mgpu__parse_double(item, 0, MGPU_SHARE_MAX, &out[n]) != 0) {
      snprintf(why, whylen, "entry '%s' is not a number in 0..1e12", item);
      return -1;
    }
    n++;
    if (!comma) break;
    p = comma + 1;
  }
  if (mgpu__check_ratios(out, n, why, whylen) != 0) return -1;
  *n_p = n;
  return 0;
}

int mgpu__parse_int_list(const char *s, int lo, int hi, int *out, int max, int *n_p, char *why, size_t whylen) {
  char buf[1024];
  why[0] = '\0';
  if (!s || strlen(s) >= sizeof buf) {
    snprintf(why, whylen, "the list is too long");
    return -1;
  }
  const char *t = mgpu__parse_trim(s, buf, sizeof buf);
  if (*t == '\0') {
    snprintf(why, whylen, "the list is empty");
    return -1;
  }
  char item[1024];
  int n = 0;
  const char *p = t;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    memcpy(item, p, len);
    item[len] = '\0';
    long long v;
    if (mgpu__parse_ll(item, lo, hi, &v) != 0) {
      snprintf(why, whylen, "entry '%s' is not an integer in %d..%d", item, lo, hi);
      return -1;
    }
    for (int i = 0; i < n; i++)
      if (out[i] == (int)v) {
        snprintf(why, whylen, "%lld is listed twice", v);
        return -1;
      }
    if (n == max) {
      snprintf(why, whylen, "more than %d entries", max);
      return -1;
    }
    out[n++] = (int)v;
    if (!comma) break;
    p = comma + 1;
  }
  *n_p = n;
  return 0;
}

/* The distance mgpu__config_warn_unknown names the nearest known variable by. */
size_t mgpu__edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return (size_t)-1;
  size_t row[65];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t cost = toupper((unsigned char)a[i - 1]) == toupper((unsigned char)b[j - 1]) ? 0 : 1;
      row[j] = MGPU_MIN(MGPU_MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
      diag = up;
    }
  }
  return row[lb];
}

bool mgpu__trace_pattern_ok(const char *pat, char *why, size_t len) {
  for (const char *q = pat; *q; q++) {
    if (*q != '%') continue;
    q++;
    if (*q == 'r' || *q == 'p' || *q == 'h' || *q == '%') continue;
    if (*q) snprintf(why, len, "'%%%c' is no substitution", *q);
    else snprintf(why, len, "it ends in a lone '%%'");
    return false;
  }
  return true;
}
