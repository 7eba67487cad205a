/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.c: the on-disk store of kernel models: file names, the text format,
 * its strict reading, and writes that are atomic and safe between processes.
 */
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* An entry's time may lie this far ahead of the reader's clock (clocks of
 * machines that share a home directory differ a little). */
#define STORE_CLOCK_SLACK_S 86400.0
/* A file whose entries agree with what a process learnt is as good a prior
 * (a batch's own chunks correct it), and is not rewritten: renaming over a
 * file costs the disk a flush. Agree: the latency, the cost per item and the
 * knee each within 1.5 times, latencies within STORE_LATENCY_FLOOR_S and
 * knees within STORE_KNEE_FLOOR items of each other always (a probe from
 * one item reaches such a knee in its first launches either way). An entry
 * is refreshed once a day all the same, so that one in use never ages out
 * of MGPU_STORE_MAX_AGE_S. */
#define STORE_AGREE (1.0 / 3)
#define STORE_LATENCY_FLOOR_S 2e-6
#define STORE_KNEE_FLOOR 64
#define STORE_REFRESH_S 86400.0

int mgpu__store_default_dir(char *out, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME");
  int n;
  if (xdg && xdg[0] == '/') n = snprintf(out, len, "%s/mgpurt", xdg);
  else {
    const char *home = getenv("HOME");
    if (!home || !home[0]) return -1;
    n = snprintf(out, len, "%s/.cache/mgpurt", home);
  }
  return n > 0 && (size_t)n < len ? 0 : -1;
}

/* s with every character but letters, digits, '.', '-' and '_' made '_'. */
static void plain(const char *s, char *out, size_t len) {
  size_t i = 0;
  for (; s[i] && i + 1 < len; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '_';
    out[i] = ok ? c : '_';
  }
  out[i] = 0;
}

/* Append to out (len bytes in all), cutting where it is full. */
static void append(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *out, size_t len, const char *fmt, ...) {
  size_t used = strlen(out);
  if (used + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out + used, len - used, fmt, ap);
  va_end(ap);
}

void mgpu__store_shape(const mgpu_kernel_t *k, uint64_t footprint, char *out, size_t len) {
  out[0] = 0;
  append(out, len, "nin=%d nout=%d in=", k->nin, k->nout);
  for (int i = 0; i < k->nin; i++) append(out, len, i ? ",%zu" : "%zu", k->in_size[i]);
  append(out, len, " out=");
  for (int i = 0; i < k->nout; i++) append(out, len, i ? ",%zu" : "%zu", k->out_size[i]);
  append(out, len, " scratch=%zu footprint=%016llx", k->scratch_per_item, (unsigned long long)footprint);
}

