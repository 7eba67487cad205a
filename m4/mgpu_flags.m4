# SPDX-License-Identifier: BSD-3-Clause
# MGPU_CHECK_CFLAG(FLAG, [ACTION-IF-OK], [ACTION-IF-NOT])
# Checks that the C compiler accepts FLAG without a warning turned error.
AC_DEFUN([MGPU_CHECK_CFLAG], [
  AS_VAR_PUSHDEF([mgpu_var], [mgpu_cv_cflag_$1])
  AC_CACHE_CHECK([whether $CC accepts $1], [mgpu_var], [
    mgpu_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $1"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])], [AS_VAR_SET([mgpu_var], [yes])], [AS_VAR_SET([mgpu_var], [no])])
    CFLAGS=$mgpu_save_CFLAGS])
  AS_VAR_IF([mgpu_var], [yes], [$2], [$3])
  AS_VAR_POPDEF([mgpu_var])
])
