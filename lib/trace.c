/*
 * trace.c: MGPU_TRACE, a Chrome trace-event JSON file that Perfetto and
 * chrome://tracing open. Each worker appends events to its own buffer (no
 * lock: only that worker writes it); the file is written at mgpu_finalize,
 * after the workers stopped. Timestamps are CLOCK_MONOTONIC microseconds from
 * mgpu_init; device times are moved onto that clock by each GPU worker.
 */
#include "mgpurt_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mgpu__trace_add(mgpu_runtime_t *rt, mgpu__worker_t *w, const mgpu__tev_t *ev) {
  if (!rt->trace_on) return;
  if (w->ntrace == w->trace_cap) {
    size_t cap = w->trace_cap ? 2 * w->trace_cap : 1024;
    mgpu__tev_t *p = realloc(w->trace, cap * sizeof *p);
    if (!p) {
      /* Tracing must not break the run: further events are dropped, counted. */
      w->trace_dropped++;
      return;
    }
    w->trace = p;
    w->trace_cap = cap;
  }
  w->trace[w->ntrace++] = *ev;
}

mgpu_status_t mgpu__trace_open(mgpu_runtime_t *rt) {
  if (!rt->cfg.v.trace) return MGPU_OK;
  /* Open now, so a bad path is an error of mgpu_init, not a lost trace. */
  rt->trace_fp = fopen(rt->cfg.v.trace, "w");
  if (!rt->trace_fp)
    return mgpu__fail(MGPU_EINVAL, "MGPU_TRACE='%s': cannot open the file for writing: %s", rt->cfg.v.trace,
                      strerror(errno));
  rt->trace_on = 1;
  return MGPU_OK;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void meta(FILE *f, bool *first, int pid, int tid, const char *what, const char *name) {
  fprintf(f, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", *first ? "" : ",", pid, tid,
          what);
  json_string(f, name);
  fputs("}}", f);
  *first = false;
}

static const char *const kind_name[] = {"chunk", "h2d", "kernel", "d2h", "issue", "steal", "retry", "alloc", "pin"};

void mgpu__trace_close(mgpu_runtime_t *rt) {
  if (!rt->trace_fp) return;
  FILE *f = rt->trace_fp;
  bool first = true;
  uint64_t dropped = 0;
  fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
  meta(f, &first, 1, 0, "process_name", "CPU workers");
  meta(f, &first, 2, 0, "process_name", "GPU host threads");
  for (int i = 0; i < rt->nworkers; i++) {
    char name[64];
    mgpu__worker_t *w = &rt->workers[i];
    if (w->kind == MGPU_WORKER_CPU) {
      snprintf(name, sizeof name, "CPU worker %d", i);
      meta(f, &first, 1, i, "thread_name", name);
    } else {
      snprintf(name, sizeof name, "GPU %d (device %d) host thread", w->gpu, rt->gpu_index[w->gpu]);
      meta(f, &first, 2, w->gpu, "thread_name", name);
      snprintf(name, sizeof name, "GPU %d (device %d) streams", w->gpu, rt->gpu_index[w->gpu]);
      meta(f, &first, 3 + w->gpu, 0, "process_name", name);
      for (int s = 0; s < rt->cfg.v.streams_per_gpu; s++) {
        snprintf(name, sizeof name, "stream %d", s);
        meta(f, &first, 3 + w->gpu, s, "thread_name", name);
      }
    }
  }
  for (int i = 0; i < rt->nworkers; i++) {
    mgpu__worker_t *w = &rt->workers[i];
    dropped += w->trace_dropped;
    for (size_t e = 0; e < w->ntrace; e++) {
      const mgpu__tev_t *ev = &w->trace[e];
      int pid, tid;
      if (w->kind == MGPU_WORKER_CPU) pid = 1, tid = i;
      else if (ev->stream >= 0) pid = 3 + w->gpu, tid = ev->stream;
      else pid = 2, tid = w->gpu;
      double ts = 1e6 * (ev->t0 - rt->t_init), dur = 1e6 * (ev->t1 - ev->t0);
      bool instant = ev->kind == MGPU_TEV_STEAL || ev->kind == MGPU_TEV_RETRY;
      fprintf(f, ",\n{\"name\":");
      if (ev->kind == MGPU_TEV_CHUNK || ev->kind == MGPU_TEV_KERNEL || ev->kind == MGPU_TEV_ISSUE) {
        json_string(f, ev->name ? ev->name : "kernel");
      } else {
        json_string(f, kind_name[ev->kind]);
      }
      fprintf(f, ",\"cat\":\"%s\",\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f", kind_name[ev->kind],
              instant ? "i" : "X", pid, tid, ts);
      if (instant) fputs(",\"s\":\"t\"", f);
      else fprintf(f, ",\"dur\":%.3f", dur > 0 ? dur : 0);
      fprintf(f, ",\"args\":{\"batch\":%llu,\"first\":%zu,\"items\":%zu", (unsigned long long)ev->batch, ev->first,
              ev->count);
      if (ev->bytes) {
        fprintf(f, ",\"bytes\":%zu", ev->bytes);
        if (dur > 0) fprintf(f, ",\"GB/s\":%.3f", (double)ev->bytes / (dur * 1e-6) / 1e9);
      }
      if (ev->kind == MGPU_TEV_STEAL) fprintf(f, ",\"victim\":%d", ev->other);
      fputs("}}", f);
    }
  }
  fputs("\n]}\n", f);
  if (fclose(f) != 0) mgpu__log(MGPU_LOG_ERROR, "MGPU_TRACE='%s': writing the trace failed", rt->cfg.v.trace);
  else
    mgpu__log(MGPU_LOG_INFO, "trace written to %s", rt->cfg.v.trace);
  if (dropped)
    mgpu__log(MGPU_LOG_WARN, "MGPU_TRACE: %llu events were dropped (out of memory)", (unsigned long long)dropped);
  rt->trace_fp = NULL;
}

MGPU_API size_t mgpu_trace_events(const mgpu_runtime_t *rt, mgpu_trace_event_t *out, size_t max) {
  if (mgpu__check_rt(rt, "mgpu_trace_events") != MGPU_OK || !rt->trace_on) return 0;
  size_t n = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    const mgpu__worker_t *w = &rt->workers[i];
    for (size_t e = 0; e < w->ntrace; e++, n++) {
      if (!out || n >= max) continue;
      const mgpu__tev_t *ev = &w->trace[e];
      out[n] = (mgpu_trace_event_t){.worker = i, .stream = ev->stream, .kind = kind_name[ev->kind],
                                    .kernel = ev->name ? ev->name : "", .batch = ev->batch, .first = ev->first,
                                    .count = ev->count, .bytes = ev->bytes, .t0 = ev->t0 - rt->t_init,
                                    .t1 = ev->t1 - rt->t_init};
    }
  }
  return n;
}

void mgpu__trace_free(mgpu__worker_t *w) {
  free(w->trace);
  w->trace = NULL;
  w->ntrace = w->trace_cap = 0;
}
