/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plot.c: mgpu-run --plot, a self-contained SVG of a run drawn from the
 * runtime's trace: a strip of its batches (warm-ups and timed runs), a
 * timeline with a lane per CPU worker, per GPU host thread and per GPU
 * stream (chunks coloured by batch, copies in lighter and darker shades,
 * steals as marks), and bars of items and busy time per worker. Events
 * closer than a pixel merge, so that a run of any length fits in 2 MB.
 */
#include "report/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1200
#define LEFT 170   /* lane labels */
#define RIGHT 20
#define LANE_H 18
#define RUNS_Y 66  /* the strip of the runtime's batches, warm-ups and timed runs */
#define RUNS_H 12
#define TOP 90     /* the first lane */
/* The SVG stays under 2 MB however many events the run recorded: events
 * closer than a bin (a pixel, or wider where the run has more to draw) merge
 * into one shape on their lane. */
#define MAX_BYTES 2000000
#define WARM_FILL "#bdbdbd"
#define TIMED_FILL "#2e7d32"

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define NPAL (sizeof palette / sizeof *palette)

/* The kinds of events drawn as bars, for the titles of merged shapes. */
static const char *const bar_kinds[] = {"chunk", "h2d", "kernel", "d2h", "issue", "alloc", "pin", "unstage"};
#define NBAR_KINDS (sizeof bar_kinds / sizeof *bar_kinds)

static void xml_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

/* The run's events and where they go on the page. */
typedef struct {
  mgpu_trace_event_t *ev;
  size_t n;
  size_t *order;      /* events by lane, then start (runs strip first) */
  int *lane;          /* each event's lane; -1: the runs strip (a whole batch) */
  uint64_t timed_batch; /* batches from this one on are the timed runs */
  int nw, ncpu, ngpu;
  int streams;        /* lanes per GPU besides its host thread */
  int nlanes;
  double t_begin, span; /* s */
  double timed_t0, timed_t1; /* the span of the timed runs' batches (t1 < t0: none) */
  double plot_w;
  int timeline_h, bars_top, bar_h, height;
} layout_t;

