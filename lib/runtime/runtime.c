/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * runtime.c: starting and stopping a runtime: configuration, topology, the GPU
 * back end, the worker threads; the effective settings for --info; host memory.
 */
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* The GPUs' back end and how many devices it sees; why, where it sees none
 * though the settings ask for GPUs (else ""). */
static const mgpu_dev_ops_t *pick_backend(const mgpu__config_t *c, int *visible, char *why, size_t whylen) {
  *visible = 0;
  why[0] = 0;
  if (c->test.emulate_gpus > 0) {
    *visible = c->test.emulate_gpus;
    return &mgpu__dev_emul;
  }
  /* MGPU_NUM_GPUS=0 means CPU only: do not even load the GPU driver. */
  if (c->v.num_gpus == 0 && c->v.ndevices <= 0) return NULL;
  if (!mgpu__dev_cuda) {
    snprintf(why, whylen, "this libmgpurt is built without CUDA");
    return NULL;
  }
  *visible = mgpu__dev_cuda->count();
  if (*visible == 0) snprintf(why, whylen, "%s", mgpu__dev_cuda->why_none ? mgpu__dev_cuda->why_none() : "no device");
  return *visible > 0 ? mgpu__dev_cuda : NULL;
}

static void free_runtime(mgpu_runtime_t *rt) {
  if (!rt) return;
  /* Also after a failed mgpu_init, where the workers may not exist yet. */
  for (int i = 0; rt->workers && i < rt->nworkers; i++)
    if (rt->workers[i].cur) mgpu__batch_unref(rt->workers[i].cur);
  mgpu__consts_free_all(rt);
  mgpu__models_free(rt);
  bool keep_pinned = atomic_load(&rt->gpus_given_up) > 0;
  if (keep_pinned)
    mgpu__log(MGPU_LOG_WARN, "mgpu_finalize: pinned host memory is not freed: a device was given up as hung, and "
                             "freeing it could wait for that device");
  for (int i = 0; i < rt->nhost_allocs; i++) {
    if (!rt->host_allocs[i].pinned) free(rt->host_allocs[i].p);
    else if (!keep_pinned) rt->dev->host_free(rt->host_allocs[i].p);
  }
  mgpu__trace_discard(rt); /* init failed after opening it */
  free(rt->btrace);
  for (int i = 0; rt->workers && i < rt->nworkers; i++) {
    free(rt->workers[i].scratch);
    free(rt->workers[i].cand);
    mgpu__trace_free(&rt->workers[i]);
  }
  free(rt->workers);
  free(rt->gpu_group);
  free(rt->worker_class);
  free(rt->gpus);
  free(rt->host_allocs);
  mgpu__cpus_free(&rt->cpus);
  pthread_mutex_destroy(&rt->lock);
  pthread_mutex_destroy(&rt->alloc_lock);
  pthread_mutex_destroy(&rt->coll_lock);
  pthread_mutex_destroy(&rt->task_lock);
  pthread_mutex_destroy(&rt->sleep_lock);
  pthread_mutex_destroy(&rt->gpu_sleep_lock);
  pthread_cond_destroy(&rt->work_cv);
  pthread_cond_destroy(&rt->gpu_cv);
  pthread_cond_destroy(&rt->idle_cv);
  mgpu__copyjobs_destroy(rt);
  free(rt);
}

static mgpu_status_t finalize_now(mgpu_runtime_t *rt);

static void stop_workers(mgpu_runtime_t *rt) {
  atomic_store(&rt->stop, 1);
  mgpu__wake_all(rt); /* a sleeper counts itself before it checks stop */
  mgpu__team_join(rt);
  /* A GPU thread stuck in the driver ends its wait only when the watchdog
   * gives its device up; the watchdog stops before the GPUs' state goes. */
  for (int g = 0; g < rt->ngpus; g++) mgpu__gpu_wait(rt, g);
  mgpu__watchdog_stop(rt);
  for (int g = 0; g < rt->ngpus; g++) mgpu__gpu_join(rt, g);
}

mgpu_status_t mgpu__init_test(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, mgpu_runtime_t **rt_p) {
  return mgpu__init_rank(cfg, test, 0, rt_p);
}

/* A runtime's memory, locks and machine (its usable cores); NULL where out
 * of memory. */
