#!/bin/bash
# GPU make check of new (.gpu: two copying threads per GPU); A/B old (.gpu-old = 5755033, four) vs new
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-290}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "ntt -n 65536" "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432"; do
  for b in old new; do
    left || break 2
    echo "== $b: $W"
    timeout 60 /tmp/$b/src/bin/mgpu-run $W --compare --rounds 2 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
