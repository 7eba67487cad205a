/*
 * plot.c: mgpu-run --plot, a self-contained SVG of a run drawn from the
 * runtime's trace: a timeline with a lane per CPU worker, per GPU host thread
 * and per GPU stream (chunks coloured by batch, copies in lighter and darker
 * shades, steals as marks), and bars of items and busy time per worker.
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
#define TOP 50
#define MAX_RECTS 50000 /* beyond this, chunks are left out (the count says so) */

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define NPAL (sizeof palette / sizeof *palette)

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
  int nw, ncpu, ngpu;
  int streams;        /* lanes per GPU besides its host thread */
  int nlanes;
  double t_begin, span; /* s */
  double plot_w;
  int timeline_h, bars_top, bar_h, height;
} layout_t;

/* The events of rt's trace and the page's layout; -1 when out of memory. */
static int layout(mgpu_runtime_t *rt, layout_t *L) {
  size_t n = mgpu_trace_events(rt, NULL, 0);
  mgpu_trace_event_t *ev = calloc(n ? n : 1, sizeof *ev);
  if (!ev) return -1;
  n = mgpu_trace_events(rt, ev, n);
  L->ev = ev;
  L->n = n;
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
  double t_end = 0;
  for (size_t i = 0; i < n; i++)
    if (ev[i].t1 > t_end) t_end = ev[i].t1;
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

/* Lanes, each a group with its label, and the time axis. */
static void draw_lanes(FILE *f, const layout_t *L) {
  int ncpu = L->ncpu, streams = L->streams;
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
  for (int t = 0; t <= 10; t++) {
    double x = LEFT + L->plot_w * t / 10;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\"/><text x=\"%.1f\" y=\"%d\" "
               "text-anchor=\"middle\">%.3g s</text>\n",
            x, TOP, x, TOP + L->timeline_h, x, TOP + L->timeline_h + 14, L->span * t / 10);
  }
}

/* The events on their lanes: chunks and copies as bars, steals and retries as
 * marks, at most MAX_RECTS bars. */
static void draw_events(FILE *f, const layout_t *L) {
  int ncpu = L->ncpu, streams = L->streams;
  double plot_w = L->plot_w, span = L->span;
  size_t drawn = 0, left_out = 0;
  fprintf(f, "<g class=\"events\">\n");
  for (size_t i = 0; i < L->n; i++) {
    const mgpu_trace_event_t *e = &L->ev[i];
    if (e->worker < 0) continue; /* a whole batch: its chunks show it */
    int lane;
    if (e->worker < ncpu) lane = e->worker;
    else {
      int g = e->worker - ncpu;
      lane = ncpu + g * (1 + streams) + (e->stream >= 0 ? 1 + e->stream : 0);
    }
    double x0 = LEFT + plot_w * (e->t0 - L->t_begin) / span, w = plot_w * (e->t1 - e->t0) / span;
    int y = TOP + lane * LANE_H;
    if (!strcmp(e->kind, "steal") || !strcmp(e->kind, "retry") || !strcmp(e->kind, "handback")) {
      fprintf(f, "<path class=\"%s\" d=\"M%.1f %d l3 5 h-6 z\" fill=\"%s\"/>\n", e->kind, x0, y + 1,
              e->kind[0] == 's' ? "black" : e->kind[0] == 'r' ? "red" : "#e80");
      continue;
    }
    if (drawn == MAX_RECTS) {
      left_out++;
      continue;
    }
    drawn++;
    const char *colour = palette[e->batch % NPAL];
    const char *opacity = !strcmp(e->kind, "h2d") ? "0.45" : !strcmp(e->kind, "d2h") ? "0.85" : "1";
    const char *fill = !strcmp(e->kind, "issue") ? "#999" : !strcmp(e->kind, "alloc") || !strcmp(e->kind, "pin") ? "#c33" : colour;
    fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" fill-opacity=\"%s\"%s>"
               "<title>%s batch %llu items %zu..%zu, %.1f us</title></rect>\n",
            e->kind, x0, y + 2, w < 0.3 ? 0.3 : w, LANE_H - 4, fill, opacity,
            !strcmp(e->kind, "d2h") ? " stroke=\"#333\" stroke-width=\"0.3\"" : "", e->kind,
            (unsigned long long)e->batch, e->first, e->first + e->count - (e->count ? 1 : 0), 1e6 * (e->t1 - e->t0));
  }
  fprintf(f, "</g>\n");
  if (left_out)
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#a00\">%zu more events not drawn</text>\n", LEFT,
            TOP + L->timeline_h + 30, left_out);
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

int mgpu_run_plot(const char *path, mgpu_runtime_t *rt, const mgpu_stats_t *st, const char *title) {
  layout_t L;
  if (layout(rt, &L) != 0) return -1;
  FILE *f = fopen(path, "w");
  if (!f) {
    free(L.ev);
    return -1;
  }
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "font-family=\"sans-serif\" font-size=\"11\">\n",
          WIDTH, L.height, WIDTH, L.height);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"20\" font-size=\"14\">");
  xml_text(f, title);
  fprintf(f, "</text>\n<text x=\"10\" y=\"38\" fill=\"#555\">timeline: %.3f s, %zu events; colour = batch, light = "
             "copy in, dark = copy out, black mark = steal</text>\n",
          L.span, L.n);
  draw_lanes(f, &L);
  draw_events(f, &L);
  draw_bars(f, &L, st);
  fprintf(f, "</svg>\n");
  free(L.ev);
  if (fclose(f) != 0) return -1;
  return 0;
}
