#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu-check.sh: build, test and measure libmgpurt on a GPU machine in one call.
# Run from the project root after ../shared/tools/gpu-pack, with .gpu carried:
#   bash bench/gpu-check.sh [quick|model|alternate|first|compare [1|2]|verify|bench|full]
# quick: build and make check; model: quick, then the completion-time
# model's --compare runs (latency-bound chain and mulmod 10000, sha256 pinned
# and pageable); alternate: no make check, but this tree and every tarball
# of a build folder .gpu/alt/NAME/ (e.g. an older commit's `make dist`)
# built side by side, then bench/alternate.sh over them (the sweep's
# workloads, modes gpu and steal); first: the builds of alternate, this
# tree's GPU suites, bench/first-batch.sh over the builds (its WORKLOADS
# and MODES) and --compare's wall time (COMPARE_WORKLOADS, default chain); multi: quick, then collectives, split arrays and
# --gpus scaling; compare: no make check, but `mgpu-run W --compare --rounds 2
# --repeat 3` on every workload of doc/benchmarks.md's 1 x H200 tables, or on
# the half given (1 or 2: each half fits in one device call); report: quick, then bench/run.sh (doc/benchmarks.md); verify: also compute-sanitizer on the GPU test
# programs and a few --compare runs; bench: quick, then transfer and every
# --compare run; full: bench plus the GPU suites on one GPU and the sanitizer.
# Writes logs to $OUT (or ./gpu-out) and prints a summary last.
set -uo pipefail
mode=${1:-full}
# Logs gather in one folder, packed into $OUT/gpu-logs.tgz at the end.
out=/tmp/gpu-out; rm -rf "$out"; mkdir -p "$out"
pack() { tar czf "${OUT:-$PWD}/gpu-logs-$mode.tgz" -C /tmp gpu-out; }
trap pack EXIT
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$out/gpus.txt" 2>&1; cat "$out/gpus.txt"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
# This tree (as "new") and every tarball of .gpu/alt/NAME/ built at once, a
# share of the cores each, in /tmp/alt-NAME; builds: NAME=MGPU_RUN, new last.
build_alts() {
  mkdir -p .gpu/alt/new; cp .gpu/*.tar.gz .gpu/alt/new/
  builds=(); pids=()
  for d in .gpu/alt/*/; do
    name=$(basename "$d"); cp .gpu/*.deb "$d"
    sed "s|/tmp/mgpurt-deps|/tmp/mgpurt-deps-$name|g" .gpu/build.sh > "$d/build.sh"
    BUILD_DIR=/tmp/alt-$name MGPU_MAKE_TARGETS=all bash "$d/build.sh" --with-cuda --with-cuda-arch="$arch" > "$out/build-$name.log" 2>&1 &
    pids+=($!)
    if [ "$name" = new ]; then builds+=("$name=/tmp/alt-$name/src/bin/mgpu-run"); else builds=("$name=/tmp/alt-$name/src/bin/mgpu-run" "${builds[@]}"); fi
  done
  for p in "${pids[@]}"; do wait "$p" || echo "a build failed (rc $?)"; done
  echo "builds done at $SECONDS s: ${builds[*]}"
  export LD_LIBRARY_PATH=/tmp/mgpurt-deps-new/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}
if [ "$mode" = alternate ]; then
  build_alts
  bash bench/alternate.sh "$out/alternate" "${builds[@]}"
  echo "alternation done at $SECONDS s"
  exit 0
fi
if [ "$mode" = first ]; then
  # This tree and every .gpu/alt/NAME/ tarball built side by side; the GPU
  # suites of this tree; then the first batch of fresh processes against the
  # steady state (bench/first-batch.sh), and --compare's wall time, each run
  # bounded so that the whole fits in one device call.
  build_alts
  (cd /tmp/alt-new/src && make -j"$(nproc)" check TESTS="tests/test-cuda tests/test-gpu.sh tests/test-array-gpu.sh \
     doc/examples/example-cuda" > "$out/check-gpu.log" 2>&1; echo "GPU suites rc $?")
  grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL):' "$out/check-gpu.log"
  echo "GPU suites done at $SECONDS s"
  # Straight into $OUT, so that a call cut short still brings back the rows done.
  LIMIT=${FIRST_LIMIT:-60} bash bench/first-batch.sh "${OUT:-$out}/first" "${builds[@]}"
  echo "first batches done at $SECONDS s"
  for w in ${COMPARE_WORKLOADS:-chain}; do
    t0=$SECONDS
    MGPU_MODEL_DIR=off timeout 90 /tmp/alt-new/src/bin/mgpu-run $w --compare > "$out/compare-$(echo "$w" | tr -c 'a-z0-9' _).txt" 2>&1
    echo "compare $w: rc $?, $((SECONDS - t0)) s"
  done
  exit 0
fi
if [ "$mode" = compare ]; then
  half=${2:-all}
  case $half in 1|2|all) ;; *) echo "gpu-check.sh compare: '$half' is not a half; give 1, 2 or nothing (all)" >&2; exit 2 ;; esac
  MGPU_MAKE_TARGETS=all bash .gpu/build.sh --with-cuda --with-cuda-arch="$arch" > "$out/build.log" 2>&1 ||
    { echo "build failed"; tail -30 "$out/build.log"; exit 1; }
  export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  first=("saxpy" "mulmod --intensity 100" "mandelbrot" "mulmod --intensity 10000 -n 1048576" "ntt -n 65536"
         "sha256 -n 33554432 --pinned")
  second=("mulmod --intensity 1000 -n 4194304" "mulmod --intensity 300 -n 16777216" "chain --pinned -n 262144"
          "mulmod --intensity 10 -n 67108864" "sha256 -n 33554432" "chain")
  case $half in 1) list=("${first[@]}") ;; 2) list=("${second[@]}") ;; all) list=("${first[@]}" "${second[@]}") ;; esac
  for w in "${list[@]}"; do
    echo "== mgpu-run $w --compare --rounds 2 --repeat 3"
    timeout 90 /tmp/mgpurt-build/src/bin/mgpu-run $w --compare --rounds 2 --repeat 3
    echo "(rc $? at $SECONDS s)"
  done > "$out/compare-$half.txt" 2>&1
  cp "$out/compare-$half.txt" "${OUT:-$PWD}/"
  grep -E "^==|^\(rc|best static|efficiency" "$out/compare-$half.txt"
  exit 0
fi
MGPU_MAKE_TARGETS=check bash .gpu/build.sh --with-cuda > "$out/build-check.log" 2>&1
rc=$?
b=/tmp/mgpurt-build/src
# Check's libraries, unpacked by build.sh, for running test programs directly.
export LD_LIBRARY_PATH=/tmp/mgpurt-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cp $b/tests/*.log "$out/" 2>/dev/null
grep -E "^(PASS|FAIL|SKIP|ERROR|# )" "$out/build-check.log" | tee "$out/summary.txt"
[ $rc = 0 ] || { echo "make check failed (rc $rc)"; tail -60 "$out/build-check.log"; }
run=$b/bin/mgpu-run
$run --info > "$out/info.txt" 2>&1; cat "$out/info.txt" | tail -8
grep -h -E "bandwidth|GB/s" $b/tests/test-cuda.log | head -8
if [ "$mode" = quick ]; then exit 0; fi
if [ "$mode" = model ]; then
  grep -h -E "balance|overlap" $b/tests/test-gpu.log
  for w in "chain --pinned -n 262144" "mulmod --intensity 10000 -n 1048576 --pinned" "sha256 -n 33554432 --pinned" \
           "sha256 -n 33554432" "mulmod --intensity 300 -n 16777216"; do
    echo "== mgpu-run $w --compare --repeat 3"; timeout 150 $run $w --compare --repeat 3
    echo "(at $SECONDS s)"
  done > "$out/compare.txt" 2>&1
  grep -E "^==|^\(at|mode |efficiency|static:|ceiling|verification" "$out/compare.txt"
  # The GPU's fit and chunk sizes batch by batch, on a kernel of mid cost.
  MGPU_DEBUG=debug timeout 60 $run mulmod --intensity 1000 -n 4194304 --mode gpu > "$out/model-debug.txt" 2>&1
  grep -E "^mode|^total" "$out/model-debug.txt"; grep "model of" "$out/model-debug.txt" | tail -8
  exit 0
fi
if [ "$mode" = report ]; then
  # bench/run.sh (doc/benchmarks.md), then the hard mandelbrot case.
  (cd $b && time bash bench/run.sh "$out/bench") > "$out/bench.log" 2>&1; echo "bench/run.sh rc=$?"
  tail -3 "$out/bench.log"
  for w in "mandelbrot -n 8192 --size 8192 --intensity 2000" "ntt -n 65536 --pinned"; do
    echo "== mgpu-run $w --compare --repeat 5"; timeout 100 $run $w --compare --repeat 5
  done > "$out/compare-extra.txt" 2>&1
  grep -E "^==|mode |efficiency|static:|verification" "$out/compare-extra.txt"
  exit 0
fi
if [ "$mode" = multi ]; then
  # Multi-GPU: collectives, split arrays, scaling with the GPU count.
  ng=$(grep -c '^GPU' "$out/gpus.txt")
  list=1; [ "$ng" -ge 2 ] && list=1,2; [ "$ng" -ge 4 ] && list=1,2,4; [ "$ng" -ge 8 ] && list=1,2,4,8
  {
    echo "== mgpu-run allreduce"; timeout 120 $run allreduce
    echo "== mgpu-run matvec -n 10000 --size 300000"; timeout 120 $run matvec -n 10000 --size 300000
    echo "== mgpu-run reduce -n 1000000000"; timeout 120 $run reduce -n 1000000000
    echo "== mgpu-run reduce -n 300000000 --dtype f64"; timeout 120 $run reduce -n 300000000 --dtype f64
    echo "== mgpu-run saxpy-resident"; timeout 60 $run saxpy-resident
    for w in "ntt -n 131072" "mulmod -n 67108864 --intensity 1000" "sha256 -n 67108864" "mulmod -n 67108864 --intensity 1000 --pinned"; do
      echo "== mgpu-run $w --gpus $list"; timeout 150 $run $w --gpus $list --repeat 3
    done
    echo "== mgpu-run mandelbrot -n 8192 --size 8192 --intensity 2000 --compare --repeat 5"
    timeout 100 $run mandelbrot -n 8192 --size 8192 --intensity 2000 --compare --repeat 5
  } > "$out/multi.txt" 2>&1
  cat "$out/multi.txt"
  exit 0
fi
if [ "$mode" = verify ]; then
  # memcheck and racecheck without the API errors the tests provoke on purpose.
  for t in test-kernels test-cuda test-gpu; do
    (cd $b && CK_FORK=no timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
      ./tests/$t > "$out/memcheck-$t.txt" 2>&1)
    echo "memcheck $t: $(grep -E 'ERROR SUMMARY' "$out/memcheck-$t.txt" | tail -1) $(grep -E 'Checks:' "$out/memcheck-$t.txt" | tail -1)"
  done
  (cd $b && CK_FORK=no timeout 120 compute-sanitizer --tool racecheck --print-limit 20 ./tests/test-kernels > "$out/racecheck.txt" 2>&1)
  echo "racecheck test-kernels: $(grep -E 'RACECHECK SUMMARY' "$out/racecheck.txt" | tail -1)"
  for w in "mandelbrot -n 8192 --size 8192 --intensity 2000" "mandelbrot" "mulmod -n 16777216 --intensity 3000" "ntt -n 65536"; do
    echo "== mgpu-run $w --compare --repeat 5"
    timeout 100 $run $w --compare --repeat 5
  done > "$out/compare-verify.txt" 2>&1
  grep -E "^==|mode |efficiency|static:|verification" "$out/compare-verify.txt"
  exit 0
fi
if [ "$mode" = full ]; then
# One GPU only, on the same machine: the GPU suites again.
(cd $b && CUDA_VISIBLE_DEVICES=0 ./tests/test-gpu > "$out/test-gpu-1gpu.txt" 2>&1; echo "1-GPU test-gpu rc=$?" >> "$out/test-gpu-1gpu.txt")
tail -3 "$out/test-gpu-1gpu.txt"
grep -h -E "overlap|constants:|oom:|faults:|GPU [0-9]: " $b/tests/test-gpu.log
# compute-sanitizer on the GPU test programs (no fork, so it sees the kernels).
if command -v compute-sanitizer >/dev/null; then
  for t in test-kernels test-cuda; do
    (cd $b && CK_FORK=no timeout 240 compute-sanitizer --tool memcheck --print-limit 20 ./tests/$t > "$out/sanitizer-$t.txt" 2>&1)
    echo "memcheck $t: $(grep -E 'ERROR SUMMARY' "$out/sanitizer-$t.txt" | tail -1)"
  done
  (cd $b && CK_FORK=no timeout 240 compute-sanitizer --tool racecheck --print-limit 20 ./tests/test-kernels > "$out/racecheck-test-kernels.txt" 2>&1)
  echo "racecheck test-kernels: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/racecheck-test-kernels.txt" | tail -1)"
fi
fi # full
{
  echo "== saxpy --mode gpu --pinned (runtime copy path, bytes moved)"
  timeout 60 $run saxpy --mode gpu --pinned --repeat 5
  echo "== saxpy --mode gpu (pageable, staged)"
  timeout 60 $run saxpy --mode gpu --repeat 5
} > "$out/transfer.txt" 2>&1
grep -E "^==|mode " "$out/transfer.txt"
{
  for w in "ntt -n 65536" "ntt -n 65536 --pinned" "sha256 -n 33554432" "mandelbrot -n 8192 --size 8192 --intensity 2000" \
           "saxpy -n 536870912" "saxpy -n 536870912 --pinned" "mulmod -n 67108864 --intensity 30" \
           "mulmod -n 33554432 --intensity 300" "mulmod -n 16777216 --intensity 3000" "pipeline -n 32768"; do
    echo "== mgpu-run $w --compare --repeat 5"
    timeout 150 $run $w --compare --repeat 5
  done
} > "$out/compare.txt" 2>&1
grep -E "^==|mode |efficiency|static:|verification" "$out/compare.txt"
