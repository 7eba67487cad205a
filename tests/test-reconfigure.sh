#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-reconfigure.sh: the library and mgpu-run depend on the configured
# install directories (libtool writes them into what it links), so that a
# reconfigure with another --prefix relinks them before `make install`.
top_builddir=${top_builddir:-.}
cd "$top_builddir" || exit 1
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
if [ ! -f mgpu-dirs.stamp ]; then
  echo "FAIL: mgpu-dirs.stamp is missing: nothing ties the build to the configured prefix"
  exit 1
fi
prefix=$(sed -n 's/^prefix=//p' mgpurt.pc)
if grep -q "^prefix=$prefix " mgpu-dirs.stamp; then :; else bad "mgpu-dirs.stamp does not hold prefix=$prefix: $(cat mgpu-dirs.stamp)"; fi
# With the stamp changed (as a new --prefix changes it), make relinks both;
# -o config.h keeps make -n from assuming config.h is remade.
plan=$(${MAKE:-make} -n -o config.h -W mgpu-dirs.stamp bin/mgpu-run 2>&1)
for t in lib/libmgpurt.la bin/mgpu-run; do
  if printf '%s\n' "$plan" | grep -q -- "--mode=link.* -o $t "; then :; else bad "a changed prefix does not relink $t"; fi
done
[ "$fails" = 0 ] && echo "reconfigure: the library and mgpu-run follow the prefix"
[ "$fails" = 0 ]
