#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-license.sh: the licence is in the tree, and every source file names it
# by its SPDX identifier in its first lines.
srcdir=${top_srcdir:-.}
tag='SPDX-License-Identifier: BSD-3-Clause'
fails=0
if [ -f "$srcdir/LICENSE" ] && grep -q 'Redistribution and use' "$srcdir/LICENSE"; then :
else echo "FAIL: no BSD licence in $srcdir/LICENSE"; fails=1; fi
# The sources of the tree; what the build tools make (libtool's m4) is theirs.
missing=$(cd "$srcdir" && find lib include bin kernels tests bench doc/examples cmake m4 -type f \
  \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.sh' -o -name '*.py' -o -name '*.m4' -o -name '*.in' \) \
  ! -path 'bench/results/*' ! -path 'm4/libtool.m4' ! -path 'm4/lt*.m4' ! -path '*/.deps/*' |
  while read -r f; do head -3 "$f" | grep -q "$tag" || echo "$f"; done)
if [ -n "$missing" ]; then
  echo "FAIL: sources without '$tag' in their first lines:"
  echo "$missing" | sed 's/^/  /'
  fails=1
fi
n=$(cd "$srcdir" && find lib include bin kernels tests -type f \( -name '*.c' -o -name '*.h' \) | wc -l)
echo "$n C sources of lib, include, bin, kernels and tests (and the scripts) checked for the licence"
[ "$fails" -eq 0 ]
