#!/bin/bash
# bash diag/tr.sh: traces of mandelbrot steal and static runs on this machine.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/new/src/bin/mgpu-run
for p in 1 2; do
  MGPU_DEBUG=debug timeout 60 $B mandelbrot --mode steal --repeat 12 --trace $OUT/steal$p.json > $OUT/steal$p.txt 2>&1
  timeout 60 $B mandelbrot --mode static --repeat 12 --trace $OUT/static$p.json > $OUT/static$p.txt 2>&1
  timeout 60 $B mandelbrot --mode gpu --repeat 12 --trace $OUT/gpu$p.json > $OUT/gpu$p.txt 2>&1
done
timeout 90 $B mandelbrot --compare --rounds 2 --repeat 5 > $OUT/cmp.txt 2>&1
grep -E "^mode|E =|static:" $OUT/*.txt
echo "done at $(( $(date +%s) - T0 )) s"
