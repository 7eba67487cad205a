#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""report.py: markdown tables (and an SVG plot) from benchmark output.

    python3 bench/report.py OUT > OUT/benchmarks.md
        the report of one bench/run.sh output folder (also writes OUT/sweep.svg)
    python3 bench/report.py --table KIND PATH
        one table, KIND one of: compare sweep scaling transfer allreduce
        resident overhead (and the kinds below); PATH a bench/run.sh folder (its JSON files) or a
        text file of mgpu-run output (see parse_text). KIND peers or
        peers-overhead: PATH the peers.json of bench/peers/run.sh, or several
        joined by commas (peers: their rows in one table; peers-overhead: a
        row of each). KIND alternate: PATH bench/alternate.sh's runs.tsv of
        several builds, or several joined by commas (a column each); KIND
        turns: its runs.tsv of one build (each mode over the first, or one
        mode's medians). KIND ways: PATH an alternate.sh log (OUT/NAME.txt) of
        runs under MGPU_DEBUG=debug, or several joined by commas: per
        workload and run, how many of its timed batches ran the way it ran
        most (MGPU_RESERVE_THREADS=auto). KIND verdict: PATH a runs.tsv, then
        optionally bound=X (default 1) and of=NAME: per workload, each later
        build's (or with one build, mode's) ratio to the first, or NAME's to
        each other, pass by pass, its median with a 90% interval, and whether
        it holds X. KIND first-batch: PATH bench/first-batch.sh's first.tsv:
        per workload and mode, each build's first batch over the steady state,
        with no stored model and with one. KIND text:
        the file in a code block (in a document, last=N keeps its last N lines)
    python3 bench/report.py --first-from-trace TRACE.json
        a trace's (MGPU_TRACE) first batch, the median of its batches 3 to 6,
        and their ratio, in seconds, on one line
    python3 bench/report.py --update DOC.md      (or --check DOC.md)
        regenerate (or compare) every block of DOC.md between a line
        "<!-- report.py KIND PATH [every=N] [last=N] [bound=X] [of=NAME] [svg=FILE] -->" and the
        next "<!-- end -->" (every=N: the all-reduce sizes N times apart);
        PATH and FILE are relative to the source tree. --check exits 1 when a
        block differs from what the raw output gives.
