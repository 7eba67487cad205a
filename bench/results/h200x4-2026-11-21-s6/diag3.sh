#!/bin/bash
# bash diag/diag3.sh ROUNDS "base:60 base:44 alt:60:nice5 ..." W...
B=/tmp/mgpurt-build/src/bin/mgpu-run; A=/tmp/alt/src/bin/mgpu-run
rounds=$1; vs=$2; shift 2
m() { echo "== $*"; timeout 100 $B "$@" --quiet --no-verify 2>&1 | grep -E "items/s|rror" ; }
for k in $(seq $rounds); do
 for W in "$@"; do
  m $W --mode gpu --repeat 7
  m $W --mode cpu --repeat 3
  for v in $vs; do
    IFS=: read b t p <<< "$v"
    R=$B; [ $b = alt ] && R=$A
    echo "== $W --mode steal --repeat 7 -t $t -v $b$p"
    MGPU_X_POLICY=$p timeout 100 $R $W --mode steal --repeat 7 -t $t --quiet --no-verify 2>&1 | grep -E "items/s|rror"
  done
 done
done