/* FNV-1a: file names stay apart for kernels of one name and other shapes. */
static uint64_t fnv(const char *s, uint64_t h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int mgpu__store_path(const char *dir, const mgpu_kernel_t *k, uint64_t footprint, char *out, size_t len) {
  char name[65], shape[160];
  plain(k->name ? k->name : "", name, sizeof name);
  mgpu__store_shape(k, footprint, shape, sizeof shape);
  uint64_t h = fnv(shape, fnv("\n", fnv(k->name ? k->name : "", 14695981039346656037ull)));
  int n = snprintf(out, len, "%s/%s-%016llx.model", dir, name, (unsigned long long)h);
  return n > 0 && (size_t)n < len ? 0 : -1;
}

void mgpu__store_class_gpu(const mgpu_device_info_t *d, const char *emulated, char *out, size_t len) {
  char name[128];
  if (d->emulated) {
    plain(emulated ? emulated : "", name, sizeof name);
    snprintf(out, len, "gpu:emulated:%s", name);
    return;
  }
  plain(d->name, name, sizeof name);
  snprintf(out, len, "gpu:%s:cc%d.%d:sm%d:mem%zuM", name, d->cc_major, d->cc_minor, d->sm_count,
           d->total_mem >> 20);
}

void mgpu__store_class_cpu(int workers, char *out, size_t len) {
  char model[128] = "unknown", line[256];
  FILE *fp = fopen("/proc/cpuinfo", "r");
  if (fp) {
    while (fgets(line, sizeof line, fp))
      if (strncmp(line, "model name", 10) == 0) {
        const char *v = strchr(line, ':');
        if (!v) break;
        for (v++; *v == ' ' || *v == '\t'; v++) {
        }
        line[strcspn(line, "\n")] = 0;
        plain(v, model, sizeof model);
        break;
      }
    fclose(fp);
  }
  snprintf(out, len, "cpu:%s:x%d", model, workers);
}

/* One "entry" line's fields after the word: false where a field is missing
 * or out of range (why says which). */
static bool parse_entry(const char *s, mgpu__store_entry_t *e, char *why, size_t whylen) {
  int used = 0;
  char cls[MGPU_STORE_CLASS_LEN];
  if (sscanf(s, "%191s latency=%lf cost=%lf knee=%lf samples=%lf reserve=%d saved=%lf%n", cls, &e->latency,
             &e->cost, &e->knee, &e->samples, &e->reserve, &e->saved, &used) != 7 ||
      s[used] != 0) {
    snprintf(why, whylen, "an entry is not 'CLASS latency=S cost=S knee=N samples=N reserve=L saved=T'");
    return false;
  }
  const char *bad = NULL;
  if (!isfinite(e->latency) || e->latency < 0 || e->latency > 3600) bad = "latency";
  else if (!isfinite(e->cost) || e->cost < 0 || e->cost > 3600) bad = "cost";
  else if (!isfinite(e->knee) || e->knee < 0 || e->knee > 1e15) bad = "knee";
  else if (!isfinite(e->samples) || e->samples < 1) bad = "samples";
  else if (e->reserve < -1 || e->reserve > 16) bad = "reserve";
  else if (!isfinite(e->saved) || e->saved < 0) bad = "saved";
  if (bad) {
    snprintf(why, whylen, "the entry of %s has %s out of range", cls, bad);
    return false;
  }
  snprintf(e->cls, sizeof e->cls, "%s", cls);
  return true;
}

int mgpu__store_parse(const char *path, mgpu__store_file_t *f, int *dropped_p, char *why, size_t whylen) {
  memset(f, 0, sizeof *f);
  if (dropped_p) *dropped_p = 0;
  FILE *fp = fopen(path, "r");
  if (!fp) {
    if (errno == ENOENT) return 1;
    snprintf(why, whylen, "cannot read it: %s", strerror(errno));
    return -1;
  }
  char line[512];
  int lineno = 0, rc = -1;
  bool ended = false, kernel = false, shape = false;
  snprintf(why, whylen, "it is empty");
  while (fgets(line, sizeof line, fp)) {
    lineno++;
    size_t l = strlen(line);
    if (l == 0 || line[l - 1] != '\n') {
      snprintf(why, whylen, "line %d is cut short", lineno);
      goto out;
    }
    line[l - 1] = 0;
    if (ended) {
      snprintf(why, whylen, "line %d follows the end", lineno);
      goto out;
    }
    if (lineno == 1) {
      int v;
      char tail;
      if (sscanf(line, MGPU_STORE_MAGIC " %d%c", &v, &tail) != 1) {
        snprintf(why, whylen, "it is not a model file (no '%s' line)", MGPU_STORE_MAGIC);
        goto out;
      }
      if (v != MGPU_STORE_VERSION) {
        snprintf(why, whylen, "it is of version %d, and this library reads version %d", v, MGPU_STORE_VERSION);
        goto out;
      }
    } else if (strncmp(line, "kernel ", 7) == 0 && !kernel && strlen(line + 7) < sizeof f->kernel) {
      memcpy(f->kernel, line + 7, strlen(line + 7) + 1);
      kernel = true;
    } else if (strncmp(line, "shape ", 6) == 0 && !shape && strlen(line + 6) < sizeof f->shape) {
      memcpy(f->shape, line + 6, strlen(line + 6) + 1);
      shape = true;
    } else if (strncmp(line, "entry ", 6) == 0 && kernel && shape) {
      char ewhy[256];
      if (f->n < MGPU_STORE_MAX_ENTRIES && parse_entry(line + 6, &f->e[f->n], ewhy, sizeof ewhy)) f->n++;
      else if (dropped_p && (*dropped_p)++ == 0) snprintf(why, whylen, "line %d: %s", lineno, ewhy);
    } else if (strcmp(line, "end") == 0 && kernel && shape) {
      ended = true;
    } else {
      snprintf(why, whylen, "line %d is not what a model file holds there", lineno);
      goto out;
    }
  }
  if (ferror(fp)) snprintf(why, whylen, "cannot read it: %s", strerror(errno));
  else if (!ended) snprintf(why, whylen, "it is cut short (no 'end' line)");
  else rc = 0;
out:
  fclose(fp);
  return rc;
}

int mgpu__store_lookup(const char *dir, const mgpu_kernel_t *k, uint64_t footprint, const char *cls, double now,
                       double max_age, mgpu__store_entry_t *e, char *why, size_t whylen) {
  char path[1200], shape[160];
  if (mgpu__store_path(dir, k, footprint, path, sizeof path) != 0) {
    snprintf(why, whylen, "the store's path is too long");
    return -1;
  }
  mgpu__store_file_t *f = malloc(sizeof *f);
  if (!f) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  char pwhy[256];
  int dropped, rc = mgpu__store_parse(path, f, &dropped, pwhy, sizeof pwhy);
  mgpu__store_shape(k, footprint, shape, sizeof shape);
  if (rc < 0) snprintf(why, whylen, "%s: %s", path, pwhy);
  else if (rc == 0 && (strcmp(f->kernel, k->name) != 0 || strcmp(f->shape, shape) != 0)) {
    snprintf(why, whylen, "%s holds kernel '%s' (%s), not this one", path, f->kernel, f->shape);
    rc = -1;
  } else if (rc == 0) {
    rc = -1;
    for (int i = 0; i < f->n; i++) {
      if (strcmp(f->e[i].cls, cls) != 0) continue;
      if (f->e[i].saved > now + STORE_CLOCK_SLACK_S) snprintf(why, whylen, "%s: its entry was written in the future", path);
      else if (now - f->e[i].saved > max_age)
        snprintf(why, whylen, "%s: its entry is %.0f days old, over the %.0f days kept", path,
                 (now - f->e[i].saved) / 86400, max_age / 86400);
      else *e = f->e[i], rc = 0;
      break;
    }
    if (rc < 0 && !why[0]) {
      if (f->n == 0 && dropped == 0) rc = 1;
      else if (dropped) snprintf(why, whylen, "%s: %s", path, pwhy);
      else snprintf(why, whylen, "%s: its entries are of other workers than %s", path, cls), rc = 2;
    }
  }
  free(f);
  return rc;
}

/* Make dir and its parents, as mkdir -p. */
static int make_dirs(const char *dir, char *why, size_t whylen) {
  char p[1024];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
    snprintf(why, whylen, "the path %s is too long", dir);
    return -1;
  }
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s != 0) continue;
    char c = *s;
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      snprintf(why, whylen, "cannot make %s: %s", p, strerror(errno));
      return -1;
    }
    if (!c) return 0;
    *s = c;
  }
}

