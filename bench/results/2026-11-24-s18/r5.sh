#!/bin/bash
# r5: GPU make check at HEAD and test-gpu twice more (test_balance_real in five rounds); then what makes a
# mulmod 300 run (4 CPU workers, pageable arrays) fast or slow: placement of the workers, huge pages, pinned arrays.
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
lscpu | grep -E 'Model name|Thread|Core|Socket|NUMA|L3'; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; ldd --version | head -1
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
grep -hE "balance" /tmp/new/src/tests/test-gpu*.log
export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu
for i in 1 2; do (cd /tmp/new/src && timeout 200 ./tests/test-gpu 2>&1 | grep -E 'balance on|Checks|F:'); done
echo "checks done at $(( $(date +%s) - T0 )) s"
N=/tmp/new/src/bin/mgpu-run
W="mulmod --intensity 300 -n 16777216 -t 4 --reserve 0 --mode gpu --repeat 5"
one() { local tag=$1; shift; "$@" > /tmp/o.txt 2>&1; echo "$tag $(grep -E '^mode' /tmp/o.txt | awk '{print $8}') $(grep -c 'verification: ok' /tmp/o.txt)"; }
for i in $(seq 10); do
  one plain  $N $W
  one spread env OMP_PROC_BIND=spread OMP_PLACES=cores $N $W
  one close  env OMP_PROC_BIND=close OMP_PLACES=cores $N $W
  one thp    env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 $N $W
  one pinned $N $W --pinned
  one steal  $N ${W/--mode gpu/--mode steal}
done
echo "done at $(( $(date +%s) - T0 )) s"
