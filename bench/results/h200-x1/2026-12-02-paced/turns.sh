#!/bin/bash
# mulmod 300 on pageable and pinned arrays: steal, a fixed split that puts every item on the GPU
# (static at ratio 1e7), GPU-only and steal with 2 CPU workers, three rounds in turn; then one
# steal and one static run with MGPU_DEBUG=debug and a trace each (trace-sums.py sums their spans).
set -u
run=/tmp/mgpurt-build/src/bin/mgpu-run
export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
w="mulmod --intensity 300 -n 16777216"
for r in 1 2 3; do
  for v in steal static gpu steal2 gpupin stealpin; do
    env=(); m=$v; extra=()
    case $v in
      static) env=(MGPU_DEVICE_TO_CORE_RATIO=1e7);;
      steal2) env=(MGPU_NUM_THREADS=2); m=steal;;
      gpupin) m=gpu; extra=(--pinned);;
      stealpin) m=steal; extra=(--pinned);;
    esac
    echo "== round $r $v"
    env "${env[@]}" timeout 60 $run $w --mode $m --repeat 5 "${extra[@]}" 2>&1 | grep -E "^mode|^[0-9]|^total"
  done
done
for v in steal static; do
  e=(); [ $v = static ] && e=(MGPU_DEVICE_TO_CORE_RATIO=1e7)
  env "${e[@]}" MGPU_DEBUG=debug timeout 60 $run $w --mode $v --repeat 2 --trace $OUT/trace-$v.json > $OUT/debug-$v.txt 2>&1
  grep -E "^mode|^total" $OUT/debug-$v.txt; grep -c "model of" $OUT/debug-$v.txt
done
