#!/bin/bash
# bash diag/r4.sh: GPU make check, every issue-5 --compare with --rounds 3 --repeat 3, saxpy-resident (one GPU).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
echo "build done at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "mulmod --intensity 100" "sha256 -n 33554432" "ntt -n 65536" "mulmod --intensity 10 -n 67108864" \
         "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "mandelbrot" "saxpy"; do
  left || { echo "time up"; break; }
  echo "== $W --compare --rounds 3 --repeat 3"
  timeout 150 $B $W --compare --rounds 3 --repeat 3 2>&1 | grep -E "^libmgpurt|^mode|E =|static:|verification|rror|kept out|gpu0 "
done
left && { echo "== saxpy-resident"; timeout 60 $B saxpy-resident 2>&1 | tail -3; }
echo "done at $(( $(date +%s) - T0 )) s"
