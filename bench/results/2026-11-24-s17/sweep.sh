#!/bin/bash
# bash diag/sweep.sh [check]: (GPU make check,) then every issue-5 --compare, 2 rounds.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
if [ "${1:-}" = check ]; then
  BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
  grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
else
  BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
fi
echo "build done at $(( $(date +%s) - T0 )) s"
B=/tmp/new/src/bin/mgpu-run
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "mulmod --intensity 100" "ntt -n 65536" \
         "mandelbrot" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "saxpy"; do
  left || { echo "time up"; break; }
  timeout 120 $B $W --compare --rounds 2 --repeat ${REP:-3} > /tmp/o.txt 2>&1
  echo "== $W | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s%s  ", $2, $11, ($0 ~ /host steal/ ? " st" $NF : "")}')"
  echo "   $(grep -E 'E =|static:|kept out|verification|rror' /tmp/o.txt | sed 's/heterogeneous efficiency //; s/(MGPU_RESERVE_THREADS=auto)//' | tr '\n' '|')"
done
left && { echo "== saxpy-resident"; timeout 60 $B saxpy-resident 2>&1 | tail -4; }
echo "done at $(( $(date +%s) - T0 )) s"