static mgpu_runtime_t *new_runtime(void) {
  mgpu_runtime_t *rt = calloc(1, sizeof *rt);
  if (!rt) return NULL;
  pthread_mutex_init(&rt->lock, NULL);
  pthread_mutex_init(&rt->alloc_lock, NULL);
  pthread_mutex_init(&rt->coll_lock, NULL);
  pthread_mutex_init(&rt->task_lock, NULL);
  pthread_mutex_init(&rt->sleep_lock, NULL);
  pthread_mutex_init(&rt->gpu_sleep_lock, NULL);
  pthread_cond_init(&rt->work_cv, NULL);
  pthread_cond_init(&rt->gpu_cv, NULL);
  pthread_cond_init(&rt->idle_cv, NULL);
  mgpu__copyjobs_init(rt);
  rt->t_init = mgpu__now();
  rt->pid = getpid();
  rt->usable_cores =
      mgpu__usable_cores("/sys/fs/cgroup", "/proc/self/cgroup", &rt->cpus, rt->cores_how, sizeof rt->cores_how);
  return rt;
}

/* Settings of the GPUs alone that the environment gives a runtime with no GPU
 * have no effect: said once a process, as mgpu-run says it of its flags. */
static void warn_gpu_settings(const mgpu__config_t *c, int ncpu) {
  static const int ids[] = {MGPU_SET_RESERVE_THREADS, MGPU_SET_STREAMS, MGPU_SET_MAX_BATCH, MGPU_SET_RATIO};
  static _Atomic unsigned said;
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    int id = ids[i];
    if (c->source[id] != MGPU_SRC_ENV || (id == MGPU_SET_RESERVE_THREADS && c->v.reserve_threads == 0)) continue;
    if (atomic_fetch_or(&said, 1u << i) & (1u << i)) continue;
    mgpu__log(MGPU_LOG_WARN, "%s=%s has no effect: no GPU is in use, so every batch runs on all %d CPU worker%s",
              mgpu__config_name(id), c->text[id], ncpu, ncpu == 1 ? "" : "s");
  }
}

/* The resolved settings c into rt, with back end dev: its workers' counts
 * and the test fault plan, whose hangs need GPUs that can hang. */
static mgpu_status_t apply_config(mgpu_runtime_t *rt, const mgpu__config_t *c, const mgpu_dev_ops_t *dev) {
  /* Every batch wakes every CPU worker: far more of them than cores makes
   * each batch wait for the OS to run them all in turn. */
  if (c->source[MGPU_SET_NUM_THREADS] != MGPU_SRC_DERIVED &&
      c->v.num_threads > MGPU_THREADS_PER_CORE_WARN * rt->usable_cores)
    mgpu__log(MGPU_LOG_WARN, "MGPU_NUM_THREADS=%d is %.3g times the %d usable cores: each batch wakes every CPU worker, "
              "and batches take far longer than with one worker a core (the default: %d)", c->v.num_threads,
              (double)c->v.num_threads / rt->usable_cores, rt->usable_cores,
              MGPU_MAX(1, rt->usable_cores - c->v.num_gpus));
  rt->cfg = *c;
  /* The config holds pointers into itself; point them at the runtime's copy. */
  if (c->v.trace) rt->cfg.v.trace = rt->cfg.trace_path;
  if (c->v.model_dir) rt->cfg.v.model_dir = rt->cfg.model_dir;
  if (c->test.fault_inject) {
    rt->cfg.test.fault_inject = rt->cfg.fault_spec;
    char why[256];
    mgpu__fault_parse(rt->cfg.fault_spec, &rt->faults, why, sizeof why);
  }
  rt->dev = rt->cfg.v.num_gpus > 0 ? dev : NULL;
  rt->ngpus = rt->dev ? rt->cfg.v.num_gpus : 0;
  for (int i = 0; i < rt->faults.n; i++)
    if ((rt->faults.f[i].kind == MGPU_FAULT_HANG || rt->faults.f[i].kind == MGPU_FAULT_HANGCOLL) &&
        !(rt->dev && rt->dev->hang))
      return mgpu__fail(MGPU_EINVAL, "MGPU_FAULT_INJECT='%s' is invalid: hang and hangcoll need GPUs",
                        rt->cfg.fault_spec);
  rt->ncpu = rt->cfg.v.num_threads;
  rt->nworkers = rt->ncpu + rt->ngpus;
  if (rt->ngpus == 0) warn_gpu_settings(&rt->cfg, rt->ncpu);
  rt->coll_ranks = 1;
  rt->coll_gpu_total = rt->ngpus;
  rt->coll_gpu_base = 0;
  return MGPU_OK;
}