"""
import glob
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("cpu", "gpu", "static", "steal")
SAXPY_BYTES = 12  # r = a x + y on floats: x and y in, r out


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt(x):
    return "—" if x is None else f"{x:.3g}"


def num(s):
    return float(s.rstrip("x%"))


def rounds(v, by):
    """'0.870 (0.868, 0.991)': a figure and its rounds."""
    if v is None:
        return "—"
    s = f"{v:.3f}"
    return s + (" (" + ", ".join(f"{b:.3f}" for b in by) + ")" if by and len(by) > 1 else "")


# ---------------------------------------------------------------- JSON input

def modes(d):
    return {r["mode"]: r for r in d["results"]}


def rate(r):
    return r["items_per_s"] if r and r.get("ran") else None


def compare_record(label, d):
    """One comparison from mgpu-run --compare --json."""
    m = modes(d)
    rec = {"label": label}
    for k in MODES:
        rec[k] = rate(m.get(k))
        hs = m.get(k, {}).get("host_steal")
        rec["st_" + k] = None if hs is None else 100 * hs
    cpu, gpu, st, sl = (rec[k] for k in MODES)
    rec["e"] = sl / ((cpu or 0) + (gpu or 0)) if sl and (cpu or gpu) else None
    rec["sp"] = sl / st if sl and st else None
    rec["e_by"] = d.get("efficiency_by_round") or []
    rec["sp_by"] = d.get("speedup_vs_static_by_round") or []
    t = d.get("turns") or {}
    if t.get("ran"):
        rec["vs_best"], rec["vs_best_turns"], rec["turns_by"] = d.get("speedup_vs_best_static"), \
            t["speedup_vs_best_static"], t["by_turn"]
    return rec


def json_compare(out, sweep):
    recs = []
    for path in sorted(glob.glob(os.path.join(out, "compare-*.json"))):
        name = os.path.basename(path)[len("compare-"):-len(".json")]
        if name.startswith("mulmod-") != sweep:
            continue
        d = load(path)
        if sweep:
            rec = compare_record(f"{name.split('-')[1]} ({d['items']} items)", d)
            rec["k"] = int(name.split("-")[1])
        else:
            rec = compare_record(f"{name} ({d['items']} items)", d)
        recs.append(rec)
    if sweep:
        recs.sort(key=lambda r: r["k"])
    return recs


def json_multi(out, name):
    p = os.path.join(out, f"multi-{name}.json")
    return load(p) if os.path.exists(p) else None


def json_scaling(out):
    rows = []
    for w in ("ntt", "mulmod", "sha256"):
        for p in ("", "-pinned"):
            d = json_multi(out, f"scaling-{w}{p}")
            if d:
                rows.append((f"{w} ({d['items']} items{', pinned' if p else ''})",
                             [e for e in d["scaling"] if e["ran"]]))
    return rows


def json_transfer(out):
    rows = []
    for name, arrays in (("saxpy", "pageable (staged)"), ("saxpy-pinned", "pinned (`--pinned`)")):
        p = os.path.join(out, f"compare-{name}.json")
        if os.path.exists(p):
            d = load(p)
            g = rate(modes(d).get("gpu"))
            if g:
                rows.append((f"saxpy, {d['items']} items, {arrays}", g, g * SAXPY_BYTES / 1e9))
    return rows


# ---------------------------------------------------------------- text input

RE_MODE = re.compile(r"^mode (cpu|gpu|static|steal)\s+\S+ s \(median[^)]*\), ([\d.e+-]+) items/s"
                     r"(?:, ([\d.]+) GB/s moved)?(?:, host steal (\d+)%)?")
RE_SUMMARY = re.compile(r"^(?:== |p\d )?([a-z][\w -]*?(?: -{1,2}[\w-]+(?: \d+)?)*) \| (cpu .*)$")
RE_E = re.compile(r"E = steal / \(cpu \+ gpu\) = ([\d.]+)(?: \(by round: ([\d., ]+)\))?")
RE_SP = re.compile(r"steal vs static: ([\d.]+)x(?: \(by round: ([\d.x, ]+)\))?")
RE_AR = re.compile(r"^\s*(\d+)\s+\d+ \|\s*([\d.]+)\s+[\d.]+\s+([\d.]+) \|\s*([\d.]+)\s+[\d.]+\s+([\d.]+) \|\s*([\d.]+)%")
RE_MATVEC = re.compile(r"^\s*gpu(\d+): (\d+) rows in [\d.]+ s of device time: ([\d.]+) GB/s; "
                       r"device-to-device copy ([\d.]+) GB/s \(read \+ write\): ([\d.]+)%")
RE_RESIDENT = re.compile(r"^\s*gpu(\d+): saxpy ([\d.]+) GB/s, device-to-device copy ([\d.]+) GB/s "
                         r"\(read \+ write\): ([\d.]+)%")
RE_REDUCE = re.compile(r"^sum = \S+ in ([\d.]+) s \(median of \d+\): ([\d.]+) GB/s")
RE_CEILING = re.compile(r"^ceiling\s+[\d.]+ s, ([\d.e+-]+) items/s: .*gpu mode reaches (\d+)% of it")
RE_COPIES = re.compile(r"; copies (\d+)% of its time")
RE_VS_BEST = re.compile(r"; steal / best static = ([\d.]+)x")
RE_TURNS = re.compile(r"^turns: .* steal / best static = ([\d.]+)x(?: \(by turn: ([\d., ]+)\))?")
RE_HOSTCOPY = re.compile(r"^host copy [\d.e+-]+ s, ([\d.e+-]+) GB/s: .*bounds a GPU fed from them to ([\d.e+-]+) items/s"
                         r"; gpu mode reaches (\d+)% of it")
RE_SCALE = re.compile(r"^(\S.*?):\s+([\d.e+]+)\s+([\d.e+]+)\s+([\d.]+)x$")


def by_round(s):
    return [num(x) for x in s.split(",")] if s else []


def summary_record(label, rest, tail):
    """A line 'W | cpu X [stN%] gpu Y ... steal Z' and the E / steal vs static text after it."""
    rec = {"label": label, "summary": True}
    toks = rest.split(" | ")[0].split()
    for i, t in enumerate(toks):
        if t in MODES and i + 1 < len(toks):
            rec[t] = num(toks[i + 1])
            st = toks[i + 2] if i + 2 < len(toks) else ""
            rec["st_" + t] = num(st[2:]) if st.startswith("st") and st.endswith("%") else None
    for k in MODES:
        rec.setdefault(k, None)
        rec.setdefault("st_" + k, None)
    e, sp = RE_E.search(tail), RE_SP.search(tail)
    rec["e"], rec["e_by"] = (num(e.group(1)), by_round(e.group(2))) if e else (None, [])
    rec["sp"], rec["sp_by"] = (num(sp.group(1)), by_round(sp.group(2))) if sp else (None, [])
    return rec


def parse_text(path):
    """mgpu-run's text output, or a log of several runs of it, as the sections
    above read them: '== W | cpu X gpu Y static Z steal S' summaries with their
    E and steal vs static (bench/sweep.sh logs), 'mode M ... items/s' blocks of a
    --compare (named by a '== W' line before them, else by mgpu-run's title
    line) with their ceiling line, the allreduce table, matvec /
    saxpy-resident / reduce lines, and '--gpus' scaling summaries 'W: A B Sx'."""
    lines = open(path).read().splitlines()
    res = {"compare": [], "allreduce": [], "matvec": [], "resident": [], "reduce": None,
           "scaling": [], "transfer": []}
    title, cur, heading, section = None, None, None, None
    for i, line in enumerate(lines):
        if line.startswith("== "):
            heading = line[3:].split(" | ")[0].strip()
            # "== W" alone names the run whose mode lines follow, by its arguments.
            title, cur, section = None, None, (None if " | " in line else heading)
        m = RE_SUMMARY.match(line)
        if m and " cpu " in " " + m.group(2):
            tail = line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
            res["compare"].append(summary_record(m.group(1).strip(), m.group(2), tail))
            continue
        m = re.match(r"^libmgpurt \S+: (\S+), (\d+) items", line)
        if m:
            title, cur = f"{m.group(1)} ({m.group(2)} items)", None
            continue
        m = RE_MODE.match(line)
        if m:
            if m.group(1) == "gpu" and m.group(3) and (title or "").startswith("saxpy "):
                res["transfer"].append((heading or title, num(m.group(2)), num(m.group(3))))
            if cur is None:
                cur = {"label": section or title or "?"}
                for k in MODES:
                    cur[k], cur["st_" + k] = None, None
                cur["e"] = cur["sp"] = None
                cur["e_by"], cur["sp_by"] = [], []
                res["compare"].append(cur)
            cur[m.group(1)] = num(m.group(2))
            cur["st_" + m.group(1)] = num(m.group(4)) if m.group(4) else None
            continue
        if cur is not None and ("E = " in line or "steal vs static" in line):
            e, sp = RE_E.search(line), RE_SP.search(line)
            if e:
                cur["e"], cur["e_by"] = num(e.group(1)), by_round(e.group(2))
            if sp:
                cur["sp"], cur["sp_by"] = num(sp.group(1)), by_round(sp.group(2))
            vb = RE_VS_BEST.search(line)
            if vb:
                cur["vs_best"] = num(vb.group(1))
            continue
        m = RE_TURNS.match(line)
        if m and cur is not None:
            cur["vs_best_turns"], cur["turns_by"] = num(m.group(1)), by_round(m.group(2))
            continue
        m = RE_CEILING.match(line)
        if m and cur is not None:
            cur["ceiling"], cur["gpu_ceiling"] = num(m.group(1)), num(m.group(2)) / 100
            c = RE_COPIES.search(line)
            cur["ceiling_copies"] = num(c.group(1)) / 100 if c else None
            continue
        m = RE_HOSTCOPY.match(line)
        if m and cur is not None:
            cur["host_gbs"], cur["host_bound"], cur["gpu_host"] = num(m.group(1)), num(m.group(2)), num(m.group(3)) / 100
            continue
        m = RE_AR.match(line)
        if m:
            b, rt, rbus, raw, rawbus, ratio = m.groups()
            res["allreduce"].append({"bytes": int(b), "time_us": num(rt), "busbw": num(rbus),
                                     "raw_time_us": num(raw), "raw_busbw": num(rawbus),
                                     "ratio": num(ratio) / 100})
            continue
        m = RE_MATVEC.match(line)
        if m:
            res["matvec"].append({"gpu": int(m.group(1)), "rows": int(m.group(2)), "gbs": num(m.group(3)),
                                  "copy_gbs": num(m.group(4)), "fraction_of_copy": num(m.group(5)) / 100})
            continue
        m = RE_RESIDENT.match(line)
        if m:
            res["resident"].append({"gpu": int(m.group(1)), "saxpy_gbs": num(m.group(2)),
                                    "copy_gbs": num(m.group(3)), "fraction": num(m.group(4)) / 100})
            continue
        m = RE_REDUCE.match(line)
        if m and res["reduce"] is None:
            res["reduce"] = {"wall_s": num(m.group(1)), "gbs": num(m.group(2)), "command": heading}
            continue
        m = RE_SCALE.match(line)
        if m and heading and heading.startswith("--gpus"):
            a, b, s = num(m.group(2)), num(m.group(3)), num(m.group(4))
            res["scaling"].append((m.group(1), [
                {"gpus": 1, "items_per_s": a, "speedup": 1.0, "efficiency": 1.0},
                {"gpus": 2, "items_per_s": b, "speedup": s, "efficiency": s / 2}]))
    # Transfer from a summary's saxpy row: the GPU-only run of pageable arrays.
    for r in res["compare"]:
        if r.get("summary") and r["label"].split()[0] == "saxpy" and r["gpu"] and "pinned" not in r["label"]:
            res["transfer"].append((f"`{r['label']}` (pageable, staged)", r["gpu"],
                                    r["gpu"] * SAXPY_BYTES / 1e9))
    return res


# ---------------------------------------------------------------- peers input

PEER_ORDER = ["mulmod-10", "mulmod-100", "mulmod-1000", "mulmod-10000", "chain", "sha256", "ntt", "mandelbrot"]


def peer_order(row):
    """run.sh's order of (workload, memory, ...) rows: pageable first, then by workload."""
    return (row[1] != "pageable", PEER_ORDER.index(row[0]) if row[0] in PEER_ORDER else 99, row[0])


