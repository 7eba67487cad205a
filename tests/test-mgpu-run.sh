#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-mgpu-run.sh: the driver's exit codes, messages, workloads and JSON.
set -u
run="${top_builddir:-.}/bin/mgpu-run"
fails=0; passes=0
export MGPU_DEBUG=1
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { # expect CODE PATTERN -- command...
  code=$1; pat=$2; shift 3
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ]; then bad "$* exited $rc, expected $code: $out"; return; fi
  if [ -n "$pat" ] && ! printf '%s' "$out" | grep -q -- "$pat"; then bad "$*: output lacks '$pat': $out"; return; fi
  ok
}
expect 0 "Usage: mgpu-run" -- "$run" --help
expect 0 "libmgpurt" -- "$run" --version
expect 0 "MGPU_NUM_THREADS" -- "$run" --info
# Where the probe finds no GPU, --info says why (no CUDA in the build, or the driver's error).
info=$("$run" --info 2>&1)
if printf '%s' "$info" | grep -q 'GPUs: 0 in use'; then
  if printf '%s' "$info" | grep -qE 'GPUs: 0 in use \((this libmgpurt is built without CUDA|cudaGetDeviceCount: |the CUDA driver reports no device)'; then ok
  else bad "--info gives no reason for 0 GPUs: $(printf '%s' "$info" | grep 'GPUs:')"; fi
else ok; fi
expect 0 "ntt" -- "$run" --list
expect 2 "unknown or ambiguous option '--frobnicate'" -- "$run" --frobnicate
# A short option in a cluster is named itself, not the word before it; a
# long option given a value it takes none of says so.
expect 2 "unknown option '-x'" -- "$run" -n 5 -xq
expect 2 "option '--json' takes no value: '--json=1'" -- "$run" --json=1
expect 2 "option '--items' needs a value" -- "$run" --items
expect 2 "unknown workload" -- "$run" nosuch
expect 2 "needs a value" -- "$run" --items
expect 2 "--items '-5'" -- "$run" --items -5
expect 2 "--items 'x'" -- "$run" -n x
expect 2 "--mode 'fast'" -- "$run" --mode fast
expect 2 "--ratio" -- "$run" --ratio 0
expect 2 "--size" -- "$run" ntt --size 9 -n 4
expect 2 "--intensity" -- "$run" mulmod --intensity 0
expect 2 "--intensity is for the mulmod, chain and mandelbrot workloads" -- "$run" ntt --intensity 5 -n 4
# --size, like --intensity, only where a workload reads it.
expect 2 "--size is for the ntt, pipeline, sha256, mandelbrot and matvec workloads" -- "$run" saxpy --size 5 -n 4
expect 2 "--size is for the ntt, pipeline, sha256, mandelbrot and matvec workloads" -- "$run" reduce --size 5 -n 4
expect 2 "--size '0': matvec needs at least 1 column" -- "$run" matvec --size 0 -n 10
# --intensity is mandelbrot's iteration limit; the report's first line names it.
expect 0 "mandelbrot, 32 items, intensity 10000;" -- "$run" mandelbrot -n 32 --size 32 --repeat 1 --threads 2
expect 0 "mandelbrot, 32 items, intensity 3;" -- "$run" mandelbrot -n 32 --size 32 --repeat 1 --threads 2 --intensity 3
expect 2 "--devices" -- "$run" --devices 0,0 --info
expect 2 "unexpected argument" -- "$run" ntt extra
expect 2 "--repeat '0'" -- "$run" --repeat 0
expect 2 "--repeat '1001'" -- "$run" --repeat 1001
expect 2 "--seed '-1'" -- "$run" --seed -1
expect 2 "--threads '-1'" -- "$run" --threads -1 --info
expect 2 "--threads '4097'" -- "$run" -t 4097 --info
expect 2 "--num-gpus '65'" -- "$run" --num-gpus 65 --info
expect 2 "--max-batch '0'" -- "$run" --max-batch 0 --info
expect 2 "--streams '33'" -- "$run" --streams 33 --info
expect 2 "--reserve '-1'" -- "$run" --reserve -1 --info
# The library names a setting by its variable; where a flag set it, the
# message names the flag, and the variable keeps its name where it is the source.
expect 2 "^mgpu-run: --reserve 3 leaves no CPU worker for batches that GPUs also run: expected 0..2 with 3 CPU workers (--threads)" -- "$run" --threads 3 --reserve 3 --info
expect 2 "^mgpu-run: MGPU_RESERVE_THREADS=3 leaves no CPU worker .* with 3 CPU workers (--threads)" -- env MGPU_RESERVE_THREADS=3 "$run" --threads 3 --info
expect 2 "^mgpu-run: --num-gpus 3 is more than the 2 emulated GPUs visible: expected 0..2" -- env MGPU_EMULATE_GPUS=2 "$run" --num-gpus 3 --info
expect 2 "^mgpu-run: MGPU_NUM_GPUS=3 is more than" -- env MGPU_EMULATE_GPUS=2 MGPU_NUM_GPUS=3 "$run" --info
expect 2 "^mgpu-run: --devices: device 5 does not exist: expected indices in 0..1" -- env MGPU_EMULATE_GPUS=2 "$run" --devices 5 --info
expect 2 "^mgpu-run: --num-gpus 1 conflicts with --devices, which lists 2 devices" -- env MGPU_EMULATE_GPUS=2 "$run" --num-gpus 1 --devices 0,1 --info
expect 2 "^mgpu-run: --threads 0 leaves no worker" -- "$run" --threads 0 --num-gpus 0 --info
expect 2 "^mgpu-run: --mode cpu runs every batch on the CPU workers, and --threads 0 leaves none: expected --threads of at least 1, or --mode steal, static or gpu" -- \
  env MGPU_EMULATE_GPUS=1 "$run" --mode cpu --threads 0 --info
expect 2 "^mgpu-run: --mode gpu runs kernels with a GPU function on GPUs only, and --num-gpus 0 leaves none: expected --num-gpus of at least 1" -- \
  "$run" --mode gpu --num-gpus 0 --info
expect 2 "MGPU_RESERVE_THREADS='x'" -- env MGPU_RESERVE_THREADS=x "$run" --info
# Reserve workers take nothing of a batch that a GPU also runs; the report says
# so. A build without CUDA has no GPU functions: the batch is then CPU-only,
# and the reserve workers take their part of it like the others.
out=$(env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --repeat 1 --threads 3 --reserve 2 2>&1)
items() { printf '%s\n' "$out" | awk -v w="$1" '$1 == w && ($2 == "cpu" || $2 ~ /^gpu/) {print $3}'; }
if [ "$(items 3)" -gt 0 ] 2>/dev/null; then
  if printf '%s' "$out" | grep -q "CPU workers 1..2 are kept out of batches that GPUs also run (--reserve 2)" &&
     [ "$(items 1)" = 0 ] && [ "$(items 2)" = 0 ] && [ "$(items 0)" -gt 0 ]; then ok; else bad "--reserve 2: $out"; fi
else
  if ! printf '%s' "$out" | grep -q "kept out" && [ "$(items 1)" -gt 0 ] && [ "$(items 2)" -gt 0 ]; then ok
  else bad "--reserve 2, kernel without a GPU function: $out"; fi
fi
expect 0 "the last 2 kept out" -- env MGPU_EMULATE_GPUS=1 "$run" --info --threads 3 --reserve 2
expect 2 "--reserve 'automatic'" -- "$run" --reserve automatic --info
expect 0 "auto (0, 1 or 2 per kernel)" -- env MGPU_RESERVE_THREADS=" Auto " MGPU_EMULATE_GPUS=1 "$run" --info --threads 2
expect 0 "the last 2 or 4 (or all 8, where they add under a fifth) kept out of a kernel's batches that GPUs also run, or every GPU where the GPUs add under 30%, where its timed batches find that faster" -- env MGPU_EMULATE_GPUS=1 "$run" --info --threads 8 --reserve auto
expect 0 "auto (0, 2, 4 or 8 per kernel)" -- env MGPU_EMULATE_GPUS=1 MGPU_RESERVE_THREADS=auto "$run" --info --threads 8
expect 2 "--streams ''" -- "$run" --streams "" --info
expect 2 "--ratio 'nan'" -- "$run" --ratio nan --info
expect 2 "--devices" -- "$run" --devices 1, --info
expect 2 "--trace needs a file name" -- "$run" --trace "" --info
expect 2 "^mgpu-run: --plugin needs a file name: '' is blank" -- "$run" --plugin "" --list
expect 2 "^mgpu-run: --json is for the report of a run: --info prints text" -- "$run" --info --json
expect 2 "^mgpu-run: --json is for the report of a run: --list prints text" -- "$run" --list --json
expect 2 "^mgpu-run: --size 0 is no width for mandelbrot: expected 1..1048576 pixels" -- "$run" mandelbrot --size 0 -n 10
expect 2 "^mgpu-run: --min-bytes is larger than --max-bytes\$" -- "$run" allreduce --min-bytes 8 --max-bytes 4
expect 2 "^mgpu-run: --min-bytes is larger than --max-bytes's default, 1G" -- "$run" allreduce --min-bytes 2G
expect 2 "^mgpu-run: --trace needs a file name: '  ' is blank" -- "$run" mulmod -n 10 --repeat 1 --trace "  "
expect 2 "--overlay needs --output" -- "$run" mandelbrot --overlay -n 4
expect 2 "--output is for the mandelbrot workload" -- "$run" mulmod -o /tmp/x.png -n 4
expect 2 "--size" -- "$run" pipeline --size 17 -n 4
expect 2 "--output '/nonexistent/dir/m.png': cannot write it" -- "$run" mandelbrot -n 8 --size 16 --repeat 1 -o /nonexistent/dir/m.png
expect 2 "MGPU_NUM_THREADS='abc'" -- env MGPU_NUM_THREADS=abc "$run" --info
expect 2 "0..4096" -- env MGPU_NUM_THREADS=abc "$run" --info
expect 2 "MGPU_SCHED" -- env MGPU_SCHED=fast "$run" --info
# Options of the batch workloads, and shares that fit no GPU count, are usage errors for the multi-GPU ones.
expect 2 "are for the batch workloads, not reduce" -- env MGPU_EMULATE_GPUS=2 "$run" reduce --ceiling
expect 2 "are for the batch workloads, not reduce" -- env MGPU_EMULATE_GPUS=2 "$run" reduce --mode cpu
expect 2 "split has 4 entries but the runtime has 2 GPUs: expected 2 (GPUs) or 3" -- env MGPU_EMULATE_GPUS=2 "$run" reduce --split 1,1,1,1
expect 2 "split has 1 entry, which does not fit --gpus 2" -- env MGPU_EMULATE_GPUS=2 "$run" reduce --gpus 1,2 --split 1
# A policy that leaves no worker is refused when the runtime starts.
expect 2 "mgpu-run: --mode cpu runs every batch on the CPU workers, and MGPU_NUM_THREADS=0" -- env MGPU_EMULATE_GPUS=1 MGPU_NUM_THREADS=0 "$run" --mode cpu -n 100 --repeat 1
expect 2 "mgpu-run: MGPU_SCHED=cpu runs every batch on the CPU workers, and MGPU_NUM_THREADS=0" -- env MGPU_EMULATE_GPUS=1 MGPU_NUM_THREADS=0 MGPU_SCHED=cpu "$run" -n 100 --repeat 1
expect 2 "mgpu-run: --mode gpu runs kernels with a GPU function on GPUs only, and MGPU_NUM_GPUS=0" -- env MGPU_NUM_GPUS=0 "$run" --mode gpu -n 100 --repeat 1
# Default array shares whose count fits no GPU count are refused when the runtime starts.
expect 2 "MGPU_TENSOR_SPLIT has 3 entries but the runtime uses 1 GPU: expected 1 (GPUs) or 2" -- env MGPU_EMULATE_GPUS=1 MGPU_NUM_GPUS=1 MGPU_TENSOR_SPLIT=1,1,1 "$run" --mode steal -n 100 --repeat 1
# A flag and its variable accept the same text (the library's rules: blanks
# around values and list entries, decimal only, no -0, keywords in any case).
same() { # same FLAG VARIABLE VALUE [VAR=VALUE...]: --info exits alike with either
  flag=$1 var=$2 val=$3; shift 3
  env "$@" "$run" --info "$flag" "$val" >/dev/null 2>&1; a=$?
  env "$@" "$var=$val" "$run" --info >/dev/null 2>&1; b=$?
  if [ "$a" = "$b" ]; then ok; else bad "$flag '$val' exited $a, $var='$val' $b"; fi
}
for v in 2 " 2 " +2 -0 2x 0x2 4097 1e1; do same --threads MGPU_NUM_THREADS "$v"; done
for v in 1.5 " 1.5 " .5 0x1p3 inf 0 -0 1e8; do same --ratio MGPU_DEVICE_TO_CORE_RATIO "$v"; done
for v in " 1024" 0 1K 1099511627777; do same --max-batch MGPU_MAX_BATCH_SIZE "$v"; done
for v in " 3 " +3 33; do same --streams MGPU_STREAMS_PER_GPU "$v"; done
for v in " 0 " -0 65; do same --num-gpus MGPU_NUM_GPUS "$v"; done
for v in " CPU " Steal fast; do same --mode MGPU_SCHED "$v"; done
for v in " 1" " Auto " automatic -1 2; do same --reserve MGPU_RESERVE_THREADS "$v" MGPU_NUM_THREADS=2 MGPU_EMULATE_GPUS=1; done
for v in " 0 , 1 " 0,0 1, ",1" "0 1"; do same --devices MGPU_DEVICES "$v" MGPU_EMULATE_GPUS=2; done
for v in " 1 , 0.5 " 1,,2 0,0 1,-0 0x1; do same --split MGPU_TENSOR_SPLIT "$v" MGPU_EMULATE_GPUS=1; done
expect 0 "mulmod: 4 items" -- "$run" mulmod -n " 4 " --mode " CPU " --repeat 1 -q --threads 1
expect 2 "--items ' '" -- "$run" mulmod -n " "
expect 2 "--split '1, ,2' is invalid: expected shares" -- "$run" reduce --split "1, ,2"
expect 2 "--split entry '0x1'" -- "$run" reduce --split 0x1
expect 0 "sum of 100 f64 elements" -- "$run" reduce -n 100 --dtype " F64 " --threads 1
# Sizes take the library's suffixes: K, M, G or T in either case, then i and B.
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=2 "$run" allreduce --min-bytes 1k --max-bytes 4KiB
expect 2 "--max-bytes '8B'" -- "$run" allreduce --max-bytes 8B
expect 2 "--max-bytes '1T'" -- "$run" allreduce --max-bytes 1T
# Asking for more GPUs than the runtime sees is a usage error (2), with or
# without a GPU; --gpus with every count too high runs nothing and says so.
expect 2 "mgpu-run: --num-gpus 64 " -- "$run" --info --num-gpus 64
expect 2 "mgpu-run: --num-gpus 64 is more than the 1 emulated GPUs visible" -- env MGPU_EMULATE_GPUS=1 "$run" --info --num-gpus 64
expect 2 "MGPU_DEVICES" -- env MGPU_DEVICES=9 "$run" --info
expect 2 "MGPU_DEVICES" -- env MGPU_EMULATE_GPUS=1 MGPU_DEVICES=9 "$run" --info
# Runs that need a machine without a GPU (emulated devices add to real ones).
if env MGPU_EMULATE_GPUS=0 "$run" --info 2>/dev/null | grep -q "^GPUs: 0 in use"; then nogpu=yes; else nogpu=; fi
# --info says why no GPU is in use where the settings say it: the flag or the
# variable that set 0 (the library does not report why its probe found none).
expect 0 "^GPUs: 0 in use (--num-gpus 0)\$" -- env MGPU_EMULATE_GPUS=1 "$run" --info --num-gpus 0
expect 0 "^GPUs: 0 in use (MGPU_NUM_GPUS=0)\$" -- env MGPU_EMULATE_GPUS=1 MGPU_NUM_GPUS=0 "$run" --info
[ -z "$nogpu" ] || expect 0 "^GPUs: 0 in use (\(this libmgpurt is built without CUDA\|cudaGetDeviceCount: .*\|the CUDA driver reports no device\))\$" -- env MGPU_EMULATE_GPUS=0 "$run" --info
if [ -n "$nogpu" ]; then
expect 2 "nothing ran: --gpus 1,2 needs GPUs and the runtime sees none" -- env MGPU_EMULATE_GPUS=0 "$run" mulmod --gpus 1,2 -n 2001
expect 2 "nothing ran: --gpus 2,3 asks for more GPUs than the runtime sees: expected counts in 1..1" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod --gpus 2,3 -n 2001
expect 2 "nothing ran" -- env MGPU_EMULATE_GPUS=0 "$run" matvec --gpus 1 -n 100 --size 100
expect 2 "nothing ran: workload 'allreduce' needs a GPU and the runtime sees none" -- env MGPU_EMULATE_GPUS=0 MGPU_NUM_GPUS=0 "$run" allreduce --max-bytes 4K
expect 2 "nothing ran: workload 'saxpy-resident' needs a GPU and the runtime sees none" -- env MGPU_EMULATE_GPUS=0 MGPU_NUM_GPUS=0 "$run" saxpy-resident -n 1000
out=$(env MGPU_EMULATE_GPUS=0 "$run" mulmod --gpus 1,2 -n 2001 2>&1)
if printf '%s' "$out" | grep -q "verification"; then bad "--gpus with nothing run reports a verification: $out"; else ok; fi
fi
expect 0 "nearest known one is MGPU_NUM_THREADS" -- env MGPU_DEBUG=warn MGPU_NUM_THREAD=3 "$run" --info
expect 0 "argument" -- "$run" --info --threads 1
expect 0 "environment" -- env MGPU_STREAMS_PER_GPU=2 "$run" --info
# Workloads on CPU workers and two emulated devices, small sizes, verified.
for w in ntt sha256 mandelbrot saxpy mulmod pipeline; do
  case $w in saxpy | mulmod) size= ;; *) size="--size 10" ;; esac
  expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=2 "$run" $w -n 64 $size --repeat 1 --threads 2
