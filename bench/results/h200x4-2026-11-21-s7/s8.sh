#!/bin/bash
# bash diag/s8.sh [check]: GPU make check, then --compare (auto reserve by default) and steal with --reserve 0 / 15.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L > $OUT/gpus.txt 2>&1; nproc >> $OUT/gpus.txt
if [ "${1:-}" = check ]; then
  MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?" >> $OUT/check.log
  grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
else
  MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
fi
echo "build done at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
m() { echo "== $*"; MGPU_DEBUG=debug timeout 100 $B "$@" --no-verify 2>&1 | grep -E "items/s|rror|kept out|E =|efficiency|speedup|^mode|static" | sed "s/.*kernel .*items: /  /" ; }
W1="mulmod --intensity 100"; W2="mulmod --intensity 10 -n 67108864"; W3="ntt -n 65536"; W4="sha256 -n 33554432"; W5="mandelbrot"
for k in 1 2; do
 for W in "$W1" "$W2" "$W3" "$W4" "$W5"; do
  left || { echo "time up"; break 2; }
  m $W --compare --repeat 7
  for r in 0 15; do m $W --mode steal --repeat 7 --reserve $r --quiet; done
 done
done
for W in "saxpy" "mulmod --intensity 1000" "mulmod --intensity 10000"; do
  left || { echo "time up"; break; }
  echo "== $W --compare --repeat 5"; timeout 100 $B $W --compare --repeat 5 2>&1 | tail -12
done
echo "bench done at $(( $(date +%s) - T0 )) s"
