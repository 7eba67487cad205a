#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# installcheck.sh: programs built against an installed copy, from the
# installed files alone (make installcheck; make distcheck runs it on its
# own install):
#  - README.md's static recipe, `cc app.c $(pkg-config --cflags --libs
#    mgpurt-static)`, gives a program that does not need libmgpurt.so (ldd),
#    and it runs;
#  - the installed examples' Makefile builds them through pkg-config and runs
#    them (its `make check`), and builds the static tutorial-1-static;
#  - their CMakeLists.txt builds them through the CMake package
#    (find_package(mgpurt): mgpurt::mgpurt, mgpurt::mgpurt_static), and they
#    run; skipped, saying so, where cmake is not installed.
# Environment: DESTDIR, prefix, libdir and docdir as make install took them;
# PKG_CONFIG, CC, MAKE, CMAKE.
set -u
: "${prefix:?}" "${libdir:?}" "${docdir:?}"
root=${DESTDIR:-}
examples=$root$docdir/examples
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-installcheck-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
cc() { ${CC:-cc} "$@"; }
# Builds take their own make's variables, not those of this make.
unset MAKEFLAGS MFLAGS MAKELEVEL

# The installed .pc files; under DESTDIR, copies that point into it.
pcdir=$root$libdir/pkgconfig
if [ -n "$root" ]; then
  mkdir -p "$tmp/pc"
  for f in "$pcdir"/mgpurt*.pc; do
    sed -E "s#^(prefix|exec_prefix|libdir|includedir)=/#\1=$root/#" "$f" > "$tmp/pc/${f##*/}"
  done
  pcdir=$tmp/pc
fi
PKG_CONFIG_PATH=$pcdir; export PKG_CONFIG_PATH
unset PKG_CONFIG_SYSROOT_DIR
pkgconfig=${PKG_CONFIG:-pkg-config}

# ---------------------------------------------------------------- static recipe
readme=$root$docdir/README.md
recipe=$(grep -o '`cc app.c [^`]*mgpurt-static[^`]*`' "$readme" | head -1 | tr -d '`')
if [ ! -f "$pcdir/mgpurt-static.pc" ]; then
  echo "no mgpurt-static.pc (configured with --disable-static): the static recipe is not checked"
elif [ -z "$recipe" ]; then
  bad "the installed README.md gives no static recipe"
else
  mkdir -p "$tmp/static"
  awk '/^```c$/ { n++; inb = (n == 1); next } /^```/ { inb = 0 } inb' "$readme" > "$tmp/static/app.c"
  if ! (cd "$tmp/static" && eval "$(echo "$recipe" | sed "s#pkg-config#$pkgconfig#g")") > "$tmp/static.log" 2>&1; then
    bad "$recipe failed: $(tail -5 "$tmp/static.log")"
  elif ldd "$tmp/static/a.out" 2>&1 | grep -q libmgpurt; then
    bad "$recipe gives a program that needs libmgpurt.so"
  elif ! (cd "$tmp/static" && ./a.out) > "$tmp/static.log" 2>&1; then
    bad "the static program failed: $(tail -5 "$tmp/static.log")"
  else
    echo "ok: $recipe: a program without libmgpurt.so, that runs"
  fi
fi

# ---------------------------------------------------------------- Makefile
mkdir -p "$tmp/make"
if ${MAKE:-make} -C "$tmp/make" -f "$examples/Makefile" PKG_CONFIG="$pkgconfig" check static \
    > "$tmp/make.log" 2>&1; then
  echo "ok: the installed examples' Makefile built and ran them"
else
  bad "make -f $examples/Makefile check static: $(tail -8 "$tmp/make.log")"
fi

# ---------------------------------------------------------------- CMake
CMAKE=${CMAKE:-cmake}
if ! command -v "$CMAKE" > /dev/null 2>&1; then
  echo "cmake not found: the CMake package is not checked (Debian: apt-get install cmake)"
else
  ccflag=
  case ${CC:-} in *" "*|"") ;; *) ccflag=-DCMAKE_C_COMPILER=$CC ;; esac
  if ! "$CMAKE" -S "$examples" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$root$prefix" $ccflag > "$tmp/cmake.log" 2>&1 ||
     ! "$CMAKE" --build "$tmp/cmake" >> "$tmp/cmake.log" 2>&1; then
    bad "cmake on $examples: $(tail -8 "$tmp/cmake.log")"
  else
    for p in example tutorial-1 tutorial-2 tutorial-1-static; do
      if [ ! -x "$tmp/cmake/$p" ]; then bad "cmake built no $p"
      elif ! (cd "$tmp/cmake" && "./$p") > "$tmp/run.log" 2>&1; then bad "$p (CMake) failed: $(tail -5 "$tmp/run.log")"
      fi
    done
    if ldd "$tmp/cmake/tutorial-1-static" 2>&1 | grep -q libmgpurt; then
      bad "tutorial-1-static (mgpurt::mgpurt_static) needs libmgpurt.so"
    fi
    [ "$fails" = 0 ] && echo "ok: the CMake package's targets build the examples, and they run"
  fi
fi
[ "$fails" = 0 ]
