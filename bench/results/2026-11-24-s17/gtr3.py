#!/usr/bin/env python3
# gtr3.py TRACE.json [N]: for the last N batches (default 8): the batch's time, and from
# its start: first issue, last kernel end, last d2h end, last unstage end; unstage time
# per GPU; CPU chunks. Then medians.
import json, sys, collections, statistics as S
d = json.load(open(sys.argv[1]))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 8
ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i") and "batch" in e.get("args", {})]
by = collections.defaultdict(list)
for e in ev: by[e["args"]["batch"]].append(e)
rows = []
for bn in sorted(by)[-N:]:
    es = by[bn]
    bt = [e for e in es if e["cat"] == "batch"]
    if not bt: continue
    b = bt[0]; t0 = b["ts"]; T = b["dur"]
    def last(cat, pid=None):
        xs = [e["ts"] + e["dur"] - t0 for e in es if e["cat"] == cat and e["ph"] == "X" and (pid is None or e["pid"] == pid)]
        return max(xs) / 1e3 if xs else float("nan")
    iss = [e["ts"] - t0 for e in es if e["cat"] == "issue"]
    first = min(iss) / 1e3 if iss else float("nan")
    un = collections.defaultdict(float)
    for e in es:
        if e["cat"] == "unstage": un[e["tid"]] += e["dur"] / 1e3
    cpu = [e for e in es if e["cat"] == "chunk"]
    r = dict(T=T / 1e3, first=first, kern=last("kernel"), d2h=last("d2h"), unst=last("unstage"),
             cpu_items=sum(e["args"]["items"] for e in cpu), cpu_end=last("chunk"))
    rows.append(r)
    print(f"batch {bn}: {r['T']:.2f} ms; first issue {first:.2f}, last kernel {r['kern']:.2f}, d2h {r['d2h']:.2f}, "
          f"unstage {r['unst']:.2f}; unstage per GPU " + " ".join(f"{k}:{v:.2f}" for k, v in sorted(un.items())) +
          (f"; cpu {len(cpu)} chunks {r['cpu_items']} items end {r['cpu_end']:.2f}" if cpu else ""))
if rows:
    print("median: " + ", ".join(f"{k} {S.median(r[k] for r in rows):.2f}" for k in ("T", "first", "kern", "d2h", "unst")))
