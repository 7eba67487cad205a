#!/bin/bash
# r6: GPU make check at HEAD (the OpenMP-binding change); old (2fb793f, before it) against new under
# OMP_PROC_BIND; then the issue-5 sweep at HEAD.
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
grep -hE "balance on|openmp_bound" /tmp/new/src/tests/test-gpu*.log /tmp/new/src/tests/test-topology.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
N=/tmp/new/src/bin/mgpu-run; O=/tmp/old/src/bin/mgpu-run
echo "checks and builds done at $(( $(date +%s) - T0 )) s"
for b in old new; do B=$N; [ $b = old ] && B=$O; echo "$b: $(OMP_PROC_BIND=true $B --info | grep ^CPU)"; done
one() { local tag=$1; shift; "$@" > /tmp/o.txt 2>&1; echo "$tag $(grep -E '^mode' /tmp/o.txt | awk '{print $8}') $(grep -c 'verification: ok' /tmp/o.txt)"; }
W="mulmod --intensity 300 -n 16777216 -t 4 --reserve 0 --mode gpu --repeat 5"
for i in $(seq 8); do
  one new-plain $N $W
  one new-spread env OMP_PROC_BIND=spread OMP_PLACES=cores $N $W
  one old-spread env OMP_PROC_BIND=spread OMP_PLACES=cores $O $W
done
W2="mulmod --intensity 10 -n 67108864 --mode steal --repeat 5"
for i in 1 2 3; do
  one new-bind-default $(echo env OMP_PROC_BIND=true) $N $W2
  one old-bind-default env OMP_PROC_BIND=true $O $W2
  one new-plain-default $N $W2
done
echo "a/b done at $(( $(date +%s) - T0 )) s"
left() { [ $(( $(date +%s) - T0 )) -lt 565 ]; }
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "mulmod --intensity 100" "ntt -n 65536" "mandelbrot" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "saxpy"; do
  left || { echo "time up"; break; }
  timeout 100 $N $W --compare --rounds 2 --repeat 3 > /tmp/o.txt 2>&1
  echo "== $W | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s%s  ", $2, $11, ($0 ~ /host steal/ ? " st" $NF : "")}')"
  echo "   $(grep -E 'E =|static:|kept out|verification|rror' /tmp/o.txt | sed 's/heterogeneous efficiency //; s/(MGPU_RESERVE_THREADS=auto)//' | tr '\n' '|')"
done
left && { echo "== saxpy-resident"; timeout 30 $N saxpy-resident 2>&1 | tail -3; }
echo "done at $(( $(date +%s) - T0 )) s"