done
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=1 "$run" sha256 -n 1000 --size 100 --repeat 1
expect 0 "verification: ok" -- "$run" mulmod -n 5000 --intensity 10 --repeat 1 --mode static --pinned
expect 0 "heterogeneous efficiency" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --compare --repeat 1 --threads 1
expect 0 "no GPU is in use" -- "$run" mulmod -n 2000 --intensity 10 --compare --repeat 1 --num-gpus 0
expect 2 "" -- "$run" --compare --mode cpu
# --rounds: the four modes in turn, each figure the median of every round's runs.
expect 0 "median of 2 in 2 rounds" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --compare --rounds 2 --repeat 1 --threads 1
expect 0 "^steal vs static: [0-9.]*x (by round: [0-9.]*x, [0-9.]*x)$" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --compare --rounds 2 --repeat 1 --threads 1
expect 2 "--rounds is for --compare" -- "$run" mulmod --rounds 2
expect 2 "--rounds '0' is invalid: expected an integer in 1..100" -- "$run" --compare --rounds 0
expect 2 "--rounds 'x'" -- "$run" --compare --rounds x
# --compare sweeps fixed splits between its cpu and gpu modes, marks the best
# and sets steal against it beside E; without a GPU it says why it did not.
out=$(env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --compare --repeat 2 --threads 1 2>&1); rc=$?
rows=$(printf '%s\n' "$out" | awk '/^fixed splits: static/ {on = 1; next} /^best static/ {on = 0} on && /%/ {n++} END {print n + 0}')
if [ $rc = 0 ] && printf '%s' "$out" | grep -q "^fixed splits: static mode at 1/8 to 8 times its ratio [0-9.e+-]*, 1 timed run each after a warm-up (the modes: 2; a point that comes out best is timed again with 2)" &&
   [ "$rows" = 9 ] && printf '%s' "$out" | grep -q "^    cpu only .*mode cpu" &&
   printf '%s' "$out" | grep -q "^    gpu only  *0.0%  *0.0% .*mode gpu" && printf '%s' "$out" | grep -q "mode static" &&
   [ "$(printf '%s\n' "$out" | grep -c ' best$')" = 1 ] && printf '%s' "$out" | grep -q "^best static: [0-9.e+-]* items/s, " &&
   printf '%s' "$out" | grep -q "^heterogeneous efficiency E = steal / (cpu + gpu) = [0-9.]*; steal / best static = [0-9.]*x$" &&
   printf '%s' "$out" | grep -q "^steal vs static: "; then ok
else bad "--compare sweep of fixed splits: exit $rc, $rows rows: $out"; fi
expect 0 "fixed splits: not swept (no GPU)" -- "$run" mulmod -n 2000 --intensity 10 --compare --repeat 1 --num-gpus 0
# --max-run-time: a mode whose run of the whole batch would take longer is
# timed on a prefix, and says so; the runs after it compute and verify only it.
expect 2 "--max-run-time '-1' is invalid: expected a number of seconds in 0..1e+06 (0: no bound)" -- "$run" --max-run-time -1 --info
for v in -0 x inf 0x1 1e7 ""; do expect 2 "--max-run-time '$v' is invalid" -- "$run" --max-run-time "$v" --info; done
for v in " 0 " 2.5 1e-3; do expect 0 "MGPU_NUM_THREADS" -- "$run" --max-run-time "$v" --info; done
out=$("$run" mulmod -n 300000 --intensity 1000 --mode cpu --repeat 2 --threads 2 --num-gpus 0 --max-run-time 0.2 2>&1); rc=$?
k=$(printf '%s\n' "$out" | sed -n 's/^mode cpu .*(median of 2 on the first \([0-9]*\) items).*/\1/p')
if [ $rc = 0 ] && [ -n "$k" ] && [ "$k" -lt 300000 ] &&
   printf '%s' "$out" | grep -q "^note: timed on the first items of the batch (as many as shown above), as a run of all 300000 would take over --max-run-time 0.2 s: mode cpu; its items/s are those of that prefix" &&
   printf '%s' "$out" | grep -q "^total: $k items" &&
   printf '%s' "$out" | grep -q "verification: ok ([0-9]* of the $k items of the last run (a prefix of the batch), one in [0-9]*, checked against the CPU function)"; then ok
else bad "--max-run-time 0.2, mode cpu: exit $rc: $out"; fi
expect 0 "^mulmod: 300000 items (timed on the first [0-9]*), [0-9.]* s, .* items/s, verification ok" -- "$run" mulmod -n 300000 --intensity 1000 --mode cpu --repeat 1 --threads 2 --num-gpus 0 --max-run-time 0.2 -q
# Items that differ in cost by position: mandelbrot's first rows are cheap and
# its middle ones dear, so a prefix sized by a rate would run far past the
# bound (5 to 8 times here); runs of prefixes find one that holds it. A
# timed run may vary from the sizing runs, hence the margin of 3 times.
out=$("$run" mandelbrot --size 512 --mode cpu --threads 2 --num-gpus 0 --max-run-time 0.1 --repeat 3 2>&1); rc=$?
t=$(printf '%s\n' "$out" | sed -n 's/^mode cpu  *\([0-9.]*\) s (median of 3 on the first [0-9]* items).*/\1/p')
if [ $rc = 0 ] && [ -n "$t" ] && awk -v t="$t" 'BEGIN { exit !(t <= 0.3) }'; then ok
else bad "--max-run-time 0.1 on mandelbrot: the timed runs took ${t:-?} s: exit $rc: $out"; fi
out=$("$run" mulmod -n 3000 --intensity 1000 --mode cpu --repeat 1 --threads 2 --num-gpus 0 --max-run-time 0 2>&1)
if printf '%s' "$out" | grep -q "first\|prefix"; then bad "--max-run-time 0 ran a prefix: $out"; else ok; fi
# Multi-GPU workloads on two emulated devices (collectives through host memory).
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=2 "$run" matvec -n 200 --size 300
expect 0 "gpu0 40000, gpu1 40000, host 20000" -- env MGPU_EMULATE_GPUS=2 "$run" reduce -n 100000 --split 1,1,0.5
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=2 "$run" reduce -n 100000 --split 1,1,0.5
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=2 "$run" allreduce --max-bytes 4K
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=2 "$run" saxpy-resident -n 100000
expect 0 "== 2 GPUs ==" -- env MGPU_EMULATE_GPUS=2 "$run" reduce -n 10000 --gpus 1,2
# The pipeline's per-worker table is of the last run, every stage's items:
# the shares add up to 100% and the total is three items per polynomial.
out=$(env MGPU_EMULATE_GPUS=1 "$run" pipeline -n 64 --size 10 --repeat 2 --threads 2 2>&1)
sum=$(printf '%s\n' "$out" | awk '($2 == "cpu" || $2 ~ /^gpu/) && $4 ~ /%$/ {s += $4} END {printf "%.0f", s}')
if [ "$sum" = 100 ] && printf '%s' "$out" | grep -q "^total: 192 items" &&
   printf '%s' "$out" | grep -q "pipeline: items of the last run's three stages (64 per stage)"; then ok
else bad "pipeline table: shares add up to $sum%: $out"; fi
# On a prefix (--max-run-time), the pipeline's table is of the prefix's items.
out=$(env MGPU_EMULATE_GPUS=1 "$run" pipeline -n 64 --size 12 --repeat 1 --threads 2 --max-run-time 0.002 2>&1)
k=$(printf '%s\n' "$out" | sed -n 's/^mode steal .*(median of 1 on the first \([0-9]*\) items).*/\1/p')
if [ -n "$k" ] && printf '%s' "$out" | grep -q "three stages ($k per stage)" &&
   printf '%s' "$out" | grep -q "^total: $((3 * k)) items" && printf '%s' "$out" | grep -q "verification: ok (all $k items of the last run"; then ok