static const layout_t *sort_layout;
static int by_lane_then_start(const void *a, const void *b) {
  const layout_t *L = sort_layout;
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  if (L->lane[i] != L->lane[j]) return L->lane[i] < L->lane[j] ? -1 : 1;
  if (L->ev[i].t0 != L->ev[j].t0) return L->ev[i].t0 < L->ev[j].t0 ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* The events of rt's trace and the page's layout; -1 when out of memory. */
static int layout(mgpu_runtime_t *rt, uint64_t timed_batch, layout_t *L) {
  size_t n = mgpu_trace_events(rt, NULL, 0);
  mgpu_trace_event_t *ev = calloc(n ? n : 1, sizeof *ev);
  if (!ev) return -1;
  n = mgpu_trace_events(rt, ev, n);
  L->ev = ev;
  L->n = n;
  L->timed_batch = timed_batch;
  L->nw = mgpu_num_workers(rt), L->ncpu = mgpu_num_cpu_workers(rt), L->ngpu = mgpu_num_gpus(rt);
  /* A lane per configured stream, whether or not it got work. */
  int streams = 0;
  mgpu_setting_t set = MGPU_SETTING_INIT;
  for (int i = 0; mgpu_info_setting(rt, i, &set) == MGPU_OK; i++)
    if (!strcmp(set.name, "MGPU_STREAMS_PER_GPU")) streams = atoi(set.value);
  for (size_t i = 0; i < n; i++)
    if (ev[i].stream + 1 > streams) streams = ev[i].stream + 1;
  L->streams = streams;
  /* Lanes: CPU workers, then per GPU its host thread and its streams. */
  L->nlanes = L->ncpu + L->ngpu * (1 + streams);
  L->order = malloc(sizeof *L->order * (n ? n : 1));
  L->lane = malloc(sizeof *L->lane * (n ? n : 1));
  if (!L->order || !L->lane) {
    free(L->order), free(L->lane), free(ev);
    return -1;
  }
  double t_end = 0;
  L->timed_t0 = 1, L->timed_t1 = 0;
  for (size_t i = 0; i < n; i++) {
    const mgpu_trace_event_t *e = &ev[i];
    if (e->t1 > t_end) t_end = e->t1;
    L->order[i] = i;
    if (e->worker < 0) L->lane[i] = -1;
    else if (e->worker < L->ncpu) L->lane[i] = e->worker;
    else L->lane[i] = L->ncpu + (e->worker - L->ncpu) * (1 + streams) + (e->stream >= 0 ? 1 + e->stream : 0);
    if (e->worker < 0 && e->batch >= timed_batch) {
      if (L->timed_t1 < L->timed_t0 || e->t0 < L->timed_t0) L->timed_t0 = e->t0;
      if (e->t1 > L->timed_t1) L->timed_t1 = e->t1;
    }
  }
  sort_layout = L;
  qsort(L->order, n, sizeof *L->order, by_lane_then_start);
  if (t_end <= 0) t_end = 1e-6;
  double t_begin = t_end;
  for (size_t i = 0; i < n; i++)
    if (ev[i].t0 < t_begin) t_begin = ev[i].t0;
  L->t_begin = t_begin;
  L->span = t_end - t_begin > 0 ? t_end - t_begin : 1e-6, L->plot_w = WIDTH - LEFT - RIGHT;
  L->timeline_h = L->nlanes * LANE_H, L->bars_top = TOP + L->timeline_h + 70, L->bar_h = 16;
  L->height = L->bars_top + L->nw * (2 * L->bar_h + 8) + 40;
  return 0;
}

/* The legend of the runs strip, the strip's label, the lanes, each a group
 * with its label, the span of the timed runs across them, and the time axis. */
static void draw_lanes(FILE *f, const layout_t *L) {
  int ncpu = L->ncpu, streams = L->streams;
  fprintf(f, "<g class=\"legend\"><rect class=\"warm-up\" x=\"10\" y=\"47\" width=\"14\" height=\"10\" fill=\"%s\"/>"
             "<text x=\"28\" y=\"56\">warm-up runs (and the runs that size a prefix)</text>"
             "<rect class=\"timed\" x=\"290\" y=\"47\" width=\"14\" height=\"10\" fill=\"%s\"/>"
             "<text x=\"308\" y=\"56\">timed runs (shaded across the lanes)</text></g>\n",
          WARM_FILL, TIMED_FILL);
  fprintf(f, "<g class=\"runs-label\"><rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"#fafafa\"/>"
             "<text x=\"6\" y=\"%d\">runs (batches)</text></g>\n",
          LEFT, RUNS_Y, L->plot_w, RUNS_H, RUNS_Y + RUNS_H - 2);
  for (int l = 0; l < L->nlanes; l++) {
    char label[64];
    const char *cls;
    if (l < ncpu) snprintf(label, sizeof label, "CPU worker %d", l), cls = "lane worker";
    else {
      int g = (l - ncpu) / (1 + streams), k = (l - ncpu) % (1 + streams);
      if (k == 0) snprintf(label, sizeof label, "GPU %d host thread", g), cls = "lane worker";
      else snprintf(label, sizeof label, "GPU %d stream %d", g, k - 1), cls = "lane stream";
    }
    int y = TOP + l * LANE_H;
    fprintf(f, "<g class=\"%s\"><rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"%s\"/>"
               "<text x=\"6\" y=\"%d\">%s</text></g>\n",
            cls, LEFT, y, L->plot_w, LANE_H, l % 2 ? "#f4f4f4" : "#fafafa", y + LANE_H - 5, label);
  }
  if (L->timed_t1 >= L->timed_t0) {
    double x0 = LEFT + L->plot_w * (L->timed_t0 - L->t_begin) / L->span;
    double w = L->plot_w * (L->timed_t1 - L->timed_t0) / L->span;
    fprintf(f, "<rect class=\"timed-span\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
               "fill-opacity=\"0.08\"/>\n",
            x0, RUNS_Y, w < 0.3 ? 0.3 : w, TOP + L->timeline_h - RUNS_Y, TIMED_FILL);
  }
  for (int t = 0; t <= 10; t++) {
    double x = LEFT + L->plot_w * t / 10;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\"/><text x=\"%.1f\" y=\"%d\" "
               "text-anchor=\"middle\">%.3g s</text>\n",
            x, TOP, x, TOP + L->timeline_h, x, TOP + L->timeline_h + 14, L->span * t / 10);
  }
}

