/* plot.h: mgpu-run's SVG picture of a run (plot.c). */
#ifndef MGPU_RUN_PLOT_H
#define MGPU_RUN_PLOT_H

#include "mgpurt.h"

/* Write a self-contained SVG: a timeline (a lane per worker and per GPU stream,
 * chunks coloured by batch, copies and steals visible) and bars of items and
 * busy time per worker. Returns 0, or -1 with errno set. */
int mgpu_run_plot(const char *path, mgpu_runtime_t *rt, const mgpu_stats_t *st, const char *title);

#endif
