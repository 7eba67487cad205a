#!/bin/bash
# bash diag/s11.sh: mandelbrot --compare at three iteration limits, then the
# co-run bound: each side's throughput while the other side runs in a second
# process, against --compare's figures from the same round.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L > $OUT/gpus.txt 2>&1; nproc >> $OUT/gpus.txt; cat $OUT/gpus.txt
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
echo "build done at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
LIM=${LIM:-560}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
cmp() { echo "== $* --compare"; timeout 150 $B "$@" --compare 2>&1 | grep -E "^mode|E =|static:|verification|rror" ; }
tput() { timeout 100 $B "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1; }
corun() { # corun FG BG WORKLOAD...: FG's throughput while BG runs in another process
  local fg=$1 bg=$2; shift 2
  $B "$@" --mode $bg --repeat 1000 --quiet --no-verify > /dev/null 2>&1 & local p=$!
  sleep 4
  echo "  $fg while $bg runs: $(tput "$@" --mode $fg --repeat 7)"
  kill -TERM $p 2>/dev/null; wait $p 2>/dev/null
}
for it in ${MANDEL:-2000 10000 30000}; do
  left || break
  cmp mandelbrot --intensity $it --repeat 5
done
echo "mandelbrot done at $(( $(date +%s) - T0 )) s"
W1="mulmod --intensity 100"; W2="mulmod --intensity 10 -n 67108864"; W3="ntt -n 65536"; W4="sha256 -n 33554432"
for k in 1 2; do
 for W in "$W1" "$W2" "$W3" "$W4"; do
  left || { echo "time up"; break 2; }
  cmp $W --repeat 7 --no-verify
  corun gpu cpu $W
  corun cpu gpu $W
 done
done
echo "done at $(( $(date +%s) - T0 )) s"