else bad "pipeline on a prefix: $out"; fi
# Counts of one are singular; a split lists its parts with commas.
expect 0 "== 1 GPU ==" -- env MGPU_EMULATE_GPUS=2 "$run" reduce -n 10000 --gpus 1,2
expect 0 "; 1 CPU worker, 1 GPU (" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 100 --intensity 2 --repeat 1 --threads 1
expect 0 "rows split: gpu0 50, host 50" -- env MGPU_EMULATE_GPUS=1 "$run" matvec -n 100 --size 100 --split 1,1 --threads 1
[ -z "$nogpu" ] || expect 0 "rows split: host 100" -- env MGPU_EMULATE_GPUS=0 "$run" matvec -n 100 --size 100 --threads 1
expect 0 "1 GPU, 1 CPU worker" -- env MGPU_EMULATE_GPUS=1 "$run" matvec -n 100 --size 100 --threads 1
# Bad values of their options are usage errors that name the option.
expect 2 "--split '1,,2'" -- "$run" reduce --split 1,,2
expect 2 "--split '0,0'" -- "$run" reduce --split 0,0
expect 2 "--split entry '-1'" -- "$run" reduce --split -1
expect 2 "--gpus entry '0'" -- "$run" mulmod --gpus 0
expect 2 "--gpus '1,1'" -- "$run" mulmod --gpus 1,1
expect 2 "--dtype 'f16'" -- "$run" reduce --dtype f16
expect 2 "--min-bytes '3'" -- "$run" allreduce --min-bytes 3
expect 2 "--max-bytes '1X'" -- "$run" allreduce --max-bytes 1X
expect 2 "--min-bytes is larger than --max-bytes" -- "$run" allreduce --min-bytes 1K --max-bytes 8
expect 2 "--split, --dtype, --min-bytes and --max-bytes are for" -- "$run" --split 1,1 ntt
expect 2 "--gpus and --compare" -- "$run" mulmod --gpus 1,2 --compare
# --plot and --trace record one run: not the runs of --gpus or --ceiling; and
# two outputs in one file would leave only the last written.
expect 2 "--plot and --trace record one mode's run, or --compare's steal run: not with --gpus" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 2000 --gpus 1 --plot g.svg
expect 2 "not with --ceiling" -- "$run" mulmod -n 2000 --ceiling --trace t.json
expect 2 "--output and --plot name the same file 'same.svg': give each its own" -- "$run" mandelbrot -n 50 --size 8 -o same.svg --plot same.svg
expect 2 "--plot and --trace name the same file" -- "$run" -n 50 --plot x.svg --trace ./x.svg
# Arrays that together pass the memory available are refused before any is
# made (under overcommit each malloc succeeds, and the kernel would kill the
# process without a word): mulmod's input and output of 8 bytes an item,
# each two thirds of MemAvailable.
avail_kb=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo 2>/dev/null)
if [ -n "$avail_kb" ]; then
  expect 1 "bytes of host memory, and [0-9]* are available (MemAvailable in /proc/meminfo): give a smaller -n" -- \
    "$run" mulmod -n $((avail_kb * 1024 / 12)) --repeat 1
  # The multi-GPU workloads' arrays alike: reduce's floats, matvec's W of
  # 1000 columns, saxpy-resident's three arrays, each 4/3 to 3/2 of it.
  expect 1 "^mgpu-run: the arrays need [0-9]* bytes of host memory, and [0-9]* are available (MemAvailable in /proc/meminfo): give a smaller -n$" -- \
    env MGPU_EMULATE_GPUS=1 "$run" reduce -n $((avail_kb * 1024 / 3))
  expect 1 "bytes of host memory, and [0-9]* are available (MemAvailable in /proc/meminfo): give a smaller -n or --size" -- \
    env MGPU_EMULATE_GPUS=1 "$run" matvec -n $((avail_kb * 1024 / 3000)) --size 1000
  expect 1 "bytes of host memory, and [0-9]* are available (MemAvailable in /proc/meminfo): give a smaller -n" -- \
    env MGPU_EMULATE_GPUS=1 "$run" saxpy-resident -n $((avail_kb * 1024 / 8))
fi
# A matvec or a reduce that fails after it made its host arrays (W, or the
# GPU's part, does not fit the emulated GPU's memory) frees them: valgrind
# finds nothing lost (not in a sanitizer build, whose runtime valgrind cannot
# run).
case ${MGPU_TEST_CFLAGS:-} in *-fsanitize=*) valgrind=no ;; *) valgrind=$(command -v valgrind || echo no) ;; esac
if [ "$valgrind" != no ]; then
  expect 1 "^mgpu-run: matvec W: mgpu_array_create: cannot allocate 4000000 bytes on GPU 0: out of device memory$" -- \
    env MGPU_EMULATE_GPUS=1 MGPU_EMULATE_MEM=1M "${top_builddir:-.}/libtool" --mode=execute "$valgrind" --error-exitcode=3 \
    --leak-check=full --errors-for-leak-kinds=definite,indirect -q "$run" matvec -n 1000 --size 1000 --threads 1
  expect 1 "^mgpu-run: reduce array: mgpu_array_create: cannot allocate 3636364 bytes on GPU 0: out of device memory$" -- \
    env MGPU_EMULATE_GPUS=1 MGPU_EMULATE_MEM=1M "${top_builddir:-.}/libtool" --mode=execute "$valgrind" --error-exitcode=3 \
    --leak-check=full --errors-for-leak-kinds=definite,indirect -q "$run" reduce -n 1000000 --threads 1
fi
# A count past the GPUs seen is skipped: the result line is of the largest
# count that ran, not a skipped one's zero.
expect 0 "^ntt: 100 items, [0-9.]* s, [1-9][0-9.e+]* items/s, verification ok" -- env MGPU_EMULATE_GPUS=2 "$run" -n 100 --repeat 1 --gpus 1,3 -q
# Without --mode the report names the mode MGPU_SCHED gives the runtime.
expect 0 "^mode gpu " -- env MGPU_EMULATE_GPUS=1 MGPU_SCHED=gpu "$run" mulmod --intensity 5 -n 2000 --repeat 1
expect 0 "^mode cpu " -- env MGPU_EMULATE_GPUS=1 MGPU_SCHED=cpu "$run" mulmod --intensity 5 -n 2000 --repeat 1
expect 2 "--split, --dtype, --min-bytes and --max-bytes are for" -- "$run" mulmod --dtype f32
expect 2 "are for the batch workloads, not matvec" -- "$run" matvec --plot /tmp/x.svg
expect 2 "are for the batch workloads, not reduce" -- "$run" reduce --compare
# With a skipped first count, the JSON array still parses.
if command -v python3 >/dev/null 2>&1; then
  if MGPU_EMULATE_GPUS=2 "$run" reduce -n 1000 --gpus 3,1 --json 2>/dev/null | python3 -c '
import json, sys
assert len(json.load(sys.stdin)) == 1'; then ok; else bad "reduce --gpus 3,1 --json is not one JSON array"; fi
fi
# Every key of a JSON report on stdin is in the documented schema (doc/json.md).
schema_keys="${top_srcdir:-.}/tests/json-schema.py"
# JSON parses and has what the schema promises.
if command -v python3 >/dev/null 2>&1; then
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 20 --compare --repeat 1 --json --threads 1 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["workload"] == "mulmod" and d["items"] == 3000
assert {r["mode"] for r in d["results"]} == {"cpu", "gpu", "static", "steal"}
for r in d["results"]:
    assert r["ran"] and sum(w["items"] for w in r["workers"]) == 3000, r
    assert r["cpu_workers"] == sum(w["kind"] == "cpu" for w in r["workers"]) == 1, r
    assert r["reserve_workers"] == 0 and r["reserve_auto"] is False, r
    # Steal time over the timed runs: a share, or null (these runs are
    # shorter than one of its ticks).
    assert r["host_steal"] is None or 0 <= r["host_steal"] <= 1, r
assert d["verification"]["failed"] == 0 and d["verification"]["checked"] > 0
assert "MGPU_NUM_THREADS" in d["config"] and d["efficiency"] > 0
' && printf '%s' "$out" | python3 "$schema_keys"; then ok; else bad "--json output does not parse, lacks fields or has undocumented keys: $out"; fi
fi
# Steal time: a share of the busy CPU time over runs long enough for the
# ticks of /proc/stat, where it has a steal column (Linux since 2.6.11).
if command -v python3 >/dev/null 2>&1 && [ "$(head -1 /proc/stat 2>/dev/null | wc -w)" -ge 9 ]; then
  out=$("$run" mulmod -n 20000 --intensity 2000 --mode cpu --repeat 3 --json 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)["results"][0]
assert r["host_steal"] is not None and 0 <= r["host_steal"] <= 1, r
'; then ok; else bad "host_steal is not a share of the busy CPU time: $out"; fi
fi
# --rounds 3 in JSON: every mode timed three times, E given round by round.
if command -v python3 >/dev/null 2>&1; then
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 20 --compare --rounds 3 --repeat 1 --json --threads 1 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["rounds"] == 3 and d["repeat"] == 1, d
assert [r["runs"] for r in d["results"]] == [3, 3, 3, 3], d["results"]
assert len(d["efficiency_by_round"]) == 3 and all(e > 0 for e in d["efficiency_by_round"]), d
assert len(d["speedup_vs_static_by_round"]) == 3 and all(x > 0 for x in d["speedup_vs_static_by_round"]), d
assert d["verification"]["failed"] == 0
' && printf '%s' "$out" | python3 "$schema_keys"; then ok; else bad "--rounds JSON: $out"; fi
fi
# The sweep in JSON: the fixed splits by ratio, ends included, and the best.
if command -v python3 >/dev/null 2>&1; then
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 20 --compare --repeat 1 --json --threads 1 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["static_sweep"]
assert s["ran"] and s["ratio"] > 0, s
p = s["points"]
assert [x["mode"] for x in p] == ["cpu", "sweep", "sweep", "sweep", "static", "sweep", "sweep", "sweep", "gpu"], p
assert [x["factor"] for x in p] == [0, 0.125, 0.25, 0.5, 1, 2, 4, 8, None], p
assert p[0]["ratio"] == 0 and p[-1]["ratio"] is None and p[-1]["gpu_share"] == 1 and p[0]["gpu_share"] == 0, p
# The points are the splits they name (a fixed split keeps every CPU worker in).
assert all(abs(x["cpu_share"] - x["cpu_share_named"]) < 0.002 for x in p), p
assert d["bound"]["runs"] > 0 and d["bound"]["bounded"] == [] and d["bound"]["took_s"] <= d["bound"]["total_s"], d["bound"]
assert all(x["ran"] and x["items_per_s"] > 0 and "prefix_items" not in x for x in p), p
assert all(x["runs"] == 1 for x in p), p
assert all(abs(x["ratio"] - x["factor"] * s["ratio"]) <= 1e-4 * x["ratio"] for x in p[1:-1]), p
best = max(p, key=lambda x: x["items_per_s"])
assert s["best"]["items_per_s"] == best["items_per_s"] and s["best"]["mode"] == best["mode"], (s["best"], best)
steal = [r for r in d["results"] if r["mode"] == "steal"][0]
assert abs(d["speedup_vs_best_static"] - steal["items_per_s"] / best["items_per_s"]) < 1e-3, d["speedup_vs_best_static"]
assert d["max_run_time"] == 3 and d["verification"]["failed"] == 0
' && printf '%s' "$out" | python3 "$schema_keys"; then ok; else bad "--compare --json sweep: $out"; fi
fi
# --turns: after the last round the best fixed split (the one the best static
# line names) and steal run again in turn, a runtime each, steal last (its run
# verified); steal / best static from their medians, and turn by turn.
out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --compare --turns 2 --repeat 1 --threads 1 2>&1); rc=$?
best=$(printf '%s\n' "$out" | sed -n 's/^best static: .* at ratio \([0-9.e+-]*\) (.*/static at ratio \1/p; s/^best static: .* (mode \([a-z]*\))$/mode \1/p')
if [ $rc = 0 ] && [ -n "$best" ] && printf '%s' "$out" | grep -q "^turns: best static ($best) and steal, 2 turns of a runtime and 1 timed run each: [0-9.e+-]* and [0-9.e+-]* items/s; steal / best static = [0-9.]*x (by turn: [0-9.]*, [0-9.]*)$" &&
   printf '%s' "$out" | grep -q "^verification: ok"; then ok
