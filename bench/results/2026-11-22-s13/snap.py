#!/usr/bin/env python3
# snap.py PID SECONDS: per-thread involuntary/voluntary context switches of PID over
# SECONDS, grouped by thread name and by role, plus /proc/stat steal and idle, vmstat
# numa/thp counters and interrupts over the same span.
import os, sys, time, collections
pid, secs = sys.argv[1], float(sys.argv[2])
def threads():
    r = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{t}/comm").read().strip()
            st = dict(l.split(":", 1) for l in open(f"/proc/{pid}/task/{t}/status") if ":" in l)
            sched = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
            r[t] = (comm, int(st["nonvoluntary_ctxt_switches"]), int(st["voluntary_ctxt_switches"]),
                    int(sched[11]) + int(sched[12]), int(sched[36]))  # utime+stime, processor
        except Exception: pass
    return r
def cpustat():
    l = open("/proc/stat").readline().split()[1:]
    return [int(x) for x in l]
def vm():
    d = {}
    for l in open("/proc/vmstat"):
        k, v = l.split()
        if k.startswith(("numa_", "pgmigrate", "thp_", "pgfault", "pgmajfault", "compact_")): d[k] = int(v)
    return d
def irq():
    tot = 0; loc = {}
    for l in open("/proc/interrupts").readlines()[1:]:
        p = l.split()
        n = sum(int(x) for x in p[1:] if x.isdigit())
        loc[p[0].rstrip(":")] = n
    return loc
a, c0, v0, i0 = threads(), cpustat(), vm(), irq()
time.sleep(secs)
b, c1, v1, i1 = threads(), cpustat(), vm(), irq()
d = [y - x for x, y in zip(c0, c1)]; tot = sum(d) or 1
print(f"  cpu%: user {100*d[0]/tot:.1f} sys {100*d[2]/tot:.1f} idle {100*d[3]/tot:.1f} irq {100*(d[5]+d[6])/tot:.1f} steal {100*d[7]/tot:.1f}")
grp = collections.defaultdict(lambda: [0, 0, 0, 0])
busy = []
for t, (comm, nv, vo, cpu, proc) in b.items():
    if t not in a: continue
    g = grp[comm]; g[0] += 1; g[1] += nv - a[t][1]; g[2] += vo - a[t][2]; g[3] += cpu - a[t][3]
    busy.append((cpu - a[t][3], nv - a[t][1], vo - a[t][2], comm, t))
for comm, (n, nv, vo, cpu) in sorted(grp.items(), key=lambda x: -x[1][3]):
    print(f"  threads '{comm}' x{n}: nonvol {nv/secs:.0f}/s vol {vo/secs:.0f}/s cpu {cpu/secs:.0f} ticks/s")
busy.sort(reverse=True)
hot = [x for x in busy if x[0] > 0.5 * secs * os.sysconf("SC_CLK_TCK")]
cold = [x for x in busy if x[2] > 50 * secs]
print(f"  busy threads (>50% cpu): {len(hot)}, their nonvol/s: sum {sum(x[1] for x in hot)/secs:.0f}, max {max([x[1] for x in hot], default=0)/secs:.0f}")
print("  threads waking often (vol>50/s): " + ", ".join(f"{x[3]}/{x[4]} vol {x[2]/secs:.0f} cpu {x[0]/secs:.0f}" for x in cold[:12]))
dv = {k: v1[k] - v0.get(k, 0) for k in v1 if v1[k] - v0.get(k, 0)}
print("  vmstat: " + " ".join(f"{k}={v}" for k, v in sorted(dv.items())))
di = sorted(((i1[k] - i0.get(k, 0), k) for k in i1), reverse=True)[:8]
print("  irqs/s: " + " ".join(f"{k}={n/secs:.0f}" for n, k in di if n))
