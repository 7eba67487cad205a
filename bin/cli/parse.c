/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parse.c: mgpu-run's value parsers: the library's own (lib/parse.c, built
 * into mgpu-run as well), so that a flag and its variable accept the same
 * text: blanks around a value (and around each entry of a list) are allowed
 * and nothing else is; integers are decimal, with no '-' where negatives are
 * refused (not even -0); numbers are decimal (lib/decimal.h: no hexadecimal,
 * inf or nan); keywords ignore case; sizes take a K, M, G or T suffix in
 * either case, optionally followed by i and B. A bad value is a usage error
 * that names the option.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/base.h" /* lib/: the strict parsers */

long long parse_ll_opt(const char *opt, const char *v, long long lo, long long hi) {
  long long x;
  if (mgpu__parse_ll(v, lo, hi, &x) != 0)
    usage_error("%s '%s' is invalid: expected an integer in %lld..%lld", opt, v, lo, hi);
  return x;
}

/* A number in (lo, hi]: lo itself is refused, and -0 with it. */
double parse_double_opt(const char *opt, const char *v, double lo, double hi) {
  double x;
  if (mgpu__parse_double(v, lo, hi, &x) != 0 || !(x > lo))
    usage_error("%s '%s' is invalid: expected a number greater than %g and at most %g", opt, v, lo, hi);
  return x;
}

/* Seconds in 0..hi, zero saying what 0 means in the error (MGPU_TIMEOUT's
 * rule: -0 is refused). */
double parse_seconds_opt(const char *opt, const char *v, double hi, const char *zero) {
  double x;
  if (mgpu__parse_double(v, 0, hi, &x) != 0)
    usage_error("%s '%s' is invalid: expected a number of seconds in 0..%g (0: %s)", opt, v, hi, zero);
  return x;
}

bool parse_keyword(const char *v, const char *word) { return mgpu__parse_keyword(v, word); }

mgpu_sched_t parse_mode(const char *v) {
  static const char *const names[] = {"steal", "static", "cpu", "gpu"};
  static const mgpu_sched_t modes[] = {MGPU_SCHED_STEAL, MGPU_SCHED_STATIC, MGPU_SCHED_CPU, MGPU_SCHED_GPU};
  for (int i = 0; i < 4; i++)
    if (parse_keyword(v, names[i])) return modes[i];
  usage_error("--mode '%s' is invalid: expected steal, static, cpu or gpu", v);
}

/* Whether list v has an empty entry (blanks only), which the library's list
 * parsers report as an entry that is not a number. */
static bool blank_entry(const char *v) {
  for (const char *p = v;;) {
    const char *comma = strchr(p, ',');
    const char *e = comma ? comma : p + strlen(p);
    bool blank = true;
    for (const char *q = p; q < e; q++) blank &= *q == ' ' || *q == '\t';
    if (blank) return true;
    if (!comma) return false;
    p = comma + 1;
  }
}

/* A comma-separated list of shares for --split (MGPU_TENSOR_SPLIT's rule). */
int parse_split(const char *v, double *out) {
  char why[256];
  int n;
  if (blank_entry(v))
    usage_error("--split '%s' is invalid: expected shares such as 0.6,0.4 (one per GPU, then optionally the host)", v);
  if (mgpu__parse_ratios(v, out, MGPU_MAX_DEVICES + 1, &n, why, sizeof why) != 0) {
    if (strncmp(why, "entry ", 6) == 0) usage_error("--split %s", why);
    usage_error("--split '%s' is invalid: %s", v, why);
  }
  return n;
}

/* A size in bytes (MGPU_EMULATE_MEM's rule), a multiple of 4 in 4..16G. */
size_t parse_bytes_opt(const char *opt, const char *v) {
  long long x;
  if (mgpu__parse_bytes(v, 4, 1LL << 34, &x) != 0 || x % 4 != 0)
    usage_error("%s '%s' is invalid: expected a multiple of 4 bytes in 4..16G (K, M, G suffixes allowed)", opt, v);
  return (size_t)x;
}

/* A comma-separated list of distinct integers in lo..hi (--devices, --gpus;
 * MGPU_DEVICES's rule). */
int parse_list_opt(const char *opt, const char *v, long long lo, long long hi, const char *example, int *out) {
  char why[256];
  int n;
  if (blank_entry(v)) usage_error("%s '%s' is invalid: expected %s", opt, v, example);
  if (mgpu__parse_int_list(v, (int)lo, (int)hi, out, MGPU_MAX_DEVICES, &n, why, sizeof why) != 0) {
    if (strncmp(why, "entry ", 6) == 0) usage_error("%s %s", opt, why);
    usage_error("%s '%s' is invalid: %s", opt, v, why);
  }
  return n;
}