else bad "--compare --turns 2: exit $rc, best '$best': $out"; fi
out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --compare --turns 0 --repeat 1 --threads 1 2>&1); rc=$?
if [ $rc = 0 ] && ! printf '%s' "$out" | grep -q "^turns"; then ok; else bad "--turns 0 still runs turns: $out"; fi
expect 0 "^turns: not run (no GPU)$" -- "$run" mulmod -n 2000 --intensity 10 --compare --repeat 1 --num-gpus 0
expect 2 "--turns is for --compare" -- "$run" mulmod --turns 2
expect 2 "--turns is for --compare" -- "$run" mulmod --turns 0 --mode steal
for v in -1 101 x 2.5 ""; do expect 2 "--turns '$v' is invalid: expected an integer in 0..100" -- "$run" --compare --turns "$v"; done
if command -v python3 >/dev/null 2>&1; then
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 20 --compare --turns 3 --repeat 2 --json --threads 1 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["turns"]
assert t["ran"] and t["turns"] == 3 and len(t["by_turn"]) == 3 and all(x > 0 for x in t["by_turn"]), t
assert abs(t["speedup_vs_best_static"] - t["steal_items_per_s"] / t["best_items_per_s"]) < 1e-3, t
# The turns leave the modes and the sweep as they were.
assert [r["runs"] for r in d["results"]] == [2, 2, 2, 2], d["results"]
steal = [r for r in d["results"] if r["mode"] == "steal"][0]
assert abs(d["speedup_vs_best_static"] - steal["items_per_s"] / d["static_sweep"]["best"]["items_per_s"]) < 1e-3, d
assert d["verification"]["failed"] == 0 and d["verification"]["checked"] > 0
' && printf '%s' "$out" | python3 "$schema_keys"; then ok; else bad "--compare --turns 3 --json: $out"; fi
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 20 --compare --turns 0 --repeat 1 --json --threads 1 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, sys
t = json.load(sys.stdin)["turns"]
assert t == {"ran": False, "skipped": "--turns 0"}, t
'; then ok; else bad "--turns 0 in JSON: $out"; fi
fi
# The sweep's fastest point is timed again, --repeat runs like a mode. An
# emulated device a third as fast as the one CPU worker (on a light kernel,
# so that it mostly waits rather than computes beside the worker) and a
# ratio 8 times too low (static at 1/24: 4% on the GPU) make the points at 4x
# and 8x (14% and 25%) faster than either end. A loaded machine can change
# the CPU's speed between the calibration and the comparison, so up to five
# tries, until a point is the best.
if command -v python3 >/dev/null 2>&1; then
  swept=0
  for try in 1 2 3 4 5; do
    gpu=$("$run" mulmod -n 4194304 --intensity 4 --mode cpu --threads 1 --repeat 3 --json 2>/dev/null |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["items_per_s"] / 3)')
    out=$(MGPU_EMULATE_GPUS=1 MGPU_EMULATE_SPEED="$gpu" "$run" mulmod -n 4194304 --intensity 4 --compare \
          --ratio 0.0416667 --repeat 3 --json --threads 1 2>/dev/null)
    r=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["static_sweep"]
best = s["best"]
if best["mode"] != "sweep":
    print("mode")
    sys.exit(0)
pt = [x for x in s["points"] if x["mode"] == "sweep" and x["ratio"] == best["ratio"]][0]
assert pt["runs"] == 3 and pt["items_per_s"] == best["items_per_s"], pt
assert all(x["runs"] in (1, 3) for x in s["points"] if x["mode"] == "sweep"), s["points"]
print("sweep")
' 2>&1)
    case $r in
      sweep) swept=1; break ;;
      mode) ;;
      *) bad "--compare: the sweep's best point timed again (device $gpu items/s): $r: $out"; swept=2; break ;;
    esac
  done
  if [ $swept = 1 ]; then ok; elif [ $swept = 0 ]; then bad "--compare: no point of the sweep came out best in 5 tries: $out"; fi
fi
# --compare with every run of the whole batch over --max-run-time (about 10 s
# each unbounded: 4 modes, 6 fixed splits and the ceiling, 2 rounds): each is
# timed on a prefix, the same in both rounds, and the whole comparison ends
# within a bounded time.
if command -v python3 >/dev/null 2>&1; then
  t0=$(date +%s)
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 2000000 --intensity 1000 --compare --rounds 2 --repeat 1 --json --threads 1 --max-run-time 0.2 2>/dev/null); rc=$?
  took=$(( $(date +%s) - t0 ))
  if [ $rc = 0 ] && [ $took -lt 60 ] && printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = d["items"]
assert d["max_run_time"] == 0.2
for r in d["results"]:
    assert r["ran"] and r["runs"] == 2 and 0 < r["prefix_items"] < n, r
    assert sum(w["items"] for w in r["workers"]) == r["prefix_items"], r
for x in d["static_sweep"]["points"]:
    assert x["ran"] and 0 < x["prefix_items"] < n, x
assert 0 < d["ceiling"]["prefix_items"] < n and not d["ceiling"]["differs"], d["ceiling"]
v = d["verification"]
assert v["enabled"] and v["failed"] == 0 and v["checked"] > 0, v
' && printf '%s' "$out" | python3 "$schema_keys"; then ok
  else bad "--compare --max-run-time 0.2: exit $rc after $took s: $out"; fi
fi
# --reserve auto: the JSON says so, and the last run kept 0, a quarter or half
# of the 4 CPU workers out of the batch.
if command -v python3 >/dev/null 2>&1; then
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --mode steal --repeat 3 --json --threads 4 --reserve auto 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
(r,) = d["results"]
assert r["reserve_auto"] is True and r["reserve_workers"] in (0, 1, 2), r
assert sum(w["items"] for w in r["workers"]) == 3000, r
assert all(r["workers"][i]["items"] == 0 for i in range(4 - r["reserve_workers"], 4)), r
' && printf '%s' "$out" | python3 "$schema_keys"; then ok; else bad "--reserve auto JSON: $out"; fi
fi
# The multi-GPU workloads' JSON (an array of reports with --gpus), and the
# "scaling" array that --gpus adds to a batch workload's JSON: they parse, say
# what they ran, and every key is in the documented schema.
if command -v python3 >/dev/null 2>&1; then
  check_json='
import json, sys
want = sys.argv[1:]
d = json.load(sys.stdin)
if want[0] == "scaling":
    s = d["scaling"]
    assert [e["gpus"] for e in s] == [1, 2] and all(e["ran"] for e in s), s
    assert s[0]["speedup"] == 1 and all(e["items_per_s"] > 0 for e in s), s
    assert d["verification"]["failed"] == 0 and d["results"][0]["mode"] == "gpu", d
    sys.exit(0)
reports = d if isinstance(d, list) else [d]
assert len(reports) == int(want[1]), len(reports)
for r in reports:
    assert r["workload"] == want[0], r
    if "verification" in r: assert r["verification"]["enabled"] and r["verification"]["failed"] == 0, r
if want[0] == "matvec": assert d["rows"] == 200 and d["cols"] == 300 and len(d["gpus"]) == 2, d
if want[0] == "reduce" and len(reports) == 1: assert d["reproducible"] and d["elements"] == 100000 and d["gpus"] == 2, d
if want[0] == "reduce" and len(reports) == 2: assert [r["gpus"] for r in reports] == [1, 2], d
if want[0] == "allreduce":
    assert d["verified"] and d["backend"] == "host" and d["gpus"] == 2, d
    assert [z["bytes"] for z in d["sizes"]] == [8 << i for i in range(10)], d["sizes"]
