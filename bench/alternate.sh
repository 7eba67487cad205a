#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# alternate.sh: the same runs on several builds of mgpu-run, taken in turn on
# one machine, so that its drift falls on every build alike:
#   bash bench/alternate.sh OUT NAME=MGPU_RUN [NAME=MGPU_RUN ...]
# For each workload, a pass runs every mode with every build, modes and builds
# in the order given, the next pass in the reverse order (PASSES passes in all,
# default 2), so that drift falls on modes and builds alike; with one build,
# the script compares the modes in turn. Writes each run's
# output to OUT/NAME.txt and one line per run to OUT/runs.tsv (pass, build,
# workload, mode, items/s), then prints each build's median per workload and
# mode over the first build's (report.py --table alternate), or with one build
# each mode's median over the first mode's (report.py --table turns);
# report.py --table verdict OUT/runs.tsv bound=X judges each ratio against X.
# Environment: WORKLOADS (';'-separated, default the per-workload runs of
# bench/sweep.sh), MODES (default "gpu steal"), REPEAT (default 3), PASSES,
# LIMIT (seconds per run, default 120).
set -u
[ $# -ge 2 ] || { echo "usage: alternate.sh OUT NAME=MGPU_RUN NAME=MGPU_RUN..." >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
names=(); runs=()
for a in "$@"; do
  case $a in
    *=*) names+=("${a%%=*}"); runs+=("${a#*=}") ;;
    *) echo "alternate.sh: '$a' is not NAME=MGPU_RUN" >&2; exit 2 ;;
  esac
done
default="mulmod --intensity 10 -n 67108864;sha256 -n 33554432;mulmod --intensity 100;ntt -n 65536;mandelbrot"
default+=";mulmod --intensity 1000 -n 4194304;mulmod --intensity 10000 -n 1048576;saxpy"
IFS=';' read -r -a workloads <<< "${WORKLOADS:-$default}"
modes=${MODES:-gpu steal}; repeat=${REPEAT:-3}; passes=${PASSES:-2}; limit=${LIMIT:-120}
tsv=$out/runs.tsv
printf 'pass\tbuild\tworkload\tmode\titems_per_s\n' > "$tsv"
n=${#names[@]}
read -r -a mlist <<< "$modes"
nm=${#mlist[@]}
for w in "${workloads[@]}"; do
  for ((p = 0; p < passes; p++)); do
    for ((j = 0; j < nm; j++)); do
      m=${mlist[$j]}; (( p % 2 )) && m=${mlist[$((nm - 1 - j))]}
      for ((k = 0; k < n; k++)); do
        i=$k; (( p % 2 )) && i=$((n - 1 - k))
        log=$out/${names[$i]}.txt
        echo "== pass $p: $w --mode $m --repeat $repeat" >> "$log"
        # shellcheck disable=SC2086 # w is a workload and its flags
        r=$(timeout "$limit" ${runs[$i]} $w --mode "$m" --repeat "$repeat" 2>&1)
        echo "$r" >> "$log"
        rate=$(echo "$r" | sed -n 's/^mode .* \([0-9.e+-]*\) items\/s.*/\1/p' | head -1)
        printf '%s\t%s\t%s\t%s\t%s\n' "$p" "${names[$i]}" "$w" "$m" "${rate:-failed}" >> "$tsv"
      done
    done
  done
done
table=alternate; [ "$n" = 1 ] && table=turns
python3 "$(dirname "$0")/report.py" --table $table "$tsv"
