/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_cuda.c: the CUDA back end of the GPU workers, on the CUDA runtime API
 * (linked statically; cudart opens the driver at run time, so the library
 * loads on machines without a GPU). Nothing here caches CUDA state in
 * globals, so a process that forks before its first CUDA call stays usable.
 */
#include "device/device.h"

#include <cuda.h> /* types of the one driver entry point used (the gate); libcuda is not linked */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

/* Every call that takes a ctx runs in the GPU worker's thread, which made
 * ctx->dev current in open(). Of the others, count and can_peer need no
 * current device, props puts the caller's back, and host_alloc and
 * host_is_pinned use whichever is current: pinned memory is portable. */

/* Errors: each failure handled here clears CUDA's per-thread last error, so
 * that a GPU function returning cudaGetLastError() is not blamed for it. A
 * fault inside a kernel is sticky: every later call on the device fails and
 * the runtime retires it; nothing here resets the device (other code of the
 * process may use it) or exits. */

/* The state of one opened device; owned by its GPU worker thread. */
typedef struct {
  int dev;           /* driver device index, current in the worker thread */
  int sm_count;
  int cc_major, cc_minor;
  int clock_khz;
  cudaEvent_t epoch; /* recorded at open: event times are measured from it */
  /* The runtime's own pool for stream-ordered chunk buffers, or NULL where the
   * device has no memory pools (then those buffers use cudaMalloc). */
  cudaMemPool_t pool;
  /* The gate: a word of mapped pinned host memory that streams wait to be 0
   * (cuStreamWaitValue32, reached through cudart), or NULL where the driver
   * lacks the call. gate_close writes 1 from any thread. The next word stays
   * 0: an injected hang waits for it to become 1. */
  volatile uint32_t *gate_host;
  CUdeviceptr gate_dev;
  CUresult (*wait_value)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
} cuda_ctx_t;

/* Errors after which the context is unusable until the process exits (the
 * CUDA documentation says "the process must be terminated and relaunched"). */
static int is_sticky(cudaError_t e)
{
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchTimeout:
  case cudaErrorAssert:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchFailure:
    return 1;
  default:
    return 0;
  }
}

/* Device out of memory is the one failure callers recover from (smaller
 * launches); every other CUDA failure is a device error. */
static int status_of(cudaError_t e)
{
  return e == cudaErrorMemoryAllocation ? MGPU_ENOMEM : MGPU_EDEVICE;
}

static const char *sticky_note(cudaError_t e)
{
  return is_sticky(e) ? " [sticky: this device's context is unusable for the rest of the process]" : "";
}

/*
 * Log a failed call with its place and CUDA's words, clear the (non-sticky) last
 * error, set st to the matching MGPU_E* code and jump to the cleanup label.
 */
#define MGPU_CUDA_CHECK_GOTO(call, st, label)                                      \
  do {                                                                              \
    cudaError_t mgpu_cuerr_ = (call);                                               \
    if (mgpu_cuerr_ != cudaSuccess) {                                               \
      mgpu__log(MGPU_LOG_WARN, "CUDA: %s failed at %s:%d: %s: %s%s", #call, __FILE__, \
                __LINE__, cudaGetErrorName(mgpu_cuerr_), cudaGetErrorString(mgpu_cuerr_), \
                sticky_note(mgpu_cuerr_));                                          \
      (void)cudaGetLastError();                                                     \
      (st) = status_of(mgpu_cuerr_);                                                \
      goto label;                                                                   \
    }                                                                               \
  } while (0)

/*
 * For release calls (free, destroy), which have no status to return: log and
 * clear. A sticky error was reported when it first surfaced, so its repeats
 * while the runtime tears the device down go to the debug level.
 */
#define MGPU_CUDA_CHECK_IGNORE(call)                                               \
  do {                                                                              \
    cudaError_t mgpu_cuerr_ = (call);                                               \
    if (mgpu_cuerr_ != cudaSuccess) {                                               \
      mgpu__log(is_sticky(mgpu_cuerr_) ? MGPU_LOG_DEBUG : MGPU_LOG_WARN,            \
                "CUDA: %s failed at %s:%d: %s: %s", #call, __FILE__, __LINE__,      \
                cudaGetErrorName(mgpu_cuerr_), cudaGetErrorString(mgpu_cuerr_));    \
      (void)cudaGetLastError();                                                     \
    }                                                                               \
  } while (0)