/* The GPUs' properties, and the workers, CPU ones first, with the groups
 * of alike GPUs. */
static mgpu_status_t make_workers(mgpu_runtime_t *rt) {
  for (int g = 0; g < rt->ngpus; g++) {
    rt->gpu_index[g] = rt->cfg.v.devices[g];
    if (mgpu__fault_hit(&rt->faults, MGPU_FAULT_PROPS, g, 0) ||
        rt->dev->props(rt->gpu_index[g], &rt->gpu_info[g]) != 0)
      return mgpu__fail(MGPU_EDEVICE, "cannot read the properties of device %d", rt->gpu_index[g]);
    rt->gpu_info[g].index = rt->gpu_index[g];
  }
  rt->workers = aligned_alloc(MGPU_CACHELINE, sizeof(mgpu__worker_t) * (size_t)rt->nworkers);
  rt->gpus = calloc((size_t)MGPU_MAX(rt->ngpus, 1), sizeof *rt->gpus);
  rt->gpu_group = calloc((size_t)MGPU_MAX(rt->nworkers, 1), sizeof *rt->gpu_group);
  rt->worker_class = calloc((size_t)MGPU_MAX(rt->nworkers, 1), sizeof *rt->worker_class);
  if (!rt->workers || !rt->gpus || !rt->gpu_group || !rt->worker_class)
    return mgpu__fail(MGPU_ENOMEM, "mgpu_init: out of memory");
  memset(rt->workers, 0, sizeof(mgpu__worker_t) * (size_t)rt->nworkers);
  for (int i = 0; i < rt->nworkers; i++) {
    mgpu__worker_t *w = &rt->workers[i];
    w->id = i;
    w->kind = i < rt->ncpu ? MGPU_WORKER_CPU : MGPU_WORKER_GPU;
    w->gpu = i < rt->ncpu ? -1 : i - rt->ncpu;
  }
  mgpu__gpu_groups(rt, rt->gpu_group);
  mgpu__persist_init(rt);
  return MGPU_OK;
}

/* Start the threads: the GPUs' first, since the prior ratio comes from their
 * devices, then the watchdog and the CPU team. *started: the GPU threads
 * started, which a failure stops. */
static mgpu_status_t start_threads(mgpu_runtime_t *rt, int *started) {
  mgpu_status_t st;
  double ratio_sum = 0;
  for (int g = 0; g < rt->ngpus; g++, (*started)++) {
    if ((st = mgpu__gpu_start(rt, g)) != MGPU_OK) return st;
    ratio_sum += mgpu__gpu_estimate(rt, g);
  }
  rt->prior_ratio = rt->ngpus ? ratio_sum / rt->ngpus : 1.0;
  if ((st = mgpu__watchdog_start(rt)) != MGPU_OK) return st;
  return mgpu__team_start(rt);
}

