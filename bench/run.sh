#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run.sh: the benchmarks of doc/benchmarks.md in one call, on the machine it runs
# on (about 5 minutes on 4 H200s and 64 cores). Writes the raw JSON of every
# run, then report.py's tables and plot, to OUT; doc/benchmarks.md's tables
# come from such a folder kept in bench/results/KIND/DATE-COMMIT/.
#   bash bench/run.sh [--smoke] [OUT]      (default OUT: bench-out)
# --smoke: tiny sizes and two emulated devices, for tests; the figures mean nothing.
# Runs mgpu-run from the build tree (bin/mgpu-run) unless MGPU_RUN names another.
set -euo pipefail
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
out=${1:-bench-out}
here=$(cd "$(dirname "$0")" && pwd)
run=${MGPU_RUN:-${top_builddir:-.}/bin/mgpu-run}
mkdir -p "$out"
if [ $smoke = 1 ]; then
  export MGPU_EMULATE_GPUS=2
  repeat=1
  size() { echo "-n $1"; }
  sizes_ntt="-n 64 --size 10"; sizes_sha="-n 2000"; sizes_mandel="-n 64 --size 64"; sizes_saxpy="-n 100000"
  sizes_pipe="-n 32 --size 10"; sweep_n=2000; intensities="1 10 100"
else
  repeat=5
  sizes_ntt="-n 65536"; sizes_sha="-n 33554432"; sizes_mandel="-n 4096 --size 4096"; sizes_saxpy="-n 536870912"
  sizes_pipe="-n 32768"; sweep_n=16777216; intensities="1 3 10 30 100 300 1000 3000 10000"
fi
# Machine and build, for the report.
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cores: $(nproc)"
  if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L | sed 's/ (UUID.*//; s/^/gpu: /'; fi
  echo "mgpu-run: $("$run" --version)"
} > "$out/machine.txt"
# --compare-time 0: every figure of the report is measured, however long the
# comparison takes on this machine (each run keeps its --max-run-time bound).
compare() { # compare NAME ARGS...
  local name=$1; shift
  echo "== $name: mgpu-run $* --compare --compare-time 0 --repeat $repeat --json" >&2
  "$run" "$@" --compare --compare-time 0 --repeat "$repeat" --json > "$out/compare-$name.json"
}
compare ntt ntt $sizes_ntt
compare ntt-pinned ntt $sizes_ntt --pinned
compare sha256 sha256 $sizes_sha
compare mandelbrot mandelbrot $sizes_mandel
compare saxpy saxpy $sizes_saxpy
compare saxpy-pinned saxpy $sizes_saxpy --pinned
compare pipeline pipeline $sizes_pipe
# The ratio sweep: mulmod's intensity moves the device-to-core ratio.
for k in $intensities; do
  n=$sweep_n
  # CPU-only runs of the dearest points would dominate the time: fewer items there.
  if [ $smoke = 0 ] && [ "$k" -ge 1000 ]; then n=$((sweep_n / 4)); fi
  compare "mulmod-$k" mulmod -n "$n" --intensity "$k"
done
# Multi-GPU: scaling with the GPU count (inputs in host memory, pageable and
# pinned), the all-reduce sweep against raw NCCL, split-array workloads.
if [ $smoke = 1 ]; then
  gl=1,2; scale_ntt="-n 64 --size 10"; scale_mul="-n 20000"; scale_sha="-n 2000"
  ar="--max-bytes 64K"; mv="-n 200 --size 300"; red="-n 100000"; sres="-n 100000"
else
  ng=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  gl=1; [ "${ng:-0}" -ge 2 ] && gl=1,2; [ "${ng:-0}" -ge 4 ] && gl=1,2,4; [ "${ng:-0}" -ge 8 ] && gl=1,2,4,8
  scale_ntt="-n 131072"; scale_mul="-n 67108864 --intensity 1000"; scale_sha="-n 67108864"
  ar=""; mv="-n 10000 --size 300000"; red="-n 1000000000"; sres=""
fi
multi() { # multi NAME ARGS...
  local name=$1; shift
  echo "== $name: mgpu-run $* --json" >&2
  "$run" "$@" --json > "$out/multi-$name.json"
}
for p in "" --pinned; do  # file names: scaling-W and scaling-W-pinned
  s=${p:+-pinned}
  multi "scaling-ntt$s" ntt $scale_ntt --gpus $gl --repeat 3 $p
  multi "scaling-mulmod$s" mulmod $scale_mul --gpus $gl --repeat 3 $p
  multi "scaling-sha256$s" sha256 $scale_sha --gpus $gl --repeat 3 $p
done
multi allreduce allreduce $ar
multi matvec matvec $mv
multi reduce reduce $red
multi saxpy-resident saxpy-resident $sres
if [ -x "${top_builddir:-.}/bench/mgpu-overhead" ]; then
  "${top_builddir:-.}/bench/mgpu-overhead" 1 > "$out/overhead.txt"
fi
python3 "$here/report.py" "$out" > "$out/benchmarks.md"
echo "bench: wrote $out/benchmarks.md and $out/sweep.svg" >&2