/* ------------------------------------------------------------------ devices */

/* Why the last count found no device (mgpu_init's thread; read after it). */
static char count_why[256];

static const char *cuda_why_none(void) { return count_why; }

static int cuda_count(void)
{
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    /* No driver, too old a driver, no device: a CPU-only machine, not an error. */
    snprintf(count_why, sizeof count_why, "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    mgpu__log(MGPU_LOG_DEBUG, "CUDA: no usable device: %s", count_why);
    (void)cudaGetLastError();
    return 0;
  }
  if (n <= 0) snprintf(count_why, sizeof count_why, "the CUDA driver reports no device");
  return n > 0 ? n : 0;
}

static int cuda_props(int dev, mgpu_device_info_t *out)
{
  mgpu_device_info_t info;
  struct cudaDeviceProp p;
  size_t free_b = 0, total_b = 0;
  int saved = -1;
  int st = MGPU_OK;

  memset(&info, 0, sizeof info);
  MGPU_CUDA_CHECK_GOTO(cudaGetDeviceProperties(&p, dev), st, out);
  /* cudaDeviceProp.clockRate is gone in CUDA 13; the attribute remains. */
  MGPU_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, dev), st, out);
  MGPU_CUDA_CHECK_GOTO(cudaDeviceGetPCIBusId(info.pci_bus_id, (int)sizeof info.pci_bus_id, dev), st, out);

  /* Free memory needs the device current (and its primary context created).
   * props may run in any thread, including one of the user's that works on
   * another device, so that thread's current device is put back afterwards. */
  MGPU_CUDA_CHECK_GOTO(cudaGetDevice(&saved), st, out);
  MGPU_CUDA_CHECK_GOTO(cudaSetDevice(dev), st, out);
  MGPU_CUDA_CHECK_GOTO(cudaMemGetInfo(&free_b, &total_b), st, restore);

  info.index = dev;
  memcpy(info.name, p.name, MGPU_MIN(sizeof info.name, sizeof p.name));
  info.name[sizeof info.name - 1] = '\0';
  info.sm_count = p.multiProcessorCount;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.total_mem = p.totalGlobalMem;
  info.free_mem = free_b;

restore:
  if (saved != dev) {
    /* A thread that never chose a device reads back 0, so this may create
     * device 0's context; failing to put it back must not fail props. */
    cudaError_t e = cudaSetDevice(saved);
    if (e != cudaSuccess) {
      mgpu__log(MGPU_LOG_DEBUG, "CUDA: could not make device %d current again: %s", saved,
                cudaGetErrorString(e));
      (void)cudaGetLastError();
    }
  }
out:
  if (st != MGPU_OK) {
    /* Even out of memory while creating the context: the device is unusable. */
    mgpu__log(MGPU_LOG_WARN, "CUDA device %d: cannot read its properties", dev);
    return MGPU_EDEVICE;
  }
  *out = info;
  return MGPU_OK;
}

static int cuda_can_peer(int a, int b)
{
  int v = 0;
  cudaError_t e = cudaDeviceCanAccessPeer(&v, a, b);
  if (e != cudaSuccess) {
    mgpu__log(MGPU_LOG_DEBUG, "CUDA: cudaDeviceCanAccessPeer(%d, %d): %s", a, b, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 0;
  }
  return v ? 1 : 0;
}

/* ------------------------------------------------------------- open, close */

/* A memory pool of the runtime's own (other code may tune the device's
 * default one) for the chunk buffers each stream slot grows: cudaMalloc and
 * cudaFree wait for all work on the device, pool allocations only for their
 * slot's stream. Freed memory stays for the slots' next growth until mem_trim,
 * reused across streams only once freed. Without pools, NULL: cudaMalloc. */
static void open_pool(cuda_ctx_t *ctx)
{
  int supported = 0;
  cudaError_t e = cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, ctx->dev);
  if (e != cudaSuccess || !supported) {
    (void)cudaGetLastError();
    mgpu__log(MGPU_LOG_DEBUG, "CUDA device %d: no memory pools; chunk buffers use cudaMalloc", ctx->dev);
    return;
  }
  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ctx->dev;
  e = cudaMemPoolCreate(&ctx->pool, &props);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    ctx->pool = NULL;
    mgpu__log(MGPU_LOG_DEBUG, "CUDA device %d: cudaMemPoolCreate: %s; chunk buffers use cudaMalloc", ctx->dev,
              cudaGetErrorString(e));
    return;
  }
  uint64_t keep = UINT64_MAX;
  int no = 0;
  if (cudaMemPoolSetAttribute(ctx->pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess ||
      cudaMemPoolSetAttribute(ctx->pool, cudaMemPoolReuseAllowInternalDependencies, &no) != cudaSuccess) {
    (void)cudaGetLastError();
    MGPU_CUDA_CHECK_IGNORE(cudaMemPoolDestroy(ctx->pool));
    ctx->pool = NULL;
    mgpu__log(MGPU_LOG_DEBUG, "CUDA device %d: cannot set up a memory pool; chunk buffers use cudaMalloc", ctx->dev);
  }
}

