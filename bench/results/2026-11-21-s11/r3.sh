#!/bin/bash
# GPU make check of new (.gpu: streamed copy-out); A/B old (.gpu-old, HEAD) vs new; traces of steal mulmod 10 per GPU
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-480}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for i in 1 2 3; do
  left || break
  echo "== trace $i: new steal mulmod 10"
  timeout 60 /tmp/new/src/bin/mgpu-run mulmod --intensity 10 -n 67108864 --mode steal --repeat 5 --trace /tmp/t$i.json 2>&1 | grep -E "gpu[0-9] |items/s"
  python3 diag/gpus.py /tmp/t$i.json 4
done
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "ntt -n 65536"; do
  for b in old new; do
    left || break 2
    echo "== $b: $W"
    timeout 100 /tmp/$b/src/bin/mgpu-run $W --compare --rounds 2 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
