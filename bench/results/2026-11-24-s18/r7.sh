#!/bin/bash
# r7: GPU make check at HEAD (OpenMP binding after review); the runtime's threads' CPUs under OMP_PROC_BIND.
cd "$(dirname "$0")/.."
T0=$(date +%s)
nvidia-smi -L | sed 's/ (UUID.*//'; nproc
BUILD_DIR=/tmp/new MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# (TOTAL|PASS|FAIL)" $OUT/check.log
cat /tmp/new/src/tests/test-topology.log; grep -h "balance on" /tmp/new/src/tests/test-gpu*.log
N=/tmp/new/src/bin/mgpu-run
echo "check done at $(( $(date +%s) - T0 )) s"
for b in unset true master spread; do
  if [ $b = unset ]; then E=""; else E="OMP_PROC_BIND=$b"; fi
  echo "== OMP_PROC_BIND $b: $(env $E $N --info | grep ^CPU | cut -c1-120)"
  env $E $N mulmod --intensity 1000 -n 67108864 --repeat 2 -q > /tmp/o.txt 2>&1 & P=$!
  sleep 4
  for t in /proc/$P/task/*; do echo "$(cat $t/comm) $(grep Cpus_allowed_list $t/status | awk '{print $2}')"; done | sort | uniq -c | sort -rn | head -8
  wait $P; grep -E "^mode|verification" /tmp/o.txt
  for i in 1 2; do env $E $N mulmod --intensity 10 -n 67108864 --mode steal --repeat 5 | grep -E '^mode'; done
done
echo "done at $(( $(date +%s) - T0 )) s"
