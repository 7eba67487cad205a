#!/bin/bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | head -1
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$?"
R=/tmp/new/src/bin/mgpu-run
$R mulmod --intensity 100 --mode gpu --repeat 6 | grep -E "^wall|items/s" | head -3
$R mulmod --intensity 100 --mode steal --reserve 0 --repeat 16 --trace /tmp/t100.json > $OUT/s100.txt 2>&1; grep -E "wall|items/s" $OUT/s100.txt | head -3
python3 diag/tails.py /tmp/t100.json
$R mulmod --intensity 10 -n 67108864 --mode gpu --repeat 6 | grep -E "^wall|items/s" | head -3
$R mulmod --intensity 10 -n 67108864 --mode steal --reserve 0 --repeat 10 --trace /tmp/t10.json > $OUT/s10.txt 2>&1; grep -E "wall|items/s" $OUT/s10.txt | head -3
python3 diag/tails.py /tmp/t10.json
gzip -c /tmp/t100.json > $OUT/t100.json.gz
echo "done at $(( $(date +%s) - T0 )) s"
