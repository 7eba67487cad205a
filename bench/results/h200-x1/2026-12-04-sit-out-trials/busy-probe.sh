#!/bin/bash
# GPU-only mulmod 10000: full count, static's GPU count, and with busy cores beside it.
export NCCL_NVLS_ENABLE=0
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda --with-cuda-arch=90 > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=/tmp/mgpurt-build/src/bin/mgpu-run
nvidia-smi -L
run() { echo "== $1"; shift; "$@" 2>&1 | grep -E "^mode|gpu0 "; }
for p in 0 1 2; do
  run "p$p full gpu" $R mulmod --intensity 10000 -n 1048576 --mode gpu --repeat 10
  run "p$p less gpu" $R mulmod --intensity 10000 -n 1046326 --mode gpu --repeat 10
  pids=(); for i in $(seq 14); do (while :; do :; done) & pids+=($!); done
  run "p$p busy gpu" $R mulmod --intensity 10000 -n 1048576 --mode gpu --repeat 10
  run "p$p busy steal" $R mulmod --intensity 10000 -n 1048576 --mode steal --repeat 10
  kill "${pids[@]}"; wait 2>/dev/null
  run "p$p full steal" $R mulmod --intensity 10000 -n 1048576 --mode steal --repeat 10
  run "p$p full static" $R mulmod --intensity 10000 -n 1048576 --mode static --ratio 6968 --repeat 10
done
