#!/usr/bin/env python3
# gtr.py TRACE.json: per batch (the last 3), per GPU: kernels (count, items each),
# kernel busy time against the batch span, host-thread issue time, steals.
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i") and "batch" in e.get("args", {})]
by = collections.defaultdict(list)
for e in ev: by[e["args"]["batch"]].append(e)
for bn in sorted(by)[-3:]:
    es = by[bn]
    xs = [e for e in es if e["ph"] == "X"]
    t0 = min(e["ts"] for e in xs); t1 = max(e["ts"] + e["dur"] for e in xs)
    out = [f"batch {bn}: span {(t1 - t0) / 1e3:.2f} ms"]
    for g in sorted({e["pid"] - 3 for e in xs if e["pid"] >= 3}):
        k = sorted((e for e in xs if e["pid"] == 3 + g and e["cat"] == "kernel"), key=lambda e: e["ts"])
        h2d = [e for e in xs if e["pid"] == 3 + g and e["cat"] != "kernel"]
        iss = [e for e in xs if e["pid"] == 2 and e["tid"] == g]
        busy = 0; end = -1
        for e in k:  # union of kernel intervals
            s, f = e["ts"], e["ts"] + e["dur"]
            if f > end: busy += f - max(s, end); end = f
        last = max((e["ts"] + e["dur"] for e in k + h2d), default=t0)
        first_k = k[0]["ts"] if k else t0
        items = [e["args"]["items"] for e in k]
        st = sum(1 for e in es if e["ph"] == "i" and e["pid"] == 2 and e["tid"] == g)
        out.append(f"  gpu{g}: {len(k)} kernels items {items[:12]}{'...' if len(items) > 12 else ''} "
                   f"first kernel at {(first_k - t0) / 1e3:.2f} ms, kernels busy {busy / 1e3:.2f} ms, "
                   f"last end {(last - t0) / 1e3:.2f} ms, issue {sum(e['dur'] for e in iss) / 1e3:.2f} ms x{len(iss)}, "
                   f"copies {sum(e['dur'] for e in h2d) / 1e3:.2f} ms, steals {st}")
    cpu = [e for e in xs if e["pid"] == 1]
    if cpu: out.append(f"  cpu: {len(cpu)} chunks, {sum(e['args']['items'] for e in cpu)} items, last end {(max(e['ts'] + e['dur'] for e in cpu) - t0) / 1e3:.2f} ms")
    print("\n".join(out))
