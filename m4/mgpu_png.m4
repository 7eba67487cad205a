# SPDX-License-Identifier: BSD-3-Clause
# MGPU_CHECK_PNG: optional libpng for mgpu-run's image output (PPM otherwise).
AC_DEFUN([MGPU_CHECK_PNG], [
  AC_ARG_WITH([png], [AS_HELP_STRING([--without-png], [write PPM instead of PNG images])], [], [with_png=check])
  have_png=no
  AS_IF([test "x$with_png" != xno], [
    PKG_CHECK_MODULES([PNG], [libpng], [have_png=yes], [have_png=no])
    AS_IF([test "x$have_png" != xyes && test "x$with_png" = xyes], [AC_MSG_ERROR([--with-png was given but libpng was not found])])
  ])
  AS_IF([test "x$have_png" = xyes], [AC_DEFINE([MGPU_HAVE_PNG], [1], [Define to 1 when libpng is used.])])
  AM_CONDITIONAL([HAVE_PNG], [test "x$have_png" = xyes])
])
