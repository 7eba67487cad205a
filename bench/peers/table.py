#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""table.py: the side-by-side tables of bench/peers/run.sh from its raw files.

    python3 bench/peers/table.py OUT > OUT/peers.md     (also writes OUT/peers.json)

Reads OUT/raw/: mgpu-W-MEM-MODE.json (mgpu-run --json), starpu-W-MEM-MODE.json
(starpu-peer --json), mgpu-overhead.txt, starpu-overhead.json, machine.txt.
"""
import glob
import json
import os
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt(x):
    return "—" if x is None else f"{x:.3g}"


def mgpu_rate(d):
    """items/s of an mgpu-run --json report, None if the mode did not run."""
    if not d:
        return None, None
    r = d["results"][0]
    return (r["items_per_s"] if r.get("ran") else None), r.get("cpu_workers")


def mgpu_verified(d):
    v = d.get("verification", {}) if d else {}
    return not v.get("enabled") or v.get("failed", 0) == 0


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: table.py OUT")
    out = sys.argv[1]
    raw = os.path.join(out, "raw")
    if not os.path.isdir(raw):
        sys.exit(f"table.py: no directory {raw}")
    files = {}
    for p in sorted(glob.glob(os.path.join(raw, "*.json"))):
        files[os.path.basename(p)[:-5]] = load(p)
    texts = {}
    for p in sorted(glob.glob(os.path.join(raw, "*.txt"))):
        with open(p) as f:
            texts[os.path.basename(p)] = f.read()
    with open(os.path.join(out, "peers.json"), "w") as f:
        json.dump({"json": files, "text": texts}, f, indent=1)

    machine = texts.get("machine.txt", "")
    ngpu = int(re.search(r"^gpus: (\d+)", machine, re.M).group(1)) if re.search(r"^gpus: (\d+)", machine, re.M) else 0
    print("## libmgpurt and StarPU side by side\n")
    print("```")
    print(machine.rstrip())
    print("```\n")
    if ngpu == 0:
        print("**No GPU on this machine: only the CPU-only modes are compared.** libmgpurt's `steal` runs on "
              "its CPU workers alone, and StarPU runs every task on CPU workers; the GPU columns are empty.\n")

    # Workloads in the order run.sh ran them: by the name before -MEM-MODE.
    rows = []
    for key in files:
        m = re.match(r"mgpu-(.+)-(pageable|pinned)-steal$", key)
        if m:
            rows.append((m.group(1), m.group(2)))
    order = ["mulmod-10", "mulmod-100", "mulmod-1000", "mulmod-10000", "sha256", "ntt", "mandelbrot"]
    rows.sort(key=lambda r: (r[1] != "pageable", order.index(r[0]) if r[0] in order else 99, r[0]))

    print("Items per second (higher is better). libmgpurt: `mgpu-run --mode steal|gpu|cpu`, median of the timed "
          "batches. StarPU: the same kernel functions as codelets, for each scheduler and task count of the sweep "
          "the median of the timed batches, best kept: *CPU+GPU* uses CPU and CUDA workers, *gpu* CUDA workers only, "
          "*cpu* CPU workers only. *StarPU best* is the fastest of the three, at the mode, scheduler and task count "
          "given; the ratio is libmgpurt steal / StarPU best. CPU-only columns use the CPU-only item count (in "
          "parentheses) where it differs.\n")
    print("| workload | memory | items | libmgpurt steal | libmgpurt gpu | libmgpurt cpu | StarPU CPU+GPU | "
          "StarPU gpu | StarPU cpu | StarPU best at | steal / StarPU best | verified |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    summary = []
    for name, mem in rows:
        g = lambda mode: files.get(f"mgpu-{name}-{mem}-{mode}")
        s = lambda mode: files.get(f"starpu-{name}-{mem}-{mode}")
        steal, _ = mgpu_rate(g("steal"))
        mgpu_gpu, _ = mgpu_rate(g("gpu"))
        mgpu_cpu, _ = mgpu_rate(g("cpu"))
        sbest = {m: s(m)["best"] for m in ("all", "gpu", "cpu") if s(m) and s(m).get("best")}
        rate = lambda m: sbest[m]["items_per_s"] if m in sbest else None
        top = max(sbest, key=lambda m: sbest[m]["items_per_s"]) if sbest else None
        ratio = steal / sbest[top]["items_per_s"] if steal and top else None
        ok = all(mgpu_verified(g(m)) for m in ("steal", "gpu", "cpu") if g(m)) and \
            all(s(m).get("verified", True) for m in ("all", "gpu", "cpu") if s(m))
        items = g("steal")["items"]
        cpu_items = g("cpu")["items"] if g("cpu") else items
        items_s = f"{items}" + (f" ({cpu_items})" if cpu_items != items else "")
        label = {"all": "CPU+GPU", "gpu": "gpu", "cpu": "cpu"}
        at = f"{label[top]}: {sbest[top]['sched']}, {sbest[top]['tasks']} tasks" if top else "—"
        if top and sbest[top].get("calibrated") is False:
            at += " (model not calibrated)"
        print(f"| {name} | {mem} | {items_s} | {fmt(steal)} | {fmt(mgpu_gpu)} | {fmt(mgpu_cpu)} | "
              f"{fmt(rate('all'))} | {fmt(rate('gpu'))} | {fmt(rate('cpu'))} | {at} | "
              f"{fmt(ratio)} | {'yes' if ok else 'NO'} |")
        if ratio is not None:
            summary.append((name, mem, ratio))
    workers = []
    for key, d in files.items():
        if key.startswith("starpu-") and not key.endswith("overhead") and not d.get("skipped"):
            workers.append((d["mode"], d["cpu_workers"], d["cuda_workers"]))
    if workers:
        seen = sorted(set(workers))
        print("\nStarPU workers (mode: CPU workers + CUDA workers): " +
              ", ".join(f"{m}: {c} + {g}" for m, c, g in seen))
    mg = [(k, d.get("cpu_workers"), len(d.get("devices", []))) for k, d in files.items() if k.startswith("mgpu-")]
    if mg:
        seen = sorted({(k.rsplit("-", 1)[1], c, n) for k, c, n in mg})
        print("libmgpurt workers (mode: CPU workers + GPUs): " + ", ".join(f"{m}: {c} + {n}" for m, c, n in seen))
    if summary:
        lo = min(summary, key=lambda r: r[2])
        hi = max(summary, key=lambda r: r[2])
        behind = [f"{n} ({m})" for n, m, r in summary if r < 1.0]
        print(f"\nlibmgpurt steal / StarPU best: {lo[2]:.2f} ({lo[0]}, {lo[1]}) to {hi[2]:.2f} ({hi[0]}, {hi[1]}). " +
              ("StarPU is ahead on: " + ", ".join(behind) + "." if behind else "libmgpurt is ahead on every workload."))

    # Overheads on one CPU worker.
    print("\n### Runtime overhead on one CPU worker\n")
    mo = texts.get("mgpu-overhead.txt", "")
    rt = re.search(r"round trip.*median ([\d.]+) us, 90th percentile ([\d.]+) us", mo)
    pc = re.search(r"per-chunk overhead: ([\d.-]+) us", mo)
    so = files.get("starpu-overhead")
    print("| runtime | one-task round trip, median (us) | 90th percentile (us) | overhead per 0.5 ms task (us) | "
          "empty task, many in flight (us) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| libmgpurt (`bench/mgpu-overhead 1`) | {rt.group(1) if rt else '—'} | {rt.group(2) if rt else '—'} | "
          f"{pc.group(1) if pc else '—'} | — |")
    for r in (so or {}).get("results", []):
        print(f"| StarPU {so['starpu_version']}, {r['sched']} | {r['round_trip_median_us']:.2f} | "
              f"{r['round_trip_p90_us']:.2f} | {r['per_task_overhead_us']:.2f} | {r['empty_task_us']:.2f} |")
    print("\nRound trip: submit one task (a one-item batch) and wait for it. Overhead per task: 400,000 items "
          "of 2 us in tasks (chunks) of about 0.5 ms, wall time not spent in the kernel divided by the tasks.")


if __name__ == "__main__":
    main()
