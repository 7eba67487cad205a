#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-layers.sh: lib/ and bin/ are cut into folders, one per layer, named
# lowest first in their layers.txt. A file calls only into its own folder or
# a lower one, includes only its own folder's headers and the header named
# after a lower folder (F/F.h), and no files call one another in a circle.
# Every .c and .h of the tree lies in a folder its table names.
#
# Calls are read from the built objects with nm: each object's undefined
# symbols are looked up among the symbols the tree's own objects define.
# Includes are read from the sources.
#
# Environment: top_srcdir, top_builddir (default .); LAYERS_TREES (default
# "lib bin"): the trees to check, each DIR with DIR/layers.txt.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
trees=${LAYERS_TREES:-lib bin}
command -v nm >/dev/null 2>&1 || { echo "nm not found: skipped"; exit 77; }
command -v tsort >/dev/null 2>&1 || { echo "tsort not found: skipped"; exit 77; }
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# check_tree DIR: the rules above for one tree.
check_tree() {
  dir=$1
  table=$top_srcdir/$dir/layers.txt
  [ -f "$table" ] || { bad "no $dir/layers.txt"; return; }
  # "folder layer" for each line "N folder" of the table ("." is DIR itself).
  sed -e 's/#.*//' "$table" | awk 'NF >= 2 { print $2, $1 }' > "$tmp/folders"
  [ -s "$tmp/folders" ] || { bad "$dir/layers.txt names no folder"; return; }

  # Every source lies in a named folder; "file folder layer" for each.
  : > "$tmp/files"
  (cd "$top_srcdir/$dir" && find . -name '*.[ch]' | sed 's|^\./||' | sort) > "$tmp/srcs"
  while read -r rel; do
    case $rel in */*) folder=${rel%/*} ;; *) folder=. ;; esac
    layer=$(awk -v f="$folder" '$1 == f { print $2 }' "$tmp/folders")
    if [ -z "$layer" ]; then
      bad "$dir/$rel is in no folder that $dir/layers.txt names"
      continue
    fi
    echo "$rel $folder $layer" >> "$tmp/files"
  done < "$tmp/srcs"

  # A header for each folder but the top one; base names once in the tree
  # (automake names objects by them).
  top=$(tail -1 "$tmp/folders" | awk '{ print $1 }')
  while read -r folder layer; do
    [ "$folder" = "$top" ] || [ -f "$top_srcdir/$dir/$folder/$folder.h" ] || bad "$dir/$folder/ has no header $folder.h"
  done < "$tmp/folders"
  dups=$(awk '$1 ~ /\.c$/ { n = split($1, p, "/"); print p[n] }' "$tmp/files" | sort | uniq -d | tr '\n' ' ')
  [ -z "$dups" ] || bad "$dir/: base names used twice: $dups"

  # Includes: "F/..." must name the file's own folder, or be F/F.h of a
  # folder no higher than its own.
  while read -r rel folder layer; do
    grep -o '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"' "$top_srcdir/$dir/$rel" |
      sed 's/.*"\(.*\)"/\1/' | while read -r inc; do
        case $inc in */*) ;; *) continue ;; esac
        ifolder=${inc%%/*}
        ilayer=$(awk -v f="$ifolder" '$1 == f { print $2 }' "$tmp/folders")
        [ -n "$ilayer" ] || continue
        [ "$ifolder" = "$folder" ] && continue
        if [ "$ilayer" -gt "$layer" ]; then
          echo "  $dir/$rel (layer $layer) includes $inc (layer $ilayer)"
        elif [ "$inc" != "$ifolder/$ifolder.h" ]; then
          echo "  $dir/$rel includes $inc, which $ifolder/ keeps to itself (its header is $ifolder/$ifolder.h)"
        fi
      done
  done < "$tmp/files" > "$tmp/incs"
  if [ -s "$tmp/incs" ]; then
    bad "includes that run up a layer or into another folder's own headers:"
    sort "$tmp/incs"
  fi

  # Symbols of every built object: "D file sym" for a definition, "U file
  # sym" for a use. Objects of sources the build has no use for (the CUDA
  # back end without CUDA) are missing and skipped; an object compiled from
  # this tree for another target (bin/'s copy of a lib/ file) is not read.
  : > "$tmp/syms"
  nobj=0
  while read -r rel folder layer; do
    case $rel in *.c) ;; *) continue ;; esac
    base=$(basename "$rel" .c)
    odir=$top_builddir/$dir/$folder
    obj=
    for o in "$odir"/.libs/*-"$base".o "$odir"/*-"$base".o; do
      [ -f "$o" ] || continue
      # lib/'s parsers and store are compiled into mgpu-run too: that copy is bin/'s.
      case $(basename "$o") in mgpu_run-*) [ "$dir" = bin ] || continue ;; esac
      obj=$o
      break
    done
    [ -n "$obj" ] || continue
    nobj=$((nobj + 1))
    nm "$obj" | awk -v f="$rel" '
      NF == 3 && $2 ~ /^[TDBRVWC]$/ { print "D", f, $3 }
      NF == 2 && $1 == "U" { print "U", f, $2 }' >> "$tmp/syms"
  done < "$tmp/files"
  [ "$nobj" -gt 0 ] || { bad "no built objects of $dir/ under $top_builddir/$dir"; return; }

  # Calls between files: "caller layer callee layer symbol".
  awk '{ print $1, $3 }' "$tmp/files" > "$tmp/lay"
  awk '
    FNR == NR { layer[$1] = $2; next }
    $1 == "D" { def[$3] = $2; next }
    $1 == "U" { use[++n] = $2 " " $3 }
    END {
      for (i = 1; i <= n; i++) {
        split(use[i], a, " ")
        if (!(a[2] in def) || def[a[2]] == a[1]) continue
        print a[1], layer[a[1]], def[a[2]], layer[def[a[2]]], a[2]
      }
    }' "$tmp/lay" "$tmp/syms" > "$tmp/edges"
  up=$(awk -v d="$dir" '$4 > $2 { print "  " d "/" $1 " (layer " $2 ") calls " $5 " in " d "/" $3 " (layer " $4 ")" }' \
    "$tmp/edges" | sort)
  if [ -n "$up" ]; then
    bad "$dir/: calls from a lower layer up to a higher one:"
    echo "$up"
  fi
  # A circle of files: tsort finds it (within a folder too).
  loops=$(awk '{ print $1, $3 }' "$tmp/edges" | sort -u | tsort 2>&1 >/dev/null)
  if [ -n "$loops" ]; then
    bad "$dir/: files that call each other in a circle:"
    echo "$loops" | awk '
      /input contains a loop/ { if (l != "") print "  " l; l = ""; next }
      { sub(/^tsort: /, ""); l = l == "" ? $0 : l " -> " $0 }
      END { if (l != "") print "  " l }' | sort -u
  fi
  echo "$dir/: $(wc -l < "$tmp/files") sources in $(wc -l < "$tmp/folders") folders, $nobj objects," \
    "$(wc -l < "$tmp/edges") calls between files checked"
}

for t in $trees; do
  check_tree "$t"
done
[ "$fails" -eq 0 ]
