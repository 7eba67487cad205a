#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc; lscpu | grep -E "^(Model name|L3|Socket|NUMA)"; uname -r
gcc -O2 -I/usr/local/cuda/include diag/regbench.c -o /tmp/rb -L/usr/local/cuda/lib64 -lcudart -lpthread || exit 1
/tmp/rb 1; /tmp/rb 4; /tmp/rb 4 56
echo "bench done at $(( $(date +%s) - T0 )) s"
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
echo "build done at $(( $(date +%s) - T0 )) s"
for i in 1 2; do
  timeout 100 /tmp/new/src/bin/mgpu-run mulmod --intensity 10 -n 67108864 --compare --rounds 2 --repeat 3 > $OUT/mm10-$i.txt 2>&1
  grep -E "^mode|E =|static:|kept out|cpu x" $OUT/mm10-$i.txt
done
echo "done at $(( $(date +%s) - T0 )) s"
