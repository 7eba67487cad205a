/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugins.c: workloads from shared libraries (--plugin): the file checked
 * before dlopen, the registry the plugin's entry point fills, the command
 * line's sizes it may read, and the choice of the workload to run among the
 * built-in ones and the plugin's.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run.h"

const char *const workloads[] = {"ntt",      "sha256", "mandelbrot", "saxpy",     "mulmod",         "chain",
                                 "pipeline", "matvec", "reduce",     "allreduce", "saxpy-resident", NULL};

#define STR_(x) #x
#define STR(x) STR_(x)
#define MAX_PLUGIN_WORKLOADS 64
static mgpu_plugin_workload_t plugin_work[MAX_PLUGIN_WORKLOADS];
static int nplugin_work;

/* The loader's state behind mgpu_plugin_registry_t.loader: the plugin's path,
 * for messages, and how many of its workloads were refused. */
typedef struct {
  const char *path;
  int refused;
} loader_t;

/* A workload's name is typed on the command line as WORKLOAD and shown in the
 * report and its JSON unquoted: so a word of letters, digits, '-', '_' and
 * '.', starting with a letter or a digit (a name starting with '-' would be
 * taken for an option). */
#define PLUGIN_NAME_MAX 64
#define PLUGIN_NAME_RULE \
  "1 to " STR(PLUGIN_NAME_MAX) " characters, letters, digits, '-', '_' and '.', starting with a letter or digit"

static bool name_ok(const char *name) {
  size_t len = strlen(name);
  if (len == 0 || len > PLUGIN_NAME_MAX || !isalnum((unsigned char)name[0])) return false;
  for (const char *p = name; *p; p++)
    if (!isascii((unsigned char)*p) || !(isalnum((unsigned char)*p) || strchr("-_.", *p))) return false;
  return true;
}

/* name as a message shows it: at most 80 bytes of it, each byte other than a
 * printable ASCII one as \xHH, so that no control character reaches the
 * terminal. */
static const char *shown(const char *name, char *buf, size_t cap) {
  size_t at = 0;
  const char *p = name;
  buf[0] = '\0';
  for (; *p && at + 8 < cap && p - name < 80; p++) {
    unsigned char c = (unsigned char)*p;
    at += (size_t)snprintf(buf + at, cap - at, c >= 0x20 && c < 0x7f && c != '\\' ? "%c" : "\\x%02x", c);
  }
  if (*p) at += (size_t)snprintf(buf + at, cap - at, "...");
  return buf;
}

/* Refuse a workload: say why on stderr, naming the plugin, count it, and
 * return non-zero to the plugin. */
