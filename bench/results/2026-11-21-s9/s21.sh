#!/bin/bash
# bash diag/s21.sh: mulmod 100 and sha256, gpu against steal in alternating rounds, then traced.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
tp() { timeout 60 $B "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1 | cut -d' ' -f1; }
for k in 1 2 3 4; do
  for W in "mulmod --intensity 100" "sha256 -n 33554432"; do
    echo "round $k | $W | gpu $(tp $W --mode gpu --repeat 7) | steal $(tp $W --mode steal --repeat 7) | steal-r0 $(tp $W --mode steal --reserve 0 --repeat 7)"
  done
done
for m in gpu steal; do
  echo "== trace $m"
  $B mulmod --intensity 100 --mode $m --repeat 5 --no-verify --trace $OUT/$m.json 2>&1 | grep -E "^mode"
  python3 diag/tr.py $OUT/$m.json 5
done
echo "done at $(( $(date +%s) - T0 )) s"
