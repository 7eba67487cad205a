#!/bin/bash
# bash diag/s12.sh [check]: (GPU make check,) then every issue-5 --compare run once, repeat 5.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L > $OUT/gpus.txt 2>&1; nproc >> $OUT/gpus.txt; cat $OUT/gpus.txt
if [ "${1:-}" = check ]; then
  MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
  grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
else
  MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
fi
echo "build done at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
LIM=${LIM:-560}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "ntt -n 65536" "sha256 -n 33554432" "mandelbrot" "saxpy" "mulmod --intensity 10 -n 67108864" \
         "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576"; do
  left || { echo "time up"; break; }
  echo "== $W --compare --repeat 5"
  timeout 150 $B $W --compare --repeat 5 2>&1 | grep -E "^libmgpurt|^mode|E =|static:|verification|rror|note|kept out"
done
left && { echo "== saxpy-resident"; timeout 60 $B saxpy-resident 2>&1 | tail -8; }
echo "done at $(( $(date +%s) - T0 )) s"
