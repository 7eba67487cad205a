#!/bin/bash
# bash diag/s20.sh: build, then the compute-bound issue-5 --compare runs once more (a second H100).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc; git log --oneline -1 2>/dev/null | cut -c1-7
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
for W in "ntt -n 65536" "sha256 -n 33554432" "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304"; do
  [ $(( $(date +%s) - T0 )) -lt 200 ] || { echo "time up"; break; }
  echo "== $W --compare --repeat 5"
  timeout 100 $B $W --compare --repeat 5 2>&1 | grep -E "^mode|E =|static:|verification|kept out"
done
echo "done at $(( $(date +%s) - T0 )) s"
