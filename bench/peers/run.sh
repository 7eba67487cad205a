#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run.sh: libmgpurt and StarPU side by side on this machine, on the same
# kernels (libmgpurt's built-in ones; StarPU runs them as codelets through
# bench/peers/starpu/peer.c), in one go. Prints one table (also OUT/peers.md):
# items/s of libmgpurt's steal, GPU-only and CPU-only modes and of StarPU's
# best scheduler and task size, GPU-only and CPU-only, the ratio libmgpurt
# steal / StarPU best, and both runtimes' per-task overhead and one-task round
# trip on one CPU worker.
#
#   bash bench/peers/run.sh [--smoke] [--memory pageable|pinned|both] OUT
#
# OUT gets peers.md (the tables), peers.json (every raw result in one file),
# peers.log (progress) and raw/ (one JSON file per run).
# --smoke: tiny sizes and one repetition, to test the script; the figures mean nothing.
# --memory: host arrays from malloc (pageable, default), pinned (mgpu-run
#   --pinned, starpu_malloc), or both one after the other.
# Environment:
#   PEERS_MGPU_BUILD     a built libmgpurt tree (default: /tmp/mgpurt-build/src where
#                  a built tree is there, else the checkout itself)
#   PEERS_STARPU_PREFIX  a StarPU installed by bench/peers/starpu/build.sh (default:
#                  bench/peers/starpu/prefix, else .peers/starpu-prefix.tar.gz
#                  unpacked, else built from .peers/starpu-src.tar.gz)
#   PEERS_WORK     scratch directory (default /tmp/mgpurt-peers)
#   PEERS_WORKLOADS  names of the workloads to run (default all of them:
#                  mulmod-10 mulmod-100 mulmod-1000 mulmod-10000 chain sha256 ntt mandelbrot)
# With no GPU (nvidia-smi finds none) it compares the CPU-only modes, and says so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
die() { echo "run.sh: $*" >&2; exit 1; }
usage_error() { echo "run.sh: $*" >&2; echo "Try 'bash bench/peers/run.sh --help'." >&2; exit 2; }
smoke=0 memory=pageable out=
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --memory)
      [ $# -ge 2 ] || usage_error "--memory needs a value: pageable, pinned or both"
      case $2 in pageable | pinned | both) memory=$2 ;; *) usage_error "--memory '$2' is invalid: expected pageable, pinned or both" ;; esac
      shift ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) usage_error "unknown option '$1'" ;;
    *) [ -z "$out" ] || usage_error "one output directory, not '$out' and '$1'"; out=$1 ;;
  esac
  shift