mgpu_status_t mgpu__init_rank(const mgpu_config_t *cfg, const mgpu__testcfg_t *test, int rank, mgpu_runtime_t **rt_p) {
  mgpu__clear_error();
  if (!rt_p) return mgpu__fail(MGPU_EINVAL, "mgpu_init: rt_p is NULL");
  mgpu__config_t c;
  mgpu_status_t st = mgpu__config_parse(cfg, test, &c);
  if (st != MGPU_OK) return st;
  mgpu__log_set_level(c.v.debug);
  if (!c.v.ignore_env) mgpu__config_warn_unknown(environ);
  mgpu_runtime_t *rt = new_runtime();
  if (!rt) return mgpu__fail(MGPU_ENOMEM, "mgpu_init: out of memory");
  int visible;
  char why_none[256];
  const mgpu_dev_ops_t *dev = pick_backend(&c, &visible, why_none, sizeof why_none);
  int started = 0;
  if ((st = mgpu__config_resolve(&c, rt->usable_cores, visible)) != MGPU_OK ||
      (st = apply_config(rt, &c, dev)) != MGPU_OK || (st = make_workers(rt)) != MGPU_OK ||
      (st = mgpu__trace_open(rt, rank)) != MGPU_OK)
    goto fail_free;
  snprintf(rt->gpu_why_none, sizeof rt->gpu_why_none, "%s", why_none);
  if ((st = start_threads(rt, &started)) != MGPU_OK) goto fail_stop;
  if (mgpu__handle_add(MGPU_H_RUNTIME, rt) != 0) {
    st = mgpu__fail(MGPU_ENOMEM, "mgpu_init: out of memory");
    finalize_now(rt);
    return st;
  }
  mgpu__log(MGPU_LOG_INFO, "runtime started: %d CPU workers, %d GPUs (%s), %d usable cores (%s)", rt->ncpu, rt->ngpus,
            rt->dev ? rt->dev->name : "none", rt->usable_cores, rt->cores_how);
  *rt_p = rt;
  return MGPU_OK;

fail_stop:
  atomic_store(&rt->stop, 1);
  mgpu__wake_all(rt);
  for (int g = 0; g < started; g++) mgpu__gpu_wait(rt, g);
  mgpu__watchdog_stop(rt);
  for (int g = 0; g < started; g++) mgpu__gpu_join(rt, g);
  rt->ngpus = started; /* nothing else was started */
fail_free:
  free_runtime(rt);
  return st;
}

mgpu_status_t mgpu__node_finalize(mgpu_runtime_t *rt) {
  if (!rt) return MGPU_OK;
  if (mgpu__self_rt == rt)
    return mgpu__fail(MGPU_ESTATE, "mgpu_finalize: called from a worker of the runtime (inside a kernel function?), "
                                   "which finalize waits for: refused");
  if (!mgpu__handle_del(MGPU_H_RUNTIME, rt))
    return mgpu__fail(MGPU_ESTATE, "mgpu_finalize: %p is not a live runtime (finalized twice?); ignored", (void *)rt);
  return finalize_now(rt);
}

static mgpu_status_t finalize_now(mgpu_runtime_t *rt) {
  mgpu__arrays_free_all(rt);
  /* Device memory is freed by device tasks: after the batches and collectives
   * that may use it, and before new work is refused. */
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  while (rt->live_batches > 0) pthread_cond_wait(&rt->idle_cv, &rt->lock);
  MGPU_UNLOCK(&rt->lock);
  mgpu__device_allocs_free_all(rt);
  MGPU_LOCK(&rt->lock, MGPU_LK_RT);
  rt->finalizing = 1;
  while (rt->live_batches > 0) pthread_cond_wait(&rt->idle_cv, &rt->lock);
  MGPU_UNLOCK(&rt->lock);
  stop_workers(rt);
  mgpu__persist_save(rt);
  mgpu__coll_destroy(rt);
  mgpu_status_t st = mgpu__trace_close(rt);
  if (rt->cfg.v.stats) {
    mgpu_worker_stats_t *ws = calloc((size_t)rt->nworkers, sizeof *ws);
    mgpu__stats_ref_t ref;
    mgpu__stats_ref_own(&ref, ws, rt->nworkers);
    mgpu_stats_t s;
    mgpu__runtime_stats(rt, &s, &ref); /* the handle is gone already: no mgpu_runtime_stats */
    s.worker = ws;
    s.worker_cap = ws ? rt->nworkers : 0;
    s.worker_size = sizeof *ws;
    fprintf(stderr, "libmgpurt statistics: %llu batch%s, %d CPU worker%s, %d GPU%s\n", (unsigned long long)s.batches,
            s.batches == 1 ? "" : "es", rt->ncpu, rt->ncpu == 1 ? "" : "s", rt->ngpus, rt->ngpus == 1 ? "" : "s");
    mgpu_stats_print(rt, &s, stderr);
    free(ws);
  }
  free_runtime(rt);
  return st;
}