static int refuse(loader_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(loader_t *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: --plugin '%s': ", prog, l->path);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  l->refused++;
  return 1;
}

static int plugin_add(mgpu_plugin_registry_t *reg, const mgpu_plugin_workload_t *w) {
  loader_t *l = reg->loader;
  char name[512];
  if (!w) return refuse(l, "reg->add was given no workload (NULL)");
  if (!w->name) return refuse(l, "a workload has no name (NULL): expected " PLUGIN_NAME_RULE);
  shown(w->name, name, sizeof name);
  if (!name_ok(w->name)) return refuse(l, "workload name '%s' is invalid: expected " PLUGIN_NAME_RULE, name);
  if (!w->kernel.cpu) return refuse(l, "workload '%s' has no CPU function: expected its kernel.cpu set", name);
  for (int i = 0; workloads[i]; i++)
    if (!strcmp(workloads[i], w->name))
      return refuse(l, "workload '%s' has the name of a built-in workload: expected another name", name);
  for (int i = 0; i < nplugin_work; i++)
    if (!strcmp(plugin_work[i].name, w->name))
      return refuse(l, "workload '%s' is added twice: expected a name of its own for each workload", name);
  if (nplugin_work == MAX_PLUGIN_WORKLOADS)
    return refuse(l, "workload '%s' is one too many: expected at most " STR(MAX_PLUGIN_WORKLOADS) " workloads",
                  name);
  plugin_work[nplugin_work++] = *w;
  return 0;
}

/* Read the ELF header of file fd into eh; 0 on success. */
static int read_ehdr(int fd, ElfW(Ehdr) *eh) {
  return pread(fd, eh, sizeof *eh, 0) == (ssize_t)sizeof *eh ? 0 : -1;
}

/* Refuse what dlopen cannot take safely: it blocks opening a FIFO, and it maps
 * a truncated library and dies of SIGBUS touching the missing part. So the file
 * must be regular, an ELF shared object of this build's class, byte order and
 * machine, with its headers and loaded segments within its size. */
static void check_plugin_file(const char *path, const char *shown) {
  struct stat sb;
  if (stat(path, &sb) != 0) usage_error("--plugin '%s': %s", shown, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    usage_error("--plugin '%s' is not a regular file (%s): expected a shared library", shown,
                S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO" : "a special file");
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) usage_error("--plugin '%s': %s", shown, strerror(errno));
  ElfW(Ehdr) eh, self;
  const char *why = NULL;
  unsigned long long size = (unsigned long long)sb.st_size;
  if (read_ehdr(fd, &eh) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) why = "it is not an ELF file";
  else if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32))
    why = "its ELF class (32 or 64 bits) is not this program's";
  else if (eh.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
    why = "its byte order is not this program's";
  else if (eh.e_type != ET_DYN) why = "it is not a shared object";
  else {
    int sfd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (sfd >= 0 && read_ehdr(sfd, &self) == 0 && self.e_machine != eh.e_machine)
      why = "it is built for another machine (ELF e_machine) than this program";
    if (sfd >= 0) close(sfd);
  }
  if (!why && (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 ||
               eh.e_phoff + (unsigned long long)eh.e_phnum * eh.e_phentsize > size))
    why = "its program headers lie outside the file (truncated?)";
  if (!why && eh.e_shnum && eh.e_shoff + (unsigned long long)eh.e_shnum * eh.e_shentsize > size)
    why = "its section headers lie outside the file (truncated?)";
  for (int i = 0; !why && i < eh.e_phnum; i++) {
    ElfW(Phdr) ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (unsigned long long)i * sizeof ph)) != (ssize_t)sizeof ph)
      why = "its program headers cannot be read";
    else if (ph.p_type == PT_LOAD && ph.p_offset + (unsigned long long)ph.p_filesz > size)
      why = "a loadable segment lies outside the file (truncated?)";
  }
  close(fd);
  if (why) usage_error("--plugin '%s' is not a loadable shared library: %s", shown, why);
}

/* The command line's sizes, for plugins (MGPU_PLUGIN_PARAMS in mgpurt_plugin.h). */
static mgpu_plugin_params_t plugin_params = {-1, -1, -1};
void mgpu_plugin_params(mgpu_plugin_params_t *p);
void mgpu_plugin_params(mgpu_plugin_params_t *p) {
  if (p) *p = plugin_params;
}

/* Load a plugin, which may read o's sizes; bad files are usage errors
 * (exit 2), a failing init is 1. */
