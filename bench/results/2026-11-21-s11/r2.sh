#!/bin/bash
# A/B by environment in one build: MGPU_DIAG_BIND (bind workers to distinct CPUs) and MGPU_DIAG_STREAM
# (0 memcpy, 1 streamed everywhere, 2 streamed only into user arrays)
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
echo "build done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for pass in 1 2; do
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432"; do
  for cfg in "0 0" "1 0" "0 2" "1 2"; do
    set -- $cfg
    left || break 3
    echo "== pass $pass bind=$1 stream=$2: $W"
    MGPU_DIAG_BIND=$1 MGPU_DIAG_STREAM=$2 timeout 100 /tmp/new/src/bin/mgpu-run $W --compare --rounds 2 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
  done
done
done
echo "done at $(( $(date +%s) - T0 )) s"
