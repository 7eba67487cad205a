# SPDX-License-Identifier: BSD-3-Clause
# MGPU_CHECK_CUDA: tri-state --with-cuda[=DIR] and --with-cuda-arch=LIST.
#
# Default (--with-cuda=check): use CUDA when nvcc is found in $CUDA_HOME, on the
# PATH or in /usr/local/cuda and a real __global__ kernel compiles and links.
# --with-cuda or --with-cuda=DIR: the same, but failure is an error.
# --without-cuda: CPU-only library with the same API.
#
# Sets and substitutes: have_cuda, NVCC, CUDA_HOME, CUDA_VERSION, CUDA_CPPFLAGS,
# CUDA_LDFLAGS, CUDA_LIBS, NVCC_ARCH_FLAGS, CUDA_ARCH_SUMMARY; AM_CONDITIONAL HAVE_CUDA;
# defines MGPU_HAVE_CUDA.
AC_DEFUN([MGPU_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [build the CUDA GPU workers (default: when found; DIR is the toolkit root holding bin/nvcc)])],
    [], [with_cuda=check])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST],
      [compute capabilities to build machine code for, e.g. "80,90" (default: 80,90; PTX of the newest is embedded for later GPUs)])],
    [], [with_cuda_arch="80,90"])
  AC_ARG_VAR([NVCC], [CUDA compiler])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc])
  AC_ARG_VAR([CUDA_HOME], [CUDA toolkit root, searched when --with-cuda names no directory])

  have_cuda=no
  cuda_reason="disabled by --without-cuda"
  AS_IF([test "x$with_cuda" != xno], [
    cuda_reason=""
    mgpu_nvcc=""
    AS_CASE([$with_cuda],
      [yes|check], [
        AS_IF([test -n "$NVCC" && test -x "$NVCC"], [mgpu_nvcc=$NVCC],
              [test -n "$CUDA_HOME" && test -x "$CUDA_HOME/bin/nvcc"], [mgpu_nvcc=$CUDA_HOME/bin/nvcc],
              [mgpu_nvcc=`command -v nvcc 2>/dev/null`
               AS_IF([test -z "$mgpu_nvcc" && test -x /usr/local/cuda/bin/nvcc], [mgpu_nvcc=/usr/local/cuda/bin/nvcc])])],
      [ AS_IF([test -x "$with_cuda/bin/nvcc"], [mgpu_nvcc=$with_cuda/bin/nvcc],
              [cuda_reason="no nvcc in $with_cuda/bin"]) ])
    AC_MSG_CHECKING([for nvcc])
    AS_IF([test -n "$mgpu_nvcc"], [AC_MSG_RESULT([$mgpu_nvcc])],
          [AC_MSG_RESULT([no])
           AS_IF([test -z "$cuda_reason"], [cuda_reason="nvcc not found in \$CUDA_HOME, PATH or /usr/local/cuda"])])

    AS_IF([test -n "$mgpu_nvcc"], [
      NVCC=$mgpu_nvcc
      mgpu_cuda_bin=`dirname "$NVCC"`
      CUDA_HOME=`cd "$mgpu_cuda_bin/.." && pwd -P`
      CUDA_VERSION=`"$NVCC" --version 2>/dev/null | $SED -n 's/.*release \(@<:@0-9.@:>@*\),.*/\1/p'`
      CUDA_CPPFLAGS="-I$CUDA_HOME/include"
      CUDA_LDFLAGS=""
      for d in lib64 lib targets/x86_64-linux/lib targets/sbsa-linux/lib; do
        AS_IF([test -f "$CUDA_HOME/$d/libcudart_static.a"], [CUDA_LDFLAGS="-L$CUDA_HOME/$d"; break])
      done
      # The static runtime keeps libmgpurt loadable on machines without the CUDA
      # runtime library; the driver (libcuda) is opened at run time by cudart.
      CUDA_LIBS="-lcudart_static -lstdc++"

      # Architecture list -> -gencode flags; PTX of the highest is embedded too.
      NVCC_ARCH_FLAGS=""
      CUDA_ARCH_SUMMARY=""
      mgpu_arch_max=""
      for a in `echo "$with_cuda_arch" | tr ',' ' '`; do
        a=`echo "$a" | $SED 's/^sm_//; s/^compute_//'`
        AS_CASE([$a], [*@<:@!0-9a@:>@*|""], [AC_MSG_ERROR([--with-cuda-arch: '$a' is not a compute capability (expected numbers such as 80,90)])])
        NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode=arch=compute_$a,code=sm_$a"
        CUDA_ARCH_SUMMARY="$CUDA_ARCH_SUMMARY sm_$a"
        mgpu_arch_max=$a
      done
      AS_IF([test -z "$mgpu_arch_max"], [AC_MSG_ERROR([--with-cuda-arch is empty])])
      NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode=arch=compute_$mgpu_arch_max,code=compute_$mgpu_arch_max"
      CUDA_ARCH_SUMMARY="$CUDA_ARCH_SUMMARY + PTX compute_$mgpu_arch_max"

      AC_MSG_CHECKING([whether nvcc compiles a __global__ kernel for$CUDA_ARCH_SUMMARY])
      cat > conftest.cu <<MGPU_EOF
__global__ void k(int *p) { p@<:@threadIdx.x@:>@ = threadIdx.x; }
extern "C" int launch(int *p) { k<<<1, 32>>>(p); return 0; }
MGPU_EOF
      AS_IF([$NVCC $NVCC_ARCH_FLAGS -c conftest.cu -o mgpu_cutest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
            [AC_MSG_RESULT([yes])
             mgpu_save_CPPFLAGS=$CPPFLAGS; mgpu_save_LIBS=$LIBS; mgpu_save_LDFLAGS=$LDFLAGS
             CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
             LIBS="mgpu_cutest.$OBJEXT $CUDA_LIBS $LIBS"
             AC_MSG_CHECKING([whether C code links against the CUDA runtime])
             AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>
int launch(int *p);]], [[int n; cudaGetDeviceCount(&n); launch(0); return 0;]])],
               [AC_MSG_RESULT([yes]); have_cuda=yes],
               [AC_MSG_RESULT([no]); cuda_reason="cannot link C code with $CUDA_LIBS $CUDA_LDFLAGS (see config.log)"])
             CPPFLAGS=$mgpu_save_CPPFLAGS; LIBS=$mgpu_save_LIBS; LDFLAGS=$mgpu_save_LDFLAGS],
            [AC_MSG_RESULT([no]); cuda_reason="nvcc $NVCC failed to compile a __global__ kernel for$CUDA_ARCH_SUMMARY (see config.log)"])
      rm -f conftest.cu mgpu_cutest.$OBJEXT
    ])
    AS_IF([test "x$have_cuda" != xyes && test "x$with_cuda" != xcheck],
          [AC_MSG_ERROR([--with-cuda was given but CUDA cannot be used: $cuda_reason])])
  ])
  AS_IF([test "x$have_cuda" = xyes],
        [AC_DEFINE([MGPU_HAVE_CUDA], [1], [Define to 1 when the CUDA GPU workers are built.])],
        [NVCC=""; CUDA_CPPFLAGS=""; CUDA_LDFLAGS=""; CUDA_LIBS=""; NVCC_ARCH_FLAGS=""])
  AC_SUBST([CUDA_HOME])
  AC_SUBST([CUDA_VERSION])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([NVCC_ARCH_FLAGS])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
])
