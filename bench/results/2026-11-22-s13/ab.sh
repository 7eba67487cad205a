#!/bin/bash
# bash diag/ab.sh: GPU make check of new (.gpu), build old (.gpu-old), then steal
# runs of both, interleaved, two passes.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//' | head -1; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(FAIL|ERROR)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-520}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for p in 1 2; do
  for W in "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "ntt -n 65536"; do
    line="p$p | $W |"
    for b in old new; do
      left || break 3
      timeout 60 /tmp/$b/src/bin/mgpu-run $W --mode steal --repeat 9 > /tmp/o.txt 2>&1
      line="$line $b $(grep -E '^mode' /tmp/o.txt | sed 's/.*), //; s/ items\/s.*moved//')"
    done
    echo "$line"
  done
done
left && for b in old new; do
  timeout 60 /tmp/$b/src/bin/mgpu-run mulmod --intensity 100 --compare --rounds 2 --repeat 5 > /tmp/o.txt 2>&1
  echo "$b mulmod 100 compare: $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') $(grep -E 'E =|static:' /tmp/o.txt | tr '\n' ' ')"
done
echo "done at $(( $(date +%s) - T0 )) s"
