#!/bin/bash
# bash diag/s9.sh R: one GPU; steal with --reserve auto, 0 and R against gpu and cpu.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); R=$1
nvidia-smi -L > $OUT/gpus.txt 2>&1; nproc >> $OUT/gpus.txt
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
m() { echo "== $*"; MGPU_DEBUG=debug timeout 60 $B "$@" --quiet --no-verify 2>&1 | grep -E "items/s|rror" | sed "s/.*kernel .*items: /  /" | grep -v "auto reserve" ; }
W1="mulmod --intensity 100"; W2="mulmod --intensity 10 -n 67108864"; W3="ntt -n 65536"; W4="sha256 -n 33554432"; W5="mandelbrot"
for k in 1 2; do
 for W in "$W1" "$W2" "$W3" "$W4" "$W5"; do
  [ $(( $(date +%s) - T0 )) -gt 330 ] && { echo "time up"; break 2; }
  m $W --mode gpu --repeat 7
  m $W --mode cpu --repeat 3
  for r in auto 0 $R; do m $W --mode steal --repeat 7 --reserve $r; done
 done
done
echo "bench done at $(( $(date +%s) - T0 )) s"