def peers_rows(d):
    """The comparisons of a peers.json of bench/peers/run.sh ({"json": {name:
    run}, "text": {...}}), in run.sh's order: (workload, memory, libmgpurt
    items/s by mode, StarPU best by mode, verified)."""
    files = d["json"]
    keys = [re.match(r"mgpu-(.+)-(pageable|pinned)-steal$", k) for k in files]
    rows = sorted({(m.group(1), m.group(2)) for m in keys if m},
                  key=peer_order)
    out = []
    for name, mem in rows:
        mg = {m: files.get(f"mgpu-{name}-{mem}-{m}") for m in ("steal", "gpu", "cpu")}
        sp = {m: files.get(f"starpu-{name}-{mem}-{m}") for m in ("all", "gpu", "cpu")}
        rate = {m: (r["results"][0]["items_per_s"] if r and r["results"][0].get("ran") else None)
                for m, r in mg.items()}
        best = {m: r["best"] for m, r in sp.items() if r and r.get("best")}
        ok = all(r.get("verification", {}).get("failed", 0) == 0 for r in mg.values() if r) and \
            all(r.get("verified", True) for r in sp.values() if r)
        out.append((name, mem, rate, best, ok))
    return out


def t_peers(ds):
    """libmgpurt's steal, gpu and cpu modes against StarPU's best scheduler and
    task count with CPU and CUDA workers, CUDA workers only and CPU workers only.
    ds: the peers.json of one or more runs (run.sh's PEERS_WORKLOADS split over
    several), their rows in one table in run.sh's order."""
    rows = sorted((r for d in ds for r in peers_rows(d)),
                  key=peer_order)
    mems = {mem for _, mem, _, _, _ in rows}
    out = ["| workload | libmgpurt steal | libmgpurt gpu | libmgpurt cpu | StarPU CPU+GPU | StarPU gpu | "
           "StarPU cpu | StarPU best at | steal / StarPU best |",
           "| --- |" + " ---: |" * 6 + " --- | ---: |"]
    label = {"all": "CPU+GPU", "gpu": "gpu", "cpu": "cpu"}
    for name, mem, rate, best, ok in rows:
        top = max(best, key=lambda m: best[m]["items_per_s"]) if best else None
        ratio = rate["steal"] / best[top]["items_per_s"] if rate["steal"] and top else None
        at = f"{label[top]}: {best[top]['sched']}, {best[top]['tasks']} tasks" if top else "—"
        if top and best[top].get("calibrated") is False:
            at += " (model not calibrated)"
        w = name + (f" ({mem})" if len(mems) > 1 else "") + ("" if ok else " (outputs NOT verified)")
        sb = [fmt(best[m]["items_per_s"]) if m in best else "—" for m in ("all", "gpu", "cpu")]
        out.append(f"| {w} | {fmt(rate['steal'])} | {fmt(rate['gpu'])} | {fmt(rate['cpu'])} | "
                   f"{' | '.join(sb)} | {at} | {'—' if ratio is None else f'{ratio:.2f}'} |")
    return out


