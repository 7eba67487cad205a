/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace.c: MGPU_TRACE, a Chrome trace-event JSON file that Perfetto and
 * chrome://tracing open. Each worker appends events to its own buffer (no
 * lock: only that worker writes it); the file is written at mgpu_finalize,
 * after the workers stopped. Timestamps are CLOCK_MONOTONIC microseconds from
 * mgpu_init; device times are moved onto that clock by each GPU worker.
 */
#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The live runtimes that trace, linked through rt->trace_next, so that two
 * never write one file (each writes the whole file at its mgpu_finalize). A
 * file is known by its device and inode, which every name of it shares; its
 * open descriptor keeps the inode from being reused while the runtime lives. */
static pthread_mutex_t tracing_lock = PTHREAD_MUTEX_INITIALIZER; /* MGPU_LK_LEAF */
static mgpu_runtime_t *tracing;                                  /* tracing_lock */

/* Enter rt for its file, unless another live runtime writes that file. */
static bool tracing_enter(mgpu_runtime_t *rt, const struct stat *sb) {
  bool taken = false;
  MGPU_LOCK(&tracing_lock, MGPU_LK_LEAF);
  for (const mgpu_runtime_t *o = tracing; o && !taken; o = o->trace_next)
    taken = o->trace_dev == sb->st_dev && o->trace_ino == sb->st_ino;
  if (!taken) {
    rt->trace_dev = sb->st_dev;
    rt->trace_ino = sb->st_ino;
    rt->trace_next = tracing;
    tracing = rt;
  }
  MGPU_UNLOCK(&tracing_lock);
  return !taken;
}

static void tracing_leave(mgpu_runtime_t *rt) {
  MGPU_LOCK(&tracing_lock, MGPU_LK_LEAF);
  for (mgpu_runtime_t **p = &tracing; *p; p = &(*p)->trace_next)
    if (*p == rt) {
      *p = rt->trace_next;
      break;
    }
  MGPU_UNLOCK(&tracing_lock);
  rt->trace_next = NULL;
}

bool mgpu__trace_expand(const char *pat, int rank, char *out, size_t len) {
  size_t o = 0;
  char host[256] = "";
  for (const char *q = pat; *q; q++) {
    char part[300];
    if (*q != '%') part[0] = *q, part[1] = 0;
    else {
      q++;
      if (*q == 'r') snprintf(part, sizeof part, "%d", rank);
      else if (*q == 'p') snprintf(part, sizeof part, "%ld", (long)getpid());
      else if (*q == 'h') {
        if (!host[0] && gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
        snprintf(part, sizeof part, "%s", host);
      } else part[0] = '%', part[1] = 0; /* %%, the only other one mgpu__trace_pattern_ok lets by */
      if (!*q) break;
    }
    size_t k = strlen(part);
    if (o + k >= len) return false;
    memcpy(out + o, part, k);
    o += k;
  }
  out[o] = 0;
  return true;
}

/* Append ev to a growing buffer; false (and the event dropped) out of memory:
 * tracing must not break the run. */
static bool tev_push(mgpu__tev_t **buf, size_t *n, size_t *cap, const mgpu__tev_t *ev) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 1024;
    mgpu__tev_t *p = realloc(*buf, c * sizeof *p);
    if (!p) return false;
    *buf = p;
    *cap = c;
  }
  (*buf)[(*n)++] = *ev;
  return true;
}

void mgpu__trace_add(mgpu_runtime_t *rt, mgpu__worker_t *w, const mgpu__tev_t *ev) {
  if (rt->trace_on && !tev_push(&w->trace, &w->ntrace, &w->trace_cap, ev)) w->trace_dropped++;
}

void mgpu__trace_batch(mgpu_runtime_t *rt, const mgpu__batch_t *b) {
  if (!rt->trace_on || b->task) return;
  mgpu__tev_t ev = {.t0 = b->t_start, .t1 = b->t_end, .kind = MGPU_TEV_BATCH, .stream = -1, .other = -1,
                    .name = b->kernel.name, .batch = b->id, .first = 0, .count = b->desc.n};
  if (!tev_push(&rt->btrace, &rt->nbtrace, &rt->btrace_cap, &ev)) rt->btrace_dropped++;
}

const char *mgpu__trace_name(const mgpu_runtime_t *rt, char *buf, size_t len) {
  if (strcmp(rt->cfg.v.trace, rt->trace_file) == 0) snprintf(buf, len, "MGPU_TRACE='%s'", rt->trace_file);
  else snprintf(buf, len, "MGPU_TRACE='%s' ('%s')", rt->cfg.v.trace, rt->trace_file);
  return buf;
}

