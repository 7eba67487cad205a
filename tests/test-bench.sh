#!/bin/sh
# test-bench.sh: bench/run.sh end to end in its smoke mode (tiny sizes, emulated
# devices): every JSON file parses, the report has its tables, the plot parses.
set -u
out=$(mktemp -d /tmp/mgpu-bench-XXXXXX)
fails=0; passes=0
if ! command -v python3 >/dev/null 2>&1; then echo "python3 missing: skipped"; exit 77; fi
if bash "${top_srcdir:-.}/bench/run.sh" --smoke "$out" > "$out/log" 2>&1; then passes=$((passes + 1))
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
root = ET.parse(out + "/sweep.svg").getroot()
assert len([p for p in root.iter("{http://www.w3.org/2000/svg}path") if "mode" in p.get("class", "")]) == 4
PY
then passes=$((passes + 1)); else echo "FAIL: the report or its files are wrong"; fails=$((fails + 1)); fi
rm -rf "$out"
echo "bench: $passes passed, $fails failed"
[ "$fails" = 0 ]