if want[0] == "saxpy-resident": assert d["elements"] == 100000 and sum(g["elements"] for g in d["gpus"]) == 100000, d
'
  json_case() { # json_case CHECK... -- mgpu-run arguments
    args=""; while [ "$1" != "--" ]; do args="$args $1"; shift; done; shift
    out=$(MGPU_EMULATE_GPUS=2 "$run" "$@" --json 2>/dev/null); rc=$?
    if [ $rc != 0 ]; then bad "$* --json exited $rc: $out"; return; fi
    # shellcheck disable=SC2086
    if printf '%s' "$out" | python3 -c "$check_json" $args && printf '%s' "$out" | python3 "$schema_keys"; then ok
    else bad "$* --json: the JSON does not parse, lacks fields or has undocumented keys: $out"; fi
  }
  json_case matvec 1 -- matvec -n 200 --size 300
  json_case reduce 1 -- reduce -n 100000 --split 1,1,0.5
  json_case reduce 2 -- reduce -n 10000 --gpus 1,2
  json_case allreduce 1 -- allreduce --max-bytes 4K
  json_case saxpy-resident 1 -- saxpy-resident -n 100000
  json_case scaling -- mulmod -n 20000 --gpus 1,2
  # "intensity": what the workload ran at, only for the two that have one.
  for c in "mandelbrot 3|mandelbrot -n 16 --size 16 --intensity 3" "mandelbrot 10000|mandelbrot -n 16 --size 16" \
           "mulmod 1000|mulmod -n 100" "mulmod 7|mulmod -n 100 --intensity 7" "ntt none|ntt -n 4 --size 10"; do
    want=${c%%|*}
    # shellcheck disable=SC2086
    out=$("$run" ${c#*|} --repeat 1 --threads 2 --json 2>/dev/null)
    if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
w, k = sys.argv[1:]
assert d["workload"] == w and d["verification"]["failed"] == 0, d
assert d.get("intensity", "none") == (k if k == "none" else int(k)), d.get("intensity")
' $want; then ok; else bad "JSON intensity of '${c#*|}', expected $want: $out"; fi
  done
fi
# Traces: Chrome trace-event JSON with every chunk of the run, one track per
# worker and per GPU stream; a file that cannot be written is a usage error.
trace=$(mktemp /tmp/mgpu-trace-XXXXXX)
# --ratio 4: the first split gives the emulated GPUs most items, so their tracks fill.
expect 0 "verification ok" -- env MGPU_EMULATE_GPUS=2 "$run" mulmod -n 30000 --intensity 20 --repeat 1 --threads 2 --ratio 4 -q --trace "$trace"
if command -v python3 >/dev/null 2>&1; then
  if python3 - "$trace" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {"CPU worker 0", "CPU worker 1", "stream 0"} <= names, names
assert any(n.startswith("GPU 1 (device 1) host thread") for n in names), names
# Every item of the warm-up and the timed run, once each: CPU chunks + GPU kernels.
done = [e for e in ev if e.get("cat") in ("chunk", "kernel")]
assert sum(e["args"]["items"] for e in done) == 2 * 30000, sum(e["args"]["items"] for e in done)
for batch in {e["args"]["batch"] for e in done}:
    spans = sorted((e["args"]["first"], e["args"]["first"] + e["args"]["items"]) for e in done if e["args"]["batch"] == batch)
    at = 0
    for a, b in spans:
        assert a == at, (batch, a, at)
        at = b
    assert at == 30000
assert all(e["dur"] >= 0 for e in ev if e["ph"] == "X")
# One batch slice each, holding its items, on the batches' own track: a
# process after the two GPUs' (pid 0 means the idle task to Perfetto).
batch_pid = [e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"] == "Batches"]
assert batch_pid == [5], batch_pid
batches = [e for e in ev if e.get("cat") == "batch"]
assert sorted(e["args"]["batch"] for e in batches) == sorted({e["args"]["batch"] for e in done}), batches
assert all(e["args"]["items"] == 30000 and e["pid"] == 5 and e["ph"] == "X" for e in batches), batches
# Builds without CUDA have no GPU functions: the built-in kernels stay on CPUs.
if any(e.get("cat") == "kernel" for e in ev):
    assert any(e.get("cat") == "h2d" and e["args"]["bytes"] > 0 for e in ev)
PY
  then ok; else bad "the trace does not parse or misses chunks"; fi
fi
rm -f "$trace"
expect 2 "MGPU_TRACE='/nonexistent/dir/t.json'" -- env MGPU_TRACE=/nonexistent/dir/t.json "$run" --info
# MGPU_TRACE names the file of the run that --trace records: with --compare,
# the steal run (a warm-up and two timed runs: three batches, each over the
# whole batch), not whichever runtime stops last; the other runtimes write
# none, nor do they where --trace names another file.
trace=$(mktemp /tmp/mgpu-trace-XXXXXX)
other=$(mktemp /tmp/mgpu-trace-XXXXXX)
expect 0 "verification ok" -- env MGPU_TRACE="$trace" MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 10 --compare --repeat 2 --threads 1 -q
if command -v python3 >/dev/null 2>&1; then
  if python3 - "$trace" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
batches = [e for e in ev if e.get("cat") == "batch"]
assert len(batches) == 3 and all(e["args"]["items"] == 20000 for e in batches), batches
PY
  then ok; else bad "MGPU_TRACE with --compare: the file is not the steal run's trace: $(head -c 300 "$trace")"; fi
fi
: > "$trace"
expect 0 "verification ok" -- env MGPU_TRACE="$trace" MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 10 --compare --repeat 1 --threads 1 -q --turns 1 --trace "$other"
if [ -s "$trace" ]; then bad "MGPU_TRACE was written beside --trace"; else ok; fi
# --gpus makes a runtime per count: MGPU_TRACE is refused there, as --trace is.
expect 2 "MGPU_TRACE='$trace' records one run, as --trace does (a mode's, --compare's steal run or a multi-GPU workload's): not with --gpus: unset it" -- \
  env MGPU_TRACE="$trace" MGPU_EMULATE_GPUS=2 "$run" mulmod -n 2000 --intensity 10 --repeat 1 --gpus 1,2
expect 2 "MGPU_TRACE='$trace' records one run.*not with --gpus" -- \
  env MGPU_TRACE="$trace" MGPU_EMULATE_GPUS=2 "$run" reduce -n 10000 --gpus 1,2
expect 2 "--output and MGPU_TRACE name the same file" -- env MGPU_TRACE=same.ppm "$run" mandelbrot -n 50 --size 8 -o same.ppm
# A multi-GPU workload's run is traced to it.
: > "$trace"
expect 0 "verification: ok" -- env MGPU_TRACE="$trace" MGPU_EMULATE_GPUS=2 "$run" reduce -n 100000
if grep -q '"traceEvents"' "$trace"; then ok; else bad "MGPU_TRACE: reduce wrote no trace"; fi
rm -f "$trace" "$other"
# A trace path's substitutions: %p and %r name the file; a % that starts none
# is a usage error for --trace, and the library's error for MGPU_TRACE.
tdir=$(mktemp -d /tmp/mgpu-trace-XXXXXX)
expect 0 "verification ok" -- "$run" mulmod -n 2000 --repeat 1 --threads 1 -q --trace "$tdir/t-%p-%r.json"
if ls "$tdir" | grep -q '^t-[0-9][0-9]*-0\.json$' && grep -q '"traceEvents"' "$tdir"/t-*-0.json; then ok
else bad "--trace with %p and %r: $(ls "$tdir")"; fi
expect 2 "^mgpu-run: --trace '$tdir/t-%q.json': '%q' is no substitution: expected %r (the MPI rank)" -- \
  "$run" mulmod -n 2000 --repeat 1 --trace "$tdir/t-%q.json"
expect 2 "MGPU_TRACE='$tdir/t%' is invalid: it ends in a lone '%'" -- env MGPU_TRACE="$tdir/t%" "$run" mulmod -n 2000 --repeat 1
rm -rf "$tdir"
# A report that cannot be written fails the run, and so does an image; with
# standard output closed, the trace does not take its place.
expect 1 "^mgpu-run: cannot write the report to standard output: No space left on device" -- \
  sh -c '"$0" mulmod -n 100 --repeat 1 -q > /dev/full' "$run"
expect 1 "cannot write the report to standard output" -- sh -c '"$0" --help > /dev/full' "$run"
expect 1 "^mgpu-run: cannot write /dev/full: No space left on device" -- "$run" mandelbrot -n 64 --size 64 -q --repeat 1 -o /dev/full
trace=$(mktemp /tmp/mgpu-trace-XXXXXX)
expect 0 "" -- sh -c '"$0" mulmod -n 100 --repeat 1 --trace "$1" >&-' "$run" "$trace"
if grep -q '^{"displayTimeUnit"' "$trace"; then ok; else bad "stdout closed: the trace begins '$(head -c 40 "$trace" | od -c | head -1)'"; fi
rm -f "$trace"
# --plot: a well-formed SVG with a lane per worker and per GPU stream, and a
# bar per worker; rasterised with rsvg-convert where it is installed.
svg=$(mktemp /tmp/mgpu-plot-XXXXXX).svg
expect 0 "verification ok" -- env MGPU_EMULATE_GPUS=2 "$run" mulmod -n 20000 --intensity 20 --repeat 1 --threads 2 --ratio 4 -q --plot "$svg"
if command -v python3 >/dev/null 2>&1; then
  if python3 - "$svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
lanes = [g.get("class") for g in root.iter(ns + "g") if g.get("class", "").startswith("lane")]
assert lanes.count("lane worker") == 4, lanes   # 2 CPU workers, 2 GPU host threads
assert lanes.count("lane stream") == 6, lanes   # 3 streams on each GPU
assert len([g for g in root.iter(ns + "g") if g.get("class") == "bar"]) == 4
assert any(r.get("class") in ("chunk", "kernel") for r in root.iter(ns + "rect"))
PY
  then ok; else bad "--plot: the SVG is malformed or lacks lanes"; fi
fi
if command -v rsvg-convert >/dev/null 2>&1; then
  if rsvg-convert -o "$svg.png" "$svg" && [ -s "$svg.png" ]; then ok; else bad "rsvg-convert could not render the plot"; fi
fi
rm -f "$svg" "$svg.png"
# A run of over ten thousand events (GPU chunks of at most 1000 items; how
# many more depends on the CPU workers' share, so on the machine's speed):
# the SVG stays under 2 MB, events within a pixel merged; its title says that
# the whole batch was timed, and the legend and the strip of runs tell the
# warm-up from the timed runs. Timed on a prefix, the title says which.
svg=$(mktemp /tmp/mgpu-plot-XXXXXX).svg
expect 0 "verification ok" -- env MGPU_EMULATE_GPUS=2 "$run" mulmod -n 4000000 --intensity 5 --repeat 3 --threads 2 --max-batch 1000 -q --plot "$svg"
size=$(wc -c < "$svg")
if [ "$size" -lt 2000000 ]; then ok; else bad "--plot of many events: $size bytes, expected under 2 MB"; fi
if command -v python3 >/dev/null 2>&1; then
  if python3 - "$svg" 'timed on the whole batch of 4000000 items, median ' <<'PY'
import re, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
title = [t.text for t in root.iter(ns + "text") if t.get("class") == "title"]
assert title and sys.argv[2] in title[0], title
legend = [g for g in root.iter(ns + "g") if g.get("class") == "legend"]
assert legend, "no legend"
assert {r.get("class") for r in legend[0].iter(ns + "rect")} >= {"warm-up", "timed"}
text = " ".join(t.text or "" for t in legend[0].iter(ns + "text"))
assert "warm-up" in text and "timed runs" in text, text
runs = [r.get("class") for r in root.iter(ns + "rect") if (r.get("class") or "").startswith("run ")]
assert runs.count("run timed") >= 1 and runs.count("run warm-up") >= 1, runs
desc = [t.text for t in root.iter(ns + "text") if (t.text or "").startswith("timeline:")]
m = re.search(r"(\d+) events in (\d+) shapes \(events within", desc[0])
assert m and int(m.group(1)) > 10000 and int(m.group(2)) < int(m.group(1)), desc
PY
  then ok; else bad "--plot of many events: title, legend or runs strip"; fi
fi
expect 0 "verification ok" -- env MGPU_EMULATE_GPUS=2 "$run" mulmod -n 4000000 --intensity 1000 --repeat 1 --threads 2 --max-run-time 0.05 -q --plot "$svg"
if grep -q "timed on the first [0-9]* of 4000000 items (--max-run-time 0.05 s), median " "$svg"; then ok
else bad "--plot of a prefix: the title does not say so: $(grep -o '<text class="title"[^<]*' "$svg")"; fi
rm -f "$svg"
expect 2 "--plot '/nonexistent/dir/p.svg': cannot write it" -- "$run" mulmod -n 100 --intensity 2 --repeat 1 -q --plot /nonexistent/dir/p.svg
# One rule for output files: one that cannot be written is a usage error (2)
# found before the run, named by its option; --plot writes SVG only.
expect 2 "--trace '/nonexistent/dir/t.json': cannot write it" -- "$run" mulmod -n 100 --intensity 2 --repeat 1 -q --trace /nonexistent/dir/t.json
expect 2 "--plot '/tmp/p.png' is invalid: expected a file name ending in .svg" -- "$run" mulmod -n 100 --repeat 1 -q --plot /tmp/p.png
# -n 0 is refused for every workload; --reserve without a GPU warns.
expect 2 "--items '0' is invalid: expected an integer in 1.." -- "$run" mulmod -n 0
expect 2 "--items '0' is invalid" -- "$run" reduce -n 0
expect 0 "warning: --reserve 1 has no effect: no GPU is in use" -- "$run" mulmod -n 100 --intensity 2 --repeat 1 --reserve 1 --num-gpus 0
# The same from the variables, said by the library, each once however many runtimes start.
expect 0 "warning: MGPU_RESERVE_THREADS=1 has no effect: no GPU is in use" -- env MGPU_DEBUG=warn MGPU_RESERVE_THREADS=1 "$run" mulmod -n 100 --intensity 2 --repeat 1 --num-gpus 0
expect 0 "warning: --streams 2 has no effect: no GPU is in use" -- "$run" mulmod -n 100 --intensity 2 --repeat 1 --streams 2 --num-gpus 0
said=$(env MGPU_DEBUG=warn MGPU_STREAMS_PER_GPU=2 "$run" mulmod -n 100 --intensity 2 --repeat 1 --num-gpus 0 --compare 2>&1 | grep -c 'MGPU_STREAMS_PER_GPU=2 has no effect')
if [ "$said" = 1 ]; then ok; else bad "MGPU_STREAMS_PER_GPU=2 without a GPU warned $said times, not once"; fi
expect 2 "--plot needs a file name" -- "$run" --plot ""
# Mandelbrot image with the worker overlay.
img=$(mktemp /tmp/mgpu-mandel-XXXXXX)
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=1 "$run" mandelbrot -n 64 --size 96 --repeat 1 -o "$img" --overlay
if [ -s "$img" ]; then ok; else bad "no image written"; fi
rm -f "$img"
# Plugins: the example plugin runs and verifies; bad files are usage errors.
plugin="${top_builddir:-.}/doc/examples/.libs/plugin.so"
expect 0 "collatz" -- "$run" --plugin "$plugin" --list
expect 0 "verification: ok" -- env MGPU_EMULATE_GPUS=1 "$run" --plugin "$plugin" collatz -n 20000 --compare --repeat 1 --threads 1
expect 0 "verification: ok" -- "$run" --plugin "$plugin" -n 5000 --repeat 1
expect 2 "No such file" -- "$run" --plugin /nonexistent/plugin.so
expect 2 "not a loadable shared library" -- "$run" --plugin "${top_srcdir:-.}/README.md"
expect 2 "no entry point mgpu_plugin_init" -- "$run" --plugin "${top_builddir:-.}/lib/.libs/libmgpurt.so"
expect 2 "unknown workload 'nosuch'" -- "$run" --plugin "$plugin" nosuch
expect 2 "--plugin is given twice ('$plugin', then '$plugin'): mgpu-run loads one plugin" -- "$run" --plugin "$plugin" --plugin "$plugin" --list
# Files that dlopen cannot take safely are refused before it: a truncated
# library (dlopen dies of SIGBUS), a FIFO (open blocks), a directory, a
# library of another machine.
tmpd=$(mktemp -d /tmp/mgpu-plugin-XXXXXX)
for size in 1000 5000 12000; do
  head -c $size "$plugin" > "$tmpd/cut$size.so"
  expect 2 "--plugin '$tmpd/cut$size.so' is not a loadable shared library: .*truncated" -- timeout 20 "$run" --plugin "$tmpd/cut$size.so" --list
done
mkfifo "$tmpd/fifo"
expect 2 "--plugin '$tmpd/fifo' is not a regular file (a FIFO): expected a shared library" -- timeout 20 "$run" --plugin "$tmpd/fifo" --list
expect 2 "is not a regular file (a directory)" -- "$run" --plugin "$tmpd" --list
cp "$plugin" "$tmpd/other.so"
printf '\377\177' | dd of="$tmpd/other.so" bs=1 seek=18 conv=notrunc 2>/dev/null # e_machine
expect 2 "built for another machine" -- "$run" --plugin "$tmpd/other.so" --list
rm -rf "$tmpd"
# A kernel without a GPU function (the example plugin built without it): no
# "gpu" figure made by CPU workers, and no E.
cpuplugin="${top_builddir:-.}/tests/.libs/plugin-cpu.so"
expect 2 "nothing ran: workload 'collatz' has no GPU function, so mode gpu cannot run it" -- env MGPU_EMULATE_GPUS=1 "$run" --plugin "$cpuplugin" -n 2000 --mode gpu --repeat 1
# --plot's own trace file, in $TMPDIR, goes whatever way mgpu-run ends: after
# a run, and after this refusal too.
pdir=$(mktemp -d /tmp/mgpu-plot-XXXXXX)
expect 0 "verification: ok" -- env TMPDIR="$pdir" "$run" mulmod -n 2000 --repeat 1 --num-gpus 0 --plot "$pdir/p.svg"
expect 2 "so mode gpu cannot run it" -- env TMPDIR="$pdir" MGPU_EMULATE_GPUS=1 "$run" --plugin "$cpuplugin" -n 2000 --mode gpu --repeat 1 --plot "$pdir/q.svg"
left=$(cd "$pdir" && ls | grep -v '^p\.svg$')
if [ -s "$pdir/p.svg" ] && [ -z "$left" ]; then ok; else bad "--plot left its trace file: $left"; fi
expect 1 "cannot make a temporary trace file for --plot in '$pdir/none': No such file or directory" -- env TMPDIR="$pdir/none" "$run" mulmod -n 2000 --repeat 1 --num-gpus 0 --plot "$pdir/r.svg"
rm -rf "$pdir"
expect 2 "mode gpu (the default of --gpus) cannot run it" -- env MGPU_EMULATE_GPUS=1 "$run" --plugin "$cpuplugin" -n 2000 --gpus 1 --repeat 1
expect 0 "note: the kernel has no GPU function: the CPU workers ran every item" -- env MGPU_EMULATE_GPUS=1 "$run" --plugin "$cpuplugin" -n 2000 --repeat 1
expect 1 "has no GPU function and the runtime has no CPU workers (--threads 0)" -- env MGPU_EMULATE_GPUS=1 "$run" --plugin "$cpuplugin" -n 2000 --repeat 1 --threads 0
out=$(env MGPU_EMULATE_GPUS=1 "$run" --plugin "$cpuplugin" -n 2000 --compare --repeat 1 --threads 1 2>&1); rc=$?
if [ $rc = 0 ] && printf '%s' "$out" | grep -q "mode gpu    skipped (the kernel has no GPU function)" &&
   printf '%s' "$out" | grep -q "mode static skipped (the kernel has no GPU function)" &&
   printf '%s' "$out" | grep -q "fixed splits: not swept (the kernel has no GPU function)" &&
   ! printf '%s' "$out" | grep -q "efficiency E"; then ok
else bad "--compare, kernel without a GPU function: exit $rc: $out"; fi
# --compare on a divergent latency-bound kernel (tests/plugin-diverge.c: one
# item in 16 costs 1 ms on a CPU worker, a launch on the emulated GPU its
# dearest item and 2 ms more) ends within the bound its report states, and
# names every mode that met a bound. Its fixed splits are the splits they
# name: the CPU workers' share that each ratio names is the one they computed.
divplugin="${top_builddir:-.}/tests/.libs/plugin-diverge.so"
now() { date +%s.%N; }
t0=$(now)
out=$(env MGPU_EMULATE_GPUS=1 MGPU_EMULATE_LATENCY=2e-3 timeout 120 "$run" --plugin "$divplugin" diverge -n 262144 \
  --compare --repeat 1 --turns 1 --threads 1 --max-run-time 0.1 2>&1); rc=$?
took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}')
bound=$(printf '%s\n' "$out" | sed -n 's/^bound: \([0-9.e+]*\) s for the comparison, its runs cancelled at their limits: --max-run-time 0.1 s for each of the [0-9]* that size a prefix, 2 times that for each of the [0-9]* others .*; it took [0-9.e+-]* s.*/\1/p')
named=yes
for m in $(printf '%s\n' "$out" | sed -n 's/^mode \([a-z]*\) *skipped (bounded: .*/\1/p'); do
  printf '%s\n' "$out" | grep -q "^bounded: \(.*; \)*mode $m (" || named=no
done
unlike=$(printf '%s\n' "$out" | awk '/^fixed splits: static/ {on = 1; next} /^best static/ {on = 0}
  on && /%/ {n = 0; for (i = 1; i <= NF; i++) if ($i ~ /%$/) p[n++] = $i + 0; if (n >= 2 && (p[0] - p[1] > 0.15 || p[1] - p[0] > 0.15)) print}')
within=yes
[ -z "$bound" ] || [ -n "${MGPURT_NO_TIMING:-}" ] || awk -v t="$took" -v b="$bound" 'BEGIN {exit !(t <= b + 5)}' || within=no
if [ $rc = 0 ] && [ -n "$bound" ] && [ $within = yes ] && [ $named = yes ] && [ -z "$unlike" ] &&
   printf '%s' "$out" | grep -q "^       ratio CPU named CPU given       items/s$" &&
   printf '%s' "$out" | grep -q "^verification: \(ok\|none (the last run was cancelled at its bound)\)"; then ok
else bad "--compare on a divergent kernel: exit $rc after $took s, bound '$bound' s, bounded named: $named, shares unlike: $unlike: $out"; fi
# What met a bound, in JSON: every mode, point, turn or ceiling that says so
# is listed in "bound", and the comparison took no longer than its bound and
# one cancelled run. With a bound far shorter than a runtime's start every
# mode and the ceiling meet it; with a device that slows down 0.5 s in (a run
# then lasts far longer than the runs that sized it), the runs it cancels.
if command -v python3 >/dev/null 2>&1; then
  for case in "0.0001 -" "0.1 0.5"; do
    set -- $case
    out=$(env MGPU_EMULATE_GPUS=1 MGPU_EMULATE_LATENCY=2e-3 DIVERGE_GPU_SLOW_AFTER="${2#-}" timeout 120 "$run" --plugin "$divplugin" \
      diverge -n 262144 --compare --repeat 1 --turns 1 --threads 1 --max-run-time "$1" --json 2>/dev/null); rc=$?
    if [ $rc = 0 ] && printf '%s' "$out" | MAX_RUN="$1" python3 -c '
import json, os, sys
d = json.load(sys.stdin)
b = d["bound"]
run_s = float(os.environ["MAX_RUN"])
assert b["run_s"] == run_s and b["grace"] == 2 and b["runs"] > 0 and b["sizing_runs"] > 0, b
assert abs(b["sum_s"] - run_s * (b["sizing_runs"] + b["grace"] * b["runs"])) < 1e-9, b
assert b["limit_s"] == 60 and b["total_s"] == min(b["sum_s"], b["limit_s"]), b
listed = {x["what"]: x["why"] for x in b["bounded"]}
assert all(w.startswith("bounded: ") for w in listed.values()), listed
said = {r["mode"]: r["skipped"] for r in d["results"] if not r["ran"] and r["skipped"].startswith("bounded")}
s = d["static_sweep"]
for p in s.get("points", []):
    if p["mode"] == "sweep" and (p.get("bounded") or p.get("skipped", "").startswith("bounded")):
        said["static x%s" % {0.125: "1/8", 0.25: "1/4", 0.5: "1/2"}.get(p["factor"], "%g" % p["factor"])] = p.get("bounded") or p["skipped"]
    if p["ran"] and p["mode"] != "gpu":
        # A share is whole items of what was timed: one item of a short prefix is more than 0.002.
        assert abs(p["cpu_share"] - p["cpu_share_named"]) < max(0.002, 1.0 / p.get("prefix_items", d["items"])), p
if d["turns"].get("skipped", "").startswith("bounded"): said["turns"] = d["turns"]["skipped"]
if d["ceiling"].get("why", "").startswith("bounded"): said["ceiling"] = d["ceiling"]["why"]
assert all(listed.get(k) == w for k, w in said.items()), (said, listed)
if os.environ.get("MGPURT_NO_TIMING") is None:
    assert b["took_s"] <= b["total_s"] + 2, b
if run_s < 0.001:
    assert {"cpu", "gpu", "static", "steal", "ceiling"} <= set(listed), listed
assert d["verification"]["failed"] == 0, d["verification"]
' && printf '%s' "$out" | python3 "$schema_keys"; then ok
    else bad "--compare --max-run-time $1 with DIVERGE_GPU_SLOW_AFTER=$2: exit $rc: $out"; fi
  done
fi
# --compare-time: the whole comparison ends within it where its runs' limits
# sum to more, the report says so, and what the end stopped is named.
t0=$(now)
out=$(env MGPU_EMULATE_GPUS=1 MGPU_EMULATE_LATENCY=2e-3 timeout 120 "$run" --plugin "$divplugin" diverge -n 262144 \
  --compare --repeat 1 --turns 1 --threads 1 --max-run-time 0.1 --compare-time 0.3 2>&1); rc=$?
took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}')
within=yes
[ -n "${MGPURT_NO_TIMING:-}" ] || awk -v t="$took" 'BEGIN {exit !(t <= 0.3 + 10)}' || within=no
if [ $rc = 0 ] && [ $within = yes ] &&
   printf '%s' "$out" | grep -q "^bound: 0.3 s for the comparison (--compare-time), under the [0-9.e+]* s its runs' limits sum to, " &&
   printf '%s' "$out" | grep -q "^bounded: .*(the comparison reached its bound)"; then ok
else bad "--compare --compare-time 0.3: exit $rc after $took s: $out"; fi
expect 2 "--compare-time is for --compare" -- "$run" mulmod -n 100 --compare-time 5
expect 2 "--compare-time 5 needs --max-run-time above 0" -- "$run" mulmod --compare --compare-time 5 --max-run-time 0
expect 2 "--compare-time '-1' is invalid: expected a number of seconds in 0..1e+06 (0: the sum of its runs' limits)" -- "$run" mulmod --compare --compare-time -1
# Verification says what it checked and, on a failure, the number wrong and the
# first wrong item with its worker and the bytes expected and got.
wrongplugin="${top_builddir:-.}/tests/.libs/plugin-wrong.so"
expect 2 "its mgpu_plugin_init is not a function" -- "$run" --plugin "${top_builddir:-.}/tests/.libs/plugin-data.so" --list
expect 1 "verification: FAILED: 2 wrong (all 2000 items checked against the CPU function); first wrong item 17, computed by worker 0 (cpu): output 0 bytes 1..7: expected db0007d7654b34, got 240007d7654b34" -- "$run" --plugin "$wrongplugin" wrong --repeat 1 --threads 1 --num-gpus 0
expect 1 "FAILED: 1 wrong (2000 of 100000 items, one in 50, checked against the CPU function); first wrong item 1500" -- "$run" --plugin "$wrongplugin" wrong -n 100000 --repeat 1 --threads 1 --num-gpus 0
expect 0 "verification: ok (2000 of 20000 items, one in 10, checked against the CPU function)" -- "$run" mulmod -n 20000 --intensity 2 --repeat 1
# An input of zero-byte items gets an array all the same (the library refuses NULL).
expect 0 "verification: ok" -- "$run" --plugin "$wrongplugin" zero --repeat 1 --threads 2 --num-gpus 0
# What the plugin gets wrong is a runtime error (1), not a usage error (2): an
# entry point that returns non-zero (MGPU_EINVAL here), and a kernel that the
# library refuses as invalid when the batch is submitted.
expect 1 "plugin '$wrongplugin': mgpu_plugin_init() returned -1" -- env PLUGIN_WRONG_INIT=einval "$run" --plugin "$wrongplugin" wrong --repeat 1
expect 1 "plugin workload 'badsize': submitting the batch failed: MGPU_EINVAL (mgpu_submit: batch->kernel->size = 3" -- \
  "$run" --plugin "$wrongplugin" badsize --repeat 1 --threads 1 --num-gpus 0
# A workload's name is a word typed on the command line: one the registry
# refuses (empty, with a blank or a control character, past 64 characters,
# starting with '-', a built-in's, or added twice) is named, with the plugin
# and what is accepted, and stops the run even where the entry point goes on.
rule="expected 1 to 64 characters, letters, digits, '-', '_' and '.', starting with a letter or digit"
for name in "" "a b" "$(printf 'red\033[31m')" "-x" "$(printf '%065d' 0)" "$(printf 'caf\303\251')"; do
  expect 1 "^mgpu-run: --plugin '$wrongplugin': workload name '.*' is invalid: $rule" -- env PLUGIN_WRONG_NAME="$name" "$run" --plugin "$wrongplugin" --list
done
expect 1 "workload name 'red\\\\x1b\[31m' is invalid" -- env PLUGIN_WRONG_NAME="$(printf 'red\033[31m')" "$run" --plugin "$wrongplugin" --list
expect 1 "^mgpu-run: --plugin '$wrongplugin': workload 'ntt' has the name of a built-in workload: expected another name" -- \
  env PLUGIN_WRONG_NAME=ntt "$run" --plugin "$wrongplugin" wrong --repeat 1
expect 1 "^mgpu-run: --plugin '$wrongplugin': workload 'wrong' is added twice: expected a name of its own for each workload" -- \
  env PLUGIN_WRONG_NAME=wrong "$run" --plugin "$wrongplugin" wrong --repeat 1
expect 1 "^mgpu-run: plugin '$wrongplugin': 1 workload refused (above)" -- env PLUGIN_WRONG_NAME="a b" "$run" --plugin "$wrongplugin" --list
expect 0 "^  ok-name_1.2 " -- env PLUGIN_WRONG_NAME=ok-name_1.2 "$run" --plugin "$wrongplugin" --list
# The latency-bound workload: every item checked, on CPU workers and emulated GPUs.
expect 0 "verification: ok (all 3000 items checked against the CPU function)" -- env MGPU_EMULATE_GPUS=1 "$run" chain -n 3000 --intensity 50 --repeat 1
expect 0 "chain, 3000 items, intensity 50" -- "$run" chain -n 3000 --intensity 50 --repeat 1 --num-gpus 0
# The ceiling: one launch on GPU 0 (an emulated one here), its results verified;
# --compare gives it with the gpu mode's share; nothing runs where it cannot be.
expect 0 "ceiling  .* items/s: the batch as one launch on GPU 0" -- env MGPU_EMULATE_GPUS=1 "$run" chain -n 3000 --intensity 50 --ceiling --repeat 1
expect 0 "verification: ok (all 3000 items checked" -- env MGPU_EMULATE_GPUS=1 "$run" chain -n 3000 --intensity 50 --ceiling --repeat 1
expect 0 "^chain: 3000 items, ceiling [0-9.]* s, .* items/s, verification ok" -- env MGPU_EMULATE_GPUS=1 "$run" chain -n 3000 --intensity 50 --ceiling --repeat 1 -q
expect 0 "gpu mode reaches [0-9]*% of it" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 5 --compare --repeat 1
expect 0 '"ceiling": {"measured": true' -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 5 --compare --repeat 1 --json
expect 0 "pinned memory (best of the timed runs); copies [0-9]*% of its time$" -- env MGPU_EMULATE_GPUS=1 "$run" chain -n 3000 --intensity 50 --ceiling --repeat 1
# The host copy that bounds a GPU fed from pageable arrays: every byte of the
# batch's inputs and outputs (mulmod: 16 a item), in pieces that write the
# outputs back as they are (verified after it, over several pieces); none
# where nothing is staged or no CPU worker copies.
expect 0 "^host copy [0-9.e+-]* s, [0-9.e+]* GB/s: the batch's inputs and outputs (1.6 MB) between the pageable arrays and pinned memory on 1 CPU worker (best of the timed runs), which bounds a GPU fed from them to [0-9.e+]* items/s$" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 100000 --intensity 5 --ceiling --repeat 2 --threads 1
expect 0 "verification: ok (2000 of 100000 items, one in 50" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 100000 --intensity 5 --ceiling --repeat 2 --threads 1
expect 0 "which bounds a GPU fed from them to [0-9.e+]* items/s; gpu mode reaches [0-9]*% of it$" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 5 --compare --repeat 1
expect 0 "^host copy: not measured (the arrays are pinned by --pinned: nothing is staged)$" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 5 --ceiling --repeat 1 --pinned
expect 0 "^host copy: not measured (no CPU worker)$" -- env MGPU_EMULATE_GPUS=1 "$run" mulmod -n 3000 --intensity 5 --ceiling --repeat 1 --threads 0
if command -v python3 >/dev/null 2>&1; then
  out=$(MGPU_EMULATE_GPUS=1 "$run" mulmod -n 100000 --intensity 5 --ceiling --repeat 2 --threads 1 --json 2>&1); rc=$?
  if [ $rc = 0 ] && printf '%s' "$out" | python3 -c '
import json, sys
c = json.load(sys.stdin)["ceiling"]
assert c["measured"] and 0 < c["copy_s"] < c["wall_s"], c
h = c["host_copy"]
assert h["measured"] and h["bytes"] == 16 * 100000 and h["threads"] == 1 and h["wall_s"] > 0, h
assert abs(h["items_per_s"] * h["wall_s"] / 100000 - 1) < 1e-3 and abs(h["gb_per_s"] * 1e9 * h["wall_s"] / h["bytes"] - 1) < 1e-3, h
' && printf '%s' "$out" | python3 "$schema_keys"; then ok
  else bad "--ceiling --json: the host copy: exit $rc: $out"; fi
fi
[ -z "$nogpu" ] || expect 2 "nothing ran: the ceiling cannot be measured: no GPU is in use" -- env MGPU_EMULATE_GPUS=0 "$run" mulmod -n 3000 --ceiling
expect 2 "ceiling cannot be measured: the pipeline is three dependent batches" -- env MGPU_EMULATE_GPUS=1 "$run" pipeline -n 16 --size 10 --ceiling
expect 2 "--ceiling runs only the ceiling: not with --compare" -- "$run" mulmod --ceiling --compare
expect 0 "verification: ok (all 64 items checked against the CPU function, plus an inverse round trip)" -- "$run" ntt -n 64 --size 10 --repeat 1
# Plugins read the command line's -n, --size and --intensity (-1: not given).
expect 0 "params: items 5000, size 7, intensity 42\$" -- "$run" --plugin "$wrongplugin" --list -n 5000 --size 7 --intensity 42
expect 0 "params: items -1, size -1, intensity -1\$" -- "$run" --plugin "$wrongplugin" --list
# SIGINT cancels the run in flight, prints the report of the runs completed,
# exits 130; the canceled run's results are not verified, and the table of
# workers is the last completed run's (all 300000 items), not the canceled one's.
out=$(mktemp /tmp/mgpu-int-XXXXXX)
"$run" mulmod -n 300000 --intensity 100 --repeat 1000 --num-gpus 0 > "$out" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid; rc=$?
# (SIGINT may also land between two runs: nothing is canceled then, and the
# last run's results are verified.)
if [ $rc = 130 ] && grep -q "^mode steal .* items/s" "$out" &&
   grep -q "^total: 300000 items" "$out" &&
   { { grep -q "interrupted in mode steal, timed run [0-9]* of 1000: [0-9]* of 300000 items computed" "$out" &&
       grep -q "verification: none (SIGINT stopped the last run)" "$out"; } ||
     { ! grep -q "interrupted in mode" "$out" && grep -q "verification: ok" "$out"; }; }; then ok
else bad "SIGINT: exit $rc, output: $(cat "$out")"; fi
rm -f "$out"
# The same with -q: the result line says that nothing was verified.
out=$(mktemp /tmp/mgpu-int-XXXXXX)
"$run" mulmod -n 300000 --intensity 100 --repeat 1000 --num-gpus 0 -q > "$out" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid; rc=$?
if [ $rc = 130 ] && { { grep -q "interrupted in mode steal, timed run" "$out" && grep -q "verification none\$" "$out"; } ||
   { ! grep -q "interrupted in mode" "$out" && grep -q "verification ok\$" "$out"; }; }; then ok
else bad "SIGINT with -q: exit $rc, output: $(cat "$out")"; fi
rm -f "$out"
# SIGINT during --compare: the JSON report still parses, and the turns, which
# come last, say that they did not run.
if command -v python3 >/dev/null 2>&1; then
  out=$(mktemp /tmp/mgpu-int-XXXXXX)
  MGPU_EMULATE_GPUS=1 "$run" mulmod -n 300000 --intensity 100 --compare --repeat 1000 --threads 1 --json > "$out" 2>/dev/null &
  pid=$!
  sleep 1.5
  kill -INT $pid
  wait $pid; rc=$?
  if [ $rc = 130 ] && python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["turns"]
assert t == {"ran": False, "skipped": "interrupted"}, t
' "$out"; then ok; else bad "SIGINT in --compare --json: exit $rc: $(cat "$out")"; fi
  rm -f "$out"
fi
# A watchdog bounds a background run that ignores SIGINT (timeout(1) would
# take the signals itself).
watchdog() { ( sleep 60; kill -KILL $pid 2>/dev/null ) >/dev/null 2>&1 & }
# sigint_after S: S seconds into the background run $pid, under the
# watchdog, one SIGINT; then its exit status in rc and the whole seconds it
# took after the signal in took.
sigint_after() {
  watchdog
  sleep "$1"
  t0=$(date +%s)
  kill -INT $pid
  wait $pid; rc=$?
  took=$(( $(date +%s) - t0 ))
}
# The first SIGINT during a run's only batch (the warm-up, about 100 s on two
# cores) stops it at its next chunk: no further batch is submitted, the mode
# is reported as skipped, the header came first. The watchdog would make the
# exit status 137.
out=$(mktemp /tmp/mgpu-int-XXXXXX)
"$run" mulmod -n 300000 --intensity 100000 --repeat 1 --num-gpus 0 --threads 2 > "$out" 2>&1 &
pid=$!
sigint_after 1
if [ $rc = 130 ] && [ $took -le 20 ] && head -1 "$out" | grep -q "^libmgpurt .*: mulmod, 300000 items" &&
   grep -q "stopping at the next chunk" "$out" &&
   grep -q "interrupted in mode steal, warm-up 1 of 1: [0-9]* of 300000 items computed" "$out" &&
   grep -q "mode steal  skipped (interrupted)" "$out"; then ok
else bad "SIGINT in the warm-up: exit $rc after $took s, output: $(cat "$out")"; fi
# The data-parallel workloads stop after the run in flight and report the
# runs made (none, where SIGINT comes while the inputs are made). The sums of
# 200 MB take seconds even on 16 cores.
"$run" reduce -n 50000000 --repeat 1000 --num-gpus 0 > "$out" 2>&1 &
pid=$!
sigint_after 2
if [ $rc = 130 ] && { { grep -q "(median of [0-9]*)" "$out" && ! grep -q "(median of 1000)" "$out" &&
   grep -q "verification: ok" "$out"; } || grep -q "interrupted before the first timed run" "$out"; }; then ok
else bad "SIGINT in reduce: exit $rc, output: $(cat "$out")"; fi
# A second SIGINT exits at once, while the first waits for the running
# chunk (two seconds long) to end: no batch message, no report.
"$run" --plugin "$wrongplugin" stall --repeat 1 --num-gpus 0 --threads 1 > "$out" 2>&1 &
pid=$!
watchdog
sleep 1
kill -INT $pid
sleep 0.2
kill -INT $pid
wait $pid; rc=$?
if [ $rc = 130 ] && grep -q "stopping at the next chunk" "$out" && ! grep -q "interrupted in" "$out" &&
   ! grep -q "verification" "$out"; then ok
else bad "second SIGINT: exit $rc, output: $(cat "$out")"; fi
rm -f "$out"
# SIGINT while the inputs are made (3.2 GB: 10 s to fill on the 2-core VM,
# seconds on 16 cores) stops the filling: no run is made, the report (here
# the JSON) shows the mode skipped, and the exit status is 130. Where the
# machine has no room for the arrays, mgpu-run says so (exit 1) and the case
# is moot.
"$run" mulmod -n 400000000 --repeat 1 --num-gpus 0 --threads 1 --json > "$out" 2> "$out.err" &
pid=$!
sigint_after 1
if [ $rc = 130 ] && [ $took -le 3 ] && grep -q "interrupted while making the inputs: no run is made" "$out.err" &&
   grep -q '{"mode": "steal", "ran": false, "skipped": "interrupted"}' "$out" && ! grep -q "interrupted in mode" "$out.err"; then ok
elif [ $rc = 1 ] && grep -q -i "memory" "$out.err"; then ok
else bad "SIGINT while the inputs are made: exit $rc after $took s, output: $(cat "$out" "$out.err")"; fi
# The same in text and with -q: the report says that no run was made, and
# claims no figure, no prefix and no stopped run.
"$run" mulmod -n 400000000 --repeat 1 --num-gpus 0 --threads 1 > "$out" 2> "$out.err" &
pid=$!
sigint_after 1
if [ $rc = 130 ] && grep -q "verification: none (no run was made: SIGINT came before the first)" "$out" &&
   grep -q "mode steal  skipped (interrupted)" "$out" && ! grep -q "^note: timed on the first items" "$out" &&
   grep -q "interrupted: no run was made" "$out.err"; then ok
elif [ $rc = 1 ] && grep -q -i "memory" "$out.err"; then ok
else bad "SIGINT while the inputs are made, text: exit $rc, output: $(cat "$out" "$out.err")"; fi
"$run" mulmod -n 400000000 --repeat 1 --num-gpus 0 --threads 1 -q > "$out" 2> "$out.err" &
pid=$!
sigint_after 1
if [ $rc = 130 ] && grep -q "^mulmod: 400000000 items, no run timed (interrupted), verification none\$" "$out"; then ok
elif [ $rc = 1 ] && grep -q -i "memory" "$out.err"; then ok
else bad "SIGINT while the inputs are made, -q: exit $rc, output: $(cat "$out" "$out.err")"; fi
rm -f "$out" "$out.err"
# SIGINT during the first mode of --compare --rounds: the quiet line reports
# the mode that ran, not the steal mode that never did.
out=$(mktemp /tmp/mgpu-int-XXXXXX)
"$run" mulmod -n 300000 --intensity 100 --compare --rounds 50 --repeat 1000 --num-gpus 0 -q > "$out" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid; rc=$?
if [ $rc = 130 ] && grep -q "^mulmod: 300000 items" "$out" && ! grep -q " 0 items/s" "$out"; then ok
else bad "SIGINT in --compare --rounds -q: exit $rc, output: $(cat "$out")"; fi
rm -f "$out"
# The progress bar: on a terminal for a batch over a second; never in a pipe or
# with --quiet. script(1) gives the run a terminal.
if command -v script >/dev/null 2>&1; then
  out=$(script -qec "$run mulmod -n 200000 --intensity 3000 --repeat 1 --num-gpus 0 --threads 2" /dev/null 2>&1)
  if printf '%s' "$out" | grep -q "mode steal, warm-up 1 of 1 \[.*items/s .* s left" &&
     printf '%s' "$out" | grep -q "mode steal, timed run 1 of 1 \[" && printf '%s' "$out" | grep -q "verification: ok"; then ok
  else bad "no progress bar on a terminal: $out"; fi
  out=$(script -qec "$run mulmod -n 200000 --intensity 3000 --repeat 1 --num-gpus 0 --threads 2 -q" /dev/null 2>&1)
  if printf '%s' "$out" | grep -q "s left"; then bad "progress bar with --quiet"; else ok; fi
fi
out=$("$run" mulmod -n 200000 --intensity 3000 --repeat 1 --num-gpus 0 2>&1)
if printf '%s' "$out" | grep -q "s left"; then bad "progress bar without a terminal"; else ok; fi
# MGPU_STATS=1 prints the per-worker table at finalize, with the run's numbers:
# a warm-up and a timed batch of 1000 items, on two CPU workers.
out=$(env MGPU_STATS=1 "$run" mulmod -n 1000 --intensity 3 --repeat 1 --threads 2 --num-gpus 0 -q 2>&1)
case $out in
*"not a live runtime"*) bad "MGPU_STATS: $out" ;;
*"libmgpurt statistics: 2 batches, 2 CPU workers"*"total: 2000 items"*) ok ;;
*) bad "MGPU_STATS: no table with 2 batches and 2000 items: $out" ;;
esac
# A trace that cannot be written (a full disk) fails the run.
if [ -w /dev/full ]; then
  expect 1 "MGPU_TRACE='/dev/full': writing the trace failed" -- \
    env MGPU_TRACE=/dev/full "$run" mulmod -n 100 --intensity 3 --repeat 1 --threads 1 -q
  expect 1 "mgpu-run: --trace '/dev/full': writing the trace failed" -- \
    "$run" mulmod -n 100 --intensity 3 --repeat 1 --threads 1 -q --compare --rounds 1 --trace /dev/full
