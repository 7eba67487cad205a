/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * models.c: the model store (lib/store, MGPU_MODEL_DIR) as mgpu-run shows it:
 * --models lists its files and --models-clear removes them, both without a
 * runtime; and whether a mode's warm-up can be skipped, where the store holds
 * a fresh model of the batch's kernel for every kind of worker that the mode
 * runs it on.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/run.h"
#include "base/base.h" /* lib/: the strict parsers and the store's age limit */
#include "store/store.h"

int models_dir(char *out, size_t len, const char **how) {
  const char *v = getenv("MGPU_MODEL_DIR");
  if (v) {
    /* The library's rule (lib/base/config.c): blanks around the value
     * dropped, "off" in any case, else a path of 1..1023 characters. */
    char buf[1024];
    const char *t = strlen(v) < sizeof buf ? mgpu__parse_trim(v, buf, sizeof buf) : NULL;
    if (!t) {
      fprintf(stderr, "%s: MGPU_MODEL_DIR is invalid: the path is too long (at most %zu characters)\n", prog,
              sizeof buf - 1);
      return -1;
    }
    if (!*t) {
      fprintf(stderr, "%s: MGPU_MODEL_DIR='%s' is invalid: expected off, or a directory path of 1..1023 "
              "characters, not blank\n", prog, v);
      return -1;
    }
    *how = "MGPU_MODEL_DIR";
    if (mgpu__parse_keyword(t, "off")) return 1;
    snprintf(out, len, "%s", t);
    return 0;
  }
  if (mgpu__store_default_dir(out, len) != 0) {
    *how = "neither XDG_CACHE_HOME nor HOME is set";
    return 1;
  }
  const char *xdg = getenv("XDG_CACHE_HOME");
  *how = xdg && xdg[0] == '/' ? "the default, $XDG_CACHE_HOME/mgpurt" : "the default, $HOME/.cache/mgpurt";
  return 0;
}

/* "3 h": how long ago t (seconds since the epoch) was, in the largest unit
 * of which it is at least one. */
static void age_text(double now, double t, char *out, size_t len) {
  double a = now - t;
  if (a < -60) snprintf(out, len, "in the future");
  else if (a < 60) snprintf(out, len, "%.0f s", a < 0 ? 0 : a);
  else if (a < 3600) snprintf(out, len, "%.0f min", a / 60);
  else if (a < 86400) snprintf(out, len, "%.0f h", a / 3600);
  else snprintf(out, len, "%.0f d", a / 86400);
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names of dir's model files, sorted, into *names (freed by the caller);
 * their count, or -1 (errno set) where dir cannot be read. */
static int model_files(const char *dir, char ***names) {
  *names = NULL;
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 7 || strcmp(de->d_name + l - 6, ".model") != 0) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      char **more = realloc(*names, (size_t)cap * sizeof *more);
      if (!more) break;
      *names = more;
    }
    if (((*names)[n] = strdup(de->d_name))) n++;
  }
  closedir(d);
  if (n) qsort(*names, (size_t)n, sizeof **names, cmp_name);
  return n;
}

/* One row of --models' table: its cells as text. */
enum { COL_KERNEL, COL_FOOTPRINT, COL_CLASS, COL_LATENCY, COL_RATE, COL_KNEE, COL_SAMPLES, COL_AGE, COL_FILE, NCOLS };
static const char *const col_head[NCOLS] = {"kernel", "footprint", "worker class", "latency s", "rate items/s",
                                            "knee items", "samples", "age", "file"};
typedef struct {
  char cell[NCOLS][200];
} row_t;

static void print_row(const row_t *r, const int *width) {
  for (int c = 0; c < NCOLS; c++) {
    bool num = c == COL_FOOTPRINT || (c >= COL_LATENCY && c <= COL_SAMPLES);
    if (c == NCOLS - 1) printf("%s\n", r->cell[c]);
    else printf(num ? "%*s  " : "%-*s  ", width[c], r->cell[c]);
  }
}

