#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-bench.sh: the benchmark scripts and report.
#  - bench/run.sh end to end in its smoke mode (tiny sizes, emulated devices):
#    every JSON file parses, the report has its tables, the plot parses;
#  - bench/first-batch.sh on tiny runs, with an emulated GPU and without;
#  - bench/report.py on small fixtures (JSON as bench/run.sh writes it,
#    mgpu-run text output, and the peers.json of bench/peers/run.sh): each
#    kind of table, exactly;
#  - its --update and --check on a document with blocks;
#  - every table and the plot of doc/benchmarks.md are what report.py makes
#    of their raw output in bench/results.
set -u
srcdir=${top_srcdir:-.}
out=$(mktemp -d /tmp/mgpu-bench-XXXXXX)
fails=0; passes=0
if ! command -v python3 >/dev/null 2>&1; then echo "python3 missing: skipped"; exit 77; fi
if bash "$srcdir/bench/run.sh" --smoke "$out" > "$out/log" 2>&1; then passes=$((passes + 1))
else echo "FAIL: bench/run.sh --smoke: $(tail -5 "$out/log")"; fails=$((fails + 1)); fi
if python3 - "$out" <<'PY'
import glob, json, sys, xml.etree.ElementTree as ET
out = sys.argv[1]
files = glob.glob(out + "/compare-*.json")
assert len(files) == 10, files            # 7 workloads and 3 sweep points
for f in files:
    d = json.load(open(f))
    assert d["verification"]["failed"] == 0, f
for f in glob.glob(out + "/multi-*.json"):
    json.load(open(f))
assert len(glob.glob(out + "/multi-*.json")) == 10
md = open(out + "/benchmarks.md").read()
assert "| ntt (64 items) |" in md and "## Ratio sweep" in md and "sweep.svg" in md
assert "## Scaling with the GPU count" in md and "## All-reduce" in md and "## matvec" in md
assert "commit: " in open(out + "/machine.txt").read()
root = ET.parse(out + "/sweep.svg").getroot()
assert len([p for p in root.iter("{http://www.w3.org/2000/svg}path") if "mode" in p.get("class", "")]) == 4
PY
then passes=$((passes + 1)); else echo "FAIL: the report or its files are wrong"; fails=$((fails + 1)); fi

# bench/first-batch.sh on tiny runs: with an emulated GPU, each mode twice (no
# stored model, then the first run's); without a GPU, the CPU workers alone.
run=${top_builddir:-.}/bin/mgpu-run
for g in 1 0; do
  if WORKLOADS="mulmod -n 2000 --intensity 5" MODES="gpu steal" MGPU_EMULATE_GPUS=$g MGPU_NUM_GPUS=$g \
     bash "$srcdir/bench/first-batch.sh" "$out/first$g" "a=$run" > "$out/first$g.txt" 2>&1 &&
     python3 - "$out/first$g/first.tsv" "$g" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
modes = ("gpu", "steal") if sys.argv[2] == "1" else ("cpu",)
assert [(r["build"], r["workload"], r["mode"], r["store"]) for r in rows] == [
    ("a", "mulmod -n 2000 --intensity 5", m, s) for m in modes for s in ("none", "stored")], rows
for r in rows:
    first, steady, ratio = float(r["first_s"]), float(r["steady_s"]), float(r["ratio"])
    assert first > 0 and steady > 0 and abs(ratio - first / steady) <= 1e-3 * ratio, r
PY
  then passes=$((passes + 1))
  else echo "FAIL: bench/first-batch.sh with $g GPU(s): $(tail -5 "$out/first$g.txt")"; fails=$((fails + 1)); fi
done
# ---------------------------------------------------------------- fixtures
fix=$out/fixture; mkdir -p "$fix/run"
if python3 - "$fix" "$srcdir/bench/report.py" <<'PY'
import json, os, subprocess, sys
fix, report = sys.argv[1], sys.argv[2]
run = os.path.join(fix, "run")
def put(name, d):
    json.dump(d, open(os.path.join(run, name), "w"))
