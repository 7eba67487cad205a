#!/bin/bash
# streamed staging copies: microbench, GPU make check of new, A/B old (memcpy) vs new (streamed stores)
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc; ldd --version | head -1; lscpu | grep -E "^(Model name|L3|L2)"
gcc -O2 -I/usr/local/cuda/include diag/copybench.c -o /tmp/cb -L/usr/local/cuda/lib64 -lcudart -lpthread || exit 1
/tmp/cb 4 0; /tmp/cb 4 60; /tmp/cb 1 0; /tmp/cb 1 60
echo "bench done at $(( $(date +%s) - T0 )) s"
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "ntt -n 65536" "saxpy"; do
  for b in old new; do
    left || break 2
    echo "== $b: $W"
    timeout 100 /tmp/$b/src/bin/mgpu-run $W --compare --rounds 2 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
