/*
 * parse.c: mgpu-run's value parsers. They follow the rules by which the
 * library reads its MGPU_* variables (lib/config.c), so that a flag and its
 * variable accept the same text: blanks around a value (and around each entry
 * of a list) are allowed and nothing else is; integers are decimal, with no
 * '-' where negatives are refused (not even -0); numbers are decimal
 * (lib/decimal.h: no hexadecimal, inf or nan); keywords ignore case; sizes
 * take a K, M, G or T suffix in either case, optionally followed by i and B.
 * A bad value is a usage error that names the option.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decimal.h"
#include "mgpu-run.h"

/* Longest value (and list entry) read, as in config.c. */
enum { VALUE_MAX = 128, LIST_MAX = 1024 };

/* v without the blanks around it, in buf (len bytes); NULL when too long. */
static const char *trim(const char *v, char *buf, size_t len) {
  while (isspace((unsigned char)*v)) v++;
  size_t n = strlen(v);
  while (n > 0 && isspace((unsigned char)v[n - 1])) n--;
  if (n >= len) return NULL;
  memcpy(buf, v, n);
  buf[n] = '\0';
  return buf;
}

long long parse_ll_opt(const char *opt, const char *v, long long lo, long long hi) {
  char buf[VALUE_MAX], *end;
  const char *t = trim(v, buf, sizeof buf);
  long long x = 0;
  bool ok = t && *t && !(*t == '-' && lo >= 0);
  if (ok) {
    errno = 0;
    x = strtoll(t, &end, 10);
    ok = errno != ERANGE && end != t && *end == '\0' && x >= lo && x <= hi;
  }
  if (!ok) usage_error("%s '%s' is invalid: expected an integer in %lld..%lld", opt, v, lo, hi);
  return x;
}

/* A number in (lo, hi]: lo itself is refused, and -0 with it. */
double parse_double_opt(const char *opt, const char *v, double lo, double hi) {
  char buf[VALUE_MAX], *end;
  const char *t = trim(v, buf, sizeof buf);
  double x = 0;
  bool ok = t && mgpu_is_decimal(t);
  if (ok) {
    errno = 0;
    x = strtod(t, &end);
    ok = errno != ERANGE && end != t && *end == '\0' && isfinite(x) && x > lo && x <= hi;
  }
  if (!ok) usage_error("%s '%s' is invalid: expected a number greater than %g and at most %g", opt, v, lo, hi);
  return x;
}

/* Seconds in 0..hi, 0 meaning none (MGPU_TIMEOUT's rule: -0 is refused). */
double parse_seconds_opt(const char *opt, const char *v, double hi) {
  char buf[VALUE_MAX], *end;
  const char *t = trim(v, buf, sizeof buf);
  double x = 0;
  bool ok = t && mgpu_is_decimal(t) && *t != '-';
  if (ok) {
    errno = 0;
    x = strtod(t, &end);
    ok = errno != ERANGE && end != t && *end == '\0' && isfinite(x) && x >= 0 && x <= hi;
  }
  if (!ok) usage_error("%s '%s' is invalid: expected a number of seconds in 0..%g (0: no bound)", opt, v, hi);
  return x;
}

bool parse_keyword(const char *v, const char *word) {
  char buf[64];
  const char *t = trim(v, buf, sizeof buf);
  return t && strcasecmp(t, word) == 0;
}

mgpu_sched_t parse_mode(const char *v) {
  static const char *const names[] = {"steal", "static", "cpu", "gpu"};
  static const mgpu_sched_t modes[] = {MGPU_SCHED_STEAL, MGPU_SCHED_STATIC, MGPU_SCHED_CPU, MGPU_SCHED_GPU};
  for (int i = 0; i < 4; i++)
    if (parse_keyword(v, names[i])) return modes[i];
  usage_error("--mode '%s' is invalid: expected steal, static, cpu or gpu", v);
}

