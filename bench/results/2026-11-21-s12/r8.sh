#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
R=/tmp/new/src/bin/mgpu-run; T=bench/results/2026-11-21-s12/tails.py
for W in "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "sha256 -n 33554432" "ntt -n 65536"; do
  for RS in 0 15 30 15 0 30; do
    echo "$W | reserve $RS: $($R $W --mode steal --reserve $RS --repeat 6 --trace /tmp/t.json 2>&1 | grep -E '^mode' | cut -c1-50) | $(python3 $T /tmp/t.json s)"
  done
  echo "$W | $($R $W --mode cpu --repeat 3 2>&1 | grep -E '^mode' | cut -c1-50) | $($R $W --mode gpu --repeat 6 2>&1 | grep -E '^mode' | cut -c1-50)"
done
echo "done at $(( $(date +%s) - T0 )) s"