int models_list(void) {
  char dir[1024];
  const char *how;
  int rc = models_dir(dir, sizeof dir, &how);
  if (rc < 0) return EXIT_USAGE;
  if (rc > 0) {
    printf("model store: off (%s)\n", !strcmp(how, "MGPU_MODEL_DIR") ? "MGPU_MODEL_DIR=off" : how);
    return 0;
  }
  char **names;
  int n = model_files(dir, &names);
  if (n < 0 && errno == ENOENT) {
    printf("model store: %s (%s): empty (the directory does not exist yet)\n", dir, how);
    return 0;
  }
  if (n < 0) {
    fprintf(stderr, "%s: cannot read the model store %s (%s): %s\n", prog, dir, how, strerror(errno));
    return EXIT_FAIL;
  }
  mgpu__store_file_t *f = malloc(sizeof *f);
  row_t *rows = calloc((size_t)n * MGPU_STORE_MAX_ENTRIES + 1, sizeof *rows);
  char(*bad)[1400] = calloc((size_t)n + 1, sizeof *bad);
  if (!f || !rows || !bad) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_FAIL);
  }
  int nrows = 0, nbad = 0, files = 0;
  double now = (double)time(NULL);
  for (int i = 0; i < n; i++) {
    char path[1400], why[256];
    int dropped;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    int prc = mgpu__store_parse(path, f, &dropped, why, sizeof why);
    if (prc == 1) continue; /* removed since the directory was read */
    files++;
    if (prc < 0) {
      snprintf(bad[nbad++], sizeof bad[0], "unreadable: %s: %s", names[i], why);
      continue;
    }
    if (dropped)
      snprintf(bad[nbad++], sizeof bad[0], "%s: %d entr%s dropped (%s)", names[i], dropped, dropped == 1 ? "y" : "ies",
               why);
    for (int e = 0; e < f->n; e++) {
      const mgpu__store_entry_t *x = &f->e[e];
      row_t *r = &rows[nrows++];
      snprintf(r->cell[COL_KERNEL], sizeof r->cell[0], "%s", f->kernel);
      /* The footprint ends the shape line (mgpu__store_shape); mgpu-run's is the intensity. */
      const char *fp = strstr(f->shape, "footprint=");
      unsigned long long fpv = 0;
      if (fp && sscanf(fp, "footprint=%llx", &fpv) == 1) snprintf(r->cell[COL_FOOTPRINT], sizeof r->cell[0], "%llu", fpv);
      else snprintf(r->cell[COL_FOOTPRINT], sizeof r->cell[0], "?");
      snprintf(r->cell[COL_CLASS], sizeof r->cell[0], "%s", x->cls);
      snprintf(r->cell[COL_LATENCY], sizeof r->cell[0], "%.3g", x->latency);
      if (x->cost > 0) snprintf(r->cell[COL_RATE], sizeof r->cell[0], "%.3g", 1 / x->cost);
      else snprintf(r->cell[COL_RATE], sizeof r->cell[0], "-");
      if (x->knee > 0) snprintf(r->cell[COL_KNEE], sizeof r->cell[0], "%.0f", x->knee);
      else snprintf(r->cell[COL_KNEE], sizeof r->cell[0], "-");
      snprintf(r->cell[COL_SAMPLES], sizeof r->cell[0], "%.0f", x->samples);
      char age[64];
      age_text(now, x->saved, age, sizeof age);
      /* The runtime passes over these (lib/store: mgpu__store_lookup). */
      bool stale = now - x->saved > MGPU_STORE_MAX_AGE_S, ahead = !strcmp(age, "in the future");
      snprintf(r->cell[COL_AGE], sizeof r->cell[0], "%s%s", age, stale || ahead ? " (not used)" : "");
      snprintf(r->cell[COL_FILE], sizeof r->cell[0], "%s", names[i]);
    }
  }
  if (files == 0) printf("model store: %s (%s): empty\n", dir, how);
  else
    printf("model store: %s (%s): %d file%s, %d entr%s\n", dir, how, files, files == 1 ? "" : "s", nrows,
           nrows == 1 ? "y" : "ies");
  if (nrows) {
    int width[NCOLS];
    row_t head;
    for (int c = 0; c < NCOLS; c++) {
      width[c] = (int)strlen(col_head[c]);
      snprintf(head.cell[c], sizeof head.cell[0], "%s", col_head[c]);
      for (int i = 0; i < nrows; i++)
        if ((int)strlen(rows[i].cell[c]) > width[c]) width[c] = (int)strlen(rows[i].cell[c]);
    }
    print_row(&head, width);
    for (int i = 0; i < nrows; i++) print_row(&rows[i], width);
  }
  for (int i = 0; i < nbad; i++) printf("%s\n", bad[i]);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  free(f);
  free(rows);
  free(bad);
  return 0;
}

int models_clear(const char *kernel) {
  char dir[1024];
  const char *how;
  int rc = models_dir(dir, sizeof dir, &how);
  if (rc < 0) return EXIT_USAGE;
  if (rc > 0) {
    printf("model store: off (%s): nothing removed\n", !strcmp(how, "MGPU_MODEL_DIR") ? "MGPU_MODEL_DIR=off" : how);
    return 0;
  }
  char why[1400];
  int n = mgpu__store_clear(dir, kernel, why, sizeof why);
  if (n < 0) {
    fprintf(stderr, "%s: cannot clear the model store %s (%s): %s\n", prog, dir, how, why);
    return EXIT_FAIL;
  }
  printf("model store: %s (%s): %d file%s", dir, how, n, n == 1 ? "" : "s");
  if (kernel) printf(" of kernel %s", kernel);
  printf(" removed\n");
  return 0;
}

/* Whether the worker kinds that mode runs w's kernel on each have a fresh
 * stored model of it (mgpu_model_stored); the pipeline's three kernels and a
 * kernel without a name are not stored alike, and keep the warm-up. Across
 * MPI ranks, only where every rank's store has them. */
bool warmup_stored(mgpu_runtime_t *rt, const work_t *w, const char *mode) {
  const mgpu_kernel_t *k = w->b.kernel;
  bool ok = k && k->name && k->name[0] && strcmp(w->name, "pipeline") != 0;
  bool cpu = mgpu_num_cpu_workers(rt) > 0 && strcmp(mode, "gpu") != 0;
  bool gpu = mgpu_num_gpus(rt) > 0 && k && k->gpu && strcmp(mode, "cpu") != 0;
  if (!cpu && !gpu) ok = false;
  if (ok && cpu) ok = mgpu_model_stored(rt, k, w->b.footprint, MGPU_WORKER_CPU) == 1;
  if (ok && gpu) ok = mgpu_model_stored(rt, k, w->b.footprint, MGPU_WORKER_GPU) == 1;
  return ranks_min(ok ? 1 : 0) == 1;
}
