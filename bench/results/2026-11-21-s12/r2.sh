#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc
cat /sys/devices/system/cpu/cpu{0,1,32,63}/topology/thread_siblings_list 2>&1 | tr '\n' ' '; echo
grep -m1 -E "flags" /proc/cpuinfo | tr ' ' '\n' | grep -E "^(hypervisor|ht)$" | tr '\n' ' '; echo
gcc -O2 diag/vcpu.c -o /tmp/vc -lpthread && /tmp/vc
echo "vcpu done at $(( $(date +%s) - T0 )) s"
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
for i in 1 2; do
  for T in 60 56; do
    echo "== threads $T pass $i"
    MGPU_NUM_THREADS=$T timeout 100 /tmp/new/src/bin/mgpu-run mulmod --intensity 10 -n 67108864 --compare --rounds 2 --repeat 3 > $OUT/mm10-$T-$i.txt 2>&1
    grep -E "^mode|E =|static:|kept out" $OUT/mm10-$T-$i.txt
    awk '$2 ~ /^gpu/{printf "%s %s %s | ", $2, $4, $9} END{print ""}' $OUT/mm10-$T-$i.txt
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