/* The CUDA version whose cuStreamWaitValue32 has wait_value's signature. */
#define WAIT_VALUE_ABI 12000

static void open_gate(cuda_ctx_t *ctx)
{
  void *fn = NULL, *host = NULL, *dev = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, WAIT_VALUE_ABI, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !fn) {
    (void)cudaGetLastError();
    mgpu__log(MGPU_LOG_INFO, "CUDA device %d: no cuStreamWaitValue32; results are staged so that a hung device "
                             "cannot write them late", ctx->dev);
    return;
  }
  if (cudaHostAlloc(&host, MGPU_CACHELINE, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    MGPU_CUDA_CHECK_IGNORE(cudaFreeHost(host));
    return;
  }
  ctx->gate_host = host;
  ctx->gate_host[0] = 0;
  ctx->gate_host[1] = 0;
  ctx->gate_dev = (CUdeviceptr)(uintptr_t)dev;
  *(void **)&ctx->wait_value = fn;
}

static int cuda_open(int dev, const mgpu__config_t *cfg, void **ctx_p)
{
  cuda_ctx_t *ctx;
  int st = MGPU_OK;

  MGPU_UNUSED(cfg);
  MGPU_CUDA_CHECK_GOTO(cudaSetDevice(dev), st, fail);
  /* Create the primary context now, in this thread, so that its cost (and any
   * failure, such as a device held by another process in exclusive mode) shows
   * here rather than in the first timed copy. */
  MGPU_CUDA_CHECK_GOTO(cudaFree(0), st, fail);

  ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) {
    mgpu__log(MGPU_LOG_ERROR, "CUDA device %d: out of host memory for the device state", dev);
    return MGPU_ENOMEM;
  }
  ctx->dev = dev;
  /* Kept for speed_estimate(), which then needs no CUDA call. */
  MGPU_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&ctx->sm_count, cudaDevAttrMultiProcessorCount, dev), st, free_ctx);
  MGPU_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&ctx->cc_major, cudaDevAttrComputeCapabilityMajor, dev), st, free_ctx);
  MGPU_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&ctx->cc_minor, cudaDevAttrComputeCapabilityMinor, dev), st, free_ctx);
  MGPU_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&ctx->clock_khz, cudaDevAttrClockRate, dev), st, free_ctx);
  MGPU_CUDA_CHECK_GOTO(cudaEventCreate(&ctx->epoch), st, free_ctx);
  MGPU_CUDA_CHECK_GOTO(cudaEventRecord(ctx->epoch, 0), st, free_epoch);
  MGPU_CUDA_CHECK_GOTO(cudaEventSynchronize(ctx->epoch), st, free_epoch);
  open_pool(ctx);
  open_gate(ctx);

  *ctx_p = ctx;
  return MGPU_OK;

free_epoch:
  MGPU_CUDA_CHECK_IGNORE(cudaEventDestroy(ctx->epoch));
free_ctx:
  free(ctx);
fail:
  /* A context that cannot be created is a device we cannot use, whatever the
   * reason (even out of device memory: MGPU_ENOMEM would read as host memory). */
  MGPU_UNUSED(st);
  mgpu__log(MGPU_LOG_WARN, "CUDA device %d: cannot be opened", dev);
  return MGPU_EDEVICE;
}

static void cuda_close(void *vctx)
{
  cuda_ctx_t *ctx = vctx;
  if (ctx == NULL) return;
  /* Let queued work finish before the runtime frees the memory it uses. The
   * device is not reset: other code of the process may be using it. */
  MGPU_CUDA_CHECK_IGNORE(cudaDeviceSynchronize());
  if (ctx->pool) MGPU_CUDA_CHECK_IGNORE(cudaMemPoolDestroy(ctx->pool));
  if (ctx->gate_host) MGPU_CUDA_CHECK_IGNORE(cudaFreeHost((void *)(uintptr_t)ctx->gate_host));
  MGPU_CUDA_CHECK_IGNORE(cudaEventDestroy(ctx->epoch));
  free(ctx);
}

