#!/usr/bin/env python3
# gtr4.py TRACE.json [N]: for the last N batches: the batch's time and each GPU chunk's staging copy in
# (its issue slice: ms, and GB/s of its h2d bytes), to see how fast the copies into staging run at a batch's start.
import json, sys, collections, statistics as S
d = json.load(open(sys.argv[1])); N = int(sys.argv[2]) if len(sys.argv) > 2 else 6
ev = [e for e in d["traceEvents"] if e.get("ph") == "X" and "batch" in e.get("args", {})]
by = collections.defaultdict(list)
for e in ev: by[e["args"]["batch"]].append(e)
Ts, first3, rest = [], [], []
for bn in sorted(by)[-N:]:
    es = by[bn]; bt = [e for e in es if e["cat"] == "batch"]
    if not bt: continue
    t0 = bt[0]["ts"]; Ts.append(bt[0]["dur"] / 1e3)
    h2d = {e["args"]["first"]: e["args"].get("bytes", 0) for e in es if e["cat"] == "h2d"}
    iss = sorted((e for e in es if e["cat"] == "issue"), key=lambda e: e["ts"])
    gbs = [h2d.get(e["args"]["first"], 0) / (e["dur"] * 1e3) for e in iss]
    first3 += gbs[:3]; rest += gbs[3:]
    cpu = sum(e["args"]["items"] for e in es if e["cat"] == "chunk")
    print(f"batch {bn}: {bt[0]['dur']/1e3:.2f} ms, {len(iss)} chunks, cpu items {cpu}; staging in GB/s: " + " ".join(f"{g:.1f}" for g in gbs))
if Ts: print(f"median: batch {S.median(Ts):.2f} ms; staging in, first three chunks {S.median(first3):.1f} GB/s, later {S.median(rest) if rest else 0:.1f} GB/s")