/* Events of one lane merged into shapes: a group is open while it is
 * narrower than a bin and the next event starts within a bin of its end. */
typedef struct {
  FILE *f;
  const layout_t *L;
  double bin;         /* px */
  size_t shapes;
  bool open;
  int lane;
  bool timed;         /* its events are of the timed runs' batches */
  double x0, x1;      /* px */
  size_t n;
  const mgpu_trace_event_t *big; /* its longest event, whose colour it takes */
  uint64_t b0, b1;    /* batches */
  unsigned kinds;     /* bar_kinds present */
  double busy_s;
} group_t;

static int lane_y(int lane) { return lane < 0 ? RUNS_Y : TOP + lane * LANE_H; }

static void group_flush(group_t *g) {
  if (!g->open) return;
  g->open = false;
  g->shapes++;
  FILE *f = g->f;
  const mgpu_trace_event_t *e = g->big;
  double w = g->x1 - g->x0 < 0.3 ? 0.3 : g->x1 - g->x0;
  if (g->lane < 0) {
    fprintf(f, "<rect class=\"run %s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>",
            g->timed ? "timed" : "warm-up", g->x0, RUNS_Y + 1, w, RUNS_H - 2, g->timed ? TIMED_FILL : WARM_FILL);
    if (g->n == 1)
      fprintf(f, "%s: batch %llu, %zu items, %.4f s", g->timed ? "timed run" : "warm-up", (unsigned long long)e->batch,
              e->count, e->t1 - e->t0);
    else
      fprintf(f, "%zu batches of %s runs merged (%llu..%llu)", g->n, g->timed ? "timed" : "warm-up",
              (unsigned long long)g->b0, (unsigned long long)g->b1);
    fprintf(f, "</title></rect>\n");
    return;
  }
  const char *colour = palette[e->batch % NPAL];
  const char *opacity = !strcmp(e->kind, "h2d") ? "0.45" : !strcmp(e->kind, "d2h") ? "0.85" : "1";
  const char *fill = !strcmp(e->kind, "issue") ? "#999" : !strcmp(e->kind, "alloc") || !strcmp(e->kind, "pin") ? "#c33" : colour;
  fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" fill-opacity=\"%s\"%s><title>",
          e->kind, g->x0, lane_y(g->lane) + 2, w, LANE_H - 4, fill, opacity,
          !strcmp(e->kind, "d2h") ? " stroke=\"#333\" stroke-width=\"0.3\"" : "");
  if (g->n == 1) {
    fprintf(f, "%s batch %llu items %zu..%zu, %.1f us", e->kind, (unsigned long long)e->batch, e->first,
            e->first + e->count - (e->count ? 1 : 0), 1e6 * (e->t1 - e->t0));
  } else {
    fprintf(f, "%zu events merged (", g->n);
    const char *sep = "";
    for (size_t k = 0; k < NBAR_KINDS; k++)
      if (g->kinds & 1u << k) fprintf(f, "%s%s", sep, bar_kinds[k]), sep = ", ";
    fprintf(f, "), batches %llu..%llu, %.1f us busy", (unsigned long long)g->b0, (unsigned long long)g->b1,
            1e6 * g->busy_s);
  }
  fprintf(f, "</title></rect>\n");
}