fi
# OMP_THREAD_LIMIT caps the default CPU workers (one OpenMP team), and --info says so.
expect 0 "1 CPU worker (at most OMP_THREAD_LIMIT=1)" -- env OMP_THREAD_LIMIT=1 "$run" --info --num-gpus 0
expect 0 "verification: ok" -- env OMP_THREAD_LIMIT=1 "$run" mulmod -n 1000 --intensity 3 --repeat 1 --num-gpus 0
expect 2 "^mgpu-run: --threads 2 is more than OMP_THREAD_LIMIT=1 allows" -- env OMP_THREAD_LIMIT=1 "$run" --info --threads 2
out=$(env OMP_THREAD_LIMIT=1 "$run" --info --threads 1 2>&1)
if printf '%s' "$out" | grep -q "CPU worker (at most OMP_THREAD_LIMIT"; then bad "--threads 1: the limit did not apply: $out"; else ok; fi
# Flags follow the variables' rules: decimal numbers only, no empty list
# entries, keywords in any case.
expect 2 "--ratio '0x10'" -- "$run" --ratio 0x10 --info
expect 2 "--ratio 'inf'" -- "$run" --ratio inf --info
expect 2 "--split" -- "$run" allreduce --split 0x1p3,1
expect 2 "--split" -- "$run" allreduce --split ,1
expect 2 "--split" -- "$run" allreduce --split 1,-0
expect 2 "--devices" -- "$run" --devices ,0 --info
expect 0 "MGPU_SCHED" -- "$run" --mode STEAL --info
expect 2 "--threads '-0'" -- "$run" --threads -0 --info
# The model store (MGPU_MODEL_DIR, off under make check: set per test).
# --models and --models-clear start no runtime; a run writes its kernel's
# file, and the next run with the same store skips its warm-up and says so.
mdir=$(mktemp -d /tmp/mgpu-models-XXXXXX)
st=$mdir/store
expect 0 "^model store: $st (MGPU_MODEL_DIR): empty (the directory does not exist yet)\$" -- env MGPU_MODEL_DIR="$st" "$run" --models
mkdir "$st"
expect 0 "^model store: $st (MGPU_MODEL_DIR): empty\$" -- env MGPU_MODEL_DIR=" $st " "$run" --models
expect 0 "^model store: off (MGPU_MODEL_DIR=off)\$" -- env MGPU_MODEL_DIR=OFF "$run" --models
expect 0 "^model store: off (MGPU_MODEL_DIR=off): nothing removed\$" -- env MGPU_MODEL_DIR=off "$run" --models-clear
expect 0 "^model store: $mdir/xdg/mgpurt (the default, \$XDG_CACHE_HOME/mgpurt): empty" -- \
  env -u MGPU_MODEL_DIR XDG_CACHE_HOME="$mdir/xdg" "$run" --models
