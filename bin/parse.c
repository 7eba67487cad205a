/*
 * parse.c: mgpu-run's value parsers; a bad value is a usage error that names
 * the option.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decimal.h"
#include "mgpu-run.h"

long long parse_ll_opt(const char *opt, const char *v, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi || (*v == '-' && lo >= 0))
    usage_error("%s '%s' is invalid: expected an integer in %lld..%lld", opt, v, lo, hi);
  return x;
}

double parse_double_opt(const char *opt, const char *v, double lo, double hi) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!mgpu_is_decimal(v) || errno || end == v || *end || !isfinite(x) || x <= lo || x > hi)
    usage_error("%s '%s' is invalid: expected a number greater than %g and at most %g", opt, v, lo, hi);
  return x;
}

mgpu_sched_t parse_mode(const char *v) {
  if (!strcasecmp(v, "steal")) return MGPU_SCHED_STEAL;
  if (!strcasecmp(v, "static")) return MGPU_SCHED_STATIC;
  if (!strcasecmp(v, "cpu")) return MGPU_SCHED_CPU;
  if (!strcasecmp(v, "gpu")) return MGPU_SCHED_GPU;
  usage_error("--mode '%s' is invalid: expected steal, static, cpu or gpu", v);
  return MGPU_SCHED_UNSET;
}

bool parse_keyword(const char *v, const char *word) { return strcasecmp(v, word) == 0; }

/* A comma-separated list of numbers (shares) for --split. */
int parse_split(const char *v, double *out) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", v);
  int n = 0;
  double sum = 0;
  char *save = NULL;
  if (!*v || *v == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
    usage_error("--split '%s' is invalid: expected shares such as 0.6,0.4 (one per GPU, then optionally the host)", v);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == MGPU_MAX_DEVICES + 1) usage_error("--split: more than %d entries", MGPU_MAX_DEVICES + 1);
    char *end;
    errno = 0;
    double x = strtod(t, &end);
    if (!mgpu_is_decimal(t) || errno || end == t || *end || !isfinite(x) || x < 0 || signbit(x) || x > 1e12)
      usage_error("--split entry '%s' is invalid: expected a number in 0..1e12", t);
    out[n++] = x;
    sum += x;
  }
  if (!(sum > 0)) usage_error("--split '%s' is invalid: every share is 0", v);
  return n;
}

size_t parse_bytes_opt(const char *opt, const char *v) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  int shift = 0;
  if (*end == 'K') shift = 10, end++;
  else if (*end == 'M') shift = 20, end++;
  else if (*end == 'G') shift = 30, end++;
  if (errno || end == v || *end || *v == '-' || x > (1ULL << 34) >> shift || (x << shift) < 4 || (x << shift) % 4)
    usage_error("%s '%s' is invalid: expected a multiple of 4 bytes in 4..16G (K, M, G suffixes allowed)", opt, v);
  return (size_t)(x << shift);
}

/* A comma-separated list of distinct integers in lo..hi (--devices, --gpus). */
int parse_list_opt(const char *opt, const char *v, long long lo, long long hi, const char *example,
                          int *out) {
  char buf[512], entry[64];
  snprintf(buf, sizeof buf, "%s", v);
  snprintf(entry, sizeof entry, "%s entry", opt);
  int n = 0;
  char *save = NULL;
  if (!*v || *v == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
    usage_error("%s '%s' is invalid: expected %s", opt, v, example);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == MGPU_MAX_DEVICES) usage_error("%s: more than %d entries", opt, MGPU_MAX_DEVICES);
    int k = (int)parse_ll_opt(entry, t, lo, hi);
    for (int i = 0; i < n; i++)
      if (out[i] == k) usage_error("%s '%s': %d is listed twice", opt, v, k);
    out[n++] = k;
  }
  return n;
}