/* Add event e (x0..x1 px) of the lane to the open group, or start one. */
static void group_add(group_t *g, int lane, const mgpu_trace_event_t *e, double x0, double x1) {
  bool timed = e->batch >= g->L->timed_batch;
  bool narrow = x1 - x0 < g->bin;
  if (g->open && (!narrow || g->lane != lane || g->timed != timed || g->x1 - g->x0 >= g->bin || x0 - g->x1 >= g->bin))
    group_flush(g);
  if (!g->open) {
    *g = (group_t){.f = g->f, .L = g->L, .bin = g->bin, .shapes = g->shapes, .open = true, .lane = lane,
                   .timed = timed, .x0 = x0, .x1 = x1, .big = e, .b0 = e->batch, .b1 = e->batch};
  }
  if (x1 > g->x1) g->x1 = x1;
  if (x0 < g->x0) g->x0 = x0;
  if (e->t1 - e->t0 > g->big->t1 - g->big->t0) g->big = e;
  if (e->batch < g->b0) g->b0 = e->batch;
  if (e->batch > g->b1) g->b1 = e->batch;
  for (size_t k = 0; k < NBAR_KINDS; k++)
    if (!strcmp(e->kind, bar_kinds[k])) g->kinds |= 1u << k;
  g->busy_s += e->t1 - e->t0;
  g->n++;
  if (!narrow) group_flush(g);
}

/* The events on their lanes: chunks and copies as bars, steals, retries and
 * handbacks as marks (one of a kind per bin), the whole batches on the runs
 * strip; events closer than bin px merged. Returns the shapes drawn. */
static size_t draw_events(FILE *f, const layout_t *L, double bin) {
  double plot_w = L->plot_w, span = L->span;
  group_t g = {.f = f, .L = L, .bin = bin};
  long last_mark[3] = {-1, -1, -1};
  int mark_lane = -2;
  size_t marks = 0;
  fprintf(f, "<g class=\"events\">\n");
  for (size_t o = 0; o < L->n; o++) {
    size_t i = L->order[o];
    const mgpu_trace_event_t *e = &L->ev[i];
    int lane = L->lane[i];
    if (lane >= L->nlanes) continue;
    double x0 = LEFT + plot_w * (e->t0 - L->t_begin) / span, x1 = LEFT + plot_w * (e->t1 - L->t_begin) / span;
    int mk = !strcmp(e->kind, "steal") ? 0 : !strcmp(e->kind, "retry") ? 1 : !strcmp(e->kind, "handback") ? 2 : -1;
    if (mk >= 0) {
      if (lane != mark_lane) mark_lane = lane, last_mark[0] = last_mark[1] = last_mark[2] = -1;
      long at = (long)((x0 - LEFT) / bin);
      if (at == last_mark[mk]) continue;
      last_mark[mk] = at;
      marks++;
      fprintf(f, "<path class=\"%s\" d=\"M%.1f %d l3 5 h-6 z\" fill=\"%s\"/>\n", e->kind, x0, lane_y(lane) + 1,
              mk == 0 ? "black" : mk == 1 ? "red" : "#e80");
      continue;
    }
    group_add(&g, lane, e, x0, x1);
  }
  group_flush(&g);
  fprintf(f, "</g>\n");
  fprintf(f, "<text x=\"10\" y=\"38\" fill=\"#555\">timeline: %.3f s, %zu events in %zu shapes", span, L->n,
          g.shapes + marks);
  if (g.shapes + marks < L->n) fprintf(f, " (events within %.3g px of each other merged)", bin);
  fprintf(f, "; colour = batch, light = copy in, dark = copy out, grey = issue, black mark = steal</text>\n");
  return g.shapes + marks;
}

