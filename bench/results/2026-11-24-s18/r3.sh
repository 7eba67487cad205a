#!/bin/bash
# r3: GPU make check at HEAD (test_balance_real in rounds), test-gpu twice more; traced gpu/steal mulmod 300
# with 4 CPU workers; new-first A/B against 37b5935; then the issue-5 sweep again.
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
grep -hE "balance" /tmp/new/src/tests/test-gpu*.log
export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu
for i in 1 2; do (cd /tmp/new/src && timeout 200 ./tests/test-gpu 2>&1 | grep -E 'balance|Checks|F:'); done
echo "checks done at $(( $(date +%s) - T0 )) s"
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
N=/tmp/new/src/bin/mgpu-run; O=/tmp/old/src/bin/mgpu-run
W="mulmod --intensity 300 -n 16777216 -t 4 --reserve 0"
for p in 1 2; do for m in gpu steal; do
  timeout 60 $N $W --mode $m --repeat 6 --trace /tmp/$m$p.json > /tmp/o.txt 2>&1; grep -E '^mode' /tmp/o.txt
  python3 diag/gtr4.py /tmp/$m$p.json | tail -1
done; done
(cd /tmp && tar czf $OUT/tr.tgz gpu1.json steal1.json gpu2.json steal2.json)
for p in 1 2 3; do
  for t in new old; do B=$N; [ $t = old ] && B=$O
    timeout 60 $B $W --mode steal --repeat 5 > /tmp/o.txt 2>&1; echo "$t $(grep -E '^mode' /tmp/o.txt)"; done
done
echo "a/b done at $(( $(date +%s) - T0 )) s"
left() { [ $(( $(date +%s) - T0 )) -lt 560 ]; }
for W in "mulmod --intensity 100" "mulmod --intensity 10 -n 67108864" "ntt -n 65536" "sha256 -n 33554432" "mandelbrot" "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576"; do
  left || { echo "time up"; break; }
  timeout 100 $N $W --compare --rounds 2 --repeat 3 > /tmp/o.txt 2>&1
  echo "== $W | $(grep -E '^mode' /tmp/o.txt | awk '{printf "%s %s%s  ", $2, $11, ($0 ~ /host steal/ ? " st" $NF : "")}')"
  echo "   $(grep -E 'E =|static:|kept out|verification|rror' /tmp/o.txt | sed 's/heterogeneous efficiency //; s/(MGPU_RESERVE_THREADS=auto)//' | tr '\n' '|')"
done
echo "done at $(( $(date +%s) - T0 )) s"
