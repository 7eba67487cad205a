#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
LIM=${LIM:-500}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for pass in 1 2; do
  [ $pass = 1 ] && RS="0 4 15" || RS="15 4 0"
  for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "ntt -n 65536" "mulmod --intensity 100"; do
    for R in $RS; do
      left || break 3
      f=$OUT/$(echo $W | tr -d ' -')-r$R-p$pass.txt
      timeout 60 /tmp/new/src/bin/mgpu-run $W --reserve $R --compare --rounds 2 --repeat 3 > $f 2>&1
      echo "$pass | $W | reserve $R | $(grep -E '^mode (cpu|gpu|steal)' $f | awk '{printf "%s %s  ", $2, $9}') | $(grep -o 'E = steal / (cpu + gpu) = .*' $f | cut -c27-)"
    done
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