done
[ -n "$out" ] || usage_error "usage: run.sh [--smoke] [--memory pageable|pinned|both] OUT"
mkdir -p "$out/raw" || die "cannot create $out/raw"
out=$(cd "$out" && pwd)
rm -f "$out"/raw/*.json "$out"/raw/*.txt
work=${PEERS_WORK:-/tmp/mgpurt-peers}
mkdir -p "$work"
exec 3>&2
exec 2> >(tee "$out/peers.log" >&3)
t_start=$(date +%s)
log() { echo "run.sh: [$(($(date +%s) - t_start)) s] $*" >&2; }

# ---------------------------------------------------------------- libmgpurt
if [ -n "${PEERS_MGPU_BUILD:-}" ]; then mgpu=$PEERS_MGPU_BUILD
elif [ -x /tmp/mgpurt-build/src/bin/mgpu-run ]; then mgpu=/tmp/mgpurt-build/src
else mgpu=$top; fi
mgpu=$(cd "$mgpu" 2>/dev/null && pwd) || die "PEERS_MGPU_BUILD=$mgpu is not a directory"
[ -x "$mgpu/bin/mgpu-run" ] || die "no $mgpu/bin/mgpu-run: build libmgpurt first (./bootstrap && ./configure --with-cuda && make), or set PEERS_MGPU_BUILD"
[ -f "$mgpu/lib/.libs/libmgpurt.so" ] || die "no $mgpu/lib/.libs/libmgpurt.so: set PEERS_MGPU_BUILD to a built libmgpurt tree"
mgpu_run=$mgpu/bin/mgpu-run
log "libmgpurt: $("$mgpu_run" --version) from $mgpu"

# ------------------------------------------------------------------- StarPU
# StarPU links the CUDA toolkit's libraries (cudart, cublas, cusparse).
cuda=${CUDA_HOME:-/usr/local/cuda}
for d in "$cuda/lib64" "$cuda/lib"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
# A prefix that loads here: every library that libstarpu needs is found.
# Where one is missing (a CUDA library in another directory, such as the
# nvidia-* Python wheels' lib/), its directory is looked for and added.
loads() {
  ls "$1"/lib/libstarpu-*.so >/dev/null 2>&1 || return 1
  local lib d
  for lib in $(ldd "$1"/lib/libstarpu-*.so 2>/dev/null | awk '/not found/ {print $1}'); do
    d=$(find /usr/local /opt /usr/lib /usr/lib64 -name "$lib" 2>/dev/null | head -1)
    [ -n "$d" ] && export LD_LIBRARY_PATH="$(dirname "$d")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  ! ldd "$1"/lib/libstarpu-*.so 2>/dev/null | grep -q 'not found'
}
if [ -n "${PEERS_STARPU_PREFIX:-}" ]; then
  prefix=$PEERS_STARPU_PREFIX
  loads "$prefix" || { ldd "$prefix"/lib/libstarpu-*.so 2>&1 | grep 'not found' >&2 || true; die "PEERS_STARPU_PREFIX=$prefix has no loadable lib/libstarpu-*.so"; }
elif loads "$here/starpu/prefix"; then
  prefix=$here/starpu/prefix
else
  prefix=$work/starpu-prefix
  if [ -f "$top/.peers/starpu-prefix.tar.gz" ]; then
    rm -rf "$prefix"; mkdir -p "$prefix"
    tar xzf "$top/.peers/starpu-prefix.tar.gz" -C "$prefix"
    if ! loads "$prefix"; then
      log "the carried StarPU does not load here:"; ldd "$prefix"/lib/libstarpu-*.so | grep 'not found' >&2 || true
    fi
  fi
  if ! loads "$prefix"; then
    [ -f "$top/.peers/starpu-src.tar.gz" ] || die "no StarPU: run bench/peers/starpu/build.sh, or carry .peers/ from bench/peers/starpu/pack.sh"
    log "building StarPU from .peers/starpu-src.tar.gz (a few minutes)"
    STARPU_SRC=$top/.peers/starpu-src.tar.gz STARPU_WORK=$work/starpu-work bash "$here/starpu/build.sh" "$prefix"
  fi
fi
log "StarPU $(cat "$prefix/STARPU-VERSION" 2>/dev/null || echo '?') from $prefix"
peer=$work/starpu-peer
bash "$here/starpu/peer-build.sh" "$mgpu" "$prefix" "$peer"
# StarPU keeps its bus and task performance models here; dmda reads them.
export STARPU_HOME=${STARPU_HOME:-$work/starpu-home}
export STARPU_SILENT=1
export NCCL_NVLS_ENABLE=0

# ------------------------------------------------------------------ machine
ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
ngpu=${ngpu:-0}
cores=$(nproc)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "host: $(uname -n)"
  echo "cores: $cores"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
  echo "gpus: $ngpu"
  if [ "$ngpu" -gt 0 ]; then nvidia-smi -L | sed 's/ (UUID.*//; s/^/gpu: /'; fi
  echo "libmgpurt: $("$mgpu_run" --version)"
  echo "starpu: $(cat "$prefix/STARPU-VERSION" 2>/dev/null || echo '?')"
  echo "memory: $memory"
  echo "command: bash bench/peers/run.sh $([ $smoke = 1 ] && echo '--smoke ')--memory $memory OUT"
} > "$out/raw/machine.txt"
if [ "$ngpu" -eq 0 ]; then
  log "no GPU found: this run compares the CPU-only modes only (libmgpurt cpu and steal, StarPU CPU workers)"
fi

# ---------------------------------------------------------------- workloads
# name | arguments of both programs | items for the modes with GPUs | items for CPU-only
# Sizes: CPU-only batches of about 0.3 s on 15 cores of a GPU machine; the
# modes with GPUs get more items, enough to fill a GPU. With no GPU every mode
# uses the CPU-only items.
if [ $smoke = 1 ]; then
  repeat=1
  workloads=(
    "mulmod-10|mulmod --intensity 10|20000|20000"
    "mulmod-1000|mulmod --intensity 1000|2000|2000"
    "sha256|sha256|20000|20000"
    "ntt|ntt --size 10|64|64"
    "mandelbrot|mandelbrot --size 256 --intensity 100|128|128")
  tasks_gpu="4,16,64"; tasks_cpu_mult="1 4"