static int write_file(const char *path, const mgpu_kernel_t *k, const char *shape, const mgpu__store_file_t *old,
                      const mgpu__store_entry_t *e, int n, char *why, size_t whylen) {
  char tmp[1300];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *fp = fopen(tmp, "w");
  if (!fp) {
    snprintf(why, whylen, "cannot write %s: %s", tmp, strerror(errno));
    return -1;
  }
  fprintf(fp, "%s %d\nkernel %s\nshape %s\n", MGPU_STORE_MAGIC, MGPU_STORE_VERSION, k->name, shape);
  int kept = 0;
  for (int i = 0; i < n && kept < MGPU_STORE_MAX_ENTRIES; i++, kept++)
    fprintf(fp, "entry %s latency=%.17g cost=%.17g knee=%.17g samples=%.17g reserve=%d saved=%.17g\n", e[i].cls,
            e[i].latency, e[i].cost, e[i].knee, e[i].samples, e[i].reserve, e[i].saved);
  for (int i = 0; old && i < old->n && kept < MGPU_STORE_MAX_ENTRIES; i++) {
    bool mine = false;
    for (int j = 0; j < n; j++) mine |= strcmp(old->e[i].cls, e[j].cls) == 0;
    if (mine) continue;
    const mgpu__store_entry_t *o = &old->e[i];
    fprintf(fp, "entry %s latency=%.17g cost=%.17g knee=%.17g samples=%.17g reserve=%d saved=%.17g\n", o->cls,
            o->latency, o->cost, o->knee, o->samples, o->reserve, o->saved);
    kept++;
  }
  fprintf(fp, "end\n");
  bool ok = fflush(fp) == 0 && !ferror(fp);
  int err = errno;
  if (fclose(fp) != 0) ok = false, err = errno;
  if (ok && rename(tmp, path) != 0) ok = false, err = errno;
  if (!ok) {
    snprintf(why, whylen, "cannot write %s: %s", path, strerror(err));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* The refusal of a kernel the store never keeps, or NULL. */
static const char *unstorable(const mgpu_kernel_t *k) {
  if (!k->name || !k->name[0]) return "an unnamed kernel is never stored";
  if (strlen(k->name) >= sizeof(((mgpu__store_file_t *)0)->kernel) || strchr(k->name, '\n'))
    return "kernel names of over 127 characters or with a line break are not stored";
  return NULL;
}

static bool near(double a, double b, double floor) {
  return fabs(a - b) <= STORE_AGREE * fmax(fabs(a), fabs(b)) + floor;
}

/* Whether every entry of e[0..n) is in the file f as good as it is. */
static bool agrees(const mgpu__store_file_t *f, const mgpu__store_entry_t *e, int n) {
  for (int i = 0; i < n; i++) {
    const mgpu__store_entry_t *o = NULL;
    for (int j = 0; j < f->n && !o; j++)
      if (strcmp(f->e[j].cls, e[i].cls) == 0) o = &f->e[j];
    if (!o || e[i].saved - o->saved > STORE_REFRESH_S || o->saved > e[i].saved + STORE_CLOCK_SLACK_S ||
        o->reserve != e[i].reserve || !near(o->latency, e[i].latency, STORE_LATENCY_FLOOR_S) ||
        !near(o->cost, e[i].cost, 0) || !near(o->knee, e[i].knee, STORE_KNEE_FLOOR))
      return false;
  }
  return true;
}

/* One put, with the store's lock held; old is scratch for the file read. */
static int put_one(const char *dir, const mgpu__store_put_t *p, mgpu__store_file_t *old, char *why, size_t whylen) {
  const char *refused = unstorable(p->k);
  if (refused) {
    snprintf(why, whylen, "%s", refused);
    return -1;
  }
  char path[1200], shape[160], owhy[256];
  if (mgpu__store_path(dir, p->k, p->footprint, path, sizeof path) != 0) {
    snprintf(why, whylen, "the path of %s is too long", dir);
    return -1;
  }
  mgpu__store_shape(p->k, p->footprint, shape, sizeof shape);
  /* A bad or foreign file is replaced; only a good one's other classes stay,
   * and one with entries dropped as out of range is rewritten without them. */
  int dropped;
  if (mgpu__store_parse(path, old, &dropped, owhy, sizeof owhy) != 0 || strcmp(old->kernel, p->k->name) != 0 ||
      strcmp(old->shape, shape) != 0)
    old->n = 0;
  else if (dropped == 0 && agrees(old, p->e, p->n))
    return 0;
  return write_file(path, p->k, shape, old, p->e, p->n, why, whylen);
}

int mgpu__store_write_many(const char *dir, mgpu__store_put_t *puts, int n, char *why, size_t whylen) {
  char lockp[1100];
  for (int i = 0; i < n; i++) puts[i].rc = -1;
  if (make_dirs(dir, why, whylen) != 0) return -1;
  if (snprintf(lockp, sizeof lockp, "%s/.lock", dir) >= (int)sizeof lockp) {
    snprintf(why, whylen, "the path of %s is too long", dir);
    return -1;
  }
  mgpu__store_file_t *old = malloc(sizeof *old);
  if (!old) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lk < 0) {
    snprintf(why, whylen, "cannot write %s: %s", lockp, strerror(errno));
    free(old);
    return -1;
  }
  int failed = 0;
  while (flock(lk, LOCK_EX) != 0)
    if (errno != EINTR) {
      snprintf(why, whylen, "cannot lock %s: %s", lockp, strerror(errno));
      failed = -1;
      break;
    }
  char pwhy[1400];
  for (int i = 0; i < n && failed >= 0; i++)
    if ((puts[i].rc = put_one(dir, &puts[i], old, pwhy, sizeof pwhy)) != 0 && failed++ == 0)
      snprintf(why, whylen, "%s", pwhy);
  if (failed >= 0) flock(lk, LOCK_UN);
  close(lk);
  free(old);
  return failed;
}

int mgpu__store_write(const char *dir, const mgpu_kernel_t *k, uint64_t footprint, const mgpu__store_entry_t *e,
                      int n, char *why, size_t whylen) {
  const char *refused = unstorable(k);
  if (refused) {
    snprintf(why, whylen, "%s", refused);
    return -1;
  }
  mgpu__store_put_t p = {.k = k, .footprint = footprint, .e = e, .n = n};
  return mgpu__store_write_many(dir, &p, 1, why, whylen) == 0 ? 0 : -1;
}

int mgpu__store_clear(const char *dir, const char *name, char *why, size_t whylen) {
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return 0;
    snprintf(why, whylen, "cannot read %s: %s", dir, strerror(errno));
    return -1;
  }
  mgpu__store_file_t *f = malloc(sizeof *f);
  int removed = 0;
  struct dirent *de;
  while (f && (de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 7 || strcmp(de->d_name + l - 6, ".model") != 0) continue;
    char path[1300];
    if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) continue;
    char pwhy[256];
    if (name && (mgpu__store_parse(path, f, NULL, pwhy, sizeof pwhy) != 0 || strcmp(f->kernel, name) != 0)) continue;
    if (unlink(path) == 0) removed++;
    else {
      snprintf(why, whylen, "cannot remove %s: %s", path, strerror(errno));
      removed = -1;
      break;
    }
  }
  if (!f) {
    snprintf(why, whylen, "out of memory");
    removed = -1;
  }
  free(f);
  closedir(d);
  return removed;
}