def modes(cpu, gpu, static, steal):
    return [{"mode": m, "ran": True, "items_per_s": v, "host_steal": 0.12 if m == "steal" else None}
            for m, v in (("cpu", cpu), ("gpu", gpu), ("static", static), ("steal", steal))]
put("compare-ntt.json", {"items": 64, "results": modes(100, 300, 300, 360),
                         "efficiency_by_round": [0.8, 1.0], "speedup_vs_static_by_round": [1.1, 1.3]})
put("compare-saxpy.json", {"items": 1000, "results": modes(2e9, 1e9, 1.5e9, 2.5e9)})
put("compare-mulmod-10.json", {"items": 50, "results": modes(10, 40, 40, 45)})
put("compare-mulmod-1.json", {"items": 50, "results": modes(40, 10, 40, 30)})
put("multi-scaling-ntt.json", {"items": 64, "scaling": [
    {"gpus": 1, "ran": True, "items_per_s": 100, "speedup": 1.0, "efficiency": 1.0},
    {"gpus": 2, "ran": True, "items_per_s": 190, "speedup": 1.9, "efficiency": 0.95}]})
put("multi-allreduce.json", {"gpus": 2, "backend": "nccl", "iters": 20, "sizes": [
    {"bytes": b, "time_us": 10.0, "busbw": 1.0, "raw_time_us": 8.0, "raw_busbw": 1.25, "ratio": 0.8}
    for b in (8, 16, 128, 256)]})
put("multi-saxpy-resident.json", {"elements": 8, "gpus": [
    {"gpu": 0, "saxpy_gbs": 90.0, "copy_gbs": 100.0, "fraction": 0.9},
    {"gpu": 1, "saxpy_gbs": 80.0, "copy_gbs": 100.0, "fraction": 0.8}]})
