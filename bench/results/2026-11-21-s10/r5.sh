#!/bin/bash
# bash diag/r5.sh: old (.gpu-old, no pooling) against new (.gpu): sha256 and mulmod 10 --compare, alternating, twice.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "new build rc=$?"
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-330}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for r in 1 2; do
  for W in "sha256 -n 33554432" "mulmod --intensity 10 -n 67108864"; do
    for b in old new; do
      left || break 3
      echo "== round $r $b: $W"
      timeout 100 /tmp/$b/src/bin/mgpu-run $W --compare --rounds 2 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
    done
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
