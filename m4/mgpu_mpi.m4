# SPDX-License-Identifier: BSD-3-Clause
# MGPU_CHECK_MPI: tri-state --with-mpi[=DIR].
#
# Default (--with-mpi=check): use MPI when an mpicc wrapper is found ($MPICC,
# DIR/bin, or the PATH) and a program using the MPI-3 calls of the inter-rank
# layer (one-sided windows, nonblocking collectives) compiles and links with
# the flags it gives.
# --with-mpi or --with-mpi=DIR: the same, but failure is an error.
# --without-mpi: a library for one process, as without MPI installed.
#
# The flags come from the wrapper itself (Open MPI: --showme:compile and
# --showme:link; MPICH and its kin: -show), so the library is compiled with
# the project's compiler, not the wrapper's. The launcher (mpiexec or mpirun
# beside mpicc) is found for the tests.
#
# Sets and substitutes: have_mpi, MPICC, MPI_CFLAGS, MPI_LIBS, MPIEXEC,
# MPI_FLAVOR (openmpi, mpich or other), MPI_VERSION_STR; AM_CONDITIONAL
# HAVE_MPI; defines MGPU_HAVE_MPI.
AC_DEFUN([MGPU_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi@<:@=DIR@:>@],
      [build the distributed runtime over MPI (default: when mpicc is found; DIR is the MPI root holding bin/mpicc)])],
    [], [with_mpi=check])
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper, read for the MPI flags])
  AC_ARG_VAR([MPIEXEC], [MPI launcher for the tests (mpiexec or mpirun)])

  have_mpi=no
  mpi_reason="disabled by --without-mpi"
  MPI_CFLAGS=""; MPI_LIBS=""; MPI_FLAVOR=""; MPI_VERSION_STR=""
  AS_IF([test "x$with_mpi" != xno], [
    mpi_reason=""
    mgpu_mpicc=""
    AS_CASE([$with_mpi],
      [yes|check], [
        AS_IF([test -n "$MPICC"], [mgpu_mpicc=`command -v "$MPICC" 2>/dev/null`],
              [mgpu_mpicc=`command -v mpicc 2>/dev/null`])],
      [ AS_IF([test -x "$with_mpi/bin/mpicc"], [mgpu_mpicc=$with_mpi/bin/mpicc],
              [mpi_reason="no mpicc in $with_mpi/bin"]) ])
    AC_MSG_CHECKING([for mpicc])
    AS_IF([test -n "$mgpu_mpicc"], [AC_MSG_RESULT([$mgpu_mpicc])],
          [AC_MSG_RESULT([no])
           AS_IF([test -z "$mpi_reason"], [mpi_reason="mpicc not found in \$MPICC or PATH (Debian: apt-get install openmpi-bin libopenmpi-dev, or ./bootstrap --deps --mpi)"])])

    AS_IF([test -n "$mgpu_mpicc"], [
      MPICC=$mgpu_mpicc
      AC_MSG_CHECKING([for the MPI flags of $MPICC])
      AS_IF([mgpu_mpi_c=`"$MPICC" --showme:compile 2>/dev/null` && mgpu_mpi_l=`"$MPICC" --showme:link 2>/dev/null`],
            [MPI_FLAVOR=openmpi
             MPI_CFLAGS=$mgpu_mpi_c; MPI_LIBS=$mgpu_mpi_l],
            [mgpu_mpi_show=`"$MPICC" -show 2>/dev/null`],
            [MPI_FLAVOR=mpich
             # -show prints the whole command: keep the flags of the headers
             # and the libraries, drop the compiler's name and the rest.
             for f in $mgpu_mpi_show; do
               AS_CASE([$f],
                 [-I*|-D*|-pthread], [MPI_CFLAGS="$MPI_CFLAGS $f"])
               AS_CASE([$f],
                 [-L*|-l*|-Wl,*|-pthread], [MPI_LIBS="$MPI_LIBS $f"])
             done],
            [mpi_reason="$MPICC gives its flags to neither --showme:compile (Open MPI) nor -show (MPICH)"])
      AC_MSG_RESULT([${MPI_CFLAGS:-none} / ${MPI_LIBS:-none}])

      AS_IF([test -z "$mpi_reason"], [
        mgpu_save_CPPFLAGS=$CPPFLAGS; mgpu_save_LIBS=$LIBS
        CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
        AC_MSG_CHECKING([whether MPI-3 one-sided and nonblocking collective calls link])
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
  MPI_Win w; MPI_Request r; unsigned long long a = 0, b = 0; int f = 0;
  MPI_Initialized(&f);
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w);
  MPI_Fetch_and_op(&a, &b, MPI_UNSIGNED_LONG_LONG, 0, 0, MPI_SUM, w);
  MPI_Win_unlock(0, w);
  MPI_Iallgather(&a, 1, MPI_UNSIGNED_LONG_LONG, &b, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD, &r);
  return 0;]])],
          [AC_MSG_RESULT([yes]); have_mpi=yes],
          [AC_MSG_RESULT([no]); mpi_reason="cannot link an MPI-3 program with $MPI_LIBS (see config.log); an MPI of version 3 or later is needed"])
        CPPFLAGS=$mgpu_save_CPPFLAGS; LIBS=$mgpu_save_LIBS
      ])
    ])
    AS_IF([test "x$have_mpi" != xyes && test "x$with_mpi" != xcheck],
          [AC_MSG_ERROR([--with-mpi was given but MPI cannot be used: $mpi_reason])])
  ])
  AS_IF([test "x$have_mpi" = xyes], [
    # The launcher beside the wrapper first: another MPI's on the PATH would
    # start processes that do not speak this one's protocol.
    mgpu_mpi_bin=`dirname "$MPICC"`
    AS_IF([test -z "$MPIEXEC"], [
      for l in mpiexec mpirun; do
        AS_IF([test -x "$mgpu_mpi_bin/$l"], [MPIEXEC=$mgpu_mpi_bin/$l; break])
      done])
    AS_IF([test -z "$MPIEXEC"], [AC_PATH_PROGS([MPIEXEC], [mpiexec mpirun])])
    AS_IF([test -n "$MPIEXEC"], [
      mgpu_mpi_ver=`"$MPIEXEC" --version 2>&1 | $SED -n '1p'`
      AS_CASE([$mgpu_mpi_ver], [*"Open MPI"*|*OpenRTE*], [MPI_FLAVOR=openmpi], [*HYDRA*|*MPICH*], [MPI_FLAVOR=mpich])])
    MPI_VERSION_STR=`"$MPICC" --showme:version 2>/dev/null | $SED 's/^@<:@^:@:>@*: //; s/ (Language: C)//'`
    AS_IF([test -z "$MPI_VERSION_STR"], [MPI_VERSION_STR=`"$MPICC" -v 2>&1 | $SED -n '1p'`])
    AC_DEFINE([MGPU_HAVE_MPI], [1], [Define to 1 when the distributed runtime over MPI is built.])],
    [MPICC=""; MPI_CFLAGS=""; MPI_LIBS=""; MPIEXEC=""])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPI_FLAVOR])
  AM_CONDITIONAL([HAVE_MPI], [test "x$have_mpi" = xyes])
])
