/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report_json.c: a batch workload's report as one JSON object (--json; the
 * fields are described in doc/json.md).
 */
#include "config.h"

#include <stdio.h>

#include "report/report.h"

/* One mode's result in "results". */
static void json_result(const result_t *r, bool last) {
  int nw = r->nw;
  printf("    {\"mode\": \"%s\", \"ran\": %s", r->mode, r->ran ? "true" : "false");
  if (!r->ran) {
    printf(", \"skipped\": \"%s\"}%s\n", r->skipped ? r->skipped : "interrupted", last ? "" : ",");
    return;
  }
  printf(", \"runs\": %d, \"wall_s\": %.6f, \"items_per_s\": %.3f, \"cpu_workers\": %d, \"reserve_workers\": %d, "
         "\"gpus_out\": %s, \"reserve_auto\": %s, \"chunks\": %llu, \"steals\": %llu, \"retries\": %llu",
         r->runs, r->wall_s, r->throughput, r->ncpu, r->reserve, r->st.gpus_out_batches ? "true" : "false",
         r->reserve_auto ? "true" : "false",
         (unsigned long long)r->st.chunks, (unsigned long long)r->st.steals, (unsigned long long)r->st.retries);
  if (r->prefix) printf(", \"prefix_items\": %zu", r->prefix);
  printf(", \"warmup_skipped\": %s", r->warm_skipped ? "true" : "false");
  printf(", \"host_steal\": ");
  double sh = steal_share(&r->steal);
  if (sh >= 0) printf("%.4f, \"workers\": [", sh);
  else printf("null, \"workers\": [");
  for (int i = 0; i < nw; i++) {
    const mgpu_worker_stats_t *s = &r->ws[i];
    printf("%s{\"kind\": \"%s\", \"device\": %d, \"items\": %llu, \"chunks\": %llu, \"steals\": %llu, \"retries\": %llu, "
           "\"busy_s\": %.6f, \"batch_cap\": %zu, \"staged_bytes\": %llu}",
           i ? ", " : "", s->kind == MGPU_WORKER_GPU ? "gpu" : "cpu", s->device, (unsigned long long)s->items,
           (unsigned long long)s->chunks, (unsigned long long)s->steals, (unsigned long long)s->retries, s->busy_s,
           s->batch_cap, (unsigned long long)s->staged_bytes);
  }
  printf("]");
  size_t shared = 0;
  for (int i = 0; i < r->nranks && r->rs; i++) shared += r->rs[i].share_count;
  if (r->nranks > 1 && r->rs && shared) {
    printf(", \"ranks\": [");
    for (int i = 0; i < r->nranks; i++) {
      const mgpu_rank_stats_t *k = &r->rs[i];
      printf("%s{\"rank\": %d, \"status\": \"%s\", \"cpu_workers\": %d, \"gpus\": %d, \"share_first\": %zu, "
             "\"share\": %zu, \"items\": %llu, \"steals_in\": %llu, \"items_in\": %llu, \"steals_out\": %llu, "
             "\"items_out\": %llu, \"bytes_moved\": %llu, \"busy_s\": %.6f, \"wall_s\": %.6f, \"rate\": %.3f}",
             i ? ", " : "", k->rank, mgpu_status_name(k->status), k->ncpu, k->ngpus, k->share_first, k->share_count,
             (unsigned long long)k->items, (unsigned long long)k->steals_in, (unsigned long long)k->items_in,
             (unsigned long long)k->steals_out, (unsigned long long)k->items_out, (unsigned long long)k->bytes_moved,
             k->busy_s, k->wall_s, k->rate);
    }
    printf("]");
  }
  printf("}%s\n", last ? "" : ",");
}

/* What ran and where: the version, the workload, every setting and the GPUs. */
static void json_setup(const opts_t *o, const work_t *w, const outcome_t *oc, mgpu_runtime_t *base) {
  printf("{\n  \"version\": \"%s\",\n  \"workload\": \"%s\",\n  \"items\": %zu,\n  \"repeat\": %d,\n", mgpu_version(),
         w->name, w->n, o->repeat);
  if (o->compare) printf("  \"rounds\": %d,\n", o->rounds);
  printf("  \"max_run_time\": %g,\n", o->max_run_s);
  if (work_intensity(w)) printf("  \"intensity\": %llu,\n", work_intensity(w));
  printf("  \"config\": {");
  mgpu_setting_t s = MGPU_SETTING_INIT;
  for (int i = 0; mgpu_info_setting(base, i, &s) == MGPU_OK; i++)
    printf("%s\"%s\": {\"value\": \"%s\", \"source\": \"%s\"}", i ? ", " : "", s.name, s.value, s.source);
  printf("},\n  \"devices\": [");
  for (int g = 0; g < oc->ngpu; g++) {
    mgpu_device_info_t d = MGPU_DEVICE_INFO_INIT;
    mgpu_device_info(base, g, &d);
    printf("%s{\"index\": %d, \"name\": \"%s\", \"sm_count\": %d, \"memory\": %zu, \"emulated\": %s}", g ? ", " : "",
           d.index, d.name, d.sm_count, d.total_mem, d.emulated ? "true" : "false");
  }
  printf("],\n  \"cpu_workers\": %d,\n  \"mpi_ranks\": %d,\n", oc->ncpu, mgpu_num_ranks(base));
}

