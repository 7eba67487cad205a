#!/bin/bash
# bash diag/s7.sh: GPU make check, then auto reserve against 0 and 15.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L > $OUT/gpus.txt 2>&1; nproc >> $OUT/gpus.txt
MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?" >> $OUT/check.log
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
for f in /tmp/mgpurt-build/src/tests/*.log; do cp $f $OUT/ 2>/dev/null; done
echo "check done at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
m() { echo "== $*"; MGPU_DEBUG=debug timeout 100 $B "$@" --quiet --no-verify 2>&1 | grep -E "items/s|rror|kept out" | sed "s/.*kernel .*items: /  /" ; }
W1="mulmod --intensity 100"; W2="mulmod --intensity 10 -n 67108864"; W3="ntt -n 65536"; W4="sha256 -n 33554432"
for k in 1 2; do
 for W in "$W1" "$W2" "$W3" "$W4"; do
  [ $(( $(date +%s) - T0 )) -gt 520 ] && { echo "time up"; break 2; }
  m $W --mode gpu --repeat 7
  m $W --mode cpu --repeat 3
  for r in auto 0 15; do m $W --mode steal --repeat 7 --reserve $r; done
 done
done
echo "bench done at $(( $(date +%s) - T0 )) s"
