#!/bin/bash
# bash diag/s10.sh: pageable against pinned (--pinned) arrays, --compare, 4 x H200.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
for k in 1 2; do
 for W in "mulmod --intensity 10 -n 67108864" "ntt -n 65536" "sha256 -n 33554432"; do
  for p in "" "--pinned"; do
   [ $(( $(date +%s) - T0 )) -gt 300 ] && { echo "time up"; break 3; }
   echo "== $W --compare --repeat 7 $p"
   timeout 100 $B $W --compare --repeat 7 --no-verify $p 2>&1 | grep -E "^mode|efficiency|vs static|kept out of the last"
  done
 done
done
echo "done at $(( $(date +%s) - T0 )) s"