MGPU_API int mgpu_num_workers(const mgpu_runtime_t *rt) {
  return mgpu__check_rt(rt, "mgpu_num_workers") == MGPU_OK ? rt->nworkers : 0;
}
MGPU_API int mgpu_num_cpu_workers(const mgpu_runtime_t *rt) {
  return mgpu__check_rt(rt, "mgpu_num_cpu_workers") == MGPU_OK ? rt->ncpu : 0;
}
MGPU_API int mgpu_num_gpus(const mgpu_runtime_t *rt) {
  return mgpu__check_rt(rt, "mgpu_num_gpus") == MGPU_OK ? rt->ngpus : 0;
}

MGPU_API int mgpu_usable_cores(const mgpu_runtime_t *rt, const char **how) {
  if (mgpu__check_rt(rt, "mgpu_usable_cores") != MGPU_OK) return 0;
  if (how) *how = rt->cores_how;
  return rt->usable_cores;
}

/* Setting i into *out (full). */
static mgpu_status_t info_setting(const mgpu_runtime_t *rt, int i, mgpu_setting_t *out) {
  if (i >= 0 && i < MGPU_SET_COUNT) {
    out->name = mgpu__config_name(i);
    out->value = rt->cfg.text[i];
    out->source = mgpu__config_source_name(rt->cfg.source[i]);
    out->doc = mgpu__config_doc(i);
    return MGPU_OK;
  }
  if (i == MGPU_SET_COUNT) {
    const char *omp = getenv("OMP_NUM_THREADS");
    out->name = "OMP_NUM_THREADS";
    out->value = omp ? omp : "(unset)";
    out->source = omp ? "environment" : "default";
    out->doc = "the user's own OpenMP regions outside the runtime; the runtime never changes it";
    return MGPU_OK;
  }
  if (i == MGPU_SET_COUNT + 1) {
    out->name = "OMP_THREAD_LIMIT";
    out->value = rt->cfg.thread_limit_text;
    out->source = getenv("OMP_THREAD_LIMIT") ? "environment" : "default";
    out->doc = "the most CPU workers (one OpenMP team): caps MGPU_NUM_THREADS's default; a larger one is refused";
    return MGPU_OK;
  }
  return mgpu__fail_quiet(MGPU_EINVAL, "mgpu_info_setting: no setting number %d", i);
}

MGPU_API mgpu_status_t mgpu_info_setting(const mgpu_runtime_t *rt, int i, mgpu_setting_t *out) {
  mgpu_status_t st = mgpu__check_rt(rt, "mgpu_info_setting");
  if (st != MGPU_OK) return st;
  if (!out) return mgpu__fail(MGPU_EINVAL, "mgpu_info_setting: out is NULL");
  mgpu_setting_t s = {.size = sizeof s};
  size_t bytes;
  st = mgpu__abi_size("mgpu_info_setting", "out->size", "mgpu_setting_t", out->size, MGPU__SETTING_SIZE_V1, sizeof s,
                      _Alignof(mgpu_setting_t), true, &bytes);
  if (st != MGPU_OK) return st;
  st = info_setting(rt, i, &s);
  if (st != MGPU_OK) return st;
  s.size = out->size;
  mgpu__abi_out(out, bytes, &s, sizeof s);
  return MGPU_OK;
}

MGPU_API mgpu_status_t mgpu_device_info(const mgpu_runtime_t *rt, int gpu, mgpu_device_info_t *out) {
  mgpu_status_t st = mgpu__check_rt(rt, "mgpu_device_info");
  if (st != MGPU_OK) return st;
  if (!out) return mgpu__fail(MGPU_EINVAL, "mgpu_device_info: out is NULL");
  size_t bytes;
  st = mgpu__abi_size("mgpu_device_info", "out->size", "mgpu_device_info_t", out->size, MGPU__DEVICE_INFO_SIZE_V1,
                      sizeof *out, _Alignof(mgpu_device_info_t), true, &bytes);
  if (st != MGPU_OK) return st;
  if (gpu < 0 || gpu >= rt->ngpus) {
    if (rt->ngpus == 0) return mgpu__fail(MGPU_EINVAL, "mgpu_device_info: gpu %d: the runtime has no GPU", gpu);
    return mgpu__fail(MGPU_EINVAL, "mgpu_device_info: gpu %d: expected 0..%d", gpu, rt->ngpus - 1);
  }
  mgpu_device_info_t d = rt->gpu_info[gpu];
  d.size = out->size;
  d.retired = atomic_load(&rt->workers[rt->ncpu + gpu].retired);
  d.batch_cap = mgpu__gpu_cap((mgpu_runtime_t *)rt, gpu);
  mgpu__abi_out(out, bytes, &d, sizeof d);
  return MGPU_OK;
}

