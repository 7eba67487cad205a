#!/bin/bash
# bash diag/s17.sh: A/B/C of old (.gpu-old), poll (.gpu-poll) and new (.gpu) builds: new's --compare, alternating gpu/steal rounds.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
for b in new poll old; do
  d=.gpu; [ $b = new ] || d=.gpu-$b
  BUILD_DIR=/tmp/$b MGPU_MAKE_TARGETS=all bash $d/build.sh --with-cuda > $OUT/build-$b.log 2>&1; echo "$b build rc=$?"
done
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-500}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
WS=("mulmod --intensity 100" "mulmod --intensity 10 -n 67108864" "ntt -n 65536" "sha256 -n 33554432" ${EXTRA:+"$EXTRA"})
tp() { local b=$1; shift; timeout 100 /tmp/$b/src/bin/mgpu-run "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1 | cut -d' ' -f1; }
for W in "${WS[@]}"; do
  left || break
  echo "== new: $W --compare --repeat 5"
  timeout 150 /tmp/new/src/bin/mgpu-run $W --compare --repeat 5 2>&1 | grep -E "^mode|^hetero|^steal vs|kept out|^verif"
done
for k in 1 2; do
  for W in "${WS[@]}"; do
    left || break 2
    line="round $k | $W"
    for b in old poll new; do line="$line | $b gpu $(tp $b $W --mode gpu --repeat 7) steal $(tp $b $W --mode steal --repeat 7)"; done
    echo "$line"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
