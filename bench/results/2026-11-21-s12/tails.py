#!/usr/bin/env python3
# per batch of a trace: span, when the CPU workers and each GPU finish, the last event, and
# CPU chunks that ran far slower than their worker's median rate (a descheduled thread)
import json, sys, collections, statistics
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") == "X" and "batch" in e.get("args", {})]
by = collections.defaultdict(list)
for e in ev: by[e["args"]["batch"]].append(e)
rates = collections.defaultdict(list)
for e in ev:
    if e["pid"] == 1 and e["args"].get("items", 0) >= 64: rates[e["tid"]].append(e["dur"] / e["args"]["items"])
med = {k: statistics.median(v) for k, v in rates.items()}
summ = len(sys.argv) > 2
acc = []
for bn in sorted(by):
    es = by[bn]
    t0 = min(e["ts"] for e in es); t1 = max(e["ts"] + e["dur"] for e in es)
    cpu_end = max((e["ts"] + e["dur"] for e in es if e["pid"] == 1), default=t0)
    gend = collections.defaultdict(float)
    for e in es:
        if e["pid"] >= 3: gend[e["pid"] - 3] = max(gend[e["pid"] - 3], e["ts"] + e["dur"])
        if e["pid"] == 2: gend[e["tid"]] = max(gend[e["tid"]], e["ts"] + e["dur"])
    last = max(es, key=lambda e: e["ts"] + e["dur"])
    slow = [e for e in es if e["pid"] == 1 and e["tid"] in med and e["args"].get("items", 0) > 0
            and e["dur"] > 4 * med[e["tid"]] * e["args"]["items"] and e["dur"] > 300]
    excess = sum(e["dur"] - med[e["tid"]] * e["args"]["items"] for e in slow)
    worst = max(slow, key=lambda e: e["dur"] - med[e["tid"]] * e["args"]["items"], default=None)
    cpu_items = sum(e["args"].get("items", 0) for e in es if e["pid"] == 1)
    acc.append(((t1-t0)/1e3, len(slow), excess/1e3, (t1 - max(gend.values(), default=t1))/1e3))
    if summ: continue
    print(f"batch {bn}: span {(t1-t0)/1e3:.2f} ms cpu_end {(cpu_end-t0)/1e3:.2f} gpu_end " +
          " ".join(f"{(gend[g]-t0)/1e3:.2f}" for g in sorted(gend)) +
          f" | last pid{last['pid']} tid{last['tid']} {last['cat']} {last['dur']/1e3:.2f} ms items {last['args'].get('items','-')}"
          f" | cpu items {cpu_items} | slow cpu chunks {len(slow)} excess {excess/1e3:.2f} ms" +
          (f" worst w{worst['tid']} {worst['dur']/1e3:.2f} ms for {worst['args']['items']} items (median {med[worst['tid']]*worst['args']['items']/1e3:.2f} ms) ends at {(worst['ts']+worst['dur']-t0)/1e3:.2f}" if worst else ""))
if summ and len(acc) > 1:
    a = acc[1:]
    print(f"{len(a)} batches after the first: span median {statistics.median(x[0] for x in a):.2f} ms, slow cpu chunks mean {statistics.mean(x[1] for x in a):.1f}, "
          f"excess mean {statistics.mean(x[2] for x in a):.1f} ms, batch end after last gpu: mean {statistics.mean(x[3] for x in a):.2f} ms")