expect 1 "^mgpu-run: cannot read the model store /dev/null (MGPU_MODEL_DIR): Not a directory\$" -- env MGPU_MODEL_DIR=/dev/null "$run" --models
expect 1 "^mgpu-run: cannot clear the model store /dev/null (MGPU_MODEL_DIR): cannot read /dev/null" -- env MGPU_MODEL_DIR=/dev/null "$run" --models-clear
expect 2 "^mgpu-run: MGPU_MODEL_DIR=' ' is invalid: expected off, or a directory path" -- env MGPU_MODEL_DIR=" " "$run" --models
expect 2 "^mgpu-run: --models lists the whole model store: unexpected argument 'ntt'\$" -- "$run" --models ntt
expect 2 "^mgpu-run: --json is for the report of a run: --models prints text\$" -- "$run" --models --json
expect 2 "^mgpu-run: --models and --models-clear do not go together" -- "$run" --models --models-clear
runm() { env MGPU_MODEL_DIR="$st" MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --threads 1 "$@" 2>&1; }
out=$(runm); rc=$?
if [ $rc = 0 ] && ! printf '%s' "$out" | grep -q "warm-up skipped"; then ok; else bad "first run with an empty store: exit $rc: $out"; fi
out=$(env MGPU_MODEL_DIR="$st" "$run" --models 2>&1); rc=$?
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "^model store: $st (MGPU_MODEL_DIR): 1 file, 2 entries\$" &&
   printf '%s\n' "$out" | grep -q "^kernel  *footprint  *worker class  *latency s  *rate items/s  *knee items  *samples  *age  *file\$" &&
   printf '%s\n' "$out" | grep -q "^mulmod  *50  *cpu:.*:x1  *[0-9.e+-]*  *[0-9.e+-]*  *[0-9-]*  *[0-9]*  *[0-9]* s  *mulmod-[0-9a-f]*\.model\$" &&
   printf '%s\n' "$out" | grep -q "^mulmod  *50  *gpu:emulated:"; then ok; else bad "--models after a run: exit $rc: $out"; fi
