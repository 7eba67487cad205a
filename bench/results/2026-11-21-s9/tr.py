#!/usr/bin/env python3
# python3 diag/tr.py TRACE.json [last N batches]: per-batch GPU timeline summary.
import json, sys, collections
d = json.load(open(sys.argv[1]))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 6
ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i")]
by = collections.defaultdict(list)
for e in ev: by[e["args"]["batch"]].append(e)
def union(iv):
    iv.sort(); tot = 0; cur = None
    for a, b in iv:
        if cur is None or a > cur[1]:
            if cur: tot += cur[1] - cur[0]
            cur = [a, b]
        else: cur[1] = max(cur[1], b)
    if cur: tot += cur[1] - cur[0]
    return tot
for bid in sorted(by)[-N:]:
    es = by[bid]
    t0 = min(e["ts"] for e in es); t1 = max(e["ts"] + e.get("dur", 0) for e in es)
    s = collections.defaultdict(float); c = collections.Counter()
    items = []
    for e in es:
        s[e["cat"]] += e.get("dur", 0); c[e["cat"]] += 1
        if e["cat"] == "issue": items.append(e["args"]["items"])
    gpu_busy = union([(e["ts"], e["ts"] + e["dur"]) for e in es if e["pid"] >= 3])
    kern = union([(e["ts"], e["ts"] + e["dur"]) for e in es if e["cat"] == "kernel"])
    first_issue = min([e["ts"] for e in es if e["cat"] == "issue"] or [t0])
    cpu_items = sum(e["args"]["items"] for e in es if e["cat"] == "chunk")
    print(f"batch {bid}: span {(t1-t0)/1e3:.2f} ms, first issue +{(first_issue-t0)/1e3:.2f} ms, streams busy {gpu_busy/1e3:.2f} ms, kernel-union {kern/1e3:.2f} ms | "
          f"issue n={c['issue']} {s['issue']/1e3:.2f} ms, h2d {s['h2d']/1e3:.2f}, kern {s['kernel']/1e3:.2f}, d2h {s['d2h']/1e3:.2f}, pin {c['pin']}, alloc {c['alloc']} | "
          f"gpu chunk items min {min(items) if items else 0} max {max(items) if items else 0} | cpu chunks {c['chunk']} items {cpu_items} steals {c['steal']}")
