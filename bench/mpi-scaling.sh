#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# mpi-scaling.sh: the runtime across MPI ranks on one machine, ranks as nodes.
# Each rank drives one emulated GPU of a set speed and no CPU worker, so that
# the speeds, not the machine's cores, set each rank's rate (an emulated
# device sleeps for its items' time): the figures are those of the ranks'
# layer (the split, the parts, the steals, the exchanges), not of a kernel.
#   - weak scaling: 1, 2, 3 and 4 ranks of speed S, ITEMS per rank; the
#     efficiency is throughput(k) / (k x throughput(1));
#   - one slowed rank: 4 ranks, the last at S / 4, against the ideal, the sum
#     of the ranks' own rates (each measured alone, without MPI); also from a
#     kernel's first batch, when the split knows no rate (tests/test-mpi).
# Every run is `mgpu-run mulmod --intensity 10 --threads 0 --json` (a warm-up,
# then the median of --repeat timed runs); the JSON of each goes to OUT, the
# tables to OUT/mpi-scaling.txt and their two lines for doc/benchmarks.md
# to OUT/mpi-summary.txt.
# Run from the build tree, after make tests/test-mpi (the first-batch run).
# Usage: bash bench/mpi-scaling.sh OUT [S items/s, default 2e5] [ITEMS per rank, default 300000]
#        bash bench/mpi-scaling.sh --report OUT [S] [ITEMS]: the summaries again from OUT's raw output
# The launcher is $MGPU_BENCH_MPIEXEC, else mpirun with Open MPI's flags for
# more ranks than cores (and, as root, for root).
set -euo pipefail
report_only=no
if [ "${1:-}" = --report ]; then report_only=yes; shift; fi
out=${1:?usage: bash bench/mpi-scaling.sh [--report] OUT [SPEED] [ITEMS_PER_RANK]}
speed=${2:-2e5}
per=${3:-300000}
run=${MGPU_RUN:-bin/mgpu-run}
mkdir -p "$out"
launch=${MGPU_BENCH_MPIEXEC:-mpirun --oversubscribe}
if [ -z "${MGPU_BENCH_MPIEXEC:-}" ] && [ "$(id -u)" = 0 ]; then launch="$launch --allow-run-as-root"; fi
common="mulmod --intensity 10 --threads 0 --repeat 5 --json -q"
slow=$(python3 -c "print('%g' % ($speed / 4))")
tp() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"][0]["items_per_s"])' "$1"; }

if [ $report_only = no ]; then
{
  echo "machine: $(nproc) CPUs, $(uname -srm); $(mpirun --version 2>&1 | head -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); date: $(date +%F)"
  echo "each rank: 1 emulated GPU, no CPU worker; mgpu-run $common"
} > "$out/machine.txt"

# The ranks' own rates, each alone (no launcher).
MGPU_EMULATE_GPUS=1 MGPU_EMULATE_SPEED=$speed $run $common -n "$per" > "$out/mpi-alone-fast.json"
MGPU_EMULATE_GPUS=1 MGPU_EMULATE_SPEED=$slow $run $common -n "$per" > "$out/mpi-alone-slow.json"
# Weak scaling.
for k in 1 2 3 4; do
  $launch -np "$k" -x MGPU_EMULATE_GPUS=1 -x MGPU_EMULATE_SPEED="$speed" $run $common -n $((k * per)) \
    > "$out/mpi-weak-$k.json"
done
# Three ranks at S and one at S / 4.
$launch -np 3 -x MGPU_EMULATE_GPUS=1 -x MGPU_EMULATE_SPEED="$speed" $run $common -n $((4 * per)) \
  : -np 1 -x MGPU_EMULATE_GPUS=1 -x MGPU_EMULATE_SPEED="$slow" $run $common -n $((4 * per)) > "$out/mpi-slowed.json"

# The same four ranks from a kernel's first batch on, when no rank's rate is
# known and the split is equal (tests/test-mpi: three batches in a row).
MGPU_TEST_SPEEDS="$speed,$speed,$speed,$slow" $launch -np 4 ${MGPU_TEST_MPI:-tests/test-mpi} batch 3 $((4 * per)) \
  > "$out/mpi-first.txt"
fi

python3 - "$out" "$speed" "$per" > "$out/mpi-scaling.txt" <<'PY'
import json, sys
out, speed, per = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
def load(name):
    return json.load(open(f"{out}/{name}.json"))
def tp(d):
    return d["results"][0]["items_per_s"]
fast, slow = tp(load("mpi-alone-fast")), tp(load("mpi-alone-slow"))
print(f"own rates, each rank alone: {fast:.4g} items/s at speed {speed:g}, {slow:.4g} at {speed / 4:g}")
print()
print("weak scaling, %d items per rank:" % per)
print("| ranks | items | items/s | efficiency |")
print("| --- | --- | --- | --- |")
one = tp(load("mpi-weak-1"))
for k in (1, 2, 3, 4):
    d = load(f"mpi-weak-{k}")
    print(f"| {k} | {d['items']} | {tp(d):.4g} | {tp(d) / (k * one):.3f} |")
print()
d = load("mpi-slowed")
ideal = 3 * fast + slow
print("one slowed rank (ranks 0-2 at %g, rank 3 at %g), %d items: %.4g items/s, %.3f of the ideal %.4g "
      "(3 x %.4g + %.4g); an equal split would run at 4 x %.4g = %.4g" %
      (speed, speed / 4, d["items"], tp(d), tp(d) / ideal, ideal, fast, slow, slow, 4 * slow))
first = [l for l in open(f"{out}/mpi-first.txt") if l.startswith("batch ")]
print("the same from the kernel's first batch (tests/test-mpi batch): " +
      "; ".join("batch %s %.3f of the ideal" % (l.split()[1].rstrip(":"), float(l.split()[4]) / ideal) for l in first))
print("| rank | share | items | steals in (items) | steals out (items) | busy s |")
print("| --- | --- | --- | --- | --- | --- |")
for r in d["results"][0]["ranks"]:
    print(f"| {r['rank']} | {r['share']} | {r['items']} | {r['steals_in']} ({r['items_in']}) | "
          f"{r['steals_out']} ({r['items_out']}) | {r['busy_s']:.3f} |")
eff = [tp(load(f"mpi-weak-{k}")) / (k * one) for k in (2, 3, 4)]
with open(f"{out}/mpi-summary.txt", "w") as f:
    f.write("weak scaling, %d items per rank at %g items/s: efficiency %.3f, %.3f, %.3f at 2, 3, 4 ranks "
            "(%.4g items/s at 4)\n" % (per, speed, *eff, tp(load("mpi-weak-4"))))
    f.write("one slowed rank (three at %g items/s, one at %g): %.3f of the ideal %.4g items/s (the sum of the "
            "ranks' own rates); %s from a kernel's first batch (equal shares, balanced by steals); an equal split: "
            "%.3f\n" % (speed, speed / 4, tp(d) / ideal, ideal,
                        ", ".join("%.3f" % (float(l.split()[4]) / ideal) for l in first), 4 * slow / ideal))
PY
cat "$out/mpi-scaling.txt"
cat "$out/mpi-summary.txt"
