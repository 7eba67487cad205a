# SPDX-License-Identifier: BSD-3-Clause
"""Every key of the mgpu-run JSON report in FILE (or on stdin) is documented
in doc/json.md (the names under "config" are settings, not keys)."""
import json
import os
import re
import sys

d = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
doc = open(os.path.join(os.environ.get("top_srcdir", "."), "doc/json.md")).read()
documented = set(re.findall(r"^\| `([a-z_]+)` \|", doc, re.M))


def keys(o, skip_names=False):
    if isinstance(o, dict):
        for k, v in o.items():
            if not skip_names:
                yield k
            yield from keys(v, k == "config")
    elif isinstance(o, list):
        for v in o:
            yield from keys(v)


missing = set(keys(d)) - documented
if missing:
    sys.exit(f"undocumented keys: {sorted(missing)}")
