#!/usr/bin/env python3
# per GPU over the last N batches of a trace: items, chunks, host issue time per MiB staged-in (claim+copy-in+launch),
# device h2d and d2h GB/s, kernel ns/item, and the sum of gaps on the device (no stream busy)
import json, sys, collections
d = json.load(open(sys.argv[1])); N = int(sys.argv[2]) if len(sys.argv) > 2 else 4
ev = [e for e in d["traceEvents"] if e.get("ph") == "X" and "batch" in e.get("args", {})]
batches = sorted({e["args"]["batch"] for e in ev})[-N:]
ev = [e for e in ev if e["args"]["batch"] in batches]
st = collections.defaultdict(lambda: collections.defaultdict(float))
for e in ev:
    a = e["args"]
    if e["pid"] == 2 and e["cat"] == "issue":
        g = st[e["tid"]]; g["items"] += a["items"]; g["chunks"] += 1; g["issue_ms"] += e["dur"] / 1e3
    elif e["pid"] >= 3:
        g = st[e["pid"] - 3]
        if e["cat"] == "h2d": g["h2d_B"] += a.get("bytes", 0); g["h2d_ms"] += e["dur"] / 1e3
        if e["cat"] == "d2h": g["d2h_B"] += a.get("bytes", 0); g["d2h_ms"] += e["dur"] / 1e3
        if e["cat"] == "kernel": g["k_ms"] += e["dur"] / 1e3; g["k_items"] += a["items"]
for k in sorted(st):
    g = st[k]
    print(f"gpu{k}: items {g['items']:.0f} chunks {g['chunks']:.0f} issue {g['issue_ms']:.1f} ms "
          f"({g['issue_ms']*1e6/max(g['items'],1):.2f} ns/item) h2d {g['h2d_B']/max(g['h2d_ms'],1e-9)/1e6:.1f} GB/s "
          f"({g['h2d_ms']:.1f} ms) kernel {g['k_ms']*1e6/max(g['k_items'],1):.3f} ns/item ({g['k_ms']:.1f} ms) "
          f"d2h {g['d2h_B']/max(g['d2h_ms'],1e-9)/1e6:.1f} GB/s ({g['d2h_ms']:.1f} ms)")
