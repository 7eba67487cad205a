#!/usr/bin/env python3
"""python3 summarize.py FILE: E = steal / (cpu + gpu) per round and per
--reserve variant (cpu and gpu of the same round), from the "== ..." blocks
of s7.sh / s8.sh / s9.sh output. --compare blocks give their own modes."""
import re, sys

rows = []  # (workload, variant, round, E)
cur, last = None, {}
rounds = {}
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("== "):
        cur = line[3:]
        continue
    if cur is None or "auto reserve" in line:
        continue
    m = re.match(r"mode (\w+)\s+\S+ s \(median of \d+\), ([\d.e+]+) items/s", line)
    w = re.sub(r" --(compare|mode \w+|repeat \d+|reserve \w+|quiet)", "", cur)
    if m:  # a --compare block
        last[(w, m.group(1))] = float(m.group(2))
        if m.group(1) == "steal":
            rounds[(w, "auto")] = rounds.get((w, "auto"), 0) + 1
            cpu, gpu = last[(w, "cpu")], last[(w, "gpu")]
            rows.append((w, "auto", rounds[(w, "auto")], float(m.group(2)) / (cpu + gpu)))
        continue
    m = re.search(r"items, \S+ s, ([\d.e+]+) items/s", line)
    if not m:
        continue
    rate = float(m.group(1))
    mode = re.search(r"--mode (\w+)", cur)
    mode = mode.group(1) if mode else "steal"
    if mode in ("cpu", "gpu"):
        last[(w, mode)] = rate
        continue
    r = re.search(r"--reserve (\w+)", cur)
    v = r.group(1) if r else "auto"
    rounds[(w, v)] = rounds.get((w, v), 0) + 1
    rows.append((w, v, rounds[(w, v)], rate / (last[(w, "cpu")] + last[(w, "gpu")])))
for w in dict.fromkeys(r[0] for r in rows):
    print(w)
    for v in dict.fromkeys(r[1] for r in rows if r[0] == w):
        es = [r[3] for r in rows if r[0] == w and r[1] == v]
        print("  reserve %-5s E %s" % (v, " ".join("%.3f" % e for e in es)))
