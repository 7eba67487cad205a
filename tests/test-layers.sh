#!/bin/sh
# test-layers.sh: lib/ is cut into layers (lib/layers.txt), and a file calls
# only into its own layer or a lower one, with no circle of files calling each
# other. Read from the built objects with nm: each object's undefined mgpu_
# and mgpu__ symbols are looked up among the symbols the library's own objects
# define. Every lib/*.c must have a layer.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
table=$top_srcdir/lib/layers.txt
command -v nm >/dev/null 2>&1 || { echo "nm not found: skipped"; exit 77; }
command -v tsort >/dev/null 2>&1 || { echo "tsort not found: skipped"; exit 77; }
[ -f "$table" ] || { echo "FAIL: no $table"; exit 1; }
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# file -> layer number, from the table's lines "N name file.c file.c ...".
layers=$(sed -e 's/#.*//' "$table" | awk 'NF >= 3 { for (i = 3; i <= NF; i++) print $i, $1 }')
for src in "$top_srcdir"/lib/*.c; do
  f=$(basename "$src")
  echo "$layers" | grep -q "^$f " || bad "lib/$f has no layer in lib/layers.txt"
done

# The symbols of every built object: "D file sym" for a definition, "U file sym"
# for a use. An object the build has no use for (device_nocuda.c with CUDA)
# is missing and skipped.
syms=$(mktemp) || exit 1
lay=
trap 'rm -f "$syms" $lay' EXIT
nobj=0
for f in $(echo "$layers" | awk '{ print $1 }'); do
  base=${f%.c}
  obj=
  for o in "$top_builddir/lib/.libs/libmgpurt_core_la-$base.o" "$top_builddir/lib/libmgpurt_core_la-$base.o"; do
    [ -f "$o" ] && { obj=$o; break; }
  done
  [ -n "$obj" ] || continue
  nobj=$((nobj + 1))
  nm "$obj" | awk -v f="$f" '
    NF == 3 && $2 ~ /^[TDBRVWC]$/ && $3 ~ /^mgpu_/ { print "D", f, $3 }
    NF == 2 && $1 == "U" && $2 ~ /^mgpu_/ { print "U", f, $2 }' >> "$syms"
done
[ "$nobj" -gt 0 ] || { echo "FAIL: no built objects of lib/ under $top_builddir/lib"; exit 1; }

# Calls between files: "caller callee symbol", each with its layers.
lay=$(mktemp) || exit 1
echo "$layers" > "$lay"
edges=$(awk '
  FNR == NR { layer[$1] = $2; next }
  $1 == "D" { def[$3] = $2; next }
  $1 == "U" { use[++n] = $2 " " $3 }
  END {
    for (i = 1; i <= n; i++) {
      split(use[i], a, " ")
      if (!(a[2] in def) || def[a[2]] == a[1]) continue
      print a[1], layer[a[1]], def[a[2]], layer[def[a[2]]], a[2]
    }
  }' "$lay" "$syms")
up=$(echo "$edges" | awk 'NF == 5 && $4 > $2 { print "  " $1 " (layer " $2 ") calls " $5 " in " $3 " (layer " $4 ")" }' | sort)
if [ -n "$up" ]; then
  bad "calls from a lower layer up to a higher one:"
  echo "$up"
fi
# A circle of files: tsort finds it (within a layer too).
loops=$(echo "$edges" | awk 'NF == 5 { print $1, $3 }' | sort -u | tsort 2>&1 >/dev/null)
if [ -n "$loops" ]; then
  bad "files that call each other in a circle:"
  echo "$loops" | awk '
    /input contains a loop/ { if (l != "") print "  " l; l = ""; next }
    { sub(/^tsort: /, ""); l = l == "" ? $0 : l " -> " $0 }
    END { if (l != "") print "  " l }' | sort -u
fi
ncalls=$(echo "$edges" | awk 'NF == 5' | wc -l)
echo "$nobj objects of lib/, $ncalls calls between files checked against lib/layers.txt"
[ "$fails" -eq 0 ]
