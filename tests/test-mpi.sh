#!/bin/sh
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
run "two ranks, the second 5 times slower" 2 ok 1e6,2e5 batch 1 200000
run "four ranks of three speeds, rank 2 slowest" 4 ok 1e6,2e6,1.5e5,1e6 batch 2 400000
run "the share of mgpu_batch_plan" 2 ok 1e6,5e5 plan
run "ranks that disagree on the batch" 2 ok 1e6 mismatch
run "ranks that make different calls" 2 ok 1e6 calls
run "a kernel that fails on rank 1" 2 ok 1e6 fail
run "a batch canceled on rank 0" 2 ok 2e5 cancel
run "rank 1 away from a batch" 2 ok 1e6 lost away
run "rank 1 killed in a batch" 2 fail 1e6 lost kill
run "communicators" 4 ok 1e6 comm
run "collectives over the GPUs of every rank (one rank without)" 4 ok 1e6 coll
run "collectives over two ranks" 2 ok 1e6 coll
run "one rank: one process" 1 ok 1e6 single
run "MGPU_MPI off: one process each" 2 ok 1e6 single
[ $fails = 0 ]
