#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-tutorial.sh: the tutorial (doc/getting-started.md) shows its programs
# as they are: the code block that follows a line "<!-- doc/examples/FILE -->"
# is that file, verbatim, and every source of doc/examples/tutorial* is shown so.
# make check builds and runs the programs themselves.
top_srcdir=${top_srcdir:-.}
doc=$top_srcdir/doc/getting-started.md
[ -r "$doc" ] || { echo "FAIL: no $doc"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-tutorial-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
shown=$(sed -n 's/^<!-- \(doc\/examples\/[^ ]*\) -->$/\1/p' "$doc")
[ -n "$shown" ] || bad "doc/getting-started.md shows no file of doc/examples"
for f in $shown; do
  if [ ! -r "$top_srcdir/$f" ]; then bad "doc/getting-started.md shows $f, which does not exist"; continue; fi
  awk -v want="<!-- $f -->" '
    $0 == want { state = 1; next }
    state == 1 && /^```/ { state = 2; next }
    state == 1 && NF { exit }
    state == 2 && /^```$/ { exit }
    state == 2 { print }' "$doc" > "$tmp/block"
  if [ ! -s "$tmp/block" ]; then bad "no code block follows <!-- $f --> in doc/getting-started.md"
  elif cmp -s "$tmp/block" "$top_srcdir/$f"; then echo "ok: $f"
  else bad "the copy of $f in doc/getting-started.md differs from the file:"; diff "$tmp/block" "$top_srcdir/$f" | head -10
  fi
done
for path in "$top_srcdir"/doc/examples/tutorial*.c "$top_srcdir"/doc/examples/tutorial*.cu "$top_srcdir"/doc/examples/tutorial*.h; do
  [ -e "$path" ] || continue
  f=doc/examples/${path##*/}
  echo "$shown" | grep -qx "$f" || bad "doc/getting-started.md does not show $f"
done
[ "$fails" = 0 ]
