#!/usr/bin/env python3
"""report.py: markdown tables and an SVG plot from bench/run.sh's JSON files.

    python3 bench/report.py OUT > OUT/benchmarks.md      (also writes OUT/sweep.svg)
"""
import glob
import json
import math
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def modes(d):
    return {r["mode"]: r for r in d["results"]}


def rate(r):
    return r["items_per_s"] if r and r.get("ran") else None


def fmt(x):
    return "—" if x is None else f"{x:.3g}"


def compare_row(name, d):
    m = modes(d)
    cpu, gpu, st, sl = (rate(m.get(k)) for k in ("cpu", "gpu", "static", "steal"))
    e = sl / ((cpu or 0) + (gpu or 0)) if sl and (cpu or gpu) else None
    sp = sl / st if sl and st else None
    return f"| {name} ({d['items']} items) | {fmt(cpu)} | {fmt(gpu)} | {fmt(st)} | {fmt(sl)} | {fmt(e)} | {fmt(sp)} |"


def sweep_svg(points, path):
    """points: [(intensity, {mode: items/s})]; log-log lines, one per mode."""
    w, h, left, right, top, bottom = 720, 420, 70, 110, 30, 50
    xs = [math.log10(k) for k, _ in points]
    ys = [math.log10(v) for _, m in points for v in m.values() if v]
    if not xs or not ys:
        return
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
    for i, mode in enumerate(("cpu", "gpu", "static", "steal")):
        pts = [(px(math.log10(k)), py(math.log10(m[mode]))) for k, m in points if m.get(mode)]
        if pts:
            d = " ".join(f"{'M' if j == 0 else 'L'}{x:.1f} {y:.1f}" for j, (x, y) in enumerate(pts))
            out.append(f'<path class="mode {mode}" d="{d}" fill="none" stroke="{colours[mode]}" stroke-width="2"/>')
        out.append(f'<rect x="{w - right + 12}" y="{top + 18 * i}" width="12" height="3" fill="{colours[mode]}"/>'
                   f'<text x="{w - right + 30}" y="{top + 18 * i + 5}">{mode} items/s</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def multi_sections(out):
    def get(name):
        p = os.path.join(out, f"multi-{name}.json")
        return load(p) if os.path.exists(p) else None

    rows = []
    for w in ("ntt", "mulmod", "sha256"):
        for p in ("", "-pinned"):
            d = get(f"scaling-{w}{p}")
            if d:
                rows.append((f"{w} ({d['items']} items{', pinned' if p else ''})", d["scaling"]))
    if rows:
        print("\n## Scaling with the GPU count\n")
        print("`mgpu-run WORKLOAD --gpus LIST --json` (mode gpu, inputs in host memory; pinned: "
              "`--pinned`, arrays from mgpu_host_alloc). Speedup over one GPU, and efficiency = "
              "speedup / GPUs.\n")
        print("| workload | GPUs | items/s | speedup | efficiency |")
        print("| --- | --- | --- | --- | --- |")
        for name, sc in rows:
            for e in sc:
                if e["ran"]:
                    print(f"| {name} | {e['gpus']} | {e['items_per_s']:.4g} | {e['speedup']:.3f}x | "
                          f"{100 * e['efficiency']:.1f}% |")
    d = get("allreduce")
    if d:
        print(f"\n## All-reduce: runtime against raw NCCL ({d['gpus']} GPUs, {d['backend']})\n")
        print("`mgpu-run allreduce --json`: float sum, out of place; the runtime's `mgpu_allreduce_async` "
              "and a hand-written NCCL loop (one thread, group calls) in the same process, "
              f"{d['iters']} iterations each. Bus bandwidth in GB/s as nccl-tests reports it.\n")
        print("| bytes | runtime µs | runtime busbw | raw µs | raw busbw | runtime / raw |")
        print("| --- | --- | --- | --- | --- | --- |")
        for e in d["sizes"]:
            if "raw_time_us" in e:
                print(f"| {e['bytes']} | {e['time_us']:.1f} | {e['busbw']:.2f} | {e['raw_time_us']:.1f} | "
                      f"{e['raw_busbw']:.2f} | {100 * e['ratio']:.1f}% |")
            else:
                print(f"| {e['bytes']} | {e['time_us']:.1f} | {e['busbw']:.2f} | — | — | — |")
    d = get("matvec")
    if d:
        print(f"\n## matvec: y = W x, W {d['rows']} x {d['cols']} floats, rows split across the GPUs\n")
        print("Bandwidth of each GPU reading its rows of W (device time), against that GPU's "
              "device-to-device copy bandwidth (read + write) measured in the same run.\n")
        print("| GPU | rows | GB/s | copy GB/s | fraction |")
        print("| --- | --- | --- | --- | --- |")
        for g in d["gpus"]:
            print(f"| {g['gpu']} | {g['rows']} | {g['gbs']:.1f} | {g['copy_gbs']:.1f} | "
                  f"{100 * g['fraction_of_copy']:.1f}% |")
    d = get("saxpy-resident")
    if d:
        print(f"\n## saxpy on device-resident data ({d['elements']} floats)\n")
        print("| GPU | saxpy GB/s | copy GB/s | fraction |")
        print("| --- | --- | --- | --- |")
        for g in d["gpus"]:
            print(f"| {g['gpu']} | {g['saxpy_gbs']:.1f} | {g['copy_gbs']:.1f} | {100 * g['fraction']:.1f}% |")
    d = get("reduce")
    if d:
        print(f"\n## reduce: sum of {d['elements']} {d['dtype']} over GPUs and host\n")
        print(f"{d['gbs']:.1f} GB/s ({d['wall_s'] * 1e3:.2f} ms); reproducible: {d['reproducible']}; error "
              f"{d['relative_error']:.3g} of the sum of magnitudes against a long double sum.\n")


def main():
    out = sys.argv[1]
    machine = open(os.path.join(out, "machine.txt")).read().strip() if os.path.exists(
        os.path.join(out, "machine.txt")) else "(not recorded)"
    print("# Benchmarks (generated by bench/run.sh)\n")
    print("Machine and build:\n\n```\n" + machine + "\n```\n")
    print("Each row: `mgpu-run WORKLOAD --compare --json`, raw output in `compare-*.json` beside this file. "
          "Items per second, median of the timed runs; E = steal / (cpu + gpu).\n")
    print("| workload | cpu | gpu | static | steal | E | steal / static |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    sweep = []
    for path in sorted(glob.glob(os.path.join(out, "compare-*.json"))):
        name = os.path.basename(path)[len("compare-"):-len(".json")]
        d = load(path)
        if name.startswith("mulmod-"):
            sweep.append((int(name.split("-")[1]), {k: rate(v) for k, v in modes(d).items()}))
        else:
            print(compare_row(name, d))
    if sweep:
        sweep.sort()
        print("\n## Ratio sweep: mulmod intensity\n")
        print("| intensity | cpu | gpu | static | steal | E | steal / static |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for k, m in sweep:
            d = load(os.path.join(out, f"compare-mulmod-{k}.json"))
            print(compare_row(str(k), d).replace(f"| {k} (", f"| {k} (", 1))
        sweep_svg(sweep, os.path.join(out, "sweep.svg"))
        print("\n![throughput against intensity](sweep.svg)\n")
    multi_sections(out)
    ov = os.path.join(out, "overhead.txt")
    if os.path.exists(ov):
        print("## Runtime overhead (`bench/mgpu-overhead 1`)\n\n```\n" + open(ov).read().strip() + "\n```")


if __name__ == "__main__":
    main()