open(os.path.join(run, "overhead.txt"), "w").write("per-chunk overhead: 0.3 us\n")
text = os.path.join(fix, "sweep.txt")
open(text, "w").write("""GPU 0: NVIDIA H200
== mulmod --intensity 10 -n 64 | cpu 1e+08 st2%  gpu 3e+08  static 3e+08  steal 3.8e+08 st11%  
   E = steal / (cpu + gpu) = 0.950 (by round: 0.900, 1.000)|steal vs static: 1.267x (by round: 1.200x, 1.300x)|verification: ok|
== saxpy | cpu 2e+09  gpu 1e+09  static 1.5e+09  steal 2.5e+09  
   E = steal / (cpu + gpu) = 0.833 (by round: 0.800, 0.850)|steal vs static: 1.667x|verification: ok|
libmgpurt 0.1.0: mandelbrot, 4096 items, intensity 10000; 30 CPU workers, 2 GPUs
mode cpu    3.3 s (median of 10 in 2 rounds), 1228 items/s, 0.0201 GB/s moved
mode gpu    0.01 s (median of 10 in 2 rounds), 4e+05 items/s, 6.51 GB/s moved
mode static 0.01 s (median of 10 in 2 rounds), 4e+05 items/s, 6.52 GB/s moved, host steal 3%
mode steal  0.01 s (median of 10 in 2 rounds), 4.1e+05 items/s, 6.57 GB/s moved
heterogeneous efficiency E = steal / (cpu + gpu) = 1.022 (by round: 1.002, 1.003)
steal vs static: 1.025x (by round: 0.999x, 1.017x)
  gpu0: saxpy 3656.2 GB/s, device-to-device copy 4196.6 GB/s (read + write): 87.1% (target 85%)
""")
# mgpu-run --compare runs named by "== W" lines, with the ceiling and (mulmod) the turns.
ceiling = os.path.join(fix, "ceiling.txt")
open(ceiling, "w").write("""== chain -n 64
mode cpu    0.9 s (median of 3), 7e+04 items/s, 0.00112 GB/s moved
mode gpu    0.005 s (median of 3), 1.25e+07 items/s, 0.201 GB/s moved
mode static 0.005 s (median of 3), 1.28e+07 items/s, 0.204 GB/s moved
mode steal  0.005 s (median of 3), 1.28e+07 items/s, 0.204 GB/s moved, host steal 2%
heterogeneous efficiency E = steal / (cpu + gpu) = 1.012; steal / best static = 0.990x
steal vs static: 1.000x
ceiling  0.0051 s, 1.3e+07 items/s: the batch as one launch on GPU 0, copied in and out in one piece from pinned memory (best of the timed runs); gpu mode reaches 96% of it
== mulmod --intensity 100
mode cpu    1.1 s (median of 3), 1.5e+07 items/s, 0.245 GB/s moved
mode gpu    0.015 s (median of 3), 1.1e+09 items/s, 18.2 GB/s moved
mode static 0.014 s (median of 3), 1.2e+09 items/s, 19.3 GB/s moved
mode steal  0.014 s (median of 3), 1.2e+09 items/s, 18.6 GB/s moved
heterogeneous efficiency E = steal / (cpu + gpu) = 1.010; steal / best static = 0.971x
steal vs static: 0.966x
turns: best static (static at ratio 6507) and steal, 3 turns of a runtime and 3 timed runs each: 7.289e+08 and 7.444e+08 items/s; steal / best static = 1.021x (by turn: 0.764, 1.104, 1.024)
ceiling  0.0088 s, 1.9e+09 items/s: the batch as one launch on GPU 0, copied in and out in one piece from pinned memory (best of the timed runs); copies 81% of its time; gpu mode reaches 58% of it
host copy 4.1e-03 s, 65.5 GB/s: the batch's inputs and outputs (268.4 MB) between the pageable arrays and pinned memory on 15 CPU workers (best of the timed runs), which bounds a GPU fed from them to 4.09e+09 items/s; gpu mode reaches 27% of it
== sha256 --pinned
libmgpurt 0.1.0: sha256, 64 items; 15 CPU workers, 1 GPU (NVIDIA H100 80GB HBM3)
mode cpu    2.1 s (median of 3), 1.6e+07 items/s, 1.52 GB/s moved
mode gpu    0.15 s (median of 3), 2.2e+08 items/s, 21.2 GB/s moved
mode static 0.15 s (median of 3), 2.3e+08 items/s, 21.9 GB/s moved
mode steal  0.13 s (median of 3), 2.6e+08 items/s, 25.2 GB/s moved
heterogeneous efficiency E = steal / (cpu + gpu) = 1.108
steal vs static: 1.152x
""")
turnsrun = os.path.join(fix, "turnsrun")
os.makedirs(turnsrun, exist_ok=True)
json.dump({"items": 64, "results": modes(100, 300, 300, 360), "speedup_vs_best_static": 0.95,
           "turns": {"ran": True, "turns": 2, "best_items_per_s": 300, "steal_items_per_s": 330,
                     "speedup_vs_best_static": 1.1, "by_turn": [1.05, 1.15]}},
          open(os.path.join(turnsrun, "compare-sha256.json"), "w"))
# bench/peers/run.sh's peers.json.
peers = os.path.join(fix, "peers.json")
def mg(rate):
    return {"items": 64, "results": [{"mode": "steal", "ran": True, "items_per_s": rate}],
            "verification": {"enabled": True, "failed": 0}}
def sp(sched, tasks, rate, **kw):
    return {"best": dict({"sched": sched, "tasks": tasks, "items_per_s": rate}, **kw), "verified": True}