def t_peers_overhead(runs):
    """Both runtimes on one CPU worker: the round trip of a one-item batch (a
    one-task submission), and the wall time not spent in the kernel per chunk
    (task). runs: [(name, peers.json)]; with several, a column names each run."""
    many = len(runs) > 1
    out = ["| " + ("run | " if many else "") + "runtime | round trip, median (us) | 90th percentile (us) | "
           "overhead per 0.5 ms task (us) | empty task, many in flight (us) |",
           "|" + (" --- |" if many else "") + " --- | ---: | ---: | ---: | ---: |"]
    for name, d in runs:
        run = f"{name} | " if many else ""
        mo = d["text"].get("mgpu-overhead.txt", "")
        rt = re.search(r"round trip.*median ([\d.]+) us, 90th percentile ([\d.]+) us", mo)
        pc = re.search(r"per-chunk overhead: ([\d.-]+) us", mo)
        out.append(f"| {run}libmgpurt (`bench/mgpu-overhead 1`) | {rt.group(1) if rt else '—'} | "
                   f"{rt.group(2) if rt else '—'} | {pc.group(1) if pc else '—'} | — |")
        so = d["json"].get("starpu-overhead") or {}
        for r in so.get("results", []):
            out.append(f"| {run}StarPU {so['starpu_version']}, `{r['sched']}` | {r['round_trip_median_us']:.2f} | "
                       f"{r['round_trip_p90_us']:.2f} | {r['per_task_overhead_us']:.2f} | {r['empty_task_us']:.2f} |")
    return out


# ---------------------------------------------------------------- tables

def t_compare(recs, first="workload"):
    """One row per comparison; a host steal column where a mode had some, and
    the ceiling (the batch as one launch on GPU 0) where --compare measured it."""
    steal_col = any(r.get("st_" + k) for r in recs for k in MODES)
    ceiling_col = any(r.get("ceiling") for r in recs)
    copies_col = any(r.get("ceiling_copies") is not None for r in recs)
    host_col = any(r.get("host_bound") for r in recs)
    turns_col = any(r.get("vs_best_turns") for r in recs)
    head = f"| {first} | cpu | gpu | static | steal | E | steal / static |"
    if turns_col:
        head += " steal / best static | the same in turns |"
    if ceiling_col:
        head += " ceiling | gpu / ceiling |"
    if copies_col:
        head += " ceiling's copies |"
    if host_col:
        head += " host copy GB/s | host copy bound | gpu / bound |"
    if steal_col:
        head += " host steal (cpu, gpu, static, steal) |"
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in recs:
        label = r["label"] if "(" in r["label"] else f"`{r['label']}`"
        row = (f"| {label} | {fmt(r['cpu'])} | {fmt(r['gpu'])} | {fmt(r['static'])} | {fmt(r['steal'])} | "
               f"{rounds(r['e'], r['e_by'])} | {rounds(r['sp'], r['sp_by'])} |")
        if turns_col:
            vb, vt = r.get("vs_best"), r.get("vs_best_turns")
            row += f" {vb:.3f} |" if vb else " — |"
            row += f" {rounds(vt, r.get('turns_by') or [])} |" if vt else " — |"
        if ceiling_col:
            c = r.get("ceiling")
            share = f"{100 * r['gpu_ceiling']:.0f}%" if c else "—"
            row += f" {fmt(c)} | {share} |"
        if copies_col:
            c = r.get("ceiling_copies")
            row += f" {100 * c:.0f}% |" if c is not None else " — |"
        if host_col:
            h = r.get("host_bound")
            row += (f" {r['host_gbs']:.3g} | {fmt(h)} | {100 * r['gpu_host']:.0f}% |" if h else " — | — | — |")
        if steal_col:
            row += " " + ", ".join(f"{r.get('st_' + k) or 0:.0f}%" for k in MODES) + " |"
        out.append(row)
    return out


def t_scaling(rows):
    """One row per workload: items/s at each GPU count, with the speedup over
    the first count and the efficiency (speedup / ratio of the counts)."""
    counts = sorted({e["gpus"] for _, sc in rows for e in sc})
    out = ["| workload | " + " | ".join(f"{n} GPU{'s' if n > 1 else ''}" for n in counts) + " |",
           "| --- |" + " --- |" * len(counts)]
    for name, sc in rows:
        by = {e["gpus"]: e for e in sc}
        cells = []
        for n in counts:
            e = by.get(n)
            if not e:
                cells.append("—")
            elif e["speedup"] == 1.0:
                cells.append(f"{e['items_per_s']:.3g}")
            else:
                cells.append(f"{e['items_per_s']:.3g}: {e['speedup']:.2f}x, {100 * e['efficiency']:.0f}%")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def t_transfer(rows):
    out = ["| run (`--mode gpu`) | items/s | GB/s moved |", "| --- | --- | --- |"]
    for label, ips, gbs in rows:
        out.append(f"| {label} | {ips:.4g} | {gbs:.1f} |")
    return out


