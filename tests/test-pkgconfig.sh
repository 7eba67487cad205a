#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-pkgconfig.sh: the generated mgpurt.pc names everything a static link
# needs (CUDA runtime, NCCL, C++ runtime, OpenMP), and README.md's static
# recipe (mgpurt-static.pc) gives a program that runs without libmgpurt.so.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v pkg-config >/dev/null 2>&1 || { echo "pkg-config not found: skipped"; exit 77; }
# The build tree's .pc file holds real paths: a sysroot set for other
# packages (as where Check is unpacked rather than installed) must not move them.
unset PKG_CONFIG_SYSROOT_DIR
PKG_CONFIG_PATH=$top_builddir; export PKG_CONFIG_PATH
libs=$(pkg-config --static --libs mgpurt) || { echo "FAIL: pkg-config --static --libs mgpurt"; exit 1; }
echo "pkg-config --static --libs mgpurt: $libs"
have() { grep -q "^#define $1 1" "$top_builddir/config.h"; }
case " $libs " in *" -lmgpurt "*) ;; *) bad "no -lmgpurt";; esac
if have MGPU_HAVE_CUDA; then
  for f in -lcudart_static -lstdc++; do
    case " $libs " in *" $f "*) ;; *) bad "CUDA is configured but $f is missing";; esac
  done
  found=
  for f in $libs; do
    case $f in -L*) [ -f "${f#-L}/libcudart_static.a" ] && found=yes;; esac
  done
  [ -n "$found" ] || bad "no -L directory holds libcudart_static.a"
fi
if have MGPU_HAVE_MPI; then
  case " $libs " in *" -lmpi"*) ;; *) bad "MPI is configured but its library (-lmpi...) is missing";; esac
fi
if have MGPU_HAVE_NCCL; then
  case " $libs " in *" -lnccl "*) ;; *) bad "NCCL is configured but -lnccl is missing";; esac
fi
# README.md's static recipe, as written, on README.md's program, against a
# staged install of the library, its headers and its .pc files: the program
# must not need libmgpurt.so (ldd), and must run with the .so taken away.
recipe=$(grep -o '`cc app.c [^`]*mgpurt-static[^`]*`' "$top_srcdir/README.md" | head -1 | tr -d '`')
[ -n "$recipe" ] || bad "README.md gives no static recipe (\`cc app.c ... mgpurt-static ...\`)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-pkgconfig-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# The install targets of the library, headers and .pc files alone: they copy
# built files and build nothing, so they may run beside the other tests.
pc=
if ! (cd "$top_builddir" && env -u MAKEFLAGS -u MFLAGS ${MAKE:-make} install-libLTLIBRARIES install-includeHEADERS \
      install-pkgconfigDATA DESTDIR="$tmp/dest") > "$tmp/install.log" 2>&1; then
  bad "the staged install failed: $(tail -5 "$tmp/install.log")"
else
  pc=$(find "$tmp/dest" -name mgpurt-static.pc | head -1)
fi
if [ -z "$recipe" ] || [ ! -d "$tmp/dest" ]; then
  :
elif [ -z "$pc" ]; then
  echo "no mgpurt-static.pc (configured with --disable-static): the static recipe is not checked"
else
  # The staged .pc files point into the stage, as an install with that prefix.
  for f in "$(dirname "$pc")"/mgpurt*.pc; do
    sed -E "s#^(prefix|exec_prefix|libdir|includedir)=/#\1=$tmp/dest/#" "$f" > "$tmp/pc" && cat "$tmp/pc" > "$f"
  done
  PKG_CONFIG_PATH=$(dirname "$pc"); export PKG_CONFIG_PATH
  libdir=$(pkg-config --variable=libdir mgpurt-static)
  awk '/^```c$/ { n++; inb = (n == 1); next } /^```/ { inb = 0 } inb' "$top_srcdir/README.md" > "$tmp/app.c"
  # The build's own compiler and flags for the recipe's `cc`: a sanitizer
  # build's archive needs its runtime.
  cc() { ${CC:-cc} ${MGPU_TEST_CFLAGS:-} "$@" ${MGPU_TEST_LDFLAGS:-}; }
  echo "$recipe: $(pkg-config --cflags --libs mgpurt-static)"
  if ! (cd "$tmp" && eval "$recipe") > "$tmp/log" 2>&1; then
    bad "$recipe failed: $(tail -5 "$tmp/log")"
  elif ! command -v ldd > /dev/null 2>&1; then
    bad "ldd not found: cannot tell whether the program needs libmgpurt.so"
  elif LD_LIBRARY_PATH=$libdir ldd "$tmp/a.out" > "$tmp/ldd" 2>&1 && grep -q 'libmgpurt' "$tmp/ldd"; then
    bad "$recipe gives a program that needs libmgpurt.so: $(grep libmgpurt "$tmp/ldd")"
  else
    ls "$libdir"/libmgpurt.so* > /dev/null 2>&1 || bad "the staged install has no libmgpurt.so to take away"
    rm -f "$libdir"/libmgpurt.so*
    if (cd "$tmp" && LD_LIBRARY_PATH=$libdir ./a.out) > "$tmp/run" 2>&1; then
      echo "the static program runs without libmgpurt.so"
    else
      bad "the static program failed without libmgpurt.so: $(tail -5 "$tmp/run")"
    fi
  fi
fi
[ "$fails" = 0 ]
