#!/bin/bash
# bash diag/ab.sh: GPU make check of .gpu (new), build of .gpu-old (old), then
# mandelbrot --compare old/new twice, a traced new steal run, and steal items/s
# of three other workloads old/new.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=${NEWT:-check} bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "^(PASS|FAIL|SKIP|ERROR)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/old.log 2>&1; echo "old rc=$? at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-520}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
cmp() { # label bin workload...
  local l=$1 b=$2; shift 2
  timeout 60 $b "$@" --compare --rounds 2 --repeat 5 > /tmp/o.txt 2>&1
  echo "$l $* | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
}
for p in 1 2; do
  cmp "p$p old" /tmp/old/src/bin/mgpu-run mandelbrot
  cmp "p$p new" /tmp/new/src/bin/mgpu-run mandelbrot
done
mkdir -p /tmp/tr
timeout 60 /tmp/new/src/bin/mgpu-run mandelbrot --mode steal --repeat 12 --trace /tmp/tr/steal.json > /tmp/tr/steal.txt 2>&1
timeout 60 /tmp/new/src/bin/mgpu-run mandelbrot --mode static --repeat 12 --trace /tmp/tr/static.json > /tmp/tr/static.txt 2>&1
tar czf $OUT/tr.tgz -C /tmp tr
for W in "ntt -n 65536" "sha256 -n 33554432" "mulmod --intensity 100"; do
  line="$W |"
  for v in old new; do
    left || break 2
    timeout 60 /tmp/$v/src/bin/mgpu-run $W --mode steal --repeat 5 > /tmp/o.txt 2>&1
    line="$line $v $(grep -E '^mode' /tmp/o.txt | sed 's/.*), //; s/ items\/s.*moved//')"
  done
  echo "$line"
done
echo "done at $(( $(date +%s) - T0 )) s"