/* ---------------------------------------------------------- device memory */

/* The status of an allocation call; what = the call, for the log. */
static int alloc_status(cuda_ctx_t *ctx, cudaError_t e, size_t bytes, void *p, void **p_p, const char *what)
{
  if (e == cudaSuccess) {
    *p_p = p;
    return MGPU_OK;
  }
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) {
    /* Expected when a batch cap is too large; the caller shrinks and retries. */
    mgpu__log(MGPU_LOG_DEBUG, "CUDA device %d: out of memory allocating %zu bytes", ctx->dev, bytes);
    return MGPU_ENOMEM;
  }
  mgpu__log(MGPU_LOG_WARN, "CUDA device %d: %s(%zu) failed: %s: %s%s", ctx->dev, what, bytes, cudaGetErrorName(e),
            cudaGetErrorString(e), sticky_note(e));
  return MGPU_EDEVICE;
}

static int cuda_mem_alloc(void *vctx, size_t bytes, void **p_p)
{
  void *p = NULL;
  /* cudaMalloc(0) succeeds with NULL, which callers would take for a failure. */
  cudaError_t e = cudaMalloc(&p, bytes > 0 ? bytes : 1);
  return alloc_status(vctx, e, bytes, p, p_p, "cudaMalloc");
}

static void cuda_mem_free(void *vctx, void *p)
{
  MGPU_UNUSED(vctx);
  if (p == NULL) return;
  MGPU_CUDA_CHECK_IGNORE(cudaFree(p));
}

static int cuda_mem_alloc_on(void *vctx, size_t bytes, void *s, void **p_p)
{
  cuda_ctx_t *ctx = vctx;
  if (!ctx->pool) return cuda_mem_alloc(vctx, bytes, p_p);
  void *p = NULL;
  cudaError_t e = cudaMallocFromPoolAsync(&p, bytes > 0 ? bytes : 1, ctx->pool, (cudaStream_t)s);
  return alloc_status(ctx, e, bytes, p, p_p, "cudaMallocFromPoolAsync");
}

static void cuda_mem_free_on(void *vctx, void *p, void *s)
{
  cuda_ctx_t *ctx = vctx;
  if (p == NULL) return;
  if (!ctx->pool) cuda_mem_free(vctx, p);
  else MGPU_CUDA_CHECK_IGNORE(cudaFreeAsync(p, (cudaStream_t)s));
}

static void cuda_mem_trim(void *vctx)
{
  cuda_ctx_t *ctx = vctx;
  if (ctx->pool) MGPU_CUDA_CHECK_IGNORE(cudaMemPoolTrimTo(ctx->pool, 0));
}

static int cuda_mem_info(void *vctx, size_t *free_b, size_t *total_b)
{
  size_t f = 0, t = 0;
  int st = MGPU_OK;
  MGPU_UNUSED(vctx);
  MGPU_CUDA_CHECK_GOTO(cudaMemGetInfo(&f, &t), st, out);
  *free_b = f;
  *total_b = t;
out:
  return st;
}

/* ------------------------------------------------------------- host memory */

static int cuda_host_alloc(size_t bytes, void **p_p)
{
  void *p = NULL;
  /* Portable: pinned for every device's context, not only the calling
   * thread's current one, since any GPU worker may copy from it. */
  cudaError_t e = cudaHostAlloc(&p, bytes > 0 ? bytes : 1, cudaHostAllocPortable);

  if (e == cudaSuccess) {
    *p_p = p;
    return MGPU_OK;
  }
  (void)cudaGetLastError();
  mgpu__log(MGPU_LOG_WARN, "CUDA: cudaHostAlloc(%zu) failed: %s: %s", bytes, cudaGetErrorName(e),
            cudaGetErrorString(e));
  return status_of(e);
}

static void cuda_host_free(void *p)
{
  if (p == NULL) return;
  MGPU_CUDA_CHECK_IGNORE(cudaFreeHost(p));
}