mgpu_status_t mgpu__trace_open(mgpu_runtime_t *rt, int rank) {
  const char *pat = rt->cfg.v.trace;
  if (!pat) return MGPU_OK;
  if (!mgpu__trace_expand(pat, rank, rt->trace_file, sizeof rt->trace_file))
    return mgpu__fail(MGPU_EINVAL, "MGPU_TRACE='%s': the path with its substitutions is over %zu characters", pat,
                      sizeof rt->trace_file - 1);
  const char *path = rt->trace_file;
  char name[2200];
  mgpu__trace_name(rt, name, sizeof name);
  /* Open now, so a bad path is an error of mgpu_init, not a lost trace. The
   * file is cut only when the trace is written (mgpu__trace_close): an
   * mgpu_init that fails later, here or on another MPI rank, leaves it as it
   * was. Nonblocking, for a FIFO that no process reads would hold
   * mgpu_init for good; the trace's writes block as usual. */
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    if (err == ENXIO)
      return mgpu__fail(MGPU_EINVAL, "%s: the file is a FIFO that no process has open for reading: start its "
                        "reader first, or give a regular file", name);
    return mgpu__fail(MGPU_EINVAL, "%s: cannot open the file for writing: %s", name, strerror(err));
  }
  if (!tracing_enter(rt, &sb)) {
    close(fd);
    return mgpu__fail(MGPU_EINVAL, "%s: another live runtime of this process traces to this file, and "
                                   "each writes the whole file at its mgpu_finalize: expected a file of this "
                                   "runtime's own (mgpu_config_t.trace), or the other runtime finalized first",
                      name);
  }
  if (!(rt->trace_fp = fdopen(fd, "w"))) {
    int err = errno;
    close(fd);
    tracing_leave(rt);
    return mgpu__fail(MGPU_EINVAL, "%s: cannot open the file for writing: %s", name, strerror(err));
  }
  rt->trace_on = 1;
  return MGPU_OK;
}

void mgpu__trace_discard(mgpu_runtime_t *rt) {
  if (!rt->trace_fp) return;
  fclose(rt->trace_fp);
  rt->trace_fp = NULL;
  tracing_leave(rt);
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

static const char *const kind_name[] = {"chunk", "h2d", "kernel",  "d2h",   "issue",   "steal",
                                        "retry", "alloc", "pin",   "unstage", "batch", "handback"};

/* The trace's processes: the CPU workers, the GPU host threads, then GPU g's
 * streams at PID_STREAMS + g, and the batches after the last GPU's. */
enum { PID_CPU = 1, PID_HOST = 2, PID_STREAMS = 3 };

static void write_event(FILE *f, const mgpu_runtime_t *rt, const mgpu__tev_t *ev, int pid, int tid) {
  double ts = 1e6 * (ev->t0 - rt->t_init), dur = 1e6 * (ev->t1 - ev->t0);
  bool instant = ev->kind == MGPU_TEV_STEAL || ev->kind == MGPU_TEV_RETRY || ev->kind == MGPU_TEV_HANDBACK;
  fprintf(f, ",\n{\"name\":");
  if (ev->kind == MGPU_TEV_CHUNK || ev->kind == MGPU_TEV_KERNEL || ev->kind == MGPU_TEV_ISSUE ||
      ev->kind == MGPU_TEV_BATCH) {
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

static int cmp_t0(const void *a, const void *b) {
  double x = ((const mgpu__tev_t *)a)->t0, y = ((const mgpu__tev_t *)b)->t0;
  return (x > y) - (x < y);
}

/* Batches on their own tracks, one lane per batch in flight at once: a viewer
 * draws the slices of one track nested or apart, never overlapping. Their
 * process comes after the GPUs' (pid 0 is the kernel's idle task to Perfetto)
 * and is sorted first. */
static void write_batches(FILE *f, bool *first, mgpu_runtime_t *rt) {
  if (rt->nbtrace == 0) return;
  qsort(rt->btrace, rt->nbtrace, sizeof *rt->btrace, cmp_t0);
  enum { LANES = 64 };
  double lane_end[LANES];
  int nlanes = 0;
  const int pid = PID_STREAMS + rt->ngpus;
  meta(f, first, pid, 0, "process_name", "Batches");
  fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":-1}}", pid);
  for (size_t e = 0; e < rt->nbtrace; e++) {
    const mgpu__tev_t *ev = &rt->btrace[e];
    int l = 0;
    while (l < nlanes && lane_end[l] > ev->t0) l++;
    if (l == LANES) l = LANES - 1; /* more at once than lanes: the last one overlaps */
    if (l == nlanes) {
      char name[32];
      snprintf(name, sizeof name, "batches %d", l);
      meta(f, first, pid, l, "thread_name", name);
      nlanes++;
    }
    lane_end[l] = ev->t1;
    write_event(f, rt, ev, pid, l);
  }
}

/* The names of the trace's processes and of the workers' tracks. */
static void write_tracks(FILE *f, bool *first, const mgpu_runtime_t *rt) {
  meta(f, first, PID_CPU, 0, "process_name", "CPU workers");
  meta(f, first, PID_HOST, 0, "process_name", "GPU host threads");
  for (int i = 0; i < rt->nworkers; i++) {
    char name[64];
    const mgpu__worker_t *w = &rt->workers[i];
    if (w->kind == MGPU_WORKER_CPU) {
      snprintf(name, sizeof name, "CPU worker %d", i);
      meta(f, first, PID_CPU, i, "thread_name", name);
    } else {
      snprintf(name, sizeof name, "GPU %d (device %d) host thread", w->gpu, rt->gpu_index[w->gpu]);
      meta(f, first, PID_HOST, w->gpu, "thread_name", name);
      snprintf(name, sizeof name, "GPU %d (device %d) streams", w->gpu, rt->gpu_index[w->gpu]);
      meta(f, first, PID_STREAMS + w->gpu, 0, "process_name", name);
      for (int s = 0; s < rt->cfg.v.streams_per_gpu; s++) {
        snprintf(name, sizeof name, "stream %d", s);
        meta(f, first, PID_STREAMS + w->gpu, s, "thread_name", name);
      }
    }
  }
}

/* Every worker's events on its track; returns the events they dropped. */
static uint64_t write_workers(FILE *f, const mgpu_runtime_t *rt) {
  uint64_t dropped = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    const mgpu__worker_t *w = &rt->workers[i];
    dropped += w->trace_dropped;
    for (size_t e = 0; e < w->ntrace; e++) {
      const mgpu__tev_t *ev = &w->trace[e];
      if (w->kind == MGPU_WORKER_CPU) write_event(f, rt, ev, PID_CPU, i);
      else if (ev->stream >= 0) write_event(f, rt, ev, PID_STREAMS + w->gpu, ev->stream);
      else write_event(f, rt, ev, PID_HOST, w->gpu);
    }
  }
  return dropped;
}

mgpu_status_t mgpu__trace_close(mgpu_runtime_t *rt) {
  if (!rt->trace_fp) return MGPU_OK;
  FILE *f = rt->trace_fp;
  bool first = true;
  /* A device or a pipe has no length to cut. */
  struct stat sb;
  int cut = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) ? ftruncate(fileno(f), 0) : 0;
  int cut_err = cut ? errno : 0;
  fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
  write_tracks(f, &first, rt);
  write_batches(f, &first, rt);
  uint64_t dropped = rt->btrace_dropped + write_workers(f, rt);
  fputs("\n]}\n", f);
  /* A full disk shows at the last flush or only as the stream's error flag. */
  int werr = cut_err ? cut_err : ferror(f) ? (errno ? errno : EIO) : 0;
  if (fclose(f) != 0 && !werr) werr = errno ? errno : EIO;
  mgpu_status_t st = MGPU_OK;
  char name[2200];
  if (werr)
    st = mgpu__fail(MGPU_ESYSTEM, "%s: writing the trace failed: %s", mgpu__trace_name(rt, name, sizeof name),
                    strerror(werr));
  else
    mgpu__log(MGPU_LOG_INFO, "trace written to %s", rt->trace_file);
  if (dropped)
    mgpu__log(MGPU_LOG_WARN, "MGPU_TRACE: %llu events were dropped (out of memory)", (unsigned long long)dropped);
  rt->trace_fp = NULL;
  tracing_leave(rt);
  return st;
}