/* One point of the JSON sweep; factor and ratio < 0: null (all on the GPUs). */
static void json_point(const char *mode, double factor, double ratio, double share, const result_t *r,
                       const char *bounded, int ngpu, bool last) {
  printf("      {\"mode\": \"%s\", ", mode);
  if (factor < 0) printf("\"factor\": null, \"ratio\": null");
  else printf("\"factor\": %.4g, \"ratio\": %.6g", factor, ratio);
  printf(", \"ran\": %s", r->ran ? "true" : "false");
  if (r->ran) {
    printf(", \"runs\": %d, \"wall_s\": %.6f, \"items_per_s\": %.3f, \"gpu_share\": %.4f, \"cpu_share\": %.4f, "
           "\"cpu_share_named\": %.4f",
           r->runs, r->wall_s, r->throughput, share, 1 - share, named_cpu_share(factor < 0 ? -1 : ratio, r, ngpu));
    if (r->prefix) printf(", \"prefix_items\": %zu", r->prefix);
  } else if (r->skipped) {
    printf(", \"skipped\": \"%s\"", r->skipped);
  }
  if (bounded) printf(", \"bounded\": \"%s\"", bounded);
  printf("}%s\n", last ? "" : ",");
}

/* "static_sweep" of the JSON report. */
static void sweep_json(const outcome_t *oc) {
  const sweep_t *s = &oc->sweep;
  const result_t *res = oc->res;
  if (s->skipped) {
    printf("  \"static_sweep\": {\"ran\": false, \"skipped\": \"%s\"},\n", s->skipped);
    return;
  }
  printf("  \"static_sweep\": {\"ran\": %s, \"ratio\": %.6g, \"points\": [\n", s->ran ? "true" : "false", s->ratio);
  int g = oc->ngpu;
  json_point("cpu", 0, 0, 0, &res[0], NULL, g, false);
  for (int i = 0; i < SWEEP_POINTS; i++) {
    if (i == SWEEP_POINTS / 2) json_point("static", 1, s->ratio, s->static_share, &res[2], NULL, g, false);
    json_point("sweep", s->factor[i], s->ratio * s->factor[i], s->share[i], &s->pt[i], s->bounded[i], g, false);
  }
  json_point("gpu", -1, -1, 1, &res[1], NULL, g, true);
  printf("    ],\n    \"best\": ");
  if (!s->best_mode) printf("null");
  else if (s->best_ratio < 0) printf("{\"mode\": \"gpu\", \"ratio\": null");
  else printf("{\"mode\": \"%s\", \"ratio\": %.6g", s->best_mode, s->best_ratio);
  if (s->best_mode) printf(", \"gpu_share\": %.4f, \"items_per_s\": %.3f}", s->best_share, s->best_tp);
  printf("\n  },\n");
}

/* "turns" of the JSON report. */
static void turns_json(const outcome_t *oc) {
  const turns_t *t = &oc->turns;
  if (t->skipped) {
    printf("  \"turns\": {\"ran\": false, \"skipped\": \"%s\"},\n", t->skipped);
    return;
  }
  printf("  \"turns\": {\"ran\": true, \"turns\": %d, \"best_items_per_s\": %.3f, \"steal_items_per_s\": %.3f, "
         "\"speedup_vs_best_static\": %.4f, \"by_turn\": [",
         t->n, t->best.throughput, t->steal.throughput, t->ratio);
  for (int k = 0; k < t->n; k++) printf("%s%.4f", k ? ", " : "", t->by_turn[k]);
  printf("]},\n");
}

/* "ceiling" of the JSON report, with its host copy. */
static void ceiling_json(const ceiling_t *c) {
  if (c->skipped) {
    printf("  \"ceiling\": {\"measured\": false, \"why\": \"%s\"},\n", c->skipped);
    return;
  }
  printf("  \"ceiling\": {\"measured\": true, \"wall_s\": %.6f, \"copy_s\": %.6f, \"items_per_s\": %.3f, "
         "\"differs\": %s",
         c->wall_s, c->copy_s, c->throughput, c->differs ? "true" : "false");
  if (c->prefix) printf(", \"prefix_items\": %zu", c->prefix);
  if (c->host_skipped) printf(", \"host_copy\": {\"measured\": false, \"why\": \"%s\"}", c->host_skipped);
  else if (c->host_s > 0)
    printf(", \"host_copy\": {\"measured\": true, \"wall_s\": %.9f, \"bytes\": %zu, \"threads\": %d, "
           "\"gb_per_s\": %.3f, \"items_per_s\": %.3f}",
           c->host_s, c->host_bytes, c->host_threads, (double)c->host_bytes / c->host_s / 1e9,
           (double)c->items / c->host_s);
  printf("},\n");
}