def t_allreduce(sizes, every=1):
    """Every size whose byte count is a power of `every` times the first, and the last."""
    out = ["| bytes | runtime µs | runtime busbw | raw µs | raw busbw | runtime / raw |",
           "| --- | --- | --- | --- | --- | --- |"]
    b0 = sizes[0]["bytes"] if sizes else 1
    for i, e in enumerate(sizes):
        k = math.log(e["bytes"] / b0, every) if every > 1 else 0
        if every > 1 and abs(k - round(k)) > 1e-9 and i != len(sizes) - 1:
            continue
        if "raw_time_us" in e:
            out.append(f"| {e['bytes']} | {e['time_us']:.1f} | {e['busbw']:.2f} | {e['raw_time_us']:.1f} | "
                       f"{e['raw_busbw']:.2f} | {100 * e['ratio']:.1f}% |")
        else:
            out.append(f"| {e['bytes']} | {e['time_us']:.1f} | {e['busbw']:.2f} | — | — | — |")
    return out


def span(vals, f):
    lo, hi = min(vals), max(vals)
    return f(lo) if f(lo) == f(hi) else f"{f(lo)}–{f(hi)}"


def t_resident(matvec, resident, reduce):
    """One row per workload; per-GPU figures as their range over the GPUs."""
    out = ["| workload | GPUs | GB/s per GPU | device copy GB/s | fraction of the copy |",
           "| --- | --- | --- | --- | --- |"]
    gb, pc = (lambda x: f"{x:.0f}"), (lambda x: f"{100 * x:.1f}%")
    for name, gs, key, frac in (("matvec", matvec, "gbs", "fraction_of_copy"),
                                ("saxpy-resident", resident, "saxpy_gbs", "fraction")):
        if gs:
            label = f"matvec ({sum(g['rows'] for g in gs)} rows)" if name == "matvec" else name
            out.append(f"| {label} | {', '.join(str(g['gpu']) for g in gs)} | {span([g[key] for g in gs], gb)} | "
                       f"{span([g['copy_gbs'] for g in gs], gb)} | {span([g[frac] for g in gs], pc)} |")
    if reduce:
        out.append(f"| reduce ({reduce['wall_s'] * 1e3:.2f} ms) | all | {reduce['gbs']:.1f} in all | — | — |")
    return out


def firsts(runs, key):
    """The values of key in the rows of a runs.tsv, each once, in order of appearance."""
    return list(dict.fromkeys(r[key] for r in runs))


def median_rate(runs, **match):
    """The median items/s of the rows of a runs.tsv whose fields equal match, or None."""
    import statistics
    v = [float(r["items_per_s"]) for r in runs if all(r[k] == x for k, x in match.items())
         and r["items_per_s"] not in ("", "failed")]
    return statistics.median(v) if v else None


def pass_ratios(runs, workload, num, den):
    """The ratio of the runs matching num over those matching den (dicts of
    runs.tsv fields), pass by pass for one workload, where both ran."""
    passes = firsts([r for r in runs if r["workload"] == workload], "pass")
    by = [(median_rate(runs, workload=workload, **num, **{"pass": p}),
           median_rate(runs, workload=workload, **den, **{"pass": p})) for p in passes]
    return [a / b for a, b in by if a and b]


def t_alternate(paths):
    """Builds run in turn (bench/alternate.sh's runs.tsv, comma-separated for
    several runs): per workload, each later build's median items/s over the
    first build's of the same run, mode by mode. Where several runs compare
    the same builds, each column is named after its file as well: each run
    alternates its builds on one machine, and its ratio is its own (the
    machine's level moves between runs, and pooled medians would mix it in)."""
    import csv
    runs_of, cols, rows, order = [], [], {}, []
    for path in paths.split(","):
        runs = list(csv.DictReader(open(path), delimiter="\t"))
        names = firsts(runs, "build")
        order += [w for w in firsts(runs, "workload") if w not in order]
        runs_of.append((path, runs, [(b, names[0], m) for b in names[1:] for m in firsts(runs, "mode")]))
    labels = [f"{b} / {a}, {m}" for _, _, pairs in runs_of for b, a, m in pairs]
    named = len(set(labels)) < len(labels)
    for path, runs, pairs in runs_of:
        stem = os.path.splitext(os.path.basename(path))[0]
        for b, a, m in pairs:
            cols.append(f"{b} / {a}, {m}" + (f" ({stem})" if named else ""))
            for w in order:
                x = median_rate(runs, build=b, workload=w, mode=m)
                y = median_rate(runs, build=a, workload=w, mode=m)
                rows.setdefault(w, {})[cols[-1]] = f"{x / y:.3f}" if x and y else "—"
    out = ["| workload | " + " | ".join(cols) + " |", "| --- |" + " ---: |" * len(cols)]
    for w in order:
        out.append(f"| `{w}` | " + " | ".join(rows[w].get(c, "—") for c in cols) + " |")
    return out


def t_turns(path):
    """Modes run in turn with one build (bench/alternate.sh's runs.tsv): per
    workload, each later mode's median items/s over the first mode's, and the
    same ratio pass by pass (runs of one pass are neighbours in time); with
    one mode, its median items/s and each pass's."""
    import csv
    runs = list(csv.DictReader(open(path), delimiter="\t"))
    modes = firsts(runs, "mode")
    if len(modes) == 1:  # one mode: its median items/s, and pass by pass
        out = [f"| workload | {modes[0]}, items/s (by pass) |", "| --- | --- |"]
        for w in firsts(runs, "workload"):
            by = [median_rate(runs, workload=w, **{"pass": p})
                  for p in firsts([r for r in runs if r["workload"] == w], "pass")]
            out.append(f"| `{w}` | {fmt(median_rate(runs, workload=w))} (" +
                       ", ".join(fmt(x) if x else "failed" for x in by) + ") |")
        return out
    out = ["| workload | " + " | ".join(f"{m} / {modes[0]} (by pass)" for m in modes[1:]) + " |",
           "| --- |" + " --- |" * (len(modes) - 1)]
    for w in firsts(runs, "workload"):
        cells = []
        for m in modes[1:]:
            x, y = median_rate(runs, workload=w, mode=m), median_rate(runs, workload=w, mode=modes[0])
            by = pass_ratios(runs, w, dict(mode=m), dict(mode=modes[0]))
            cells.append(f"{x / y:.3f} (" + ", ".join(f"{r:.3f}" for r in by) + ")" if x and y else "—")
        out.append(f"| `{w}` | " + " | ".join(cells) + " |")
    return out


