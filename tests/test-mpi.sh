#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-mpi.sh: the runtime across MPI ranks (tests/test-mpi.c), started with
# mpirun on this machine, ranks as nodes, emulated GPUs of different speeds
# on different ranks. Skipped (77) in a build without MPI or where no
# launcher is installed. The launcher is $MGPU_TEST_MPIEXEC where set (CI:
# "mpirun --allow-run-as-root --oversubscribe"), else configure's, with Open
# MPI's flags for more ranks than cores and, as root, for root.
top_builddir=${top_builddir:-.}
prog=$top_builddir/tests/test-mpi
[ -x "$prog" ] || { echo "a build without MPI: skipped"; exit 77; }
launch=${MGPU_TEST_MPIEXEC:-}
if [ -z "$launch" ]; then
  [ -n "${MPIEXEC:-}" ] && command -v "$MPIEXEC" >/dev/null 2>&1 || { echo "no MPI launcher installed: skipped"; exit 77; }
  launch=$MPIEXEC
  if [ "${MPI_FLAVOR:-}" = openmpi ]; then
    launch="$launch --oversubscribe"
    [ "$(id -u)" = 0 ] && launch="$launch --allow-run-as-root"
  fi
fi
# In a sanitizer build, what MPI keeps allocated until exit is not this
# library's leak (tests/lsan-mpi.supp; MPI's frames need the slow unwinder,
# and its components must stay loaded to be named).
srcdir=${top_srcdir:-.}
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$srcdir/tests/lsan-mpi.supp:print_suppressions=0"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS ASAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose
# Each run is bounded: a rank that hangs fails the test instead of holding it.
bound() { if command -v timeout >/dev/null 2>&1; then timeout "$@"; else shift; "$@"; fi; }
fails=0
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
# run NAME NP EXPECT SPEEDS ARGS...: EXPECT is ok, or fail (any status but 0).
run() {
  name=$1 np=$2 expect=$3 speeds=$4
  shift 4
  t0=$(date +%s)
  MGPU_TEST_SPEEDS=$speeds bound 120 $launch -np "$np" "$prog" "$@" > "$out" 2>&1
  rc=$?
  t=$(( $(date +%s) - t0 ))
  if [ "$expect" = ok ] && [ $rc = 0 ] && ! grep -q '^FAIL' "$out"; then echo "ok: $name (-np $np, $t s)"
  elif [ "$expect" = fail ] && [ $rc != 0 ] && [ $rc != 124 ] && ! grep -q '^FAIL' "$out"; then
    echo "ok: $name (-np $np, $t s; mpirun ended with $rc as it should)"
  else
    echo "FAIL: $name (-np $np): exit $rc after $t s"; fails=$((fails + 1))
  fi
  # Open MPI's launcher repeats a line for every message lost with a killed rank.
  grep -v 'Read -1, expected' "$out" | sed 's/^/    /'
}
# Open MPI 4 picks its UCX one-sided component wherever UCX is built in, and
# that gives no window where UCX finds no network; mgpu_init then fails
# naming the setting that works, and the runs below use it (doc/guide.md,
# "Troubleshooting MPI").
openmpi=no
case $($launch --version 2>&1) in *"Open MPI"* | *OpenRTE*) openmpi=yes ;; esac
if [ $openmpi = yes ] && [ -z "${OMPI_MCA_osc:-}" ]; then
  MGPU_TEST_SPEEDS=1e6,5e5 bound 60 $launch -np 2 "$prog" plan > "$out" 2>&1
  if grep -q "MPI_Win_create failed" "$out"; then
    OMPI_MCA_osc=pt2pt
    export OMPI_MCA_osc
    echo "note: this Open MPI gives no one-sided window by default; the runs set OMPI_MCA_osc=pt2pt"
  fi
fi
if [ $openmpi = yes ]; then
  # osc sm makes windows of shared memory only: MPI_Win_create fails.
  OMPI_MCA_osc=sm MGPU_TEST_SPEEDS=1e6,5e5 bound 60 $launch -np 2 "$prog" plan > "$out" 2>&1
  if grep -q "MPI_Win_create failed: .*OMPI_MCA_osc=pt2pt" "$out"; then echo "ok: an MPI without one-sided windows is named"
  else echo "FAIL: an MPI without one-sided windows: mgpu_init did not name MPI_Win_create and OMPI_MCA_osc"; fails=$((fails + 1)); fi
  sed 's/^/    /' "$out" | head -5
fi
run "two ranks, the second 5 times slower" 2 ok 1e6,2e5 batch 1 200000
run "four ranks of three speeds, rank 2 slowest" 4 ok 1e6,2e6,1.5e5,1e6 batch 2 400000
run "the share of mgpu_batch_plan" 2 ok 1e6,5e5 plan
run "ranks that disagree on the batch" 2 ok 1e6 mismatch
run "ranks that make different calls" 2 ok 1e6 calls
run "a kernel that fails on rank 1" 2 ok 1e6 fail
run "a batch canceled on rank 0" 2 ok 2e5 cancel
run "a batch canceled on rank 0, whose kernel then fails" 2 ok 1e6 cancel-fail
run "rank 1 away from a batch" 2 ok 1e6 lost away
run "rank 1 killed in a batch" 2 fail 1e6 lost kill
run "communicators" 4 ok 1e6 comm
run "collectives over the GPUs of every rank (one rank without)" 4 ok 1e6 coll
run "collectives over two ranks" 2 ok 1e6 coll
run "split arrays across three ranks" 3 ok 1e6 array
run "one rank: one process" 1 ok 1e6 single
run "MGPU_MPI off: one process each" 2 ok 1e6 single
tdir=$(mktemp -d) || exit 99
run "two ranks tracing to one file, then a file each (%r)" 2 ok 1e6 trace "$tdir"
rm -rf "$tdir"

