#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The library's exported symbols against the committed list (lib/libmgpurt.sym):
# an export added or removed by accident fails here. A deliberate change of the
# ABI updates the list in the same commit:
#   nm -D --defined-only lib/.libs/libmgpurt.so | awk '{print $3}' | LC_ALL=C sort > lib/libmgpurt.sym
srcdir=${srcdir:-.}
so="${top_builddir:-.}/lib/.libs/libmgpurt.so"
if [ ! -f "$so" ]; then echo "no $so (a build without shared libraries): skipped"; exit 77; fi
if ! command -v nm >/dev/null 2>&1; then echo "no nm: skipped"; exit 77; fi
got=$(mktemp /tmp/mgpu-sym-XXXXXX)
trap 'rm -f "$got"' EXIT
nm -D --defined-only "$so" | awk '{print $3}' | LC_ALL=C sort > "$got"
if diff -u "$srcdir/lib/libmgpurt.sym" "$got"; then
  echo "symbols: $(wc -l < "$got") exports, as listed in lib/libmgpurt.sym"
  exit 0
fi
echo "FAIL: the exports of $so differ from lib/libmgpurt.sym (- listed, + exported)"
exit 1