static mgpu_trace_event_t public_event(const mgpu_runtime_t *rt, const mgpu__tev_t *ev, int worker) {
  return (mgpu_trace_event_t){.worker = worker, .stream = ev->stream, .kind = kind_name[ev->kind],
                              .kernel = ev->name ? ev->name : "", .batch = ev->batch, .first = ev->first,
                              .count = ev->count, .bytes = ev->bytes, .t0 = ev->t0 - rt->t_init,
                              .t1 = ev->t1 - rt->t_init};
}

/* Event n of the caller's array, whose elements are elem bytes long. */
static void put_event(mgpu_trace_event_t *out, size_t elem, size_t n, const mgpu_trace_event_t *ev) {
  mgpu__abi_out((char *)out + n * elem, elem, ev, sizeof *ev);
}

MGPU_API size_t mgpu_trace_events_size(const mgpu_runtime_t *rt, mgpu_trace_event_t *out, size_t max,
                                       size_t elem_size) {
  if (mgpu__check_rt(rt, "mgpu_trace_events") != MGPU_OK) return 0;
  size_t elem;
  if (mgpu__abi_size("mgpu_trace_events", "elem_size", "mgpu_trace_event_t", elem_size, MGPU__TRACE_EVENT_SIZE_V1,
                     sizeof(mgpu_trace_event_t), _Alignof(mgpu_trace_event_t), false, &elem) != MGPU_OK)
    return 0;
  if (!rt->trace_on) return 0;
  size_t n = 0;
  for (int i = 0; i < rt->nworkers; i++) {
    const mgpu__worker_t *w = &rt->workers[i];
    for (size_t e = 0; e < w->ntrace; e++, n++) {
      if (!out || n >= max) continue;
      const mgpu_trace_event_t ev = public_event(rt, &w->trace[e], i);
      put_event(out, elem, n, &ev);
    }
  }
  for (size_t e = 0; e < rt->nbtrace; e++, n++)
    if (out && n < max) {
      const mgpu_trace_event_t ev = public_event(rt, &rt->btrace[e], -1);
      put_event(out, elem, n, &ev);
    }
  return n;
}

void mgpu__trace_free(mgpu__worker_t *w) {
  free(w->trace);
  w->trace = NULL;
  w->ntrace = w->trace_cap = 0;
}
