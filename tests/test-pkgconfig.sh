#!/bin/sh
# test-pkgconfig.sh: the generated mgpurt.pc names everything a static link
# needs (CUDA runtime, NCCL, C++ runtime, OpenMP), and a program links
# against libmgpurt.a with `pkg-config --static --libs mgpurt` alone.
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
# A program linked with the static library and the .pc file's flags only.
archive=$top_builddir/lib/.libs/libmgpurt.a
if [ -f "$archive" ]; then
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' EXIT
  cat > "$tmp/app.c" <<'C'
#include <mgpurt.h>
#include <stdio.h>
int main(void) {
  mgpu_config_t c;
  mgpu_config_init(&c);
  c.num_threads = 1;
  c.num_gpus = 0;
  c.ignore_env = 1;
  mgpu_runtime_t *rt;
  if (mgpu_init(&c, &rt) != MGPU_OK) return 1;
  mgpu_finalize(rt);
  printf("libmgpurt %s linked statically\n", mgpu_version());
  return 0;
}
C
  # -l:libmgpurt.a takes the archive in place of -lmgpurt (GNU ld).
  static_libs=$(pkg-config --static --libs --define-variable=libdir="$top_builddir/lib/.libs" mgpurt |
                sed 's/-lmgpurt\b/-l:libmgpurt.a/')
  # The build's own flags too: a sanitizer build's archive needs its runtime.
  if ${CC:-cc} ${MGPU_TEST_CFLAGS:-} -o "$tmp/app" "$tmp/app.c" -I"$top_srcdir/include" $static_libs \
      ${MGPU_TEST_LDFLAGS:-} >"$tmp/log" 2>&1; then
    "$tmp/app" || bad "the statically linked program failed"
  else
    bad "static link with \`pkg-config --static --libs mgpurt\` failed: $(tail -5 "$tmp/log")"
  fi
fi
[ "$fails" = 0 ]
