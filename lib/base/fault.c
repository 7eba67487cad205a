/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault.c: the test-only fault plan of MGPU_FAULT_INJECT, which makes chosen GPU
 * operations fail, never end or pause so that recovery and races can be tested
 * on emulated and real devices.
 */
#include "base/base.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy the field [p, p + len) with its blanks trimmed. */
static void field(char *dst, size_t cap, const char *p, size_t len) {
  while (len > 0 && isspace((unsigned char)*p)) p++, len--;
  while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
  if (len >= cap) len = cap - 1;
  memcpy(dst, p, len);
  dst[len] = '\0';
}

/* The kinds' names, in the order of mgpu_fault_kind_t. */
static const char *const kind_names[] = {"launch", "alloc", "const", "props", "hang", "hangcoll", "stall"};

/* Entry KIND:GPU:K of a plan (blanks around each part allowed) into the
 * plan's next slot. 0, or -1 with why. */
static int parse_entry(const char *item, mgpu__fault_plan_t *plan, char *why, size_t whylen) {
  char kind[16], gpu[32], k[32];
  const char *c1 = memchr(item, ':', strlen(item));
  const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c1 || !c2 || strchr(c2 + 1, ':') || (size_t)(c1 - item) >= sizeof kind ||
      (size_t)(c2 - c1 - 1) >= sizeof gpu || strlen(c2 + 1) >= sizeof k) {
    snprintf(why, whylen, "entry '%s' is not KIND:GPU:K", item);
    return -1;
  }
  field(kind, sizeof kind, item, (size_t)(c1 - item));
  field(gpu, sizeof gpu, c1 + 1, (size_t)(c2 - c1 - 1));
  field(k, sizeof k, c2 + 1, strlen(c2 + 1));
  if (plan->n == MGPU_FAULT_MAX) {
    snprintf(why, whylen, "more than %d entries", MGPU_FAULT_MAX);
    return -1;
  }
  int fk = MGPU_FAULT_LAUNCH;
  while (fk <= MGPU_FAULT_STALL && !mgpu__parse_keyword(kind, kind_names[fk])) fk++;
  if (fk > MGPU_FAULT_STALL) {
    snprintf(why, whylen, "unknown kind '%s' (launch, alloc, const, props, hang, hangcoll or stall)", kind);
    return -1;
  }
  long long g, kk;
  if (mgpu__parse_ll(gpu, 0, MGPU_MAX_DEVICES - 1, &g) != 0) {
    snprintf(why, whylen, "GPU '%s' is not an integer in 0..%d", gpu, MGPU_MAX_DEVICES - 1);
    return -1;
  }
  if (mgpu__parse_keyword(k, "all")) kk = -1;
  else if (mgpu__parse_ll(k, 0, MGPU_FAULT_K_MAX, &kk) != 0) {
    snprintf(why, whylen, "K '%s' is not 'all' or an integer >= 0", k);
    return -1;
  }
  plan->f[plan->n].kind = (mgpu_fault_kind_t)fk;
  plan->f[plan->n].gpu = (int)g;
  plan->f[plan->n].k = kk;
  plan->n++;
  return 0;
}

int mgpu__fault_parse(const char *spec, mgpu__fault_plan_t *plan, char *why, size_t whylen) {
  char item[512];
  memset(plan, 0, sizeof *plan);
  if (!spec || strlen(spec) >= sizeof item) {
    snprintf(why, whylen, "the plan is too long");
    return -1;
  }
  field(item, sizeof item, spec, strlen(spec));
  if (!*item) {
    snprintf(why, whylen, "the plan is empty");
    return -1;
  }
  /* Entries are split by hand: strtok would skip empty ones, which the other
   * lists (MGPU_DEVICES, MGPU_TENSOR_SPLIT) refuse. */
  const char *p = spec;
  for (int items = 1;; items++) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    field(item, sizeof item, p, len);
    if (!*item) {
      snprintf(why, whylen, "entry %d is empty", items);
      return -1;
    }
    if (parse_entry(item, plan, why, whylen) != 0) return -1;
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
}

int mgpu__fault_check_gpus(const mgpu__fault_plan_t *plan, int ngpus, char *why, size_t whylen) {
  for (int i = 0; i < plan->n; i++) {
    if (plan->f[i].gpu < ngpus) continue;
    char k[32] = "all";
    if (plan->f[i].k >= 0) snprintf(k, sizeof k, "%lld", plan->f[i].k);
    char range[64] = "";
    if (ngpus > 0) snprintf(range, sizeof range, ": expected GPU numbers in 0..%d", ngpus - 1);
    if (ngpus > 0)
      snprintf(why, whylen, "entry '%s:%d:%s' names GPU %d, but the runtime uses %d GPU%s%s", kind_names[plan->f[i].kind],
               plan->f[i].gpu, k, plan->f[i].gpu, ngpus, ngpus == 1 ? "" : "s", range);
    else
      snprintf(why, whylen, "entry '%s:%d:%s' names GPU %d, but the runtime uses no GPU", kind_names[plan->f[i].kind],
               plan->f[i].gpu, k, plan->f[i].gpu);
    return -1;
  }
  return 0;
}

bool mgpu__fault_hit(const mgpu__fault_plan_t *plan, mgpu_fault_kind_t kind, int gpu, long long k) {
  for (int i = 0; i < plan->n; i++)
    if (plan->f[i].kind == kind && plan->f[i].gpu == gpu && (plan->f[i].k == -1 || plan->f[i].k == k)) return true;
  return false;
}
