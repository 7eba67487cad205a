#!/usr/bin/env python3
# python3 diag/tail.py TRACE.json [last N batches]: when each GPU and the CPU workers finish a batch.
import json, sys, collections
d = json.load(open(sys.argv[1]))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 6
ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i") and "batch" in e.get("args", {})]
by = collections.defaultdict(list)
for e in ev: by[e["args"]["batch"]].append(e)
for bid in sorted(by)[-N:]:
    es = by[bid]
    t0 = min(e["ts"] for e in es); t1 = max(e["ts"] + e.get("dur", 0) for e in es)
    gend = collections.defaultdict(float); gitems = collections.Counter(); steals = collections.Counter()
    cend = 0; citems = 0
    for e in es:
        end = e["ts"] + e.get("dur", 0) - t0
        if e["pid"] >= 3: gend[e["pid"] - 3] = max(gend[e["pid"] - 3], end)
        elif e["pid"] == 1:
            cend = max(cend, end)
            if e["cat"] == "chunk": citems += e["args"]["items"]
        if e["cat"] == "issue": gitems[e["tid"] if e["pid"] == 2 else e["pid"]] += e["args"]["items"]
        if e["cat"] == "steal": steals[(e["pid"], e["tid"])] += 1
    g = " ".join(f"g{k}:{v/1e3:.2f}" for k, v in sorted(gend.items()))
    print(f"batch {bid}: span {(t1-t0)/1e3:.2f} ms | gpu ends {g} | cpu end {cend/1e3:.2f} items {citems} | "
          f"gpu items {dict(sorted(gitems.items()))} | steals {dict(steals)}")
