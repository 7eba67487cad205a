/*
 * fault.c: the test-only fault plan of MGPU_FAULT_INJECT, which makes chosen GPU
 * operations fail so that recovery can be tested on emulated and real devices.
 */
#include "mgpurt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mgpu__fault_parse(const char *spec, mgpu__fault_plan_t *plan, char *why, size_t whylen) {
  char buf[512];
  memset(plan, 0, sizeof *plan);
  if (!spec || strlen(spec) >= sizeof buf) {
    snprintf(why, whylen, "the plan is too long");
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", spec);
  char *save = NULL;
  int items = 0;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    items++;
    char kind[16], gpu[32], k[32], extra;
    if (sscanf(tok, " %15[a-z]:%31[^:]:%31[^: ] %c", kind, gpu, k, &extra) != 3) {
      snprintf(why, whylen, "item '%s' is not KIND:GPU:K", tok);
      return -1;
    }
    if (plan->n == MGPU_FAULT_MAX) {
      snprintf(why, whylen, "more than %d items", MGPU_FAULT_MAX);
      return -1;
    }
    mgpu_fault_kind_t fk;
    if (strcmp(kind, "launch") == 0) fk = MGPU_FAULT_LAUNCH;
    else if (strcmp(kind, "alloc") == 0) fk = MGPU_FAULT_ALLOC;
    else if (strcmp(kind, "const") == 0) fk = MGPU_FAULT_CONST;
    else if (strcmp(kind, "props") == 0) fk = MGPU_FAULT_PROPS;
    else {
      snprintf(why, whylen, "unknown kind '%s' (launch, alloc, const or props)", kind);
      return -1;
    }
    long long g, kk;
    if (mgpu__parse_ll(gpu, 0, MGPU_MAX_DEVICES - 1, &g) != 0) {
      snprintf(why, whylen, "GPU '%s' is not an integer in 0..%d", gpu, MGPU_MAX_DEVICES - 1);
      return -1;
    }
    if (strcmp(k, "all") == 0) kk = -1;
    else if (mgpu__parse_ll(k, 0, 1LL << 40, &kk) != 0) {
      snprintf(why, whylen, "K '%s' is not 'all' or an integer >= 0", k);
      return -1;
    }
    plan->f[plan->n].kind = fk;
    plan->f[plan->n].gpu = (int)g;
    plan->f[plan->n].k = kk;
    plan->n++;
  }
  if (items == 0) {
    snprintf(why, whylen, "the plan is empty");
    return -1;
  }
  return 0;
}

bool mgpu__fault_hit(const mgpu__fault_plan_t *plan, mgpu_fault_kind_t kind, int gpu, long long k) {
  for (int i = 0; i < plan->n; i++)
    if (plan->f[i].kind == kind && plan->f[i].gpu == gpu && (plan->f[i].k == -1 || plan->f[i].k == k)) return true;
  return false;
}
