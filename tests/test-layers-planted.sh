#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-layers-planted.sh: tests/test-layers.sh passes a small tree that keeps
# its rules and fails each planted break of them, naming it: an include up a
# layer, an include of another folder's own header, a call up a layer, a
# circle of calls within a folder, and a source outside the named folders.
top_srcdir=${top_srcdir:-.}
check=$top_srcdir/tests/test-layers.sh
CC=${CC:-cc}
command -v nm >/dev/null 2>&1 || { echo "nm not found: skipped"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "$CC not found: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

# A tree of two folders: low/ (layer 1) and high/ (layer 2); high calls low.
fresh() {
  rm -rf "$tmp/t"
  mkdir -p "$tmp/t/lib/low" "$tmp/t/lib/high"
  printf '1 low\n2 high\n' > "$tmp/t/lib/layers.txt"
  printf 'int low_f(void);\n' > "$tmp/t/lib/low/low.h"
  printf 'int low_priv(void);\n' > "$tmp/t/lib/low/priv.h"
  printf '#include "low/low.h"\nint low_f(void) { return 1; }\n' > "$tmp/t/lib/low/a.c"
  printf '#include "low/low.h"\nint low_priv(void) { return 2; }\n' > "$tmp/t/lib/low/b.c"
  printf '#include "low/low.h"\nint high_f(void);\n' > "$tmp/t/lib/high/high.h"
  printf '#include "high/high.h"\nint high_f(void) { return low_f(); }\n' > "$tmp/t/lib/high/c.c"
}
build() {
  for c in $(cd "$tmp/t/lib" && find . -name '*.c'); do
    d=$(dirname "$c")
    $CC -c -I"$tmp/t/lib" -o "$tmp/t/lib/$d/libmgpurt_core_la-$(basename "$c" .c).o" "$tmp/t/lib/$c" || exit 99
  done
}
# expect WHAT STATUS PATTERN: the check's status and a line of its output.
expect() {
  build
  out=$(top_srcdir=$tmp/t top_builddir=$tmp/t LAYERS_TREES=lib sh "$check" 2>&1)
  st=$?
  if [ "$st" -ne "$2" ] || ! echo "$out" | grep -q "$3"; then
    echo "FAIL: $1: exit $st (want $2), output:"
    echo "$out"
    fails=$((fails + 1))
  else
    echo "ok: $1"
  fi
}

fresh
expect "a tree that keeps the rules" 0 "2 folders, 3 objects"

fresh
printf '#include "high/high.h"\n' >> "$tmp/t/lib/low/b.c"
expect "an include up a layer" 1 "lib/low/b.c (layer 1) includes high/high.h (layer 2)"

fresh
printf '#include "low/priv.h"\n' >> "$tmp/t/lib/high/c.c"
expect "an include of another folder's own header" 1 "lib/high/c.c includes low/priv.h, which low/ keeps"

fresh
printf 'int high_f(void);\nint low_up(void) { return high_f(); }\n' >> "$tmp/t/lib/low/b.c"
expect "a call up a layer" 1 "lib/low/b.c (layer 1) calls high_f in lib/high/c.c (layer 2)"

fresh
printf 'int low_priv(void);\nint low_g(void) { return low_priv(); }\n' >> "$tmp/t/lib/low/a.c"
printf 'int low_g(void);\nint low_h(void) { return low_g(); }\n' >> "$tmp/t/lib/low/b.c"
expect "a circle of calls within a folder" 1 "call each other in a circle"

fresh
printf 'int stray(void) { return 0; }\n' > "$tmp/t/lib/stray.c"
expect "a source outside the named folders" 1 "lib/stray.c is in no folder"

[ "$fails" -eq 0 ]
