#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
R=/tmp/new/src/bin/mgpu-run
for pass in 1 2; do
  for RS in 0 4 15 30; do
    echo "pass $pass reserve $RS: $($R mulmod --intensity 10 -n 67108864 --mode steal --reserve $RS --repeat 8 --trace /tmp/t.json 2>&1 | grep -E '^mode' | cut -c1-60) | $(python3 diag/tails.py /tmp/t.json s)"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