MGPU_API int mgpu_device_peer(const mgpu_runtime_t *rt, int a, int b) {
  if (mgpu__check_rt(rt, "mgpu_device_peer") != MGPU_OK || a < 0 || b < 0 || a >= rt->ngpus || b >= rt->ngpus || a == b || !rt->dev->can_peer) return 0;
  return rt->dev->can_peer(rt->gpu_index[a], rt->gpu_index[b]);
}

/* ------------------------------------------------------------ host memory */

MGPU_API void *mgpu_host_alloc(mgpu_runtime_t *rt, size_t bytes) {
  if (mgpu__check_rt(rt, "mgpu_host_alloc") != MGPU_OK) return NULL;
  if (bytes == 0) {
    mgpu__fail(MGPU_EINVAL, "mgpu_host_alloc: bytes is 0: expected 1 or more");
    return NULL;
  }
  void *p = NULL;
  bool pinned = false;
  if (rt->dev && rt->dev->host_alloc && rt->dev->host_alloc(bytes, &p) == 0) {
    pinned = true;
  } else {
    size_t rounded = (bytes + MGPU_CACHELINE - 1) & ~(size_t)(MGPU_CACHELINE - 1);
    if (rounded < bytes || !(p = aligned_alloc(MGPU_CACHELINE, rounded))) {
      mgpu__fail(MGPU_ENOMEM, "mgpu_host_alloc: cannot allocate %zu bytes", bytes);
      return NULL;
    }
  }
  MGPU_LOCK(&rt->alloc_lock, MGPU_LK_ALLOC);
  if (rt->nhost_allocs == rt->host_allocs_cap) {
    int cap = rt->host_allocs_cap ? 2 * rt->host_allocs_cap : 16;
    void *n = realloc(rt->host_allocs, sizeof *rt->host_allocs * (size_t)cap);
    if (!n) {
      MGPU_UNLOCK(&rt->alloc_lock);
      if (pinned) rt->dev->host_free(p);
      else free(p);
      mgpu__fail(MGPU_ENOMEM, "mgpu_host_alloc: out of memory");
      return NULL;
    }
    rt->host_allocs = n;
    rt->host_allocs_cap = cap;
  }
  rt->host_allocs[rt->nhost_allocs].p = p;
  rt->host_allocs[rt->nhost_allocs].pinned = pinned;
  rt->nhost_allocs++;
  MGPU_UNLOCK(&rt->alloc_lock);
  return p;
}

MGPU_API void mgpu_host_free(mgpu_runtime_t *rt, void *p) {
  if (!p || mgpu__check_rt(rt, "mgpu_host_free") != MGPU_OK) return;
  MGPU_LOCK(&rt->alloc_lock, MGPU_LK_ALLOC);
  for (int i = 0; i < rt->nhost_allocs; i++) {
    if (rt->host_allocs[i].p != p) continue;
    bool pinned = rt->host_allocs[i].pinned;
    rt->host_allocs[i] = rt->host_allocs[--rt->nhost_allocs];
    MGPU_UNLOCK(&rt->alloc_lock);
    if (!pinned) free(p);
    else if (atomic_load(&rt->gpus_given_up) == 0) rt->dev->host_free(p);
    else mgpu__log(MGPU_LOG_INFO, "mgpu_host_free: %p is kept: a device was given up as hung, and freeing pinned "
                                  "memory could wait for it", p);
    return;
  }
  MGPU_UNLOCK(&rt->alloc_lock);
  mgpu__log(MGPU_LOG_ERROR, "mgpu_host_free: %p was not allocated by mgpu_host_alloc of this runtime, or was freed "
                            "already; ignored", p);
}

MGPU_API const char *mgpu_gpu_probe_error(const mgpu_runtime_t *rt) {
  if (mgpu__check_rt(rt, "mgpu_gpu_probe_error") != MGPU_OK) return NULL;
  return rt->gpu_why_none[0] ? rt->gpu_why_none : NULL;
}