json.dump({"json": {
    "mgpu-ntt-pageable-steal": mg(300.0), "mgpu-ntt-pageable-gpu": mg(250.0), "mgpu-ntt-pageable-cpu": mg(50.0),
    "mgpu-mulmod-10-pageable-steal": mg(1000.0), "mgpu-mulmod-10-pageable-gpu": mg(900.0),
    "starpu-ntt-pageable-all": sp("dmda", 4, 200.0, calibrated=False), "starpu-ntt-pageable-gpu": sp("eager", 16, 150.0),
    "starpu-ntt-pageable-cpu": sp("lws", 2, 40.0),
    "starpu-mulmod-10-pageable-gpu": dict(sp("dmda", 4, 1250.0, calibrated=True), verified=False),
    "starpu-overhead": {"starpu_version": "1.3.10", "results": [
        {"sched": "eager", "round_trip_median_us": 8.5, "round_trip_p90_us": 9.0, "per_task_overhead_us": 3.2,
         "empty_task_us": 2.7}]}},
    "text": {"mgpu-overhead.txt": "1-item batch round trip (1 CPU workers): median 9.62 us, 90th percentile 10.32 us\n"
                                  "per-chunk overhead: 0.56 us (1712 chunks)\n"}}, open(peers, "w"))
# A second run of run.sh (PEERS_WORKLOADS split over two): its rows join the first's in run.sh's order.
peers2 = os.path.join(fix, "peers2.json")
json.dump({"json": {"mgpu-chain-pageable-steal": mg(40.0), "mgpu-chain-pageable-gpu": mg(39.0),
                    "starpu-chain-pageable-gpu": sp("lws", 4, 36.0)}, "text": {}}, open(peers2, "w"))
