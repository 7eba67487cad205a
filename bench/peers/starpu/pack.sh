#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# pack.sh: packs the StarPU that build.sh installed, small enough to carry to
# a GPU machine without network (6.2 MiB for StarPU 1.3.10 with CUDA 13).
#
#   bash bench/peers/starpu/pack.sh [PREFIX] [DEST]
#
# PREFIX defaults to bench/peers/starpu/prefix, DEST to .peers/ at the top of
# the git checkout (added to .git/info/exclude). DEST
# gets:
#   starpu-prefix.tar.gz  the prefix with stripped shared libraries, without
#                         static libraries, libtool files, documentation or
#                         the tools the benchmark does not use
#   starpu-src.tar.gz     the unpatched Debian source that build.sh used, so
#                         that bench/peers/run.sh can rebuild StarPU there
#                         (STARPU_SRC) where the carried prefix does not load
# Carry DEST with the checkout; bench/peers/run.sh finds it there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "pack.sh: $*" >&2; exit 1; }
prefix=${1:-$here/prefix}
prefix=$(cd "$prefix" 2>/dev/null && pwd) || die "no StarPU prefix at ${1:-$here/prefix}: run build.sh first"
ls "$prefix"/lib/libstarpu-*.so >/dev/null 2>&1 || die "$prefix has no lib/libstarpu-*.so: not a StarPU prefix"
if [ $# -ge 2 ]; then
  dest=$2
else
  top=$(git -C "$here" rev-parse --show-toplevel) || die "not in a git checkout: give DEST"
  dest=$top/.peers
  exclude=$(git -C "$top" rev-parse --git-path info/exclude)
  case $exclude in /*) ;; *) exclude=$top/$exclude ;; esac
  mkdir -p "$(dirname "$exclude")"
  grep -qxF '/.peers/' "$exclude" 2>/dev/null || echo '/.peers/' >> "$exclude"
fi
mkdir -p "$dest"
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
cp -a "$prefix" "$stage/prefix"
p=$stage/prefix
rm -rf "$p/share/doc" "$p/share/man" "$p/share/info" "$p/share/starpu/examples"
find "$p" \( -name '*.a' -o -name '*.la' \) -delete
# The tools that read performance models and traces stay; the rest go.
find "$p/bin" -type f ! -name 'starpu_perfmodel_display' ! -name 'starpu_machine_display' \
  ! -name 'starpu_calibrate_bus' -delete 2>/dev/null || true
find "$p" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'file -b "$1" | grep -q ELF && strip --strip-unneeded "$1"' _ {} \;
tar czf "$dest/starpu-prefix.tar.gz" -C "$p" .
src=${STARPU_WORK:-$here/work}/starpu-src.tar.gz
if [ -f "$src" ]; then cp "$src" "$dest/starpu-src.tar.gz"; else echo "pack.sh: no $src: the source is not carried" >&2; fi
du -b "$dest"/* | awk '{printf "pack.sh: %s %.1f MiB\n", $2, $1 / 1048576}' >&2
echo "pack.sh: $(du -sb "$dest" | awk '{printf "%.1f MiB", $1 / 1048576}') in $dest" >&2