out=$(runm); rc=$?
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "^warm-up skipped: stored model of mulmod ($st)\$" &&
   printf '%s\n' "$out" | grep -q "^verification: ok"; then ok; else bad "second run: no warm-up skipped: exit $rc: $out"; fi
# Fewer than three timed runs keep the warm-up (the first run would be the
# median); so does the store off; the JSON says which modes skipped it.
out=$(runm --repeat 2)
if printf '%s' "$out" | grep -q "warm-up skipped"; then bad "warm-up skipped with --repeat 2: $out"; else ok; fi
out=$(env MGPU_MODEL_DIR=off MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --threads 1 2>&1)
if printf '%s' "$out" | grep -q "warm-up skipped"; then bad "warm-up skipped with the store off: $out"; else ok; fi
if command -v python3 >/dev/null 2>&1; then
  out=$(runm --json)
  if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [r["warmup_skipped"] for r in d["results"]] == [True], d["results"]' &&
     printf '%s' "$out" | python3 "$schema_keys"; then ok; else bad "warmup_skipped in the JSON: $out"; fi
fi
# With --max-run-time, the first timed run of a mode whose warm-up is skipped
# is stopped as the warm-up is: one that runs past the bound was a warm-up,
# which sizes the prefix as ever, and a note says so.
big() { env MGPU_MODEL_DIR="$mdir/big" "$run" mulmod -n 300000 --intensity 1000 --mode cpu --threads 2 --num-gpus 0 --max-run-time 0.2 2>&1; }
big > /dev/null
out=$(big); rc=$?
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "^note: 1 runtime had a stored model of the kernel ($mdir/big) but ran the warm-up: a run of the whole batch takes over --max-run-time 0.2 s, and the warm-up sizes the prefix\$" &&
   printf '%s\n' "$out" | grep -q "^mode cpu .*(median of 3 on the first [0-9]* items)" && ! printf '%s' "$out" | grep -q "warm-up skipped"; then ok
else bad "a stored model and a batch over --max-run-time: exit $rc: $out"; fi
# Another intensity is another footprint: its own file, and a warm-up.
out=$(runm --intensity 7)
if printf '%s' "$out" | grep -q "warm-up skipped"; then bad "a model of intensity 50 stood in for 7: $out"; else ok; fi
expect 0 "^mulmod  *7  *cpu:" -- env MGPU_MODEL_DIR="$st" "$run" --models
# Files that cannot be read are listed with the reason, not passed over.
printf 'garbage\n' > "$st/bad-0000000000000000.model"
f=$(ls "$st"/mulmod-*.model | head -1)
head -n 3 "$f" > "$st/cut-0000000000000000.model"
out=$(env MGPU_MODEL_DIR="$st" "$run" --models 2>&1); rc=$?
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "^model store: $st (MGPU_MODEL_DIR): 4 files, 4 entries\$" &&
   printf '%s\n' "$out" | grep -q "^unreadable: bad-0000000000000000.model: it is not a model file (no 'mgpurt-model' line)\$" &&
   printf '%s\n' "$out" | grep -q "^unreadable: cut-0000000000000000.model: it is cut short (no 'end' line)\$"; then ok
else bad "--models with unreadable files: exit $rc: $out"; fi
# --models-clear KERNEL removes that kernel's files (both footprints) and
# keeps the unreadable ones; without KERNEL, every file goes.
expect 0 "^model store: $st (MGPU_MODEL_DIR): 2 files of kernel mulmod removed\$" -- env MGPU_MODEL_DIR="$st" "$run" --models-clear mulmod
out=$(env MGPU_MODEL_DIR="$st" "$run" --models 2>&1)
if printf '%s\n' "$out" | grep -q "^model store: $st (MGPU_MODEL_DIR): 2 files, 0 entries\$" &&
   ! printf '%s\n' "$out" | grep -q "^mulmod"; then ok; else bad "--models after --models-clear mulmod: $out"; fi
expect 0 "^model store: $st (MGPU_MODEL_DIR): 0 files of kernel nosuch removed\$" -- env MGPU_MODEL_DIR="$st" "$run" --models-clear nosuch
expect 0 "^model store: $st (MGPU_MODEL_DIR): 2 files removed\$" -- env MGPU_MODEL_DIR="$st" "$run" --models-clear
expect 0 "^model store: $st (MGPU_MODEL_DIR): empty\$" -- env MGPU_MODEL_DIR="$st" "$run" --models
# --first-batch: a fresh runtime's runs with no warm-up: the first, the
# median of runs 3 on, their ratio, every run; without, then with, a stored model.
fb=$mdir/first
out=$(env MGPU_MODEL_DIR="$fb" MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --threads 1 --first-batch 2>&1); rc=$?
num='[0-9][0-9.e+-]*'
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "^mode steal  first batch $num s, steady state $num s (median of runs 3..6), first / steady ${num}x\$" &&
   printf '%s\n' "$out" | grep -q "^runs of a fresh runtime, no warm-up (s): $num $num $num $num $num $num\$" &&
   printf '%s\n' "$out" | grep -q "^stored model: no, not for each kind of worker of the mode ($fb)\$" &&
   printf '%s\n' "$out" | grep -q "^total: 20000 items" && printf '%s\n' "$out" | grep -q "^verification: ok" &&
   ! printf '%s' "$out" | grep -q "warm-up skipped"; then ok; else bad "--first-batch, no stored model: exit $rc: $out"; fi
expect 0 "^stored model: yes, for each kind of worker of the mode ($fb)\$" -- \
  env MGPU_MODEL_DIR="$fb" MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --threads 1 --first-batch
expect 0 "^mode cpu    first batch $num s, steady state $num s (median of runs 3..4), first / steady ${num}x\$" -- \
  env MGPU_MODEL_DIR=off "$run" mulmod -n 2000 --intensity 5 --threads 1 --first-batch --repeat 4 --mode cpu
expect 0 "^stored model: no, the model store is off\$" -- env MGPU_MODEL_DIR=off "$run" mulmod -n 2000 --threads 1 --first-batch
expect 0 "^mulmod: 2000 items, first batch $num s, steady $num s, first / steady ${num}x, verification ok\$" -- \
  env MGPU_MODEL_DIR=off "$run" mulmod -n 2000 --threads 1 --first-batch -q
if command -v python3 >/dev/null 2>&1; then
  out=$(env MGPU_MODEL_DIR="$fb" MGPU_EMULATE_GPUS=1 "$run" mulmod -n 20000 --intensity 50 --threads 1 --first-batch --mode gpu --json 2>/dev/null)
  if printf '%s' "$out" | python3 -c '
import json, statistics, sys
d = json.load(sys.stdin)
f = d["first_batch"]
assert f["measured"] and f["mode"] == "gpu" and len(f["runs"]) == 6 and f["stored_model"] is True, f
assert f["first_s"] == f["runs"][0] and abs(f["steady_s"] / statistics.median(f["runs"][2:]) - 1) < 1e-5, f
assert abs(f["ratio"] / (f["first_s"] / f["steady_s"]) - 1) < 3e-5, f
r = d["results"][0]
assert r["mode"] == "gpu" and r["runs"] == 6 and abs(r["wall_s"] - f["steady_s"]) <= 1e-6, r
assert r["warmup_skipped"] is False, r
assert d["repeat"] == 6 and d["verification"]["failed"] == 0' && printf '%s' "$out" | python3 "$schema_keys"; then ok
  else bad "--first-batch --json: $out"; fi
fi
expect 2 "^mgpu-run: --first-batch needs --repeat of at least 3 (its steady state is the median of runs 3 on): got 2\$" -- "$run" mulmod --first-batch --repeat 2
expect 2 "^mgpu-run: --first-batch times one mode's runtime: not with --compare\$" -- "$run" mulmod --first-batch --compare
expect 2 "^mgpu-run: --first-batch times one mode's runtime: not with --gpus\$" -- "$run" mulmod --first-batch --gpus 1
expect 2 "^mgpu-run: --first-batch is for the batch workloads, not reduce\$" -- "$run" reduce --first-batch
rm -rf "$mdir"
echo "mgpu-run: $passes passed, $fails failed"
[ "$fails" = 0 ]
