#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# sweep.sh: the per-workload runs of doc/benchmarks.md, from a build tree:
#   bash bench/sweep.sh > sweep.txt
# Each workload runs `mgpu-run W --compare --rounds 2 --repeat 3` (with
# --compare-time 0, so that no figure is cut however long that takes); one
# summary line pair per workload (bench/report.py reads them), then saxpy-resident.
set -u
run=${MGPU_RUN:-bin/mgpu-run}
for W in "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" \
         "mulmod --intensity 100" "ntt -n 65536" "mandelbrot" \
         "mulmod --intensity 1000 -n 4194304" "mulmod --intensity 10000 -n 1048576" "saxpy"; do
  # shellcheck disable=SC2086 # W is a workload and its flags
  $run $W --compare --compare-time 0 --rounds 2 --repeat 3 > run.txt 2>&1
  echo "== $W | $(awk '/^mode/ {printf "%s %s%s  ", $2, $11, ($0 ~ /host steal/ ? " st" $NF : "")}' run.txt)"
  echo "   $(grep -E 'E =|static:|kept out|verification|rror' run.txt | tr '\n' '|')"
done
rm -f run.txt
echo "== saxpy-resident"
$run saxpy-resident