def median_interval(xs, level=0.9):
    """The median of xs and a distribution-free interval for it: the k-th
    smallest and k-th largest, with the largest k whose coverage (by the
    sign test: each value falls either side of the true median with
    probability 1/2) is at least level. None for the interval where even
    the smallest and largest together cover less (5 values or more reach
    0.9). Returns (median, lo, hi, coverage)."""
    import statistics
    xs = sorted(xs)
    n, best = len(xs), None
    below = 0.0  # P(Bin(n, 1/2) <= k - 1)
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2 ** n
        cover = 1 - 2 * below
        if cover < level:
            break
        best = (xs[k - 1], xs[n - k], cover)
    med = statistics.median(xs) if xs else None
    return (med,) + (best if best else (None, None, None))


def t_verdict(path, bound=1.0, of=None):
    """Whether a ratio holds a bound, from bench/alternate.sh's runs.tsv:
    with several builds, each later build over the first, mode by mode; with
    one build, each later mode over the first. The ratio is taken pass by
    pass (the runs of one pass are neighbours in time, so the machine's drift
    cancels), and its median gets a distribution-free 90% interval
    (median_interval): the bound holds where the interval lies at or above
    it, fails where it lies below, and is undecided where it straddles it
    (more passes narrow it). `of`: a build (or mode) judged over each of the
    others instead."""
    import csv
    rd = csv.DictReader(open(path), delimiter="\t")
    need = {"pass", "build", "workload", "mode", "items_per_s"}
    if not need <= set(rd.fieldnames or ()):
        raise SystemExit(f"report.py: {path} is not bench/alternate.sh's runs.tsv: it lacks the column(s) "
                         f"{', '.join(sorted(need - set(rd.fieldnames or ())))}")
    runs = [r for r in rd if r["items_per_s"] not in ("", "failed")]
    builds, modes = firsts(runs, "build"), firsts(runs, "mode")
    key, names = ("build", builds) if len(builds) > 1 else ("mode", modes)
    if of is not None and of not in names:
        raise SystemExit(f"report.py: of={of}: no {key} of that name in {path} (it has {', '.join(names)})")
    ratios = [(of, y) for y in names if y != of] if of is not None else [(x, names[0]) for x in names[1:]]
    if key == "build":
        pairs = [(f"{a} / {b}, {m}", dict(build=a, mode=m), dict(build=b, mode=m)) for a, b in ratios for m in modes]
    else:
        pairs = [(f"{a} / {b}", dict(mode=a), dict(mode=b)) for a, b in ratios]
    out = [f"| workload | ratio | median | 90% interval | passes | bound {bound:g} |",
           "| --- | --- | ---: | --- | ---: | --- |"]
    for w in firsts(runs, "workload"):
        for label, num, den in pairs:
            xs = pass_ratios(runs, w, num, den)
            if not xs:
                continue
            med, lo, hi, cover = median_interval(xs)
            if lo is None:
                span_, verdict = "—", "too few passes"
            else:
                span_ = f"{lo:.3f}–{hi:.3f} ({100 * cover:.0f}%)"
                verdict = "holds" if lo >= bound else "fails" if hi < bound else "undecided"
            out.append(f"| `{w}` | {label} | {med:.3f} | {span_} | {len(xs)} | {verdict} |")
    return out


WAY = re.compile(r"with (\d+) CPU workers( and every GPU)? kept out \(auto reserve\)")


def t_ways(paths):
    """MGPU_RESERVE_THREADS=auto's ways in alternate.sh logs of MGPU_DEBUG=debug
    runs: each run's timed batches (its last REPEAT) are counted by way
    (CPU workers kept out, "g" where every GPU was; the lines of every kernel
    of a run together), and a cell gives, pass by pass, the batches on the way
    the run ran most, "of" the first run's REPEAT."""
    cols, rows, order = [], {}, []
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        cols.append(name)
        runs = []
        for line in open(path):
            m = re.match(r"== pass (\d+): (.*) --mode \S+ --repeat (\d+)", line)
            if m:
                runs.append((m.group(2), int(m.group(3)), []))
                continue
            w = WAY.search(line)
            if w and runs:
                runs[-1][2].append(w.group(1) + ("g" if w.group(2) else ""))
        for workload, repeat, ways in runs:
            timed = ways[-repeat:] if repeat > 0 else []
            most = max((timed.count(x) for x in set(timed)), default=0)
            if workload not in rows:
                rows[workload] = {}
                order.append(workload)
            cell = rows[workload].setdefault(name, ([], repeat))
            # A run cut short, or of another repeat, says of how many; one without the lines, "—".
            cell[0].append("—" if not timed else str(most) if len(timed) == cell[1] else f"{most} of {len(timed)}")
    out = ["| workload | " + " | ".join(f"{c}: timed batches on its most run way" for c in cols) + " |",
           "| --- |" + " --- |" * len(cols)]
    for w in order:
        cells = []
        for c in cols:
            got = rows[w].get(c)
            cells.append(", ".join(got[0]) + f" of {got[1]}" if got else "—")
        out.append(f"| `{w}` | " + " | ".join(cells) + " |")
    return out


