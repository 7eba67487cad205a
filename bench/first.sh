#!/bin/bash
# first.sh: what a process that runs one batch meets. For each workload and
# mode, `mgpu-run W --first-batch --mode M` (a fresh runtime's first batches,
# no warm-up) runs twice in a row in fresh processes with a fresh, empty model
# store (MGPU_MODEL_DIR): the first run has no stored model, the second the
# one the first wrote.
#   bash bench/first.sh OUT.tsv
# Writes one line per run to OUT.tsv (workload, mode, store: none|stored,
# first_s, steady_s, ratio = first_s / steady_s; "failed" where a run failed)
# and every run's output to OUT.log, then prints report.py --table first.
# It adapts to the GPUs that mgpu-run sees: without one, mode gpu runs as
# cpu, and the default workloads are smaller.
# Environment: WORKLOADS (';'-separated workloads with their flags), MODES
# (default "gpu steal"), REPEAT (runs per process, default 6), LIMIT (seconds
# per process, default 300), MGPU_RUN (default the build tree's bin/mgpu-run).
set -u
[ $# = 1 ] || { echo "usage: first.sh OUT.tsv" >&2; exit 2; }
tsv=$1
log=${tsv%.tsv}.log
here=$(cd "$(dirname "$0")" && pwd)
run=${MGPU_RUN:-${top_builddir:-.}/bin/mgpu-run}
command -v python3 >/dev/null 2>&1 || { echo "first.sh: python3 is needed to read mgpu-run's JSON" >&2; exit 2; }
gpus=$("$run" --info 2>/dev/null | sed -n 's/^GPUs: \([0-9]*\) in use.*/\1/p')
[ -n "$gpus" ] || { echo "first.sh: '$run --info' names no GPU count: $("$run" --info 2>&1 | tail -1)" >&2; exit 1; }
if [ "$gpus" -gt 0 ]; then
  # Each mulmod intensity sized so that a batch runs about as long on a GPU.
  default="chain;mulmod --intensity 10 -n 67108864;mulmod --intensity 100;mulmod --intensity 1000 -n 4194304"
  default+=";mulmod --intensity 10000 -n 1048576;sha256;ntt;mandelbrot"
else
  default="chain -n 4096;mulmod --intensity 10 -n 1048576;mulmod --intensity 100 -n 262144"
  default+=";mulmod --intensity 1000 -n 32768;mulmod --intensity 10000 -n 4096;sha256 -n 262144"
  default+=";ntt -n 256;mandelbrot -n 256 --size 256"
fi
IFS=';' read -r -a workloads <<< "${WORKLOADS:-$default}"
read -r -a modes <<< "${MODES:-gpu steal}"
repeat=${REPEAT:-6}; limit=${LIMIT:-300}
if [ "$gpus" = 0 ]; then
  for i in "${!modes[@]}"; do [ "${modes[$i]}" = gpu ] && modes[$i]=cpu; done
  echo "first.sh: mgpu-run sees no GPU: mode gpu runs as cpu" >&2
fi
printf 'workload\tmode\tstore\tfirst_s\tsteady_s\tratio\n' > "$tsv"
: > "$log"
for w in "${workloads[@]}"; do
  for m in "${modes[@]}"; do
    dir=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-first-XXXXXX")
    for store in none stored; do
      echo "== $w --mode $m, store $store" >> "$log"
      # shellcheck disable=SC2086 # w is a workload and its flags
      out=$(MGPU_MODEL_DIR=$dir timeout "$limit" "$run" $w --first-batch --mode "$m" --repeat "$repeat" --json 2>> "$log")
      echo "$out" >> "$log"
      fig=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
f = d["first_batch"]
assert f["measured"] and d["verification"]["failed"] == 0
print("%.6g\t%.6g\t%.4g" % (f["first_s"], f["steady_s"], f["ratio"]))' 2>/dev/null) || fig=$'failed\tfailed\tfailed'
      printf '%s\t%s\t%s\t%s\n' "$w" "$m" "$store" "$fig" >> "$tsv"
    done
    rm -rf "$dir"
  done
done
python3 "$here/report.py" --table first "$tsv"
