# SPDX-License-Identifier: BSD-3-Clause
# MGPU_CHECK_NCCL: tri-state --with-nccl[=DIR]; needs CUDA.
#
# NCCL is searched in DIR, inside the CUDA toolkit ($CUDA_HOME/include, lib64, lib)
# and in the system paths. Sets have_nccl, NCCL_CPPFLAGS, NCCL_LDFLAGS, NCCL_LIBS,
# NCCL_VERSION_STR; AM_CONDITIONAL HAVE_NCCL; defines MGPU_HAVE_NCCL.
AC_DEFUN([MGPU_CHECK_NCCL], [
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@],
      [build the NCCL collectives (default: when found; needs CUDA)])],
    [], [with_nccl=check])
  have_nccl=no
  nccl_reason="disabled by --without-nccl"
  NCCL_CPPFLAGS=""; NCCL_LDFLAGS=""; NCCL_LIBS=""; NCCL_VERSION_STR=""
  AS_IF([test "x$with_nccl" != xno], [
    AS_IF([test "x$have_cuda" != xyes], [nccl_reason="needs CUDA"], [
      nccl_reason="nccl.h or libnccl not found"
      AS_CASE([$with_nccl], [yes|check], [mgpu_nccl_dirs="$CUDA_HOME /usr /usr/local"], [mgpu_nccl_dirs="$with_nccl"])
      for d in $mgpu_nccl_dirs; do
        AS_IF([test -f "$d/include/nccl.h"], [], [continue])
        for l in lib64 lib lib/x86_64-linux-gnu lib/aarch64-linux-gnu; do
          AS_IF([ls "$d/$l"/libnccl.so* >/dev/null 2>&1], [
            mgpu_save_CPPFLAGS=$CPPFLAGS; mgpu_save_LIBS=$LIBS; mgpu_save_LDFLAGS=$LDFLAGS
            CPPFLAGS="$CPPFLAGS -I$d/include $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS -L$d/$l $CUDA_LDFLAGS"
            LIBS="-lnccl $CUDA_LIBS $LIBS"
            AC_MSG_CHECKING([for NCCL in $d ($l)])
            AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]], [[int v; ncclGetVersion(&v); return 0;]])],
              [AC_MSG_RESULT([yes]); have_nccl=yes
               NCCL_CPPFLAGS="-I$d/include"; NCCL_LDFLAGS="-L$d/$l -Wl,-rpath,$d/$l"; NCCL_LIBS="-lnccl"],
              [AC_MSG_RESULT([no])])
            CPPFLAGS=$mgpu_save_CPPFLAGS; LIBS=$mgpu_save_LIBS; LDFLAGS=$mgpu_save_LDFLAGS
            break])
        done
        AS_IF([test "x$have_nccl" = xyes], [
          NCCL_VERSION_STR=`$SED -n 's/^#define NCCL_MAJOR \(@<:@0-9@:>@*\).*/\1/p' "$d/include/nccl.h"`.`$SED -n 's/^#define NCCL_MINOR \(@<:@0-9@:>@*\).*/\1/p' "$d/include/nccl.h"`.`$SED -n 's/^#define NCCL_PATCH \(@<:@0-9@:>@*\).*/\1/p' "$d/include/nccl.h"`
          break])
      done
    ])
    AS_IF([test "x$have_nccl" != xyes && test "x$with_nccl" != xcheck],
          [AC_MSG_ERROR([--with-nccl was given but NCCL cannot be used: $nccl_reason])])
  ])
  AS_IF([test "x$have_nccl" = xyes], [AC_DEFINE([MGPU_HAVE_NCCL], [1], [Define to 1 when NCCL collectives are built.])])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LDFLAGS])
  AC_SUBST([NCCL_LIBS])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$have_nccl" = xyes])
])
