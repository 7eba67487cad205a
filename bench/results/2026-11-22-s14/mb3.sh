#!/bin/bash
# bash diag/mb3.sh: split damping A/B (XDAMP env gate): mandelbrot --compare,
# then steal runs of the other issue-5 workloads, interleaved.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/new/src/bin/mgpu-run
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
run() { # label, env...
  local l=$1; shift
  timeout 60 env "$@" $B mandelbrot --compare --rounds 2 --repeat 5 > /tmp/o.txt 2>&1
  echo "$l | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
}
for p in 1 2; do
  run "p$p as is" X=0
  run "p$p damp" XDAMP=1
done
for p in 1 2; do
  for W in "mandelbrot" "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "sha256 -n 33554432" "ntt -n 65536"; do
    line="p$p | $W |"
    for v in X=0 XDAMP=1; do
      left || break 3
      timeout 60 env $v $B $W --mode steal --repeat 9 > /tmp/o.txt 2>&1
      line="$line $v $(grep -E '^mode' /tmp/o.txt | sed 's/.*), //; s/ items\/s.*moved//')"
    done
    echo "$line"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
