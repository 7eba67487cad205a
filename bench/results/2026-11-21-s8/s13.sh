#!/bin/bash
# bash diag/s13.sh: A/B of --reserve 0 against auto in steal mode, with gpu-only and cpu-only, three rounds.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
B=/tmp/mgpurt-build/src/bin/mgpu-run
LIM=${LIM:-500}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
tp() { timeout 100 $B "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1 | cut -d' ' -f1; }
for W in "mulmod --intensity 100" "sha256 -n 33554432" "ntt -n 65536" "mulmod --intensity 10 -n 67108864"; do
  echo "== $W: cpu $(tp $W --mode cpu --repeat 3)"
done
for k in 1 2 3; do
 for W in "mulmod --intensity 100" "sha256 -n 33554432" "ntt -n 65536" "mulmod --intensity 10 -n 67108864"; do
  left || { echo "time up"; break 2; }
  echo "round $k | $W | gpu $(tp $W --mode gpu --repeat 7) | none $(tp $W --mode steal --repeat 7 --reserve 0) | auto $(tp $W --mode steal --repeat 7 --reserve auto)"
 done
done
echo "done at $(( $(date +%s) - T0 )) s"
