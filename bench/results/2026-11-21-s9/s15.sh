#!/bin/bash
# bash diag/s15.sh: GPU make check, then mulmod 100 gpu-only vs steal with every CPU worker out, traced.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L; nproc; git log --oneline -1 2>/dev/null
MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# " $OUT/check.log
B=/tmp/mgpurt-build/src/bin/mgpu-run
W="mulmod --intensity 100"
NC=$(( $(nproc) - 2 ))
tp() { timeout 100 $B $W "$@" --quiet --no-verify 2>&1 | grep -oE "[0-9.e+]+ items/s" | head -1 | cut -d' ' -f1; }
$B $W --compare --repeat 5 --no-verify 2>&1 | grep -E "^mode|^hetero|^steal vs|kept out"
for k in 1 2 3; do
  echo "round $k | gpu $(tp --mode gpu --repeat 7) | steal-reserve$NC $(tp --mode steal --reserve $NC --repeat 7) | steal-threads0 $(tp --mode steal --threads 0 --repeat 7) | gpu-threads0 $(tp --mode gpu --threads 0 --repeat 7) | steal-auto $(tp --mode steal --repeat 7)"
done
echo "== trace gpu"
$B $W --mode gpu --repeat 5 --no-verify --trace $OUT/gpu.json 2>&1 | grep -E "^mode|items/s"
python3 diag/tr.py $OUT/gpu.json 7
echo "== trace steal auto (mostly all out)"
$B $W --mode steal --repeat 5 --no-verify --trace $OUT/steal.json 2>&1 | grep -E "^mode|items/s"
python3 diag/tr.py $OUT/steal.json 7
echo "== trace steal threads 0"
$B $W --mode steal --threads 0 --repeat 5 --no-verify --trace $OUT/steal0.json 2>&1 | grep -E "^mode|items/s"
python3 diag/tr.py $OUT/steal0.json 7
echo "done at $(( $(date +%s) - T0 )) s"
