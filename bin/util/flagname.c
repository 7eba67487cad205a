/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flagname.c: the library names a setting in its messages by its MGPU_*
 * variable, whatever set it; where a flag of mgpu-run's command line set it
 * (--threads for MGPU_NUM_THREADS), the messages mgpu-run prints name the
 * flag, the word the user typed. A setting that the environment set keeps its
 * variable's name. The flags given are recorded once, as the command line is
 * read (cli/options.c), before any runtime starts.
 */
#include "util/util.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { MAX_NAMES = 16 };
static struct {
  const char *var, *flag;
} names[MAX_NAMES];
static int nnames;

void flagname_set(const char *var, const char *flag) {
  for (int i = 0; i < nnames; i++)
    if (!strcmp(names[i].var, var)) return;
  if (nnames < MAX_NAMES) names[nnames].var = var, names[nnames++].flag = flag;
}

static bool name_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* The flag of the variable that starts at p (a whole word), or NULL. */
static const char *flag_at(const char *msg, const char *p, size_t *len_p) {
  if (p > msg && (name_char(p[-1]) || (p[-1] >= 'a' && p[-1] <= 'z'))) return NULL;
  for (int i = 0; i < nnames; i++) {
    size_t len = strlen(names[i].var);
    if (!strncmp(p, names[i].var, len) && !name_char(p[len])) {
      *len_p = len;
      return names[i].flag;
    }
  }
  return NULL;
}

const char *flagname_apply(const char *msg) {
  static char buf[4096];
  size_t at = 0;
  for (const char *p = msg; *p && at + 1 < sizeof buf;) {
    size_t len;
    const char *flag = *p == 'M' ? flag_at(msg, p, &len) : NULL;
    if (!flag) {
      buf[at++] = *p++;
      continue;
    }
    p += len;
    bool value = *p == '=';
    p += value;
    at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", flag, value ? " " : "");
    if (at >= sizeof buf) at = sizeof buf - 1;
  }
  buf[at] = '\0';
  return buf;
}
