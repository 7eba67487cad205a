#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# first-batch.sh: the first batch of a fresh process against the steady state,
# for several builds of mgpu-run in turn on one machine:
#   bash bench/first-batch.sh OUT NAME=MGPU_RUN [NAME=MGPU_RUN ...]
# Each run is a new process that runs one mode of a workload in batches with
# no bound (--repeat 6 --max-run-time 0); its trace (MGPU_TRACE) gives every
# batch's time, from its activation to its completion, so builds without a
# first-batch report are measured the same way. A build runs each workload
# twice in a row with one new model store (MGPU_MODEL_DIR): the first run
# finds it empty ("none"), the second finds what the first wrote ("stored";
# a build without a store learns nothing from the first). Writes OUT/first.tsv
# (build, workload, mode, store, first_s, steady_s, ratio: the first batch
# over the median of batches 3 to 6) and prints it as a table
# (bench/report.py --table first-batch). It adapts to the GPUs it finds: without
# one, the modes run on the CPU workers alone.
# Environment: WORKLOADS (';'-separated), MODES (default "gpu steal"), LIMIT
# (seconds per run, default 120).
set -u
[ $# -ge 2 ] || { echo "usage: first-batch.sh OUT NAME=MGPU_RUN [NAME=MGPU_RUN...]" >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
default="chain;mulmod --intensity 10;mulmod --intensity 100;mulmod --intensity 1000;mulmod --intensity 10000"
default+=";sha256;ntt;mandelbrot"
IFS=';' read -r -a workloads <<< "${WORKLOADS:-$default}"
read -r -a modes <<< "${MODES:-gpu steal}"
# The GPUs the first build's runtime sees (emulated ones too): none, and the
# modes run on the CPU workers alone.
first=${1#*=}
gpus=$("$first" --info 2>/dev/null | sed -n 's/^GPUs: \([0-9]*\) in use.*/\1/p')
[ "${gpus:-0}" -gt 0 ] || modes=(cpu)
tsv=$out/first.tsv
printf 'build\tworkload\tmode\tstore\tfirst_s\tsteady_s\tratio\n' > "$tsv"
for w in "${workloads[@]}"; do
  for m in "${modes[@]}"; do
    for a in "$@"; do
      name=${a%%=*} run=${a#*=}
      store=$(mktemp -d)
      for kind in none stored; do
        trace=$(mktemp --suffix=.json)
        # shellcheck disable=SC2086 # the workload's words are its arguments
        MGPU_MODEL_DIR=$store MGPU_TRACE=$trace timeout "${LIMIT:-120}" "$run" $w --mode "$m" --repeat 6 \
          --max-run-time 0 -q >> "$out/$name.txt" 2>&1 || echo "first-batch.sh: $name $w $m failed" >&2
        got=$(python3 "$here/report.py" --first-from-trace "$trace")
        # shellcheck disable=SC2086 # the three figures as three words
        [ -n "$got" ] || got="failed failed failed"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$w" "$m" "$kind" $got >> "$tsv"
        rm -f "$trace"
      done
      rm -rf "$store"
    done
  done
done
python3 "$here/report.py" --table first-batch "$tsv"
