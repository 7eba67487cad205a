#!/bin/bash
# bash diag/r2.sh: mulmod 10000 on 4 GPUs: traces of static and steal kept, --compare at 2, 3 and 4 streams a GPU.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
echo "build done at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
W="mulmod --intensity 10000 -n 1048576"
for M in static steal; do
  timeout 60 $B $W --mode $M --repeat 8 --no-verify --trace $OUT/$M.json -q 2>&1 | tail -1
  python3 diag/tail.py $OUT/$M.json 4
done
for S in 2 3 4; do
  echo "== streams $S"
  MGPU_STREAMS_PER_GPU=$S timeout 100 $B $W --compare --rounds 3 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
done
echo "== streams 2, mulmod 1000"
MGPU_STREAMS_PER_GPU=2 timeout 100 $B mulmod --intensity 1000 -n 4194304 --compare --rounds 3 --repeat 3 2>&1 | grep -E "^mode|E =|static:"
echo "done at $(( $(date +%s) - T0 )) s"