else
  repeat=3
  workloads=(
    "mulmod-10|mulmod --intensity 10|33554432|16777216"
    "mulmod-100|mulmod --intensity 100|16777216|2097152"
    "mulmod-1000|mulmod --intensity 1000|4194304|262144"
    "mulmod-10000|mulmod --intensity 10000|1048576|32768"
    "chain|chain --intensity 20000|262144|8192"
    "sha256|sha256 --size 64|8388608|2097152"
    "ntt|ntt --size 12|16384|4096"
    "mandelbrot|mandelbrot --size 2048 --intensity 1000|4096|1024")
  tasks_gpu="4,16,64,256,1024"; tasks_cpu_mult="1 4 16"
fi
# On a machine of fewer than 16 cores the CPU-only items shrink in proportion,
# so that its batches still take about 0.3 s.
scale_cpu() { if [ $smoke = 0 ] && [ "$cores" -lt 16 ]; then echo $(( $1 * cores / 16 > 0 ? $1 * cores / 16 : 1 )); else echo "$1"; fi; }
# CPU-only task counts: multiples of the CPU workers StarPU starts (all cores).
tasks_cpu=$(for m in $tasks_cpu_mult; do echo $((m * cores)); done | paste -sd,)

for x in ${PEERS_WORKLOADS:-}; do
  known=0
  for w in "${workloads[@]}"; do [ "${w%%|*}" = "$x" ] && known=1; done
  [ $known = 1 ] || die "PEERS_WORKLOADS: unknown workload '$x' (expected some of: $(for w in "${workloads[@]}"; do printf '%s ' "${w%%|*}"; done))"
done
mems=$memory; [ "$memory" = both ] && mems="pageable pinned"
for mem in $mems; do
  mflag=; pflag=; [ "$mem" = pinned ] && { mflag=--pinned; pflag=--pinned; }
  for w in "${workloads[@]}"; do
    IFS='|' read -r name args n n_cpu <<< "$w"
    if [ -n "${PEERS_WORKLOADS:-}" ] && ! [[ " $PEERS_WORKLOADS " == *" $name "* ]]; then continue; fi
    n_cpu=$(scale_cpu "$n_cpu")
    [ "$ngpu" -eq 0 ] && n=$n_cpu
    tag=$name-$mem
    # libmgpurt: mgpu-run checks its outputs against the CPU function.
    for mode in steal gpu cpu; do
      [ "$mode" = gpu ] && [ "$ngpu" -eq 0 ] && continue
      items=$n; [ "$mode" = cpu ] && items=$n_cpu
      log "$tag: libmgpurt $mode, $items items"
      "$mgpu_run" $args -n "$items" --mode $mode --repeat $repeat $mflag --json > "$out/raw/mgpu-$tag-$mode.json" ||
        die "mgpu-run $args -n $items --mode $mode failed"
    done
    # StarPU: every scheduler and task size of the sweep, best kept.
    for mode in all gpu cpu; do
      [ "$mode" != cpu ] && [ "$ngpu" -eq 0 ] && continue
      items=$n; [ "$mode" = cpu ] && items=$n_cpu
      case $mode in
        all) scheds=lws,dmda,eager tasks=$tasks_gpu ;;
        gpu) scheds=lws,dmda,eager tasks=$tasks_gpu ;;
        cpu) scheds=lws,eager tasks=$tasks_cpu ;;
      esac
      log "$tag: StarPU $mode ($scheds; tasks $tasks), $items items"
      "$peer" $args -n "$items" --mode $mode --sched $scheds --tasks "$tasks" --repeat $repeat $pflag --json \
        > "$out/raw/starpu-$tag-$mode.json" || die "starpu-peer $args -n $items --mode $mode failed"
    done
  done
done

# ----------------------------------------------------------------- overhead
log "overhead: libmgpurt (bench/mgpu-overhead 1) and StarPU (one CPU worker)"
if [ -x "$mgpu/bench/mgpu-overhead" ]; then
  "$mgpu/bench/mgpu-overhead" 1 > "$out/raw/mgpu-overhead.txt" || die "bench/mgpu-overhead failed"
else
  log "no $mgpu/bench/mgpu-overhead: libmgpurt's overhead row stays empty"
fi
STARPU_NCUDA=0 "$peer" --overhead --sched lws,dmda,eager --json > "$out/raw/starpu-overhead.json" ||
  die "starpu-peer --overhead failed"

python3 "$here/table.py" "$out" > "$out/peers.md"
cat "$out/peers.md"
log "done: $out/peers.md, $out/peers.json, $out/peers.log"