/* 1 when [p, p + bytes) is page-locked host memory known to CUDA. */
static int one_pinned(const void *p)
{
  struct cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) {
    /* Before CUDA 11 an unknown host pointer was cudaErrorInvalidValue; since,
     * it is cudaSuccess with cudaMemoryTypeUnregistered. Either way: not pinned. */
    (void)cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeHost;
}

static int cuda_host_is_pinned(const void *p, size_t bytes)
{
  if (p == NULL || bytes == 0) return 0;
  /* CUDA answers for one address. Checking both ends catches a pinned buffer
   * that is shorter than the array it is said to hold; an array is one object,
   * so it cannot straddle a pageable hole between two pinned buffers. */
  return one_pinned(p) && one_pinned((const char *)p + bytes - 1);
}

/* ----------------------------------------------------------------- streams */

static int cuda_stream_create(void *vctx, void **s_p)
{
  cudaStream_t s = NULL;
  int st = MGPU_OK;
  MGPU_UNUSED(vctx);
  /* Non-blocking: our streams must not serialise with the legacy default
   * stream, which the user's own code in the process may be using. */
  MGPU_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), st, out);
  *s_p = s;
out:
  return st;
}

static void cuda_stream_destroy(void *vctx, void *s)
{
  MGPU_UNUSED(vctx);
  /* NULL would name the legacy default stream, which is not ours to destroy. */
  if (s == NULL) return;
  MGPU_CUDA_CHECK_IGNORE(cudaStreamDestroy((cudaStream_t)s));
}

/*
 * cudaMemcpyDefault lets CUDA tell pinned, pageable, managed and device memory
 * apart by address (unified addressing, which every 64-bit platform CUDA still
 * supports has); a wrong explicit kind would be undefined behaviour instead.
 * From pageable memory the call returns only once the source has been staged.
 */
static int copy_async(void *dst, const void *src, size_t bytes, void *s)
{
  int st = MGPU_OK;
  if (bytes == 0) return MGPU_OK;
  MGPU_CUDA_CHECK_GOTO(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)s), st, out);
out:
  return st;
}

static int cuda_copy_h2d(void *vctx, void *dst, const void *src, size_t bytes, void *s)
{
  MGPU_UNUSED(vctx);
  return copy_async(dst, src, bytes, s);
}

static int cuda_copy_d2h(void *vctx, void *dst, const void *src, size_t bytes, void *s)
{
  MGPU_UNUSED(vctx);
  return copy_async(dst, src, bytes, s);
}

/* ------------------------------------------------------------------ launch */

/*
 * By convention a GPU function returns a cudaError_t cast to int (usually
 * cudaGetLastError() after its launches). A launch that fails to start
 * (bad configuration, no code for this architecture) also shows up in the last
 * error even if the function returned 0. Faults while the kernel runs show up
 * later, in stream_sync or stream_query.
 */
static int cuda_launch(void *vctx, const mgpu_kernel_t *k, const mgpu_chunk_t *c, void *s)
{
  cuda_ctx_t *ctx = vctx;
  cudaError_t le;
  int rc, cur = -1;

  if (k->gpu == NULL || c->stream != s) {
    mgpu__log(MGPU_LOG_ERROR, "CUDA device %d: launch of kernel %s without a GPU function or with chunk stream %p != %p",
              ctx->dev, k->name ? k->name : "?", c->stream, s);
    return MGPU_EINVAL;
  }
  /* Start from a clean last error, so that only this chunk's failures count. */
  (void)cudaGetLastError();
  rc = k->gpu(c);
  le = cudaGetLastError();

  /* The GPU function may have switched devices; the worker's later calls
   * (allocations, copies) must stay on this one. */
  if (cudaGetDevice(&cur) == cudaSuccess && cur != ctx->dev) {
    mgpu__log(MGPU_LOG_WARN, "CUDA device %d: kernel %s left device %d current; switching back", ctx->dev,
              k->name ? k->name : "?", cur);
    if (cudaSetDevice(ctx->dev) != cudaSuccess) (void)cudaGetLastError();
  }

  if (rc == 0 && le == cudaSuccess) return MGPU_OK;

  if (rc != 0)
    mgpu__log(MGPU_LOG_WARN, "CUDA device %d: kernel %s on items [%zu, %zu) returned %d (as a cudaError_t: %s)",
              ctx->dev, k->name ? k->name : "?", c->first, c->first + c->count, rc,
              cudaGetErrorString((cudaError_t)rc));
  if (le != cudaSuccess)
    mgpu__log(MGPU_LOG_WARN, "CUDA device %d: kernel %s on items [%zu, %zu): launch error %s: %s%s", ctx->dev,
              k->name ? k->name : "?", c->first, c->first + c->count, cudaGetErrorName(le),
              cudaGetErrorString(le), sticky_note(le));
  if (rc == (int)cudaErrorMemoryAllocation || le == cudaErrorMemoryAllocation) return MGPU_ENOMEM;
  return MGPU_EKERNEL;
}

