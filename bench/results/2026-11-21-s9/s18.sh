#!/bin/bash
# bash diag/s18.sh: GPU make check of the new build (.gpu), old build (.gpu-old); every issue-5 --compare
# with the new build, --compare of the pageable four with the old, then alternating gpu/steal rounds old/new.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "ntt -n 65536" "sha256 -n 33554432" "mandelbrot" "saxpy" "mulmod --intensity 10 -n 67108864" \
         "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576"; do
  left || { echo "time up"; break; }
  echo "== new: $W --compare --repeat 5"
  timeout 150 /tmp/new/src/bin/mgpu-run $W --compare --repeat 5 2>&1 | grep -E "^libmgpurt|^mode|E =|static:|verification|rror|note|kept out"
done
left && { echo "== new: saxpy-resident"; timeout 60 /tmp/new/src/bin/mgpu-run saxpy-resident 2>&1 | tail -8; }
WS=("mulmod --intensity 100" "mulmod --intensity 10 -n 67108864" "ntt -n 65536" "sha256 -n 33554432")
for W in "${WS[@]}"; do
  left || break
  echo "== old: $W --compare --repeat 5"
  timeout 150 /tmp/old/src/bin/mgpu-run $W --compare --repeat 5 --no-verify 2>&1 | grep -E "^mode|E =|static:|kept out"
done
tp() { local b=$1; shift; timeout 100 /tmp/$b/src/bin/mgpu-run "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1 | cut -d' ' -f1; }
for k in 1 2; do
  for W in "${WS[@]}"; do
    left || break 2
    line="round $k | $W"
    for b in old new; do line="$line | $b gpu $(tp $b $W --mode gpu --repeat 7) steal $(tp $b $W --mode steal --repeat 7)"; done
    echo "$line"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