void plugin_load(const char *path, const opts_t *o) {
  plugin_params = (mgpu_plugin_params_t){o->items, o->size, o->intensity ? o->intensity : -1};
  /* dlopen searches the library path for a bare name: "./" keeps it a file. */
  char buf[4096];
  if (!strchr(path, '/')) snprintf(buf, sizeof buf, "./%s", path);
  else snprintf(buf, sizeof buf, "%s", path);
  check_plugin_file(buf, path);
  void *h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
  if (!h) usage_error("--plugin '%s' is not a loadable shared library: %s", path, dlerror());
  mgpu_plugin_init_fn init;
  void *entry = dlsym(h, MGPU_PLUGIN_ENTRY);
  if (!entry) usage_error("--plugin '%s' has no entry point %s() (see mgpurt_plugin.h)", path, MGPU_PLUGIN_ENTRY);
  /* Called, a symbol of data (`int mgpu_plugin_init = 5;`) crashes. */
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (dladdr1(entry, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && ELF64_ST_TYPE(sym->st_info) != STT_FUNC &&
      ELF64_ST_TYPE(sym->st_info) != STT_GNU_IFUNC)
    usage_error("--plugin '%s': its %s is not a function (an ELF symbol of type %d; see mgpurt_plugin.h)", path,
                MGPU_PLUGIN_ENTRY, (int)ELF64_ST_TYPE(sym->st_info));
  *(void **)&init = entry;
  loader_t l = {path, 0};
  mgpu_plugin_registry_t reg = {.abi = MGPU_PLUGIN_ABI, .add = plugin_add, .loader = &l};
  int rc = init(&reg);
  if (rc != 0) {
    fprintf(stderr, "%s: plugin '%s': %s() returned %d\n", prog, path, MGPU_PLUGIN_ENTRY, rc);
    exit(EXIT_FAIL);
  }
  /* A plugin that goes on after a refusal would run without the workload it
   * meant to add: the refusal stops the run whatever the entry point returns. */
  if (l.refused) {
    fprintf(stderr, "%s: plugin '%s': %d workload%s refused (above)\n", prog, path, l.refused,
            l.refused == 1 ? "" : "s");
    exit(EXIT_FAIL);
  }
  if (nplugin_work == 0) usage_error("--plugin '%s' added no workload", path);
}

int plugin_count(void) { return nplugin_work; }

const mgpu_plugin_workload_t *plugin_workload(int i) { return &plugin_work[i]; }

static const mgpu_plugin_workload_t *find_plugin_workload(const char *name) {
  for (int i = 0; i < nplugin_work; i++)
    if (!strcmp(plugin_work[i].name, name)) return &plugin_work[i];
  return NULL;
}

/* After plugins are loaded: pick and check the workload. */
const mgpu_plugin_workload_t *resolve_workload(opts_t *o) {
  if (!o->workload) o->workload = nplugin_work == 1 ? plugin_work[0].name : "ntt";
  const mgpu_plugin_workload_t *pw = find_plugin_workload(o->workload);
  bool known = pw != NULL;
  for (int i = 0; workloads[i]; i++) known |= !strcmp(workloads[i], o->workload);
  if (!known) {
    char names[1024] = "";
    for (int i = 0; workloads[i]; i++) {
      size_t len = strlen(names);
      snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", workloads[i]);
    }
    for (int i = 0; i < nplugin_work; i++) {
      size_t len = strlen(names);
      snprintf(names + len, sizeof names - len, ", %s", plugin_work[i].name);
    }
    usage_error("unknown workload '%s': expected one of %s", o->workload, names);
  }
  if (o->overlay && !o->output) usage_error("--overlay needs --output FILE");
  if (o->output && strcmp(o->workload, "mandelbrot")) usage_error("--output is for the mandelbrot workload");
  if (o->intensity && !pw && strcmp(o->workload, "mandelbrot") && strcmp(o->workload, "mulmod") &&
      strcmp(o->workload, "chain"))
    usage_error("--intensity is for the mulmod, chain and mandelbrot workloads and plugins' workloads");
  static const char *const sized[] = {"ntt", "pipeline", "sha256", "mandelbrot", "matvec", NULL};
  bool takes_size = pw != NULL;
  for (int i = 0; sized[i] && !takes_size; i++) takes_size = !strcmp(o->workload, sized[i]);
  if (o->size >= 0 && !takes_size)
    usage_error("--size is for the ntt, pipeline, sha256, mandelbrot and matvec workloads and plugins' workloads");
  if (o->size == 0 && !strcmp(o->workload, "matvec")) usage_error("--size '0': matvec needs at least 1 column");
  return pw;
}
