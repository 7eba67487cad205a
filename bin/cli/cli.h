/* SPDX-License-Identifier: BSD-3-Clause */
/* cli.h: mgpu-run's command line (cli/), the top layer: options.c reads it
 * into opts_t (run/run.h) with parse.c's value parsers, and mgpu-run.c (main)
 * hands it to what runs. */
#ifndef MGPU_RUN_CLI_H
#define MGPU_RUN_CLI_H

#include "run/run.h"

#define TURNS_DEFAULT 3 /* --turns with --compare */
/* --max-run-time's default: a mode whose run would take longer is timed on a
 * prefix, so that --compare (four modes, six fixed splits and the ceiling,
 * each a warm-up and --repeat runs) stays within a minute or so. */
#define MAX_RUN_S_DEFAULT 3.0
#define COMPARE_S_DEFAULT 60.0 /* --compare-time */
/* --first-batch's runs: the first, the second, and four for the steady state. */
#define FIRST_BATCH_RUNS 6

/* options.c */
void options_parse(int argc, char **argv, opts_t *o);

/* parse.c: the library's rules for settings (lib/config.c), for flags. */
long long parse_ll_opt(const char *opt, const char *v, long long lo, long long hi);
double parse_double_opt(const char *opt, const char *v, double lo, double hi);
double parse_seconds_opt(const char *opt, const char *v, double hi, const char *zero);
bool parse_keyword(const char *v, const char *word);
mgpu_sched_t parse_mode(const char *v);
int parse_split(const char *v, double *out);
size_t parse_bytes_opt(const char *opt, const char *v);
int parse_list_opt(const char *opt, const char *v, long long lo, long long hi, const char *example, int *out);

#endif