# The guide's example (doc/examples/mpi.c) on two ranks.
example=$top_builddir/doc/examples/mpi
if [ -x "$example" ]; then
  if MGPU_NUM_GPUS=0 bound 120 $launch -np 2 "$example" > "$out" 2>&1 && grep -q '^mpi example: ok (2 ranks)$' "$out"; then
    echo "ok: doc/examples/mpi on 2 ranks"
  else echo "FAIL: doc/examples/mpi on 2 ranks"; fails=$((fails + 1)); fi
  sed 's/^/    /' "$out"
fi

# mgpu-run under the launcher: every batch across the ranks, rank 0's report.
run_mgpu=$top_builddir/bin/mgpu-run
# mpmd SPEED... -- ARGS: one rank per speed, each an emulated GPU of that speed.
mpmd() {
  cmd=""
  while [ "$1" != -- ]; do
    cmd="$cmd${cmd:+ :} -np 1 -x MGPU_EMULATE_GPUS=1 -x MGPU_EMULATE_SPEED=$1 $run_mgpu"
    shift
  done
  shift
  args="$*"
  cmd=$(echo "$cmd" | sed "s|$run_mgpu|$run_mgpu $args|g")
  bound 120 $launch $cmd
}
check_mgpu() { # NAME EXPECT-STATUS COMMAND...: the output in $out
  name=$1 want=$2
  shift 2
  "$@" > "$out" 2>&1
  rc=$?
  if [ "$rc" = "$want" ]; then echo "ok: mgpu-run: $name"; grep -v 'Read -1, expected' "$out" | sed 's/^/    /'
  else echo "FAIL: mgpu-run: $name: exit $rc, expected $want"; sed 's/^/    /' "$out"; fails=$((fails + 1)); fi
}
if [ "${MPI_FLAVOR:-openmpi}" = openmpi ] || [ -n "${MGPU_TEST_MPIEXEC:-}" ]; then
  check_mgpu "two ranks of different speeds" 0 mpmd 1e6 2e5 -- mulmod -n 300000 --intensity 10 --threads 0 --repeat 2
  if ! grep -q '2 MPI ranks' "$out" || [ "$(grep -c '^ *[01] *0 *1 ' "$out")" != 2 ] || ! grep -q '^verification: ok' "$out" ||
     ! grep -q 'total: 300000 items on 2 ranks' "$out"; then
    echo "FAIL: the report lacks the header, a rank's row, the total or the verification"; fails=$((fails + 1))
  fi
  if command -v python3 >/dev/null 2>&1; then
    check_mgpu "--json with the ranks" 0 mpmd 1e6 5e5 1e6 -- mulmod -n 200000 --intensity 10 --threads 0 --repeat 1 --json
    if ! python3 "$srcdir/tests/json-schema.py" "$out" || ! python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mpi_ranks"] == 3
ranks = d["results"][0]["ranks"]
assert [r["rank"] for r in ranks] == [0, 1, 2]
assert sum(r["share"] for r in ranks) == 200000 and sum(r["items"] for r in ranks) == 200000
assert sum(r["items_in"] for r in ranks) == sum(r["items_out"] for r in ranks)
assert d["verification"]["failed"] == 0
' "$out"; then echo "FAIL: --json across ranks: undocumented keys or inconsistent ranks"; fails=$((fails + 1)); fi
  fi
  # A fault on rank 1 (its only GPU fails every launch, no CPU worker): both
  # ranks end the batch with an error naming it.
  cmd="-np 1 -x MGPU_EMULATE_GPUS=1 $run_mgpu mulmod -n 400000 --intensity 10 --threads 0 : -np 1 -x MGPU_EMULATE_GPUS=1 -x MGPU_FAULT_INJECT=launch:0:all $run_mgpu mulmod -n 400000 --intensity 10 --threads 0"
  check_mgpu "a fault on rank 1" 1 bound 60 $launch $cmd
  if ! grep -q 'MGPU_EREMOTE (rank 1' "$out" || ! grep -q 'MGPU_EDEVICE' "$out"; then
    echo "FAIL: the ranks' errors do not name the failing rank"; fails=$((fails + 1))
  fi
  check_mgpu "a multi-GPU workload refused" 2 bound 60 $launch -np 2 -x MGPU_EMULATE_GPUS=1 $run_mgpu reduce -n 1000
  grep -q "runs in one process" "$out" || { echo "FAIL: no reason given"; fails=$((fails + 1)); }
  check_mgpu "--no-mpi: each process alone" 0 bound 60 $launch -np 2 $run_mgpu mulmod -n 2000 --intensity 5 --threads 1 --no-mpi -q
  [ "$(grep -c '^mulmod: 2000 items' "$out")" = 2 ] || { echo "FAIL: not two reports"; fails=$((fails + 1)); }
else
  echo "mgpu-run under mpirun: skipped (its per-rank settings use Open MPI's -x)"
fi
[ $fails = 0 ]