/* ------------------------------------------------------ stream completion */

static int cuda_stream_sync(void *vctx, void *s)
{
  cuda_ctx_t *ctx = vctx;
  cudaError_t e = cudaStreamSynchronize((cudaStream_t)s);
  if (e == cudaSuccess) return MGPU_OK;
  /* Usually a fault of a kernel on this stream, reported here for the first
   * time: this is where it is understood, so it is logged here, once. */
  mgpu__log(MGPU_LOG_WARN, "CUDA device %d: stream %p failed: %s: %s%s", ctx->dev, s, cudaGetErrorName(e),
            cudaGetErrorString(e), sticky_note(e));
  (void)cudaGetLastError();
  return MGPU_EDEVICE;
}

static int cuda_stream_query(void *vctx, void *s)
{
  cuda_ctx_t *ctx = vctx;
  cudaError_t e = cudaStreamQuery((cudaStream_t)s);
  if (e == cudaSuccess) return 0;
  if (e == cudaErrorNotReady) {
    /* Not a failure; make sure it does not linger as the last error, where a
     * GPU function returning cudaGetLastError() would find it. */
    if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
    return 1;
  }
  mgpu__log(MGPU_LOG_WARN, "CUDA device %d: stream %p failed: %s: %s%s", ctx->dev, s, cudaGetErrorName(e),
            cudaGetErrorString(e), sticky_note(e));
  (void)cudaGetLastError();
  return MGPU_EDEVICE;
}

/* ------------------------------------------------------------ first split */

/* FP32 lanes per multiprocessor, from the CUDA programming guide's table. */
static int lanes_per_sm(int major, int minor)
{
  switch (major) {
  case 1: return 8;
  case 2: return minor == 0 ? 32 : 48;
  case 3: return 192;
  case 5: return 128;
  case 6: return minor == 0 ? 64 : 128;
  case 7: return 64;
  case 8: return minor == 0 ? 64 : 128;
  default: return 128; /* 9.0, 10.x and 12.x and, as a guess, later */
  }
}

/* Device-to-core ratio for the first split of a kernel never measured here:
 * the GPU's peak scalar lanes (SMs x FP32 lanes per SM x clock) over a CPU
 * core's (MGPU_CPU_LANES at MGPU_CPU_CLOCK_KHZ). It ignores memory and PCIe,
 * so it is only a start that measurements replace; clamped so that an odd
 * attribute cannot starve either side. */
static double cuda_speed_estimate(void *vctx)
{
  const cuda_ctx_t *ctx = vctx;
  double clock_khz = ctx->clock_khz > 0 ? ctx->clock_khz : MGPU_GPU_CLOCK_KHZ_GUESS;
  double sms = ctx->sm_count > 0 ? ctx->sm_count : 1;
  double r = sms * lanes_per_sm(ctx->cc_major, ctx->cc_minor) * clock_khz / (MGPU_CPU_LANES * MGPU_CPU_CLOCK_KHZ);
  if (r < MGPU_RATIO_GUESS_MIN) r = MGPU_RATIO_GUESS_MIN;
  if (r > MGPU_RATIO_GUESS_MAX) r = MGPU_RATIO_GUESS_MAX;
  return r;
}

/* ------------------------------------------------------------------ events */

static int cuda_event_create(void *vctx, void **ev_p)
{
  cudaEvent_t ev;
  int st = MGPU_OK;
  MGPU_UNUSED(vctx);
  MGPU_CUDA_CHECK_GOTO(cudaEventCreate(&ev), st, fail);
  *ev_p = ev;
  return MGPU_OK;
fail:
  return st;
}

static void cuda_event_destroy(void *vctx, void *ev)
{
  MGPU_UNUSED(vctx);
  if (ev) MGPU_CUDA_CHECK_IGNORE(cudaEventDestroy((cudaEvent_t)ev));
}

