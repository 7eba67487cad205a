#!/bin/sh
# test-docs.sh: the documentation against the code it describes.
#  - the long options of `mgpu-run --help` and of the man page doc/mgpu-run.1
#    are the same set, and every short option of --help is in the man page;
#  - every variable of the settings table (lib/config.c) is in doc/tuning.md
#    and README.md;
#  - every MGPU_API function and public type of lib/mgpurt.h,
#    lib/mgpurt_kernels.h and lib/mgpurt_plugin.h is in doc/api.md;
#  - doc/guide.md shows the example programs exactly as they are;
#  - the man page formats without warnings (where groff is installed).
# Sources are read from ${top_srcdir}, the driver from ${top_builddir}, so it
# also runs in a VPATH build (make distcheck).
set -u
LC_ALL=C; export LC_ALL
srcdir="${top_srcdir:-.}"
run="${top_builddir:-.}/bin/mgpu-run"
man="$srcdir/doc/mgpu-run.1"
fails=0; passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-docs-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

for f in "$man" "$srcdir/doc/tuning.md" "$srcdir/doc/api.md" "$srcdir/README.md" \
         "$srcdir/lib/config.c" "$srcdir/lib/mgpurt.h" "$srcdir/lib/mgpurt_kernels.h" "$srcdir/lib/mgpurt_plugin.h"; do
  if [ -r "$f" ]; then ok; else bad "$f is missing"; fi
done

# ---------------------------------------------------------------- options
if ! "$run" --help > "$tmp/help" 2>&1; then
  bad "$run --help failed: $(cat "$tmp/help")"
fi
# Long options: --word, in the help text and in the man page once roff's
# escapes (\- for a hyphen, \& and \% as zero-width marks, \fB \fI \fR \fP
# for fonts) are undone.
grep -o -- '--[a-zA-Z][a-zA-Z0-9-]*' "$tmp/help" | sort -u > "$tmp/help.long"
sed -e 's/\\-/-/g' -e 's/\\[&%]//g' -e 's/\\f[BIRP]//g' "$man" 2>/dev/null > "$tmp/man.txt"
grep -o -- '--[a-zA-Z][a-zA-Z0-9-]*' "$tmp/man.txt" | sort -u > "$tmp/man.long"
if [ ! -s "$tmp/help.long" ]; then bad "no long option found in '$run --help'"; fi
for o in $(comm -23 "$tmp/help.long" "$tmp/man.long"); do bad "option $o of mgpu-run --help is not in doc/mgpu-run.1"; done
for o in $(comm -13 "$tmp/help.long" "$tmp/man.long"); do bad "option $o of doc/mgpu-run.1 is not in mgpu-run --help"; done
for o in $(comm -12 "$tmp/help.long" "$tmp/man.long"); do ok; done
# Short options: "  -x, --long" in the help; the man page must give the pair.
sed -n 's/^ *\(-[a-zA-Z]\), \(--[a-zA-Z][a-zA-Z0-9-]*\).*/\1 \2/p' "$tmp/help" > "$tmp/help.short"
while read -r s l; do
  if grep -q -- "$s, $l" "$tmp/man.txt"; then ok
  else bad "short option $s ($l) of mgpu-run --help is not in doc/mgpu-run.1"; fi
done < "$tmp/help.short"

# ---------------------------------------------------------------- environment
sed -n '/settings\[MGPU_SET_COUNT\] = {/,/^};/p' "$srcdir/lib/config.c" |
  grep -o '"MGPU_[A-Z_]*"' | tr -d '"' | sort -u > "$tmp/vars"
if [ ! -s "$tmp/vars" ]; then bad "no MGPU_* name found in the settings table of lib/config.c"; fi
for v in $(cat "$tmp/vars"); do
  for d in doc/tuning.md README.md; do
    if grep -qw -- "$v" "$srcdir/$d"; then ok; else bad "$v (lib/config.c) is not in $d"; fi
  done
done

# ---------------------------------------------------------------- API
for h in lib/mgpurt.h lib/mgpurt_kernels.h lib/mgpurt_plugin.h; do
  sed -n 's/^MGPU_API[^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$srcdir/$h"
done | sort -u > "$tmp/funcs"
if [ ! -s "$tmp/funcs" ]; then bad "no MGPU_API function found in lib/mgpurt.h"; fi
for fn in $(cat "$tmp/funcs"); do
  if grep -qw -- "$fn" "$srcdir/doc/api.md"; then ok; else bad "function $fn is not in doc/api.md"; fi
done
# Public types: the names that typedefs give (mgpu_*_t and the *_fn pointers).
cat "$srcdir/lib/mgpurt.h" "$srcdir/lib/mgpurt_kernels.h" "$srcdir/lib/mgpurt_plugin.h" | grep -E '^(typedef|\})' |
  grep -oE 'mgpu_[a-z0-9_]*_(t|fn)\b' | sort -u > "$tmp/types"
for t in $(cat "$tmp/types"); do
  if grep -qw -- "$t" "$srcdir/doc/api.md"; then ok; else bad "type $t is not in doc/api.md"; fi
done

# ---------------------------------------------------------------- guide
# The guide shows the example programs whole: each block that follows a line
# "<!-- doc/examples/FILE -->" must be that file, verbatim.
for f in doc/examples/example.c doc/examples/example_cuda.cu; do
  awk -v want="<!-- $f -->" '
    $0 == want { state = 1; next }
    state == 1 && /^```/ { state = 2; next }
    state == 2 && /^```$/ { exit }
    state == 2 { print }' "$srcdir/doc/guide.md" > "$tmp/shown"
  if [ ! -s "$tmp/shown" ]; then bad "doc/guide.md does not show $f"
  elif cmp -s "$tmp/shown" "$srcdir/$f"; then ok
  else bad "the copy of $f in doc/guide.md differs from the file: $(diff "$tmp/shown" "$srcdir/$f" | head -5)"; fi
done

# ---------------------------------------------------------------- man page
if command -v groff > /dev/null 2>&1; then
  if groff -man -ww -z "$man" > "$tmp/groff" 2>&1 && [ ! -s "$tmp/groff" ]; then ok
  else bad "groff warns about doc/mgpu-run.1: $(cat "$tmp/groff")"; fi
fi

echo "docs: $passes passed, $fails failed"
[ "$fails" = 0 ]
