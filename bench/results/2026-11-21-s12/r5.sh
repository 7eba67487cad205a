#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
R=/tmp/new/src/bin/mgpu-run
LIM=${LIM:-420}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
var() { case $1 in base) echo "";; nice) echo "MGPU_DIAG_NICE=10";; t56) echo "MGPU_NUM_THREADS=56";; esac; }
for V in base nice t56; do
  echo "trace $V: $(env $(var $V) $R mulmod --intensity 10 -n 67108864 --mode steal --reserve 0 --repeat 6 --trace /tmp/t.json 2>&1 | grep -E '^mode' | cut -c1-60) | $(python3 diag/tails.py /tmp/t.json s)"
done
for pass in 1 2; do
  for W in "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "sha256 -n 33554432"; do
    for V in base nice t56; do
      left || break 3
      env $(var $V) timeout 60 $R $W --compare --rounds 2 --repeat 3 > /tmp/o.txt 2>&1
      echo "$pass | $W | $V | $(grep -E '^mode (cpu|gpu|steal)' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -o 'E = steal / (cpu + gpu) = .*' /tmp/o.txt | cut -c27-) | $(grep -c 'kept out' /tmp/o.txt)"
    done
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
