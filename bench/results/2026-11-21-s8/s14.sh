#!/bin/bash
# bash diag/s14.sh: GPU make check, then --compare of four workloads (repeat 5).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
B=/tmp/mgpurt-build/src/bin/mgpu-run
for W in "mulmod --intensity 100" "sha256 -n 33554432" "ntt -n 65536" "mulmod --intensity 10 -n 67108864"; do
  [ $(( $(date +%s) - T0 )) -lt 300 ] || break
  echo "== $W --compare --repeat 5"
  MGPU_DEBUG=debug timeout 100 $B $W --compare --repeat 5 2>&1 | grep -E "^mode|E =|static:|verification|kept out" | sed "s/.*kernel .*items: /  /"
done
echo "done at $(( $(date +%s) - T0 )) s"
