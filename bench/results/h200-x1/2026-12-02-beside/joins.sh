#!/bin/bash
# joins.sh RUN OUTFILE: joins and hand-backs per default workload, mode steal, --repeat 3.
run=$1; o=$2
while IFS= read -r w; do
  log=$(MGPU_DEBUG=debug timeout 60 $run $w --mode steal --repeat 3 2>&1)
  j=$(grep -c 'ran beside' <<< "$log"); h=$(grep -c 'handed back' <<< "$log")
  echo "$w: $j joined, $h handed back; $(grep 'mode steal' <<< "$log" | tail -1)" >> "$o"
done <<'W'
mulmod --intensity 10 -n 67108864
sha256 -n 33554432
sha256 -n 33554432 --pinned
mulmod --intensity 100
ntt -n 65536
mandelbrot
mulmod --intensity 1000 -n 4194304
mulmod --intensity 10000 -n 1048576
mulmod --intensity 300 -n 16777216
saxpy
chain --pinned -n 262144
W
