#!/bin/bash
# bash diag/r3.sh: GPU make check of new (.gpu), build of old (.gpu-old); --compare --rounds 3 of old and new
# on mulmod 10000 and 1000, then every issue-5 --compare of new.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "new check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
BUILD_DIR=/tmp/old MGPU_MAKE_TARGETS=all bash .gpu-old/build.sh --with-cuda > $OUT/build-old.log 2>&1; echo "old build rc=$?"
echo "builds done at $(( $(date +%s) - T0 )) s"
LIM=${LIM:-540}
left() { [ $(( $(date +%s) - T0 )) -lt $LIM ]; }
cmp() { local b=$1; shift; echo "== $b: $* --compare --rounds 3 --repeat 3"
  timeout 150 /tmp/$b/src/bin/mgpu-run "$@" --compare --rounds 3 --repeat 3 2>&1 |
    awk '/^(libmgpurt|mode|total|verification)|E =|static:|rror|kept out|gpu[0-9]/ {print; next}
         $2 == "cpu" {n++; it += $3; ch += $5; st += $6} END {if (n) printf "cpu x%d: items %d chunks %d steals %d\n", n, it, ch, st}'; }
for W in "mulmod --intensity 10000 -n 1048576" "mulmod --intensity 1000 -n 4194304"; do
  for b in old new; do left && cmp $b $W; done
done
for W in "ntt -n 65536" "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "sha256 -n 33554432" "mandelbrot" "saxpy"; do
  left && cmp new $W
done
echo "done at $(( $(date +%s) - T0 )) s"
