#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1; nproc; uname -r
lscpu | grep -E "NUMA|L3|L2|Socket|Core|Thread" ; cat /proc/sys/kernel/numa_balancing 2>&1; cat /sys/kernel/mm/transparent_hugepage/enabled
ls /sys/kernel/debug/sched 2>/dev/null | head; cat /proc/sys/kernel/sched_min_granularity_ns 2>/dev/null
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
M=/tmp/new/src/bin/mgpu-run
probe() { # label, then mgpu-run args
  local l=$1; shift
  $M "$@" --no-verify > /tmp/p.txt 2>&1 & local p=$!
  sleep ${WARM:-4}
  echo "== $l: $*"
  python3 diag/snap.py $p 2
  wait $p; grep -E "^mode|kept out" /tmp/p.txt | head -3
}
W="mulmod --intensity 10 -n 67108864"
probe cpu $W --mode cpu --repeat 80
probe gpu $W --mode gpu --repeat 250
probe steal0 $W --mode steal --reserve 0 --repeat 250
probe steal30 $W --mode steal --reserve 30 --repeat 250
probe steal0b $W --mode steal --reserve 0 --repeat 250
echo "done at $(( $(date +%s) - T0 )) s"
