#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-mgpu-help.sh: mgpu-run's --help (generated from its option table,
# bin/options.c) and the OPTIONS section of its man page list the same options,
# with the same value names, in the same groups and order; and where --help
# names an option's environment variable, the man page's entry names it too.
set -u
run="${top_builddir:-.}/bin/mgpu-run"
man="${top_srcdir:-.}/doc/mgpu-run.1"
tmp=$(mktemp -d /tmp/mgpu-help-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

if ! "$run" --help > "$tmp/help.txt"; then
  echo "FAIL: mgpu-run --help exited non-zero"
  exit 1
fi

# --help: a group heading starts in the first column and ends in ':'; an
# option starts with "  -" or "      --", its names and value in the first 22
# columns (the text starts in column 24). Each option becomes
# "GROUP;NAMES;VARIABLES", VARIABLES being the MGPU_* names its text gives in
# parentheses.
awk '
  /^Workload options:/ { on = 1 }
  /^Exit status:/ { on = 0 }
  !on { next }
  /^[A-Z].*:$/ { if (opt != "") print group ";" opt ";" vars; opt = ""; group = $0; sub(/ \(.*/, "", group); sub(/:$/, "", group); next }
  /^  -|^      --/ {
    if (opt != "") print group ";" opt ";" vars
    opt = substr($0, 1, 22); sub(/^ +/, "", opt); sub(/ +$/, "", opt); vars = ""
  }
  opt != "" {
    line = $0
    while (match(line, /\(MGPU_[A-Z_]+/)) { vars = vars " " substr(line, RSTART + 1, RLENGTH - 1); line = substr(line, RSTART + RLENGTH) }
  }
  END { if (opt != "") print group ";" opt ";" vars }
' "$tmp/help.txt" > "$tmp/from-help"

# The man page: between ".SH OPTIONS" and the next ".SH", a ".SS" line names a
# group, the line after ".TP" an entry (fonts removed, "\-" read as "-"), and
# an entry that names two long options ("--min-bytes N, --max-bytes N") gives
# one line per option; VARIABLES are the MGPU_* names --help gives that the
# entry's text (up to the next ".TP" or ".SS") names too.
awk '
  function flush(   n, i, parts, v, k, nv, want) {
    if (tag == "") return
    n = split(tag, parts, /, --/)
    for (i = 1; i <= n; i++) {
      name = (i > 1 ? "--" : "") parts[i]
      # An entry with a short name keeps it: "-n, --items N" splits at ", --"
      # only where the left part is a long option.
      if (i == 1 && n > 1 && parts[1] ~ /^-[A-Za-z]$/) { name = parts[1] ", --" parts[2]; i = 2 }
      print group ";" name ";" body
    }
    tag = ""
  }
  /^\.SH OPTIONS/ { on = 1; next }
  /^\.SH/ { if (on) flush(); on = 0 }
  !on { next }
  /^\.SS/ { flush(); group = $0; sub(/^\.SS +/, "", group); gsub(/"/, "", group); next }
  /^\.TP/ { flush(); want = 1; next }
  want {
    tag = $0; gsub(/\\f[BIR]/, "", tag); gsub(/\\-/, "-", tag); want = 0; body = ""; next
  }
  tag != "" { body = body " " $0 }
' "$man" | sed 's/\\-/-/g' > "$tmp/man-raw"

# Keep of each man entry's text only the variables that --help names for it.
while IFS=';' read -r group opt vars; do
  line=$(grep -F -- "$group;$opt;" "$tmp/man-raw" | head -1)
  found=""
  for v in $vars; do
    case "$line " in *"$v"[!A-Z_]*) found="$found $v" ;; esac
  done
  if [ -n "$line" ]; then echo "$group;$opt;$found"; fi
done < "$tmp/from-help" > "$tmp/man-vars"
cut -d';' -f1,2 "$tmp/man-raw" > "$tmp/man-names"
cut -d';' -f1,2 "$tmp/from-help" > "$tmp/help-names"

if ! diff -u "$tmp/help-names" "$tmp/man-names"; then
  echo "FAIL: the options of --help (-) and of doc/mgpu-run.1's OPTIONS (+) differ"
  fails=$((fails + 1))
fi
if ! diff -u "$tmp/from-help" "$tmp/man-vars"; then
  echo "FAIL: an option's environment variable in --help (-) is missing from its man page entry (+)"
  fails=$((fails + 1))
fi
n=$(wc -l < "$tmp/help-names")
if [ "$n" -lt 30 ]; then
  echo "FAIL: only $n options read from --help"
  fails=$((fails + 1))
fi
echo "mgpu-run --help and man page: $n options compared, $fails failed"
[ "$fails" = 0 ]
