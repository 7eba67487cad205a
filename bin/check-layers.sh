#!/bin/sh
# check-layers.sh: mgpu-run's folders are layers (bin/layers.txt, lowest
# first), and a file uses only what its own folder or a lower one defines,
# with no circle of files using each other. Read from the built objects
# (bin/**/*mgpu_run-*.o) with nm: each object's undefined symbols are looked
# up among the global symbols (functions and variables) the other objects of
# bin/ define; a use of the library's is not a call within bin/.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
table=$top_srcdir/bin/layers.txt
verbose=${1:-}
command -v nm >/dev/null 2>&1 || { echo "nm not found: skipped"; exit 77; }
command -v tsort >/dev/null 2>&1 || { echo "tsort not found: skipped"; exit 77; }
[ -f "$table" ] || { echo "FAIL: no $table"; exit 1; }
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# folder -> layer, from the table's lines "N FOLDER".
layers=$(sed -e 's/#.*//' "$table" | awk 'NF == 2 { print $2, $1 } NF != 0 && NF != 2 { print "BAD", $0 }')
echo "$layers" | grep -q '^BAD' && bad "bin/layers.txt: lines other than 'N FOLDER': $(echo "$layers" | grep '^BAD')"
folder_of() { d=$(dirname "$1"); [ "$d" = . ] && echo . || echo "$d"; }
# Every source in a folder of the table, with the folder's header; base names
# unique (automake's objects).
srcs=$(cd "$top_srcdir/bin" && find . -name '*.c' | sed 's|^\./||' | sort)
for s in $srcs; do
  f=$(folder_of "$s")
  echo "$layers" | grep -q "^$f " || bad "bin/$s: its folder '$f' has no layer in bin/layers.txt"
done
for f in $(echo "$layers" | awk '$1 != "." && $1 != "BAD" { print $1 }'); do
  [ -f "$top_srcdir/bin/$f/$(basename "$f").h" ] || bad "bin/$f has no header $(basename "$f").h"
done
dups=$(for s in $srcs; do basename "$s"; done | sort | uniq -d)
[ -z "$dups" ] || bad "base names used twice in bin/: $dups"

# "D file sym" for a definition, "U file sym" for a use, file relative to bin/.
syms=$(mktemp) || exit 1
lay=$(mktemp) || exit 1
trap 'rm -f "$syms" "$lay"' EXIT
nobj=0
for o in $(cd "$top_builddir/bin" && find . -name '*mgpu_run-*.o' | sed 's|^\./||' | sort); do
  base=$(basename "$o" .o); base=${base#*mgpu_run-}
  f=$(folder_of "$o"); [ "$f" = . ] && file=$base.c || file=$f/$base.c
  [ -f "$top_srcdir/bin/$file" ] || continue # an object left by an older tree
  nobj=$((nobj + 1))
  nm "$top_builddir/bin/$o" | awk -v f="$file" '
    NF == 3 && $2 ~ /^[TDBRVWC]$/ { print "D", f, $3 }
    NF == 2 && $1 == "U" { print "U", f, $2 }' >> "$syms"
done
[ "$nobj" -gt 0 ] || { echo "FAIL: no built objects of bin/ under $top_builddir/bin"; exit 1; }

# Uses between files: "user layer definer layer symbol".
echo "$layers" > "$lay"
edges=$(awk '
  function folder(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "." }
  FNR == NR { layer[$1] = $2; next }
  $1 == "D" { def[$3] = $2; next }
  $1 == "U" { use[++n] = $2 " " $3 }
  END {
    for (i = 1; i <= n; i++) {
      split(use[i], a, " ")
      if (!(a[2] in def) || def[a[2]] == a[1]) continue
      lu = layer[folder(a[1])]; ld = layer[folder(def[a[2]])]
      print a[1], lu == "" ? "?" : lu, def[a[2]], ld == "" ? "?" : ld, a[2]
    }
  }' "$lay" "$syms")
[ -z "$verbose" ] || echo "$edges" | awk 'NF == 5 { print "  " $1 " (" $2 ") -> " $3 " (" $4 "): " $5 }' | sort
up=$(echo "$edges" | awk 'NF == 5 && ($2 == "?" || $4 == "?" || $4 + 0 > $2 + 0) { print "  " $1 " (layer " $2 ") uses " $5 " of " $3 " (layer " $4 ")" }' | sort)
if [ -n "$up" ]; then
  bad "uses from a lower layer up to a higher one:"
  echo "$up"
fi
# A circle of files: tsort finds it (within a folder too).
loops=$(echo "$edges" | awk 'NF == 5 { print $1, $3 }' | sort -u | tsort 2>&1 >/dev/null)
if [ -n "$loops" ]; then
  bad "files that use each other in a circle:"
  echo "$loops" | awk '
    /input contains a loop/ { if (l != "") print "  " l; l = ""; next }
    { sub(/^tsort: /, ""); l = l == "" ? $0 : l " -> " $0 }
    END { if (l != "") print "  " l }' | sort -u
fi
nuses=$(echo "$edges" | awk 'NF == 5' | wc -l)
nfiles=$(echo "$edges" | awk 'NF == 5 { print $1 " " $3 }' | sort -u | wc -l)
echo "$nobj objects of bin/, $nuses uses of symbols ($nfiles pairs of files) checked against bin/layers.txt"
[ "$fails" -eq 0 ]
