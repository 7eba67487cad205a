#!/bin/bash
# bash diag/ab.sh: build the old tree (.gpu-old) and this tree (.gpu; with make check unless CHECK=0),
# then alternate old/new runs in each mode of MODE (default steal) of the workloads in WL (|-separated), PAIRS pairs each,
# tracing the new runs with TRACE=1 (the old ones are not traced, so time with TRACE=0).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "old build done at $(( $(date +%s) - T0 )) s"
if [ "${CHECK:-1}" = 1 ]; then
  BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
  grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
else
  BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "new build rc=$?"
fi
echo "new build done at $(( $(date +%s) - T0 )) s"
N=/tmp/new/src/bin/mgpu-run; O=/tmp/old/src/bin/mgpu-run
LIM=${LIM:-560}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
one() { # tag binary args...
  local t=$1 b=$2; shift 2
  timeout 60 $b "$@" > /tmp/o.txt 2>&1
  printf "%-4s %s | %s\n" "$t" "$*" "$(grep -E '^mode|verification|rror' /tmp/o.txt | awk '{printf "%s ", $0}' | cut -c1-150)"
}
PAIRS=${PAIRS:-3}
WL=${WL:-mandelbrot|mulmod --intensity 10 -n 67108864|sha256 -n 33554432|ntt -n 65536|mulmod --intensity 1000 -n 4194304}
IFS='|' read -ra WS <<< "$WL"
for M in ${MODE:-steal}; do
for W in "${WS[@]}"; do
  for p in $(seq $PAIRS); do
    left || break
    one old $O $W --mode $M --repeat 5
    if [ "${TRACE:-0}" = 1 ]; then
      one new $N $W --mode $M --repeat 5 --trace /tmp/$(echo $W $M | tr -c 'a-z0-9\n' _)-$p.json
    else
      one new $N $W --mode $M --repeat 5
    fi
  done
done
done
for f in $(ls /tmp/*.json 2>/dev/null); do echo "=== $f"; python3 diag/gtr3.py $f 6 | tail -1; done
ls /tmp/*.json >/dev/null 2>&1 && (cd /tmp && tar czf $OUT/tr.tgz *.json)
echo "done at $(( $(date +%s) - T0 )) s"
