#!/bin/bash
# bash diag/fin2.sh: GPU make check of .gpu (new), build of .gpu-old (old),
# mandelbrot --compare old/new twice, then --compare of four more workloads (new).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "^(PASS|FAIL|SKIP|ERROR)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/old.log 2>&1; echo "old rc=$? at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-400}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
cmp() { # label bin rounds repeat workload...
  local l=$1 b=$2 r=$3 p=$4; shift 4
  timeout 60 $b "$@" --compare --rounds $r --repeat $p > /tmp/o.txt 2>&1
  echo "$l $* | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
}
for p in 1 2; do
  cmp "p$p old" /tmp/old/src/bin/mgpu-run 2 5 mandelbrot
  cmp "p$p new" /tmp/new/src/bin/mgpu-run 2 5 mandelbrot
done
cp /tmp/o.txt $OUT/mandelbrot-new.txt
for W in "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "ntt -n 65536" "sha256 -n 33554432"; do
  left || break
  cmp "new" /tmp/new/src/bin/mgpu-run 2 3 $W
done
echo "done at $(( $(date +%s) - T0 )) s"