want = {
 ("peers", peers + "," + peers2): """| workload | libmgpurt steal | libmgpurt gpu | libmgpurt cpu | StarPU CPU+GPU | StarPU gpu | StarPU cpu | StarPU best at | steal / StarPU best |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |
| mulmod-10 (outputs NOT verified) | 1e+03 | 900 | — | — | 1.25e+03 | — | gpu: dmda, 4 tasks | 0.80 |
| chain | 40 | 39 | — | — | 36 | — | gpu: lws, 4 tasks | 1.11 |
| ntt | 300 | 250 | 50 | 200 | 150 | 40 | CPU+GPU: dmda, 4 tasks (model not calibrated) | 1.50 |""",
 ("compare", ceiling): """| workload | cpu | gpu | static | steal | E | steal / static | steal / best static | the same in turns | ceiling | gpu / ceiling | ceiling's copies | host copy GB/s | host copy bound | gpu / bound | host steal (cpu, gpu, static, steal) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| `chain -n 64` | 7e+04 | 1.25e+07 | 1.28e+07 | 1.28e+07 | 1.012 | 1.000 | 0.990 | — | 1.3e+07 | 96% | — | — | — | — | 0%, 0%, 0%, 2% |
| `mulmod --intensity 100` | 1.5e+07 | 1.1e+09 | 1.2e+09 | 1.2e+09 | 1.010 | 0.966 | 0.971 | 1.021 (0.764, 1.104, 1.024) | 1.9e+09 | 58% | 81% | 65.5 | 4.09e+09 | 27% | 0%, 0%, 0%, 0% |
| `sha256 --pinned` | 1.6e+07 | 2.2e+08 | 2.3e+08 | 2.6e+08 | 1.108 | 1.152 | — | — | — | — | — | — | — | — | 0%, 0%, 0%, 0% |""",
 ("peers", peers): """| workload | libmgpurt steal | libmgpurt gpu | libmgpurt cpu | StarPU CPU+GPU | StarPU gpu | StarPU cpu | StarPU best at | steal / StarPU best |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |
| mulmod-10 (outputs NOT verified) | 1e+03 | 900 | — | — | 1.25e+03 | — | gpu: dmda, 4 tasks | 0.80 |
| ntt | 300 | 250 | 50 | 200 | 150 | 40 | CPU+GPU: dmda, 4 tasks (model not calibrated) | 1.50 |""",
 ("peers-overhead", peers): """| runtime | round trip, median (us) | 90th percentile (us) | overhead per 0.5 ms task (us) | empty task, many in flight (us) |
| --- | ---: | ---: | ---: | ---: |
| libmgpurt (`bench/mgpu-overhead 1`) | 9.62 | 10.32 | 0.56 | — |
| StarPU 1.3.10, `eager` | 8.50 | 9.00 | 3.20 | 2.70 |""",
 ("peers-overhead", peers + "," + peers): """| run | runtime | round trip, median (us) | 90th percentile (us) | overhead per 0.5 ms task (us) | empty task, many in flight (us) |
| --- | --- | ---: | ---: | ---: | ---: |
| `peers.json` | libmgpurt (`bench/mgpu-overhead 1`) | 9.62 | 10.32 | 0.56 | — |
| `peers.json` | StarPU 1.3.10, `eager` | 8.50 | 9.00 | 3.20 | 2.70 |
| `peers.json` | libmgpurt (`bench/mgpu-overhead 1`) | 9.62 | 10.32 | 0.56 | — |
| `peers.json` | StarPU 1.3.10, `eager` | 8.50 | 9.00 | 3.20 | 2.70 |""",
 ("compare", turnsrun): """| workload | cpu | gpu | static | steal | E | steal / static | steal / best static | the same in turns | host steal (cpu, gpu, static, steal) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| sha256 (64 items) | 100 | 300 | 300 | 360 | 0.900 | 1.200 | 0.950 | 1.100 (1.050, 1.150) | 0%, 0%, 0%, 12% |""",
 ("text", ceiling): "```\n" + open(ceiling).read().rstrip("\n") + "\n```",
 ("compare", run): """| workload | cpu | gpu | static | steal | E | steal / static | host steal (cpu, gpu, static, steal) |
| --- | --- | --- | --- | --- | --- | --- | --- |
| ntt (64 items) | 100 | 300 | 300 | 360 | 0.900 (0.800, 1.000) | 1.200 (1.100, 1.300) | 0%, 0%, 0%, 12% |
| saxpy (1000 items) | 2e+09 | 1e+09 | 1.5e+09 | 2.5e+09 | 0.833 | 1.667 | 0%, 0%, 0%, 12% |""",
 ("sweep", run): """| intensity | cpu | gpu | static | steal | E | steal / static | host steal (cpu, gpu, static, steal) |
| --- | --- | --- | --- | --- | --- | --- | --- |
| 1 (50 items) | 40 | 10 | 40 | 30 | 0.600 | 0.750 | 0%, 0%, 0%, 12% |
| 10 (50 items) | 10 | 40 | 40 | 45 | 0.900 | 1.125 | 0%, 0%, 0%, 12% |""",
 ("scaling", run): """| workload | 1 GPU | 2 GPUs |
| --- | --- | --- |
| ntt (64 items) | 100 | 190: 1.90x, 95% |""",
 ("transfer", run): """| run (`--mode gpu`) | items/s | GB/s moved |
| --- | --- | --- |
| saxpy, 1000 items, pageable (staged) | 1e+09 | 12.0 |""",
 ("resident", run): """| workload | GPUs | GB/s per GPU | device copy GB/s | fraction of the copy |
| --- | --- | --- | --- | --- |
| saxpy-resident | 0, 1 | 80–90 | 100 | 80.0%–90.0% |""",
 ("overhead", run): """```
per-chunk overhead: 0.3 us
```""",
 ("compare", text): """| workload | cpu | gpu | static | steal | E | steal / static | host steal (cpu, gpu, static, steal) |
| --- | --- | --- | --- | --- | --- | --- | --- |
| `mulmod --intensity 10 -n 64` | 1e+08 | 3e+08 | 3e+08 | 3.8e+08 | 0.950 (0.900, 1.000) | 1.267 (1.200, 1.300) | 2%, 0%, 0%, 11% |
| `saxpy` | 2e+09 | 1e+09 | 1.5e+09 | 2.5e+09 | 0.833 (0.800, 0.850) | 1.667 | 0%, 0%, 0%, 0% |
| mandelbrot (4096 items) | 1.23e+03 | 4e+05 | 4e+05 | 4.1e+05 | 1.022 (1.002, 1.003) | 1.025 (0.999, 1.017) | 0%, 0%, 3%, 0% |""",
 ("transfer", text): """| run (`--mode gpu`) | items/s | GB/s moved |
| --- | --- | --- |
| `saxpy` (pageable, staged) | 1e+09 | 12.0 |""",
 ("resident", text): """| workload | GPUs | GB/s per GPU | device copy GB/s | fraction of the copy |
| --- | --- | --- | --- | --- |
| saxpy-resident | 0 | 3656 | 4197 | 87.1% |""",
}
# bench/alternate.sh's runs: two passes of builds a and b, one failed run.
alt = os.path.join(fix, "runs.tsv")
open(alt, "w").write("pass\tbuild\tworkload\tmode\titems_per_s\n0\ta\tw 1\tgpu\t100\n0\tb\tw 1\tgpu\t90\n"
                     "1\tb\tw 1\tgpu\t110\n1\ta\tw 1\tgpu\t100\n0\ta\tw 1\tsteal\t200\n0\tb\tw 1\tsteal\tfailed\n")
