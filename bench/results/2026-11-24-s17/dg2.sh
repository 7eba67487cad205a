#!/bin/bash
# bash diag/dg2.sh: traces with batch and unstage slices: mandelbrot and mulmod 1000, modes gpu, static, steal.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda > $OUT/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 )) s"
B=/tmp/new/src/bin/mgpu-run
run() { # name args...
  local n=$1; shift
  timeout 60 $B "$@" --repeat 10 --trace /tmp/$n.json > /tmp/$n.txt 2>&1
  echo "=== $n: $(grep -E '^mode' /tmp/$n.txt)"
  grep -E "^[0-9]+ +gpu|^total|kept out" /tmp/$n.txt
  python3 diag/gtr3.py /tmp/$n.json 6
}
for p in 1 2; do
  for m in gpu static steal; do run mb-$m-$p mandelbrot --mode $m; done
  for m in gpu static steal; do run mm-$m-$p mulmod --intensity 1000 -n 4194304 --mode $m; done
done
cd /tmp && tar czf $OUT/tr.tgz mb-*.json mm-*.json mb-*.txt mm-*.txt
echo "done at $(( $(date +%s) - T0 )) s"
