#!/bin/bash
# r2: is test_balance_real's miss on 1 x H200 new? old 37b5935 against new, mulmod 300 with 4 CPU workers.
cd "$(dirname "$0")/.."
CHECK=0 PAIRS=3 MODE="gpu steal" WL="mulmod --intensity 300 -n 16777216 -t 4 --reserve 0|mulmod --intensity 100 -t 4 --reserve 0" LIM=300 bash diag/ab.sh
N=/tmp/new/src/bin/mgpu-run
for r in 0 auto; do
  echo "== new compare -t 4 --reserve $r"; timeout 90 $N mulmod --intensity 300 -n 16777216 -t 4 --reserve $r --compare --rounds 2 2>&1 | grep -E '^mode|E =|static:|kept'
done
timeout 60 $N mulmod --intensity 300 -n 16777216 -t 4 --reserve 0 --mode steal --repeat 6 --trace /tmp/s.json > /tmp/o.txt 2>&1; cat /tmp/o.txt | head -30
python3 diag/gtr3.py /tmp/s.json 6
cp /tmp/s.json $OUT/steal300.json
export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu
(cd /tmp/new/src && make tests/test-gpu > /tmp/mk.log 2>&1 || tail -20 /tmp/mk.log)
for i in 1 2; do (cd /tmp/new/src && timeout 200 ./tests/test-gpu 2>&1 | grep -E 'balance|Checks|F:'); done
