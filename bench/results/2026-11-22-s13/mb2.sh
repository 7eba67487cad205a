#!/bin/bash
# bash diag/mb2.sh: mandelbrot --compare on 2 GPUs: as is, with MGPU_MAX_BATCH_SIZE
# caps, and with the trial cap of a GPU's first chunks (XFIX, not committed).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/new/src/bin/mgpu-run
run() { # label, env...
  local l=$1; shift
  timeout 60 env "$@" $B mandelbrot --compare --rounds 2 --repeat 5 > /tmp/o.txt 2>&1
  echo "$l | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
}
for p in 1 2; do
  run "p$p as is" X=0
  run "p$p max 256" MGPU_MAX_BATCH_SIZE=256
  run "p$p max 128" MGPU_MAX_BATCH_SIZE=128
  run "p$p xfix" XFIX=1
done
for W in "mulmod --intensity 10000 -n 1048576" "sha256 -n 33554432"; do
  for v in X=0 XFIX=1; do
    timeout 60 env $v $B $W --mode steal --repeat 9 > /tmp/o.txt 2>&1; echo "$W $v: $(grep -E '^mode' /tmp/o.txt)"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