def first_from_trace(path):
    """(first, steady, ratio) of a trace's batches in the order they began:
    the first batch's seconds, the median of batches 3 to 6 and their ratio;
    None where the trace has fewer than six batches."""
    d = json.load(open(path))
    events = d["traceEvents"] if isinstance(d, dict) else d
    batches = sorted((e["ts"], e["dur"] * 1e-6) for e in events if e.get("cat") == "batch" and "dur" in e)
    if len(batches) < 6:
        return None
    steady = sorted(t for _, t in batches[2:6])
    median = (steady[1] + steady[2]) / 2
    return batches[0][1], median, batches[0][1] / median


def t_first_batch(path):
    """first-batch.sh's first.tsv: a row per workload and mode, a column per
    build and store kind, the first batch over the steady state."""
    rows, order, cols = {}, [], []
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        need = ["build", "workload", "mode", "store", "first_s", "steady_s", "ratio"]
        if head != need:
            sys.exit(f"report.py: {path} is not first-batch.sh's first.tsv (columns {' '.join(need)})")
        for line in f:
            b, w, m, k, first, steady, ratio = line.rstrip("\n").split("\t")
            key, col = (w, m), f"{b}, {k}"
            if key not in rows:
                rows[key] = {}
                order.append(key)
            if col not in cols:
                cols.append(col)
            # A run that failed, or ran too few batches, is a dash.
            rows[key][col] = None if first == "failed" else (float(first), float(steady), float(ratio))
    out = ["| workload | mode | " + " | ".join(f"{c}: first / steady" for c in cols) + " |",
           "| --- | --- |" + " --- |" * len(cols)]
    for key in order:
        cells = []
        for c in cols:
            got = rows[key].get(c)
            cells.append(f"{got[2]:.2f} ({got[0] * 1e3:.3g} / {got[1] * 1e3:.3g} ms)" if got else "—")
        out.append(f"| `{key[0]}` | {key[1]} | " + " | ".join(cells) + " |")
    return out


def table(kind, path, every=1, last=None, bound=1.0, of=None):
    """The lines of one table of KIND from PATH (a run.sh folder, a text file,
    or for the peers kinds a peers.json). KIND text: the file as it is, or its
    last lines, in a code block."""
    if kind == "text":
        lines = open(path).read().rstrip("\n").splitlines()
        return ["```"] + (lines[-last:] if last else lines) + ["```"]
    if kind == "peers":
        return t_peers([load(p) for p in path.split(",")])
    if kind == "alternate":
        return t_alternate(path)
    if kind == "turns":
        return t_turns(path)
    if kind == "verdict":
        return t_verdict(path, bound, of)
    if kind == "ways":
        return t_ways(path.split(","))
    if kind == "first-batch":
        return t_first_batch(path)
    if kind == "peers-overhead":
        return t_peers_overhead([(f"`{os.path.basename(p)}`", load(p)) for p in path.split(",")])
    if os.path.isdir(path):
        if kind == "compare":
            return t_compare(json_compare(path, False))
        if kind == "sweep":
            return t_compare(json_compare(path, True), "intensity")
        if kind == "scaling":
            return t_scaling(json_scaling(path))
        if kind == "transfer":
            return t_transfer(json_transfer(path))
        if kind == "allreduce":
            d = json_multi(path, "allreduce")
            return t_allreduce(d["sizes"] if d else [], every)
        if kind == "resident":
            mv, sr, red = (json_multi(path, n) for n in ("matvec", "saxpy-resident", "reduce"))
            return t_resident(mv["gpus"] if mv else [], sr["gpus"] if sr else [], red)
        if kind == "overhead":
            path = os.path.join(path, "overhead.txt")
        else:
            raise SystemExit(f"report.py: no table {kind!r} for a folder")
    if kind == "overhead":
        return ["```"] + open(path).read().strip().splitlines() + ["```"]
    t = parse_text(path)
    if kind == "compare":
        return t_compare(t["compare"])
    if kind == "scaling":
        return t_scaling(t["scaling"])
    if kind == "transfer":
        return t_transfer(t["transfer"])
    if kind == "allreduce":
        return t_allreduce(t["allreduce"], every)
    if kind == "resident":
        return t_resident(t["matvec"], t["resident"], t["reduce"])
    raise SystemExit(f"report.py: no table {kind!r} for a text file")


# ---------------------------------------------------------------- the plot

def sweep_svg(points, path=None):
    """points: [(intensity, {mode: items/s})]; log-log lines, one per mode.
    Writes the plot to path, and returns its text."""
    w, h, left, right, top, bottom = 720, 420, 70, 110, 30, 50
    xs = [math.log10(k) for k, _ in points]
    ys = [math.log10(v) for _, m in points for v in m.values() if v]
    if not xs or not ys:
        return None
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
    if y1 == y0:
        y1 = y0 + 1

    def px(x):
        return left + (w - left - right) * (x - x0) / (x1 - x0)

    def py(y):
        return h - bottom - (h - top - bottom) * (y - y0) / (y1 - y0)

    colours = {"cpu": "#4e79a7", "gpu": "#59a14f", "static": "#f28e2b", "steal": "#e15759"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">mulmod: throughput against intensity (log-log)</text>']
    for e in range(y0, y1 + 1):
        out.append(f'<line x1="{left}" x2="{w - right}" y1="{py(e):.1f}" y2="{py(e):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{py(e) + 4:.1f}" text-anchor="end">1e{e}</text>')
    for k, _ in points:
        x = px(math.log10(k))
        out.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" text-anchor="middle">{k}</text>')
    out.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 12}" text-anchor="middle">intensity '
               '(modular multiplications per item)</text>')
    for i, mode in enumerate(MODES):
        pts = [(px(math.log10(k)), py(math.log10(m[mode]))) for k, m in points if m.get(mode)]
        if pts:
            d = " ".join(f"{'M' if j == 0 else 'L'}{x:.1f} {y:.1f}" for j, (x, y) in enumerate(pts))
            out.append(f'<path class="mode {mode}" d="{d}" fill="none" stroke="{colours[mode]}" stroke-width="2"/>')
        out.append(f'<rect x="{w - right + 12}" y="{top + 18 * i}" width="12" height="3" fill="{colours[mode]}"/>'
                   f'<text x="{w - right + 30}" y="{top + 18 * i + 5}">{mode} items/s</text>')
    out.append("</svg>")
    text = "\n".join(out) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text