/* Bars: items and busy share per worker, from the run's statistics. */
static void draw_bars(FILE *f, const layout_t *L, const mgpu_stats_t *st) {
  int nw = L->nw, bars_top = L->bars_top, bar_h = L->bar_h;
  double plot_w = L->plot_w;
  fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"13\">items and busy time per worker (last timed run)</text>\n",
          bars_top - 16);
  uint64_t max_items = 1;
  for (int i = 0; st && st->worker && i < nw && i < st->worker_cap; i++)
    if (st->worker[i].items > max_items) max_items = st->worker[i].items;
  for (int i = 0; st && st->worker && i < nw && i < st->worker_cap; i++) {
    const mgpu_worker_stats_t *s = &st->worker[i];
    int y = bars_top + i * (2 * bar_h + 8);
    double wi = plot_w * (double)s->items / (double)max_items;
    double busy = st->wall_s > 0 ? s->busy_s / st->wall_s : 0;
    if (busy > 1) busy = 1;
    /* Labels go after the bar, or inside it near the right edge. */
    double lx = LEFT + wi + 4, bx = LEFT + plot_w * busy + 4;
    const char *la = "start", *ba = "start";
    if (lx > WIDTH - 110) lx = LEFT + wi - 4, la = "end";
    if (bx > WIDTH - 110) bx = LEFT + plot_w * busy - 4, ba = "end";
    char label[64];
    if (s->kind == MGPU_WORKER_GPU) snprintf(label, sizeof label, "worker %d (gpu %d)", i, s->device);
    else snprintf(label, sizeof label, "worker %d (cpu)", i);
    fprintf(f, "<g class=\"bar\"><text x=\"6\" y=\"%d\">%s</text>"
               "<rect class=\"items\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
               "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%llu items</text>"
               "<rect class=\"busy\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#bbb\"/>"
               "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%.0f%% busy</text></g>\n",
            y + bar_h - 4, label, LEFT, y, wi, bar_h, s->kind == MGPU_WORKER_GPU ? "#59a14f" : "#4e79a7", lx,
            y + bar_h - 4, la, (unsigned long long)s->items, LEFT, y + bar_h, plot_w * busy, bar_h - 4, bx,
            y + 2 * bar_h - 6, ba, 100 * busy);
  }
}

int mgpu_run_plot(const char *path, mgpu_runtime_t *rt, const mgpu_stats_t *st, const char *title,
                  uint64_t timed_batch) {
  layout_t L;
  if (layout(rt, timed_batch, &L) != 0) return -1;
  /* The page in three parts, the events drawn again with wider bins until
   * the whole fits in MAX_BYTES. */
  char *part[3] = {NULL, NULL, NULL};
  size_t len[3] = {0, 0, 0};
  int rc = -1, err = ENOMEM;
  FILE *m = open_memstream(&part[0], &len[0]);
  if (!m) goto out;
  fprintf(m, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "font-family=\"sans-serif\" font-size=\"11\">\n",
          WIDTH, L.height, WIDTH, L.height);
  fprintf(m, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text class=\"title\" x=\"10\" y=\"20\" "
             "font-size=\"14\">");
  xml_text(m, title);
  fprintf(m, "</text>\n");
  draw_lanes(m, &L);
  if (fclose(m) != 0) goto out;
  if (!(m = open_memstream(&part[2], &len[2]))) goto out;
  draw_bars(m, &L, st);
  fprintf(m, "</svg>\n");
  if (fclose(m) != 0) goto out;
  for (double bin = 1;; bin *= 2) {
    free(part[1]);
    part[1] = NULL;
    if (!(m = open_memstream(&part[1], &len[1]))) goto out;
    draw_events(m, &L, bin);
    if (fclose(m) != 0) goto out;
    if (len[0] + len[1] + len[2] < MAX_BYTES || bin >= L.plot_w) break;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    err = errno;
    goto out;
  }
  for (int i = 0; i < 3; i++) fwrite(part[i], 1, len[i], f);
  err = ferror(f) ? EIO : 0;
  if (fclose(f) != 0 && !err) err = errno;
  rc = err ? -1 : 0;
out:
  for (int i = 0; i < 3; i++) free(part[i]);
  free(L.ev), free(L.order), free(L.lane);
  errno = err;
  return rc;
}
