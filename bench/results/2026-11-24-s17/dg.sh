#!/bin/bash
# bash diag/dg.sh: mandelbrot steal against gpu on this machine: full --compare, traces, debug log.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/new/src/bin/mgpu-run
timeout 90 $B mandelbrot --compare --rounds 2 --repeat 5 2>&1 | tee $OUT/cmp.txt
for m in gpu steal; do
  MGPU_DEBUG=debug timeout 60 $B mandelbrot --mode $m --repeat 10 --trace /tmp/$m.json > $OUT/$m.txt 2>&1
  echo "=== $m"; grep -vE "^\[" $OUT/$m.txt | head -80; grep -E "^\[" $OUT/$m.txt | cut -c1-200 | sort | uniq -c | sort -rn | head -20
  python3 diag/gtr2.py /tmp/$m.json 4
done
for r in 59 0; do
  echo "=== steal reserve $r"; MGPU_RESERVE_THREADS=$r timeout 60 $B mandelbrot --mode steal --repeat 10 2>&1 | grep -E "^mode|host"
done
echo "=== gpu again"; timeout 60 $B mandelbrot --mode gpu --repeat 10 2>&1 | grep -E "^mode|host"
tar czf $OUT/tr.tgz -C /tmp gpu.json steal.json
for W in "mulmod --intensity 1000 -n 4194304" "sha256 -n 33554432"; do
  echo "=== $W"; timeout 90 $B $W --compare --rounds 2 --repeat 3 2>&1
done
echo "done at $(( $(date +%s) - T0 )) s"
