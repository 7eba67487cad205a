#!/bin/bash
# bash diag/s19.sh: GPU make check of the new build (.gpu), old build (.gpu-old); old/new gpu and steal
# at 1, 2 and 4 GPUs (MGPU_NUM_GPUS), then every issue-5 --compare with the new build.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-520}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
WS=("mulmod --intensity 100" "mulmod --intensity 10 -n 67108864" "ntt -n 65536" "sha256 -n 33554432")
tp() { local b=$1; shift; timeout 100 /tmp/$b/src/bin/mgpu-run "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1 | cut -d' ' -f1; }
for g in 1 2 4; do
  for W in "${WS[@]}"; do
    left || break 2
    line="gpus $g | $W"
    for b in old new; do line="$line | $b gpu $(MGPU_NUM_GPUS=$g tp $b $W --mode gpu --repeat 7) steal $(MGPU_NUM_GPUS=$g tp $b $W --mode steal --repeat 7)"; done
    echo "$line"
  done
done
echo "rounds done at $(( $(date +%s) - T0 )) s"
for W in "ntt -n 65536" "sha256 -n 33554432" "mandelbrot" "saxpy" "mulmod --intensity 10 -n 67108864" \
         "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576"; do
  left || { echo "time up"; break; }
  echo "== new: $W --compare --repeat 5"
  timeout 150 /tmp/new/src/bin/mgpu-run $W --compare --repeat 5 2>&1 | grep -E "^libmgpurt|^mode|E =|static:|verification|rror|note|kept out"
done
echo "done at $(( $(date +%s) - T0 )) s"
