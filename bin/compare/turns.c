/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * turns.c: --compare's turns of steal and the best fixed split. The sweep
 * picks the fastest of nine figures, each of a runtime of its own, and on a
 * machine whose runtimes differ in speed the fastest figure is also the
 * luckiest: set against it, steal loses by the spread between runtimes. So
 * after steal, the best fixed split and steal run again, each with a fresh
 * runtime timed as a mode is, by turns (the order reversed from one turn to
 * the next, steal last so that its run is the one verified), and their ratio
 * is the median of steal's timed runs over the best split's. Each runtime is
 * timed within the bounds of bound.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "compare/compare.h"

/* A turn's run: the runtime's timed runs added to r, on the prefix its mode
 * chose (so the warm-up does not decide again), within the bounds b; returns
 * why a bound stopped it, or NULL. */
static const char *run_one(work_t *w, const opts_t *o, mgpu_runtime_t *rt, result_t *r, const result_t *from,
                           bound_t *b) {
  r->sized = true;
  r->prefix = from->prefix;
  const char *why = bound_measure(rt, w, o, r, r->mode, b);
  finish_runtime(w, rt);
  return why;
}

void run_turns(work_t *w, const opts_t *o, outcome_t *oc) {
  turns_t *t = &oc->turns;
  t->steal.mode = "steal";
  if (o->turns <= 0) {
    t->skipped = "--turns 0";
    return;
  }
  if (interrupted) {
    t->skipped = "interrupted";
    return;
  }
  /* The sweep has chosen its best (run_sweep, before steal). */
  if (!oc->res[3].ran || !oc->sweep.best_mode) {
    t->skipped = oc->sweep.skipped ? oc->sweep.skipped : "steal or the sweep did not run";
    return;
  }
  /* A turn that meets a bound ends them: the turns before it give the ratio. */
  for (int k = 0; k < o->turns && !interrupted && !t->bounded; k++) {
    /* The last turn runs the best split first, and each turn before it the
     * other way round. */
    bool best_first = (o->turns - 1 - k) % 2 == 0;
    for (int j = 0; j < 2 && !interrupted && !t->bounded; j++) {
      if (bound_reached(&oc->bound)) {
        t->bounded = bound_end_why;
      } else if ((j == 0) == best_first) {
        const result_t *from = NULL;
        mgpu_runtime_t *rt = start_best_split(o, oc, &from);
        if (!rt) {
          t->skipped = "the best fixed split cannot be set up again";
          return;
        }
        t->best.mode = from->mode;
        t->bounded = run_one(w, o, rt, &t->best, from, &oc->bound);
      } else {
        t->bounded = run_one(w, o, start_runtime(o, MGPU_SCHED_STEAL, 0, false), &t->steal, &oc->res[3], &oc->bound);
      }
    }
  }
  t->n = ratio_by_round(&t->steal, &t->best, NULL, t->by_turn);
  if (t->n > 0 && t->best.throughput > 0) t->ratio = t->steal.throughput / t->best.throughput;
  else t->skipped = t->bounded ? t->bounded : "interrupted";
}
