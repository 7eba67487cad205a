#!/bin/bash
# bash diag/s16.sh: A/B of the old (.gpu-old) and new (.gpu) builds: --compare and alternating gpu/steal rounds.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build-new.log 2>&1; echo "new build rc=$?"
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-480}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
WS=("mulmod --intensity 100" "mulmod --intensity 10 -n 67108864" "ntt -n 65536" "sha256 -n 33554432" ${EXTRA:+"$EXTRA"})
tp() { local b=$1; shift; timeout 100 /tmp/$b/src/bin/mgpu-run "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1 | cut -d' ' -f1; }
for W in "${WS[@]}"; do
  for b in old new; do
    left || break 2
    echo "== $b: $W --compare --repeat 5"
    timeout 150 /tmp/$b/src/bin/mgpu-run $W --compare --repeat 5 --no-verify 2>&1 | grep -E "^mode|^hetero|^steal vs|kept out"
  done
done
for k in 1 2; do
  for W in "${WS[@]}"; do
    left || break 2
    echo "round $k | $W | old gpu $(tp old $W --mode gpu --repeat 7) steal $(tp old $W --mode steal --repeat 7) | new gpu $(tp new $W --mode gpu --repeat 7) steal $(tp new $W --mode steal --repeat 7)"
  done
done
/tmp/new/src/bin/mgpu-run mulmod --intensity 100 --mode gpu --repeat 5 --trace $OUT/new-gpu.json > $OUT/trace-run.log 2>&1
python3 diag/tr.py $OUT/new-gpu.json 4
/tmp/new/src/bin/mgpu-run mulmod --intensity 100 --mode steal --repeat 5 --trace $OUT/new-steal.json >> $OUT/trace-run.log 2>&1
python3 diag/tr.py $OUT/new-steal.json 4
echo "done at $(( $(date +%s) - T0 )) s"
