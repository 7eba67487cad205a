#!/usr/bin/env python3
"""trace-sums.py TRACE.json: for each batch of an MGPU_TRACE file but the first (the warm-up), its
wall time and the summed spans of each kind of the GPU's host thread and streams (issue and unstage:
the host thread's staging copies; h2d, kernel, d2h: the device's)."""
import json
import sys

d = json.load(open(sys.argv[1]))
ev = d['traceEvents'] if isinstance(d, dict) else d
batches = [e for e in ev if e.get('cat') == 'batch']
for x in batches[1:]:
    t0, t1 = x['ts'], x['ts'] + x['dur']
    s = {}
    for e in ev:
        if e.get('ph') == 'X' and e.get('pid') != 1 and t0 <= e['ts'] <= t1 and e['cat'] != 'batch':
            s[e['cat']] = s.get(e['cat'], 0) + e['dur']
    print('batch %d %.1f ms: ' % (x['args']['batch'], x['dur'] / 1e3) +
          ' '.join('%s %.1f' % (k, v / 1e3) for k, v in sorted(s.items())))