def sweep_points(out):
    return [(r["k"], {k: r[k] for k in MODES}) for r in json_compare(out, True)]


# ---------------------------------------------------------------- a run's report

def report(out):
    machine = open(os.path.join(out, "machine.txt")).read().strip() if os.path.exists(
        os.path.join(out, "machine.txt")) else "(not recorded)"
    p = print
    p("# Benchmarks (generated by bench/run.sh)\n")
    p("Machine and build:\n\n```\n" + machine + "\n```\n")
    p("Each row: `mgpu-run WORKLOAD --compare --json`, raw output in `compare-*.json` beside this file. "
      "Items per second, median of the timed runs; E = steal / (cpu + gpu).\n")
    p("\n".join(table("compare", out)))
    if glob.glob(os.path.join(out, "compare-mulmod-*.json")):
        p("\n## Ratio sweep: mulmod intensity\n")
        p("\n".join(table("sweep", out)))
        sweep_svg(sweep_points(out), os.path.join(out, "sweep.svg"))
        p("\n![throughput against intensity](sweep.svg)")
    if json_scaling(out):
        p("\n## Scaling with the GPU count\n")
        p("`mgpu-run WORKLOAD --gpus LIST --json` (mode gpu, inputs in host memory; pinned: "
          "`--pinned`, arrays from mgpu_host_alloc). Speedup over one GPU, and efficiency = "
          "speedup / GPUs.\n")
        p("\n".join(table("scaling", out)))
    if json_transfer(out):
        p("\n## Transfer: saxpy on GPUs only\n")
        p("\n".join(table("transfer", out)))
    d = json_multi(out, "allreduce")
    if d:
        p(f"\n## All-reduce: runtime against raw NCCL ({d['gpus']} GPUs, {d['backend']})\n")
        p("`mgpu-run allreduce --json`: float sum, out of place; the runtime's `mgpu_allreduce_async` "
          "and a hand-written NCCL loop (one thread, group calls) in the same process, "
          f"{d['iters']} iterations each. Bus bandwidth in GB/s as nccl-tests reports it.\n")
        p("\n".join(table("allreduce", out)))
    if any(json_multi(out, n) for n in ("matvec", "saxpy-resident", "reduce")):
        p("\n## matvec, saxpy-resident and reduce on device-resident data\n")
        p("\n".join(table("resident", out)))
    if os.path.exists(os.path.join(out, "overhead.txt")):
        p("\n## Runtime overhead (`bench/mgpu-overhead 1`)\n")
        p("\n".join(table("overhead", out)))


# ---------------------------------------------------------------- blocks of a document

RE_BLOCK = re.compile(r"^<!-- report\.py ([\w-]+) (\S+)((?: \w+=\S+)*) -->$")


def render(doc, write=True):
    """The document with every block regenerated from its raw output, and the
    names of the plots that differ from theirs (written anew where write)."""
    lines, out, i, stale = open(doc).read().split("\n"), [], 0, []
    while i < len(lines):
        m = RE_BLOCK.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        opts = dict(o.split("=", 1) for o in m.group(3).split())
        path = ",".join(os.path.join(ROOT, p) for p in m.group(2).split(","))
        for p in path.split(","):
            if not os.path.exists(p):
                raise SystemExit(f"{doc}: {os.path.relpath(p, ROOT)}: no such file or folder")
        out.extend(table(m.group(1), path, int(opts.get("every", 1)), int(opts["last"]) if "last" in opts else None,
                         float(opts.get("bound", 1.0)), opts.get("of")))
        if "svg" in opts:
            svg = os.path.join(ROOT, opts["svg"])
            text = sweep_svg(sweep_points(path))
            if not os.path.exists(svg) or open(svg).read() != text:
                stale.append(opts["svg"])
                if write:
                    sweep_svg(sweep_points(path), svg)
        while i < len(lines) and lines[i] != "<!-- end -->":
            i += 1
        if i == len(lines):
            raise SystemExit(f"{doc}: a block of {m.group(2)} has no <!-- end -->")
        out.append(lines[i])
        i += 1
    return "\n".join(out), stale


def main():
    args = sys.argv[1:]
    opts = dict(a.split("=", 1) for a in args[3:] if "=" in a)
    if len(args) >= 3 and args[0] == "--table" and len(opts) == len(args) - 3 and set(opts) <= {"bound", "of"}:
        print("\n".join(table(args[1], args[2], bound=float(opts.get("bound", 1.0)), of=opts.get("of"))))
    elif len(args) == 2 and args[0] == "--first-from-trace":
        got = first_from_trace(args[1])
        if got:
            print(f"{got[0]:.6g} {got[1]:.6g} {got[2]:.4g}")
    elif len(args) == 2 and args[0] in ("--update", "--check"):
        (new, stale), old = render(args[1], args[0] == "--update"), open(args[1]).read()
        if args[0] == "--update":
            if new != old:
                with open(args[1], "w") as f:
                    f.write(new)
        elif new != old or stale:
            import difflib
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       args[1], "from the raw output"))
            for s in stale:
                print(f"{s} differs from the plot of its raw output")
            sys.exit(1)
    elif len(args) == 1 and not args[0].startswith("-"):
        report(args[0])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