want[("alternate", alt)] = """| workload | b / a, gpu | b / a, steal |
| --- | ---: | ---: |
| `w 1` | 1.000 | — |"""
# A second run of the same builds: a column each, named after its file, and
# a workload of its own.
alt2 = os.path.join(fix, "runs2.tsv")
open(alt2, "w").write("pass\tbuild\tworkload\tmode\titems_per_s\n0\ta\tw 1\tgpu\t100\n0\tb\tw 1\tgpu\t130\n"
                      "1\tb\tw 1\tgpu\t140\n1\ta\tw 1\tgpu\t100\n0\ta\tw 2\tgpu\t10\n0\tb\tw 2\tgpu\t12\n")
want[("alternate", alt + "," + alt2)] = """| workload | b / a, gpu (runs) | b / a, steal (runs) | b / a, gpu (runs2) |
| --- | ---: | ---: | ---: |
| `w 1` | 1.000 | — | 1.350 |
| `w 2` | — | — | 1.200 |"""
# One build's modes in turn: each later mode over the first, pass by pass;
# with one mode, its medians.
turns = os.path.join(fix, "turns.tsv")
open(turns, "w").write("pass\tbuild\tworkload\tmode\titems_per_s\n0\tnew\tw 1\tcpu\t100\n0\tnew\tw 1\tsteal\t110\n"
                       "1\tnew\tw 1\tsteal\t130\n1\tnew\tw 1\tcpu\t100\n")
want[("turns", turns)] = """| workload | steal / cpu (by pass) |
| --- | --- |
| `w 1` | 1.200 (1.100, 1.300) |"""
turns1 = os.path.join(fix, "turns1.tsv")
open(turns1, "w").write("pass\tbuild\tworkload\tmode\titems_per_s\n0\tnew\tw 1\tcpu\t100\n1\tnew\tw 1\tcpu\t120\n"
                        "2\tnew\tw 1\tcpu\tfailed\n")
want[("turns", turns1)] = """| workload | cpu, items/s (by pass) |
| --- | --- |
| `w 1` | 110 (100, 120, failed) |"""
# The verdict on a ratio: pass by pass, its median and a sign-test interval
# (with six passes, the smallest and largest: 97%), and the bound held,
# failed or undecided; two passes are too few for 90%.
verd = os.path.join(fix, "verdict.tsv")
with open(verd, "w") as f:
    f.write("pass\tbuild\tworkload\tmode\titems_per_s\n")
    for p, r in enumerate((1.1, 1.0, 1.2, 1.05, 0.98, 1.02)):
        f.write(f"{p}\ta\tw 1\tsteal\t100\n{p}\tb\tw 1\tsteal\t{100 * r:g}\n")
    f.write("0\ta\tw 2\tsteal\t100\n0\tb\tw 2\tsteal\t90\n1\tb\tw 2\tsteal\tfailed\n1\ta\tw 2\tsteal\t100\n")
