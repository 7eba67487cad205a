#!/bin/bash
# r8: the CPUs of every thread of mgpu-run (from /proc) under OMP_PROC_BIND, at HEAD (built by r7 in /tmp/new).
N=/tmp/new/src/bin/mgpu-run
for b in unset true master; do
  if [ $b = unset ]; then E=""; else E="OMP_PROC_BIND=$b"; fi
  echo "== OMP_PROC_BIND $b"
  env $E $N mulmod --intensity 20000 -n 33554432 --repeat 4 -q > /tmp/o.txt 2>&1 & P=$!
  sleep 2.5
  for t in /proc/$P/task/*; do echo "$(cat $t/comm) $(grep Cpus_allowed_list $t/status | awk '{print $2}')"; done | sort | uniq -c | sort -rn | head -20
  wait $P; cat /tmp/o.txt
done
