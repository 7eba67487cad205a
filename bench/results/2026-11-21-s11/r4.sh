#!/bin/bash
# copy threads cap A/B by MGPU_DIAG_COPIERS (4 = committed) on 5755033 + env hook
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
echo "build done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-300}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "ntt -n 65536" "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432"; do
  for c in 4 6 8; do
    left || break 2
    echo "== copiers=$c: $W"
    MGPU_DIAG_COPIERS=$c timeout 60 /tmp/new/src/bin/mgpu-run $W --compare --rounds 2 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