head = "| workload | ratio | median | 90% interval | passes | bound {} |\n| --- | --- | ---: | --- | ---: | --- |\n"
for bound, verdict in (("", "undecided"), ("bound=0.97", "holds"), ("bound=1.3", "fails")):
    want[("verdict", verd, bound)] = (head.format(bound[6:] or "1") +
        f"| `w 1` | b / a, steal | 1.035 | 0.980–1.200 (97%) | 6 | {verdict} |\n"
        "| `w 2` | b / a, steal | 0.900 | — | 1 | too few passes |")
want[("verdict", turns, "")] = head.format("1") + "| `w 1` | steal / cpu | 1.200 | — | 2 | too few passes |"
# of=NAME: that build over each other one (here a over b: the inverse ratios).
want[("verdict", verd, "of=a")] = (head.format("1") +
    "| `w 1` | a / b, steal | 0.966 | 0.833–1.020 (97%) | 6 | undecided |\n"
    "| `w 2` | a / b, steal | 1.111 | — | 1 | too few passes |")
# MGPU_DEBUG=debug logs of alternate.sh: each run's last REPEAT batches by
# way; the first run's warm-up batch (3 out) is not counted; a run cut short
# says of how many, one without the lines "—".
ways = os.path.join(fix, "a.txt")
open(ways, "w").write("== pass 0: w 1 --mode steal --repeat 3\nmode steal ...\n"
                      "libmgpurt: debug: kernel 'w', 9 items: 5 items/s with 3 CPU workers kept out (auto reserve)\n"
                      "libmgpurt: debug: kernel 'w', 9 items: 7 items/s with 0 CPU workers and every GPU kept out (auto reserve)\n"
                      "'w', 9 items: 5 items/s with 0 CPU workers kept out (auto reserve)\n"
                      "libmgpurt: debug: kernel 'w', 9 items: 7 items/s with 0 CPU workers and every GPU kept out (auto reserve)\n"
                      "== pass 1: w 1 --mode steal --repeat 3\n"
                      "libmgpurt: debug: kernel 'w', 9 items: 5 items/s with 3 CPU workers kept out (auto reserve)\n"
                      "libmgpurt: debug: kernel 'w', 9 items: 7 items/s with 0 CPU workers and every GPU kept out (auto reserve)\n"
                      "libmgpurt: debug: kernel 'w', 9 items: 5 items/s with 3 CPU workers kept out (auto reserve)\n"
                      "== pass 2: w 1 --mode steal --repeat 3\n"
                      "libmgpurt: debug: kernel 'w', 9 items: 5 items/s with 3 CPU workers kept out (auto reserve)\n"
                      "== pass 3: w 1 --mode steal --repeat 3\nmode steal ...\n")
want[("ways", ways)] = """| workload | a: timed batches on its most run way |
| --- | --- |
| `w 1` | 2, 2, 1 of 1, — of 3 |"""
# bench/first-batch.sh's TSV: per workload and mode, a column per build and
# store kind, the first batch over the steady state; a failed run is a dash.
first = os.path.join(fix, "first.tsv")
open(first, "w").write("build\tworkload\tmode\tstore\tfirst_s\tsteady_s\tratio\n"
                       "old\tchain\tgpu\tnone\t0.5\t0.01\t50\nold\tchain\tgpu\tstored\t0.4\t0.01\t40\n"
                       "new\tchain\tgpu\tnone\t0.05\t0.01\t5\nnew\tchain\tgpu\tstored\t0.0105\t0.01\t1.05\n"
                       "new\tsha256\tsteal\tnone\tfailed\tfailed\tfailed\n")
