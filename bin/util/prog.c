/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prog.c: the program's name in its messages, and the usage error that every
 * part of mgpu-run reports a bad command line with.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/util.h"

const char *const prog = "mgpu-run";

void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '%s --help'.\n", prog);
  va_end(ap);
  exit(EXIT_USAGE);
}
