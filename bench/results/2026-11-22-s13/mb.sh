#!/bin/bash
# bash diag/mb.sh: mandelbrot on this machine's GPUs, traced, modes gpu, static, steal.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/new/src/bin/mgpu-run
for m in gpu static steal; do
  timeout 60 $B mandelbrot --mode $m --repeat 5 --trace /tmp/$m.json > /tmp/o.txt 2>&1
  echo "== $m: $(grep -E '^mode' /tmp/o.txt)"
  python3 diag/gtr.py /tmp/$m.json
done
for s in 1 2 4; do
  timeout 60 env MGPU_STREAMS_PER_GPU=$s $B mandelbrot --mode gpu --repeat 5 > /tmp/o.txt 2>&1
  echo "== gpu, MGPU_STREAMS_PER_GPU=$s: $(grep -E '^mode' /tmp/o.txt)"
done
timeout 60 $B mandelbrot --mode gpu --gpus 1,2 --repeat 5 2>&1 | tail -4
echo "done at $(( $(date +%s) - T0 )) s"
