#!/bin/bash
# r4: where steal on pageable mulmod 300 with 4 CPU workers (--reserve 0) lost speed between 37b5935 and HEAD:
# five builds, rounds of every build in a rotated order, steal and gpu.
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
declare -A P=([a]=.gpu-old [b]=.gpu-b [c]=.gpu-c [d]=.gpu-d [e]=.gpu)
for v in a b c d e; do [ -x /tmp/$v/src/bin/mgpu-run ] || BUILD_DIR=/tmp/$v MGPU_MAKE_TARGETS=all bash ${P[$v]}/build.sh --with-cuda > /tmp/build-$v.log 2>&1 || echo "build $v failed"; done
echo "builds done at $(( $(date +%s) - T0 )) s"
W="mulmod --intensity 300 -n 16777216 -t 4 --reserve 0"
VS=(a b c d e)
for r in $(seq ${ROUNDS:-6}); do
  [ $(( $(date +%s) - T0 )) -lt 520 ] || break
  for m in steal gpu; do
    for i in 0 1 2 3 4; do v=${VS[$(( (i + r) % 5 ))]}
      timeout 60 /tmp/$v/src/bin/mgpu-run $W --mode $m --repeat 5 > /tmp/o.txt 2>&1
      echo "r$r $m $v $(grep -E '^mode' /tmp/o.txt | awk '{print $8}') $(grep -c 'verification: ok' /tmp/o.txt)"
    done
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
