#!/bin/bash
# usage: bash diag/diag.sh  (after the build)
R=/tmp/mgpurt-build/src/bin/mgpu-run
gcc -O2 -pthread diag/spin.c -o /tmp/spin || exit 1
nproc; lscpu | grep -E 'Model name|MHz|NUMA|Socket|Thread'
m() { echo "== $*"; timeout 120 $R "$@" --quiet 2>&1 | grep -E "items/s|rror" ; }
spin() { /tmp/spin "$@" & SP=$!; sleep 0.3; }
unspin() { kill $SP; wait $SP 2>/dev/null; }
for round in 1 2; do
 for W in "sha256 -n 33554432" "mulmod --intensity 10" "mulmod --intensity 10 -n 67108864"; do
  m $W --mode gpu --repeat 5 --no-verify
  spin 60; echo "(60 alu spinners)"; m $W --mode gpu --repeat 5 --no-verify; unspin
  spin 60 mem; echo "(60 mem spinners)"; m $W --mode gpu --repeat 5 --no-verify; unspin
  spin 56; echo "(56 alu spinners)"; m $W --mode gpu --repeat 5 --no-verify; unspin
  m $W --mode cpu --repeat 5 --no-verify
  m $W --mode steal --repeat 5 --no-verify
  m $W --mode steal --repeat 5 --no-verify -t 56
  m $W --mode steal --repeat 5 --no-verify -t 48
 done
 m mulmod --mode gpu --repeat 5 --no-verify
 m mulmod --mode steal --repeat 5 --no-verify
 m mulmod --mode gpu --repeat 5 --no-verify
 m mulmod --mode steal --repeat 5 --no-verify
done
