#!/bin/bash
# r9: GPU make check at HEAD, then every issue-5 --compare under OMP_PROC_BIND=true (default settings otherwise).
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
grep -h "balance on" /tmp/new/src/tests/test-gpu*.log
N=/tmp/new/src/bin/mgpu-run
export OMP_PROC_BIND=true
echo "OMP_PROC_BIND=true: $($N --info | grep ^CPU | cut -c1-110)"
left() { [ $(( $(date +%s) - T0 )) -lt 540 ]; }
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "mulmod --intensity 100" "ntt -n 65536" "mandelbrot" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576"; do
  left || { echo "time up"; break; }
  timeout 100 $N $W --compare --rounds 2 --repeat 3 > /tmp/o.txt 2>&1
  echo "== $W | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s%s  ", $2, $11, ($0 ~ /host steal/ ? " st" $NF : "")}')"
  echo "   $(grep -E 'E =|static:|kept out|verification|rror' /tmp/o.txt | sed 's/heterogeneous efficiency //; s/(MGPU_RESERVE_THREADS=auto)//' | tr '\n' '|')"
done
echo "done at $(( $(date +%s) - T0 )) s"
