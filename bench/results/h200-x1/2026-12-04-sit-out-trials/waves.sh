#!/bin/bash
# GPU-only mulmod 10000 at counts around 2^20, chunked and as one launch.
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda --with-cuda-arch=90 > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=/tmp/mgpurt-build/src/bin/mgpu-run
nvidia-smi -L
for p in 0 1; do
  for n in 1000000 1040000 1046326 1048576 1050000 1060000 1100000 2097152; do
    echo "== p$p n=$n"
    $R mulmod --intensity 10000 -n $n --mode gpu --repeat 7 2>&1 | grep -E "^mode|gpu0 "
    $R mulmod --intensity 10000 -n $n --ceiling --repeat 5 2>&1 | grep -E "^ceiling"
  done
done
