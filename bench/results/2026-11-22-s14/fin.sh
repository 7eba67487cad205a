#!/bin/bash
# bash diag/fin.sh: GPU make check of .gpu, then mandelbrot --compare twice, the
# cost-profile test per issue-5 workload, and --compare of the others.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "^(PASS|FAIL|SKIP|ERROR)|^# " $OUT/check.log
B=/tmp/new/src/bin/mgpu-run
LIM=${LIM:-500}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for p in 1 2; do
  timeout 60 $B mandelbrot --compare --rounds 2 --repeat 5 > /tmp/o.txt 2>&1
  echo "p$p mandelbrot | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
done
for W in "mandelbrot" "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "sha256 -n 33554432" "ntt -n 65536" "saxpy"; do
  left || break
  MGPU_DEBUG=debug timeout 60 $B $W --mode steal --repeat 5 > /tmp/o.txt 2>&1
  echo "stats | $W | cut by cost in $(grep -c 'by the cost profile' /tmp/o.txt) batches | $(grep 'cost profile: middle' /tmp/o.txt | tail -1 | sed 's/.*cost profile: //')"
done
for W in "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "ntt -n 65536" "sha256 -n 33554432"; do
  left || break
  timeout 60 $B $W --compare --rounds 2 --repeat 3 > /tmp/o.txt 2>&1
  echo "$W | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s  ", $2, $11}') | $(grep -E 'E =|static:' /tmp/o.txt | sed 's/heterogeneous efficiency //' | tr '\n' ' ')"
done
echo "done at $(( $(date +%s) - T0 )) s"
