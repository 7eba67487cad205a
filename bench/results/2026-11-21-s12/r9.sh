#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-270}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "mulmod --intensity 100" "ntt -n 65536"; do
  for b in old new; do
    left || break 2
    timeout 40 /tmp/$b/src/bin/mgpu-run $W --compare --rounds 2 --repeat 3 > /tmp/o.txt 2>&1
    echo "$b | $W | $(grep -E '^mode (cpu|gpu|steal)' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -o 'E = steal / (cpu + gpu) = .*' /tmp/o.txt | cut -c27-) | $(grep -o 'CPU workers [0-9.]* were kept out\|Every CPU worker was kept out' /tmp/o.txt)"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
