#!/bin/bash
# bash diag/ab2.sh: GPU make check of .gpu, then mandelbrot --compare with the
# cost-sized chunks and steals (as is) and without (XNOCOST=1), twice, and a
# traced steal run of each.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=${NEWT:-check} bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "^(PASS|FAIL|SKIP|ERROR)|^# " $OUT/check.log
B=/tmp/new/src/bin/mgpu-run
cmp() { # label env workload...
  local l=$1 e=$2; shift 2
  timeout 60 env $e $B "$@" --compare --rounds 2 --repeat 5 > /tmp/o.txt 2>&1
  echo "$l $* | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
}
for p in 1 2; do
  cmp "p$p cost" X=0 mandelbrot
  cmp "p$p nocost" XNOCOST=1 mandelbrot
done
mkdir -p /tmp/tr
timeout 60 $B mandelbrot --mode steal --repeat 12 --trace /tmp/tr/cost.json > /tmp/tr/cost.txt 2>&1
XNOCOST=1 timeout 60 $B mandelbrot --mode steal --repeat 12 --trace /tmp/tr/nocost.json > /tmp/tr/nocost.txt 2>&1
tar czf $OUT/tr.tgz -C /tmp tr
echo "done at $(( $(date +%s) - T0 )) s"
