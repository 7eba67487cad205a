#!/usr/bin/env python3
# gtr2.py TRACE.json [N]: per batch (the last N, default 3): span, each GPU's kernels,
# busy and end, and the CPU chunks that ended last (worker, rows, start, duration).
import json, sys, collections
d = json.load(open(sys.argv[1]))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i") and "batch" in e.get("args", {})]
by = collections.defaultdict(list)
for e in ev: by[e["args"]["batch"]].append(e)
for bn in sorted(by)[-N:]:
    es = by[bn]
    xs = [e for e in es if e["ph"] == "X"]
    t0 = min(e["ts"] for e in xs); t1 = max(e["ts"] + e["dur"] for e in xs)
    out = [f"batch {bn}: span {(t1 - t0) / 1e3:.2f} ms"]
    for g in sorted({e["pid"] - 3 for e in xs if e["pid"] >= 3}):
        k = sorted((e for e in xs if e["pid"] == 3 + g and e["cat"] == "kernel"), key=lambda e: e["ts"])
        busy = 0; end = -1
        for e in k:
            s, f = e["ts"], e["ts"] + e["dur"]
            if f > end: busy += f - max(s, end); end = f
        last = max((e["ts"] + e["dur"] for e in k), default=t0)
        kk = [(e["args"]["first"], e["args"]["items"]) for e in k]
        st = sum(1 for e in es if e["ph"] == "i" and e["pid"] == 2 and e["tid"] == g)
        out.append(f"  gpu{g}: {len(k)} kernels {kk[:10]}{'...' if len(kk) > 10 else ''} busy {busy / 1e3:.2f} ms, end {(last - t0) / 1e3:.2f} ms, steals {st}")
    cpu = [e for e in xs if e["pid"] == 1 and e["cat"] == "kernel"] or [e for e in xs if e["pid"] == 1]
    if cpu:
        out.append(f"  cpu: {len(cpu)} chunks, {sum(e['args']['items'] for e in cpu)} items, workers {len({e['tid'] for e in cpu})}, last end {(max(e['ts'] + e['dur'] for e in cpu) - t0) / 1e3:.2f} ms")
        for e in sorted(cpu, key=lambda e: -(e["ts"] + e["dur"]))[:6]:
            out.append(f"    w{e['tid']} rows {e['args']['first']}+{e['args']['items']} at {(e['ts'] - t0) / 1e3:.2f} ms for {e['dur'] / 1e3:.2f} ms")
    print("\n".join(out))