/* One piece that met a bound, in "bound"'s "bounded". */
static void json_bounded(int *n, const char *what, const char *why) {
  if (why) printf("%s{\"what\": \"%s\", \"why\": \"%s\"}", (*n)++ ? ", " : "", what, why);
}

/* "bound" of the JSON report: the comparison's bound and what met it. */
static void bound_json(const outcome_t *oc) {
  const bound_t *b = &oc->bound;
  printf("  \"bound\": {\"run_s\": %g, \"grace\": %g, \"sizing_runs\": %d, \"runs\": %d, \"sum_s\": %g, "
         "\"limit_s\": %g, \"total_s\": %g, \"took_s\": %.3f, \"warm_ups_cut\": %d, \"bounded\": [",
         b->run_s, b->grace, b->sizing, b->runs, b->sum_s, b->limit_s, b->total_s, b->took_s, b->warm_cut);
  int n = 0;
  for (int m = 0; m < 4; m++) json_bounded(&n, oc->res[m].mode, oc->mode_bounded[m]);
  for (int i = 0; i < SWEEP_POINTS; i++) json_bounded(&n, oc->sweep.pt[i].mode, oc->sweep.bounded[i]);
  json_bounded(&n, "turns", oc->turns.bounded);
  json_bounded(&n, "ceiling", oc->ceiling.bounded);
  printf("]},\n");
}

static void json_compare(const outcome_t *oc) {
  printf("  \"efficiency\": %.4f,\n  \"speedup_vs_static\": %.4f,\n  \"speedup_vs_best_static\": %.4f,\n",
         oc->e, oc->speedup, oc->vs_best);
  bound_json(oc);
  sweep_json(oc);
  turns_json(oc);
  printf("  \"efficiency_by_round\": [");
  for (int k = 0; k < oc->ne; k++) printf("%s%.4f", k ? ", " : "", oc->e_round[k]);
  printf("],\n  \"speedup_vs_static_by_round\": [");
  for (int k = 0; k < oc->nsp; k++) printf("%s%.4f", k ? ", " : "", oc->sp_round[k]);
  printf("],\n");
}

static void json_scaling(const opts_t *o, const outcome_t *oc) {
  printf("  \"scaling\": [");
  const result_t *r0 = NULL;
  int k0 = 0;
  for (int i = 0; i < oc->nsres; i++) {
    const result_t *r = &oc->sres[i];
    if (!r0 && r->ran) r0 = r, k0 = o->gpus_list[i];
    double sp = r0 && r->ran && r0->throughput > 0 ? r->throughput / r0->throughput : 0;
    printf("%s{\"gpus\": %d, \"ran\": %s, \"wall_s\": %.6f, \"items_per_s\": %.3f, \"speedup\": %.4f, "
           "\"efficiency\": %.4f",
           i ? ", " : "", o->gpus_list[i], r->ran ? "true" : "false", r->wall_s, r->throughput, sp,
           k0 ? sp / ((double)o->gpus_list[i] / k0) : 0);
    if (r->prefix) printf(", \"prefix_items\": %zu", r->prefix);
    printf("}");
  }
  printf("],\n");
}

/* "first_batch" of the JSON report (--first-batch): its mode's runs in order,
 * to six digits (a small batch runs in microseconds). */
static void first_json(const outcome_t *oc) {
  const result_t *r = &oc->res[0];
  double first, steady, ratio;
  if (oc->nres < 1 || !r->ran || !first_figures(r, &first, &steady, &ratio)) {
    printf("  \"first_batch\": {\"measured\": false, \"runs\": [");
  } else {
    printf("  \"first_batch\": {\"measured\": true, \"mode\": \"%s\", \"first_s\": %.6g, \"steady_s\": %.6g, "
           "\"ratio\": %.6g, \"stored_model\": %s, \"runs\": [",
           r->mode, first, steady, ratio, r->stored ? "true" : "false");
  }
  for (int i = 0; i < r->nseq; i++) printf("%s%.6g", i ? ", " : "", r->seq[i]);
  printf("]},\n");
}

void report_json(const opts_t *o, const work_t *w, const outcome_t *oc, mgpu_runtime_t *base) {
  json_setup(o, w, oc, base);
  printf("  \"results\": [\n");
  for (int i = 0; i < oc->nres; i++) json_result(&oc->res[i], i == oc->nres - 1);
  printf("  ],\n");
  if (o->compare) json_compare(oc);
  if (oc->nsres) json_scaling(o, oc);
  if (oc->ceiling.asked) ceiling_json(&oc->ceiling);
  if (o->first_batch) first_json(oc);
  printf("  \"verification\": {\"enabled\": %s, \"checked\": %zu, \"failed\": %lld}\n}\n", o->verify ? "true" : "false",
         oc->vd.checked, oc->vd.bad);
}
