#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; git log --oneline -1 2>/dev/null
MGPU_MAKE_TARGETS=check BUILD_DIR=/tmp/new bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
echo "check done at $(( $(date +%s) - T0 )) s"
R=/tmp/new/src/bin/mgpu-run
for pass in 1 2; do
for M in cpu gpu steal; do
  echo "trace $M: $($R mulmod --intensity 10 -n 67108864 --mode $M --repeat 6 --trace /tmp/t.json 2>&1 | grep -E '^mode' | cut -c1-60) | $(python3 diag/tails.py /tmp/t.json s)"
done
done
echo "done at $(( $(date +%s) - T0 )) s"
