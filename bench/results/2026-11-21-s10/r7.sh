#!/bin/bash
# bash diag/r7.sh: GPU make check; mulmod 10000 --compare (GPU groups found at init).
set -u
cd "$(dirname "$0")/.."
nvidia-smi -L | head -1; nproc
MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
timeout 60 /tmp/mgpurt-build/src/bin/mgpu-run mulmod --intensity 10000 -n 1048576 --compare --rounds 2 --repeat 3 2>&1 | grep -E "^mode|E =|static:|gpu[0-9] "
