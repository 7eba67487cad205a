#!/bin/bash
R=/tmp/mgpurt-build/src/bin/mgpu-run
gcc -O2 -pthread diag/spin.c -o /tmp/spin && gcc -O2 -pthread diag/mcp.c -o /tmp/mcp || exit 1
m() { echo "== $*"; timeout 120 $R "$@" --quiet --no-verify 2>&1 | grep -E "items/s|rror" ; }
spin() { /tmp/spin "$@" & SP=$!; sleep 0.3; }
unspin() { kill $SP; wait $SP 2>/dev/null; }
echo "## memcpy under load"
for k in 1 2; do
/tmp/mcp 1; /tmp/mcp 4
for s in 60 56 48 32; do spin $s; echo "($s alu spinners)"; /tmp/mcp 1; /tmp/mcp 4; unspin; done
spin 60 mem; echo "(60 mem spinners)"; /tmp/mcp 4; unspin
done
echo "## gpu-only, no CPU workers, under load"
for k in 1 2; do
m sha256 -n 33554432 --mode gpu --repeat 5 -t 0
spin 60; echo "(60 alu spinners)"; m sha256 -n 33554432 --mode gpu --repeat 5 -t 0; unspin
done
echo "## thread sweep"
for k in 1 2; do
for W in "ntt -n 65536" "sha256 -n 33554432" "mulmod --intensity 10 -n 67108864" "mulmod --intensity 100" "mandelbrot"; do
  m $W --mode gpu --repeat 5
  m $W --mode cpu --repeat 5
  for t in 60 52 44; do m $W --mode steal --repeat 5 -t $t; done
done
done