want[("first-batch", first)] = """| workload | mode | old, none: first / steady | old, stored: first / steady | new, none: first / steady | new, stored: first / steady |
| --- | --- | --- | --- | --- | --- |
| `chain` | gpu | 50.00 (500 / 10 ms) | 40.00 (400 / 10 ms) | 5.00 (50 / 10 ms) | 1.05 (10.5 / 10 ms) |
| `sha256` | steal | — | — | — | — |"""
bad = 0
# A file of another shape is refused, naming what it lacks.
other = os.path.join(fix, "pairs.tsv")
open(other, "w").write("pair\tmode\titems_per_s\n1\tgpu\t100\n")
got = subprocess.run([sys.executable, report, "--table", "verdict", other], capture_output=True, text=True)
if got.returncode == 0 or "lacks the column(s) build, pass, workload" not in got.stderr:
    print(f"FAIL: report.py --table verdict on a file without alternate.sh's columns:\n{got.stdout}{got.stderr}")
    bad += 1
for (kind, path, *bound), w in want.items():
    got = subprocess.run([sys.executable, report, "--table", kind, path] + [b for b in bound if b],
                         capture_output=True, text=True)
    if got.returncode != 0 or got.stdout.strip() != w:
        print(f"FAIL: report.py --table {kind} {os.path.basename(path)}:\n{got.stdout}{got.stderr}")
        bad += 1
# Blocks of a document: --check finds a stale table, --update rewrites it and
# the plot, and then --check passes.
doc = os.path.join(fix, "doc.md")
svg = os.path.join(fix, "sweep.svg")
open(doc, "w").write(f"# Doc\n\nBefore.\n\n<!-- report.py allreduce {run} every=16 -->\nstale\n<!-- end -->\n\n"
                     f"<!-- report.py sweep {run} svg={svg} -->\n<!-- end -->\n"
                     f"<!-- report.py text {ceiling} last=2 -->\n<!-- end -->\nAfter.\n")
def rc(mode):
    return subprocess.run([sys.executable, report, mode, doc], capture_output=True, text=True).returncode
if rc("--check") != 1:
    print("FAIL: report.py --check passes a stale block"); bad += 1
if rc("--update") != 0 or rc("--check") != 0 or not os.path.exists(svg):
    print("FAIL: report.py --update did not make the document current"); bad += 1
d = open(doc).read()
if "stale" in d or "| 128 | 10.0 | 1.00 | 8.0 | 1.25 | 80.0% |" not in d or "| 16 |" in d \
        or "| 256 |" not in d or not d.startswith("# Doc\n\nBefore.") or not d.endswith("After.\n") \
        or "```\nheterogeneous efficiency E = steal / (cpu + gpu) = 1.108\nsteal vs static: 1.152x\n```\n<!-- end -->" \
        not in d or "mode steal  0.13 s" in d:
    print("FAIL: report.py --update wrote:\n" + d); bad += 1
open(svg, "a").write("<!-- changed -->\n")
if rc("--check") != 1:
    print("FAIL: report.py --check passes a stale plot"); bad += 1
sys.exit(1 if bad else 0)
PY
then passes=$((passes + 1)); else echo "FAIL: bench/report.py on the fixtures"; fails=$((fails + 1)); fi

# ---------------------------------------------------------------- the report
if python3 "$srcdir/bench/report.py" --check "$srcdir/doc/benchmarks.md" > "$out/check" 2>&1; then
  passes=$((passes + 1))
else
  echo "FAIL: doc/benchmarks.md differs from its raw output in bench/results" \
       "(python3 bench/report.py --update doc/benchmarks.md):"; head -40 "$out/check"
  fails=$((fails + 1))
fi
rm -rf "$out"
echo "bench: $passes passed, $fails failed"
[ "$fails" = 0 ]