/* Split list v at its commas into entries[] (each LIST_MAX bytes, blanks
 * around it removed); returns the count, or -1 when an entry is blank. Too
 * many entries, or a list too long, is a usage error of opt. */
static int split_list(const char *opt, const char *v, char (*entries)[LIST_MAX], int max) {
  if (strlen(v) >= LIST_MAX) usage_error("%s: the list is too long", opt);
  int n = 0;
  bool blank = false;
  for (const char *p = v;; n++) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (n == max) usage_error("%s: more than %d entries", opt, max);
    char raw[LIST_MAX];
    memcpy(raw, p, len);
    raw[len] = '\0';
    trim(raw, entries[n], LIST_MAX);
    blank |= entries[n][0] == '\0';
    if (!comma) break;
    p = comma + 1;
  }
  return blank ? -1 : n + 1;
}

/* A comma-separated list of shares for --split (MGPU_TENSOR_SPLIT's rule). */
int parse_split(const char *v, double *out) {
  static char entries[MGPU_MAX_DEVICES + 1][LIST_MAX];
  int n = split_list("--split", v, entries, MGPU_MAX_DEVICES + 1);
  if (n < 0)
    usage_error("--split '%s' is invalid: expected shares such as 0.6,0.4 (one per GPU, then optionally the host)", v);
  double sum = 0;
  for (int i = 0; i < n; i++) {
    char *end;
    errno = 0;
    double x = mgpu_is_decimal(entries[i]) ? strtod(entries[i], &end) : NAN;
    if (!mgpu_is_decimal(entries[i]) || errno == ERANGE || *end || !isfinite(x) || x < 0 || signbit(x) || x > 1e12)
      usage_error("--split entry '%s' is invalid: expected a number in 0..1e12", entries[i]);
    out[i] = x;
    sum += x;
  }
  if (!(sum > 0)) usage_error("--split '%s' is invalid: every share is 0", v);
  return n;
}

/* A size in bytes (MGPU_EMULATE_MEM's rule), a multiple of 4 in 4..16G. */
size_t parse_bytes_opt(const char *opt, const char *v) {
  char buf[VALUE_MAX], *end = NULL;
  const char *t = trim(v, buf, sizeof buf);
  unsigned long long x = 0;
  int shift = 0;
  bool ok = t && *t && *t != '-';
  if (ok) {
    errno = 0;
    x = strtoull(t, &end, 10);
    ok = errno != ERANGE && end != t;
  }
  if (ok) {
    const char *suffixes = "KMGT";
    const char *s = *end ? strchr(suffixes, toupper((unsigned char)*end)) : NULL;
    if (s) shift = 10 * (int)(s - suffixes + 1), end++;
    if (shift && (*end == 'i' || *end == 'I')) end++;
    if (shift && (*end == 'b' || *end == 'B')) end++;
    ok = *end == '\0' && x <= (1ULL << 34) >> shift && (x << shift) >= 4 && (x << shift) % 4 == 0;
  }
  if (!ok)
    usage_error("%s '%s' is invalid: expected a multiple of 4 bytes in 4..16G (K, M, G suffixes allowed)", opt, v);
  return (size_t)(x << shift);
}

/* A comma-separated list of distinct integers in lo..hi (--devices, --gpus;
 * MGPU_DEVICES's rule). */
int parse_list_opt(const char *opt, const char *v, long long lo, long long hi, const char *example, int *out) {
  static char entries[MGPU_MAX_DEVICES][LIST_MAX];
  char entry[64];
  snprintf(entry, sizeof entry, "%s entry", opt);
  int n = split_list(opt, v, entries, MGPU_MAX_DEVICES);
  if (n < 0) usage_error("%s '%s' is invalid: expected %s", opt, v, example);
  for (int i = 0; i < n; i++) {
    int k = (int)parse_ll_opt(entry, entries[i], lo, hi);
    for (int j = 0; j < i; j++)
      if (out[j] == k) usage_error("%s '%s': %d is listed twice", opt, v, k);
    out[i] = k;
  }
  return n;
}
