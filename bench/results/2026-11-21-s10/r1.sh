#!/bin/bash
# bash diag/r1.sh [check]: machine facts, (GPU make check,) every issue-5 --compare with --rounds 3,
# then static and steal traces of mulmod 1000 and 10000 summarised per batch (diag/tail.py).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc; lscpu | grep -E "^(Thread|Core|Socket|NUMA|Model name)"; nvidia-smi topo -m 2>&1 | head -8
if [ "${1:-}" = check ]; then
  MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
  grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
else
  MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
fi
echo "build done at $(( $(date +%s) - T0 )) s"
B=/tmp/mgpurt-build/src/bin/mgpu-run
LIM=${LIM:-540}
R=${R:-3}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
for W in "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "ntt -n 65536" \
         "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "sha256 -n 33554432" "mandelbrot" "saxpy"; do
  left || { echo "time up"; break; }
  echo "== $W --compare --rounds $R --repeat 3"
  timeout 150 $B $W --compare --rounds $R --repeat 3 2>&1 |
    awk '/^(libmgpurt|mode|total|verification)|E =|static:|rror|note|kept out|gpu[0-9]/ {print; next}
         $2 == "cpu" {n++; it += $3; ch += $5; st += $6} END {if (n) printf "cpu x%d: items %d chunks %d steals %d\n", n, it, ch, st}'
done
for W in "mulmod --intensity 10000 -n 1048576" "mulmod --intensity 1000 -n 4194304"; do
  for M in static steal; do
    left || break 2
    echo "== trace $M: $W"
    timeout 60 $B $W --mode $M --repeat 8 --no-verify --trace $OUT/t.json -q 2>&1 | tail -1
    python3 diag/tail.py $OUT/t.json 5
  done
done
left && { echo "== saxpy-resident"; timeout 60 $B saxpy-resident 2>&1 | tail -4; }
rm -f $OUT/t.json
echo "done at $(( $(date +%s) - T0 )) s"