static int cuda_event_record(void *vctx, void *ev, void *s)
{
  int st = MGPU_OK;
  MGPU_UNUSED(vctx);
  MGPU_CUDA_CHECK_GOTO(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)s), st, fail);
  return MGPU_OK;
fail:
  return st;
}

/* Seconds from the epoch event to ev; both have completed once the stream of
 * ev was synchronised. Resolution is about half a microsecond. */
static int cuda_event_time(void *vctx, void *ev, double *t)
{
  cuda_ctx_t *ctx = vctx;
  float ms = 0;
  int st = MGPU_OK;
  MGPU_CUDA_CHECK_GOTO(cudaEventElapsedTime(&ms, ctx->epoch, (cudaEvent_t)ev), st, fail);
  *t = 1e-3 * (double)ms;
  return MGPU_OK;
fail:
  return st;
}

static int cuda_event_query(void *vctx, void *ev)
{
  cuda_ctx_t *ctx = vctx;
  cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
  if (e == cudaSuccess) return 0;
  if (e == cudaErrorNotReady) {
    if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
    return 1;
  }
  mgpu__log(MGPU_LOG_WARN, "CUDA device %d: work before event %p failed: %s: %s%s", ctx->dev, ev, cudaGetErrorName(e),
            cudaGetErrorString(e), sticky_note(e));
  (void)cudaGetLastError();
  return MGPU_EDEVICE;
}

static int cuda_copy_d2d(void *vctx, void *dst, const void *src, size_t bytes, void *s)
{
  MGPU_UNUSED(vctx);
  return copy_async(dst, src, bytes, s);
}

static int cuda_gate(void *vctx, void *s)
{
  cuda_ctx_t *ctx = vctx;
  if (!ctx->wait_value) return MGPU_ENOTSUP;
  CUresult r = ctx->wait_value((CUstream)s, ctx->gate_dev, 0, CU_STREAM_WAIT_VALUE_EQ);
  return r == CUDA_SUCCESS ? 0 : MGPU_EDEVICE;
}

/* Tests only (MGPU_FAULT_INJECT hang, hangcoll): the stream waits for good. */
static int cuda_hang(void *vctx, void *s)
{
  cuda_ctx_t *ctx = vctx;
  if (!ctx->wait_value) return MGPU_ENOTSUP;
  CUresult r = ctx->wait_value((CUstream)s, ctx->gate_dev + sizeof(uint32_t), 1, CU_STREAM_WAIT_VALUE_GEQ);
  return r == CUDA_SUCCESS ? 0 : MGPU_EDEVICE;
}

static void cuda_gate_close(void *vctx)
{
  cuda_ctx_t *ctx = vctx;
  if (ctx->gate_host) __atomic_store_n(ctx->gate_host, 1u, __ATOMIC_SEQ_CST);
}

static const mgpu_dev_ops_t cuda_ops = {
  .name = "cuda",
  .emulated = 0,
  .count = cuda_count,
  .props = cuda_props,
  .can_peer = cuda_can_peer,
  .open = cuda_open,
  .close = cuda_close,
  .mem_alloc = cuda_mem_alloc,
  .mem_free = cuda_mem_free,
  .mem_alloc_on = cuda_mem_alloc_on,
  .mem_free_on = cuda_mem_free_on,
  .mem_trim = cuda_mem_trim,
  .mem_info = cuda_mem_info,
  .host_alloc = cuda_host_alloc,
  .host_free = cuda_host_free,
  .host_is_pinned = cuda_host_is_pinned,
  .stream_create = cuda_stream_create,
  .stream_destroy = cuda_stream_destroy,
  .copy_h2d = cuda_copy_h2d,
  .copy_d2h = cuda_copy_d2h,
  .launch = cuda_launch,
  .stream_sync = cuda_stream_sync,
  .stream_query = cuda_stream_query,
  .speed_estimate = cuda_speed_estimate,
  .event_create = cuda_event_create,
  .event_destroy = cuda_event_destroy,
  .event_record = cuda_event_record,
  .event_time = cuda_event_time,
  .event_query = cuda_event_query,
  .copy_d2d = cuda_copy_d2d,
  .gate = cuda_gate,
  .gate_close = cuda_gate_close,
  .hang = cuda_hang,
  .why_none = cuda_why_none,
};

const mgpu_dev_ops_t *const mgpu__dev_cuda = &cuda_ops;
