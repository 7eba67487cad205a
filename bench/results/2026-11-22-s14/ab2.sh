#!/bin/bash
# bash diag/ab2.sh: cost-profile split A/B: new (.gpu) against old (.gpu-old):
# mandelbrot --compare, then steal runs of the other issue-5 workloads.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=${NEWT:-all} bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "new build rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "^(FAIL|ERROR)|^# (TOTAL|PASS|FAIL)" $OUT/build.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$? at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for p in 1 2; do
  for b in old new; do
    timeout 60 /tmp/$b/src/bin/mgpu-run mandelbrot --compare --rounds 2 --repeat 5 > /tmp/o.txt 2>&1
    echo "p$p $b | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
  done
done
for W in "mandelbrot" "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "sha256 -n 33554432" "ntt -n 65536" "saxpy"; do
  MGPU_DEBUG=debug timeout 60 /tmp/new/src/bin/mgpu-run $W --mode steal --repeat 5 > /tmp/o.txt 2>&1
  echo "stats | $W | cut by cost in $(grep -c 'by the cost profile' /tmp/o.txt) batches | $(grep 'cost profile: middle' /tmp/o.txt | tail -1 | sed 's/.*cost profile: //')"
done
for p in 1 2; do
  for W in "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "sha256 -n 33554432" "ntt -n 65536"; do
    line="p$p | $W |"
    for b in old new; do
      left || break 3
      timeout 60 /tmp/$b/src/bin/mgpu-run $W --mode steal --repeat 9 > /tmp/o.txt 2>&1
      line="$line $b $(grep -E '^mode' /tmp/o.txt | sed 's/.*), //; s/ items\/s.*moved//')"
    done
    echo "$line"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
